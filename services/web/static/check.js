// "Check this coup": every verdict computed here, from the recorded facts alone (checkui.js,
// verify.js).
"use strict";
(() => {
  const section = document.getElementById("check");
  if (!section) return;
  const V = globalThis.SabotVerify;

  // The coup's card events from their stored bytes (the regulator's: each event's bytes as the
  // export reads them from the store), or null where the facts carry none.
  function stored(facts) {
    const proofs = facts.evidence && facts.evidence.proofs;
    if (!proofs || !proofs.some((p) => "leaf" in p)) return null;
    const coup = section.dataset.coup.split("/").pop();
    const cards = [];
    for (const p of proofs) {
      if (!p.leaf) continue;
      let c;
      try { c = JSON.parse(p.leaf); } catch (e) { continue; }
      if (c.originator_id !== coup || !c.topic.endsWith(":Coup.CardDealt")) continue;
      const d = V.unwrapped(c.state || {});
      cards.push({ event: c.position, position: d.position, card: d.code });
    }
    return cards;
  }

  async function check(say) {
    const facts = await SabotCheck.facts(`/api/coup/${section.dataset.coup}`, say);
    if (!facts) return "fail";
    const shoe = facts.shoe;
    let all = true;
    if (facts.refused) {
      all = say(false, `the ledger refuses this coup's recall: ${facts.refused}`);
    }
    if (!shoe.seed) {
      say(null, "the shoe is still in play: its seed is revealed when it closes; the commitment " +
                `${shoe.commitment} was published before the cut`);
      all = false;
    } else {
      const commitment = await V.commitment(shoe.seed, facts.shoe_id);
      all = say(commitment === shoe.commitment,
                `commitment: SHA-256 of the revealed seed gives ${commitment}`) && all;
      const before = await V.shuffle(shoe.seed, facts.shoe_id, shoe.deck_kind, shoe.decks);
      const sabot = V.cut(before, shoe.cut_position || 0);
      say(null, `shuffled ${before.length} cards (${shoe.deck_kind} × ${shoe.decks}), cut at ${shoe.cut_position || 0}`);
      if (shoe.order_digest) {
        const digest = await V.orderDigest(sabot);
        all = say(digest === shoe.order_digest, `order digest of the cut shoe ${digest}`) && all;
      }
      let bad = 0;
      for (const card of facts.cards) {
        const at = card.position || 0;
        if (sabot[at] !== card.card) {
          bad += 1;
          say(false, `card at position ${at}: recorded ${card.card}, the shuffle gives ${sabot[at]}`);
        }
      }
      all = say(bad === 0, `${facts.cards.length} cards of the coup against the shuffle: ${bad} differ`) && all;
      bad = 0;
      const dealt = stored(facts) || facts.dealt || [];
      for (const card of dealt) {  // each recorded event, as the store holds it
        if (sabot[card.position] !== card.card) {
          bad += 1;
          say(false, `card at position ${card.position} (event #${card.event}): recorded ${card.card}, the shuffle gives ${sabot[card.position]}`);
        }
      }
      all = say(bad === 0, `${dealt.length} recorded card events against the shuffle: ${bad} differ`) && all;
    }
    const ev = await SabotCheck.evidence(facts, say, "coup", true);
    all = ev.bad === 0 && all;
    if (ev.bound) all = shown(ev.events, say) === 0 && all;
    say(all, all ? "the coup checks" : "the coup does not check: see above");
    return all ? "pass" : "fail";
  }
  // What this page shows (every step, the cards of the two rows, the stakes' fates, the money
  // moved), read from the page itself, against the events whose stored bytes are in the signed
  // log (position -> content): the number of facts that differ, each named at its event.
  function shown(events, say) {
    let bad = 0;
    const fail = (text) => { bad += 1; say(false, text); };
    const state = (c) => V.unwrapped(c.state || {});
    const of = (topic) => [...events.values()].filter((c) => c.topic.endsWith(`:Coup.${topic}`));
    const text = (el) => (el ? el.textContent.trim() : "");
    const steps = document.querySelectorAll("#steps li.step");
    for (const li of steps) {
      const at = Number(text(li.querySelector(".pos")).replace(/^#/, ""));
      const content = events.get(at);
      if (!content) { fail(`event #${at}: shown, but not among the events proved in the signed log`); continue; }
      const type = text(li.querySelector(".type"));
      if (content.topic.split(":").pop() !== type) {
        fail(`event #${at}: shown as ${type}, its stored bytes say ${content.topic}`);
        continue;
      }
      const data = state(content);
      for (const f of li.querySelectorAll(".fact")) {
        const k = text(f.querySelector(".k")), v = text(f.querySelector(".v"));
        const want = !(k in data) ? undefined
          : typeof data[k] === "string" ? data[k] : V.canonicalJson(data[k]);
        if (want !== v) fail(`event #${at}: shown ${k}=${v}, its stored bytes say ${want === undefined ? "nothing of it" : `${k}=${want}`}`);
      }
    }
    const dealt = of("CardDealt");
    const cards = document.querySelectorAll(".row[data-row] li.card");
    for (const li of cards) {
      const at = Number(li.dataset.position);
      const code = text(li.querySelector(".code")), total = text(li.querySelector(".total"));
      const row = li.closest(".row").dataset.row;
      const c = dealt.find((d) => state(d).position === at);
      if (!c) { fail(`card ${code} at position ${at}: shown, but no card event of the coup in the signed log deals it`); continue; }
      const d = state(c);
      if (d.code !== code || String(d.running_total) !== total || d.row !== row) {
        fail(`event #${c.position}: the card at position ${at} is shown as ${code} (${row}, total ${total}), ` +
             `its stored bytes say ${d.code} (${d.row}, total ${d.running_total})`);
      }
    }
    const fates = [...events.values()].filter((c) => /:Coup\.Stake(?!Placed)/.test(c.topic));
    const rows = document.querySelectorAll("tr.fate");
    for (const tr of rows) {
      const [stake, fate] = [...tr.cells].map(text);
      const its = fates.filter((e) => stake && String(state(e).stake_id || "").startsWith(stake));
      if (!its.length) { fail(`stake ${stake}: its fate ${fate} is shown, but no event of the coup in the signed log records it`); continue; }
      if (!its.some((e) => state(e).fate === fate)) fail(`event #${its[0].position}: stake ${stake} shown ${fate}, its stored bytes say ${its.map((e) => state(e).fate).join(", ")}`);
    }
    const moved = of("MoneyMoved");
    const used = new Set();
    const movements = document.querySelectorAll("tr.movement");
    for (const tr of movements) {
      const [kind, from, to, amount] = [...tr.cells].map(text);
      const minor = amount.split(" ")[0].replace(/[^0-9-]/g, "");
      const same = (e) => { const d = state(e); return d.kind === kind && (d.debit_account || "") === from && (d.credit_account || "") === to; };
      const c = moved.find((e) => !used.has(e) && same(e) && String(state(e).amount) === String(Number(minor)));
      if (c) { used.add(c); continue; }
      const near = moved.find((e) => !used.has(e) && same(e));
      fail(near ? `event #${near.position}: ${kind} from ${from || "—"} to ${to || "—"} shown as ${amount}, its stored bytes say ${state(near).amount} minor units`
                : `${kind} of ${amount} from ${from || "—"} to ${to || "—"}: shown, but no event of the coup in the signed log moves it`);
      if (near) used.add(near);
    }
    say(bad === 0, `${steps.length} steps, ${cards.length} cards, ${rows.length} fates and ${movements.length} movements shown ` +
                   `against the stored bytes of the events in the signed log: ${bad} differ`);
    return bad;
  }
  SabotCheck.wire(section, "run-check", check);
})();
