// The table's live view: the coup, round or match in play, as the server shows it to this
// user now (/live/{table}: HTML, a face-down card a back until its showdown), every 2 s until
// paused; Resume asks at once.
"use strict";
(() => {
  const live = document.getElementById("live");
  if (!live) return;
  const table = live.dataset.table;
  const state = document.getElementById("live-state");
  const now = document.getElementById("live-now");
  const pause = document.getElementById("pause");
  let paused = false;
  let run = 0;  // each Pause or Resume starts a new run: an answer of an older one is dropped
  let timer = null;
  let shown = now.innerHTML;

  async function tick(mine) {
    if (paused || mine !== run) return;
    try {
      const answer = await fetch(`/live/${encodeURIComponent(table)}`, { credentials: "same-origin" });
      if (paused || mine !== run) return;
      if (answer.ok) {
        const html = await answer.text();
        if (paused || mine !== run) return;
        if (html !== shown) {
          const fresh = new DOMParser().parseFromString(html, "text/html");
          now.replaceChildren(...fresh.body.childNodes);
          shown = html;
        }
        state.textContent = `following the table · ${new Date().toISOString().slice(11, 19)} UTC`;
      } else {
        state.textContent = `the console answered ${answer.status}`;
      }
    } catch (e) { state.textContent = "the console is not answering"; }
    if (!paused && mine === run) timer = setTimeout(() => tick(mine), 2000);
  }

  pause.addEventListener("click", () => {
    paused = !paused;
    run += 1;
    clearTimeout(timer);
    pause.textContent = paused ? "Resume" : "Pause";
    pause.setAttribute("aria-pressed", String(paused));
    state.textContent = paused ? "paused" : "following the table";
    if (!paused) tick(run);
  });
  timer = setTimeout(() => tick(run), 2000);
})();
