// The table's live view: the latest coup, every 2 s, until paused.
"use strict";
(() => {
  const live = document.getElementById("live");
  if (!live) return;
  const table = live.dataset.table;
  const state = document.getElementById("live-state");
  const shown = document.getElementById("live-coup");
  const pause = document.getElementById("pause");
  let paused = false;
  pause.addEventListener("click", () => {
    paused = !paused;
    pause.textContent = paused ? "Resume" : "Pause";
    pause.setAttribute("aria-pressed", String(paused));
    state.textContent = paused ? "paused" : "following the table";
  });
  async function tick() {
    if (!paused) {
      try {
        const answer = await fetch(`/api/tables/${encodeURIComponent(table)}`,
                                   { credentials: "same-origin" });
        if (answer.ok) {
          const { coup } = await answer.json();
          shown.textContent = coup ? `Latest: ${coup.coup.name.split("/").pop()} (${coup.coup.phase})`
                                   : "Latest: none";
        }
      } catch (e) { state.textContent = "the console is not answering"; }
    }
    setTimeout(tick, 2000);
  }
  setTimeout(tick, 2000);
})();
