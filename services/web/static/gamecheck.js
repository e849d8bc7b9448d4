// "Check this round" (Treinta y Una) and "Check this match" (Cuarenta): every verdict computed
// here, from the recorded facts alone (/api/round/..., /api/match/...), with checkui.js and
// verify.js.
"use strict";
(() => {
  const section = document.getElementById("game-check");
  if (!section) return;
  const V = globalThis.SabotVerify;

  // One shoe: its commitment, its shuffle, every card placed on it, every face-down card's
  // commitment. Returns [failures, things not yet revealed].
  async function checkShoe(shoe, say) {
    let bad = 0, pending = 0;
    const label = `${shoe.label} (shoe ${shoe.shoe_id.slice(0, 8)})`;
    if (shoe.published && shoe.published !== shoe.commitment) {
      bad += 1;
      say(false, `${label}: the commitment published before the deal (${shoe.published}) is not the shoe's (${shoe.commitment})`);
    }
    for (const h of shoe.hidden || []) {
      if (!h.salt || !h.card) continue;
      const c = await V.hiddenCommitment(h.salt, h.position, h.card);
      if (c !== h.commitment) {
        bad += 1;
        say(false, `${label}: face-down card at position ${h.position} shown as ${h.card} does not open its commitment`);
      }
    }
    const opened = (shoe.hidden || []).filter((h) => h.salt && h.card).length;
    if (opened) say(bad === 0, `${label}: ${opened} face-down cards shown open the commitments recorded at the deal`);
    const closed = (shoe.hidden || []).filter((h) => !h.salt || !h.card).length;
    if (!shoe.seed) {
      pending += 1;
      say(null, `${label}: not yet revealed: the shoe is still in play, its seed is revealed when it closes; ` +
                `its commitment ${shoe.commitment} was published before the deal; ` +
                `${shoe.cards.length} cards shown so far cannot be compared yet`);
      if (closed) say(null, `${label}: ${closed} face-down cards not shown yet`);
      return [bad, pending];
    }
    const commitment = await V.commitment(shoe.seed, shoe.shoe_id);
    if (!say(commitment === shoe.commitment, `${label}: commitment: SHA-256 of the revealed seed gives ${commitment}`)) bad += 1;
    const before = await V.shuffle(shoe.seed, shoe.shoe_id, shoe.deck_kind, shoe.decks);
    const dealt = V.cut(before, shoe.cut_position || 0);
    say(null, `${label}: shuffled ${before.length} cards (${shoe.deck_kind} × ${shoe.decks}), cut at ${shoe.cut_position || 0}`);
    if (shoe.order_digest) {
      const digest = await V.orderDigest(dealt);
      if (!say(digest === shoe.order_digest, `${label}: order digest of the shoe ${digest}`)) bad += 1;
    }
    let differ = 0;
    for (const card of shoe.cards) {
      if (dealt[card.position] !== card.card) {
        differ += 1;
        say(false, `${label}: card at position ${card.position} (${card.where}): recorded ${card.card}, the shuffle gives ${dealt[card.position]}`);
      }
    }
    if (!say(differ === 0, `${label}: ${shoe.cards.length} cards against the shuffle: ${differ} differ`)) bad += 1;
    let salts = 0;
    for (const h of shoe.hidden || []) {
      const salt = await V.hiddenSalt(shoe.seed, shoe.shoe_id, h.position);
      const c = await V.hiddenCommitment(salt, h.position, dealt[h.position]);
      if (c !== h.commitment) {
        salts += 1;
        say(false, `${label}: the commitment of the face-down card at position ${h.position} is not the shuffle's card ${dealt[h.position]}`);
      }
    }
    if ((shoe.hidden || []).length) {
      if (!say(salts === 0, `${label}: ${shoe.hidden.length} face-down commitments against the seed: ${salts} differ`)) bad += 1;
    }
    const lot = shoe.lot;
    if (lot) {
      const index = await V.bankLot(shoe.seed, lot.nonce, lot.seats.length);
      const named = lot.seats[index] && lot.banker !== "a player" ? lot.seats[index] === lot.banker : true;
      if (!say(lot.nonce === shoe.shoe_id && index === lot.index && named,
               `${label}: the banker's lot drawn again from the seed: seat ${index} of ${lot.seats.length} (recorded ${lot.index})`)) bad += 1;
    }
    for (const note of shoe.unplaced || []) say(null, `${label}: ${note}`);
    return [bad, pending];
  }

  async function check(say) {
    const facts = await SabotCheck.facts(section.dataset.api, say);
    if (!facts) return "fail";
    let bad = 0, pending = 0;
    if (!facts.shoes.length) { pending += 1; say(null, "no shoe yet: nothing dealt"); }
    for (const shoe of facts.shoes) {
      const [b, p] = await checkShoe(shoe, say);
      bad += b; pending += p;
    }
    const ev = await SabotCheck.evidence(facts, say, facts.kind, false);
    bad += ev.bad;
    if (ev.bound) bad += facts.kind === "match" ? shownMoves(facts, ev.events, say)
                                                : shownSteps(facts, ev.events, say);
    const verdict = bad ? "fail" : pending ? "pending" : "pass";
    say(bad ? false : pending ? null : true,
        bad ? `the ${facts.kind} does not check: see above`
            : pending ? `nothing differs so far; the ${facts.kind} is not yet fully revealed`
                      : `the ${facts.kind} checks`);
    return verdict;
  }
  // Every step this page shows (its version, its kind, each value), read from the page itself,
  // against the unit's events whose stored bytes are in the signed log: the number that differ,
  // each named at its event.
  function shownSteps(facts, events, say) {
    const unit = facts.name.split("/").pop();
    const byVersion = new Map();
    for (const c of events.values()) if (c.originator_id === unit) byVersion.set(c.version, c);
    const text = (el) => (el ? el.textContent.trim() : "");
    const steps = document.querySelectorAll("#steps li.step");
    let bad = 0;
    const fail = (t) => { bad += 1; say(false, t); };
    for (const li of steps) {
      const version = Number(text(li.querySelector(".pos")).replace(/^v/, ""));
      const c = byVersion.get(version);
      if (!c) { fail(`step ${version}: shown, but no event of the ${facts.kind} in the signed log is it`); continue; }
      const kind = text(li.querySelector(".type"));
      if (!c.topic.endsWith(`.${kind}`)) { fail(`event #${c.position}: shown as ${kind}, its stored bytes say ${c.topic}`); continue; }
      const data = V.unwrapped(c.state || {});
      for (const f of li.querySelectorAll(".fact")) {
        const k = text(f.querySelector(".k")), v = text(f.querySelector(".v"));
        const want = !(k in data) ? undefined
          : typeof data[k] === "string" ? data[k] : V.canonicalJson(data[k]);
        if (want !== v) fail(`event #${c.position}: shown ${k}=${v}, its stored bytes say ${want === undefined ? "nothing of it" : `${k}=${want}`}`);
      }
    }
    say(bad === 0, `${steps.length} steps shown against the stored bytes of the ${facts.kind}'s events in the signed log: ${bad} differ`);
    return bad;
  }
  // A match's moves as this page shows them (each row: the move's number, the version of the
  // event it is; its kind; each value it shows, named by the event's field) against the
  // stored bytes of the match's events in the signed log: the number that differ, each named
  // at its event. The stakes paid are rows of the same events.
  const TOPICS = { opened: "Opened", hand_begun: "HandBegun", dealt: "Dealt", ronda: "RondaScored",
                   four_of_a_kind: "FourDealt", played: "Played", captured: "Captured",
                   hand_scored: "HandScored", forfeited: "Forfeited", won: "Won", money: "MoneyMoved" };
  function shownValue(k, text, data) {
    if (!(k in data)) return "nothing of it";
    const v = data[k];
    if (k === "score") return null;
    if (k === "amount") return String(Number(text.replace(/[^0-9]/g, "") || "NaN")) === String(v) ? null : `${k}=${v}`;
    const want = Array.isArray(v) ? v.join(" ") : v === null ? "" : String(v);
    return want === text ? null : `${k}=${want}`;
  }
  function shownMoves(facts, events, say) {
    const unit = facts.name.split("/").pop();
    const byVersion = new Map();
    for (const c of events.values()) if (c.originator_id === unit) byVersion.set(c.version, c);
    const rows = document.querySelectorAll("tr[data-version]");
    let bad = 0;
    const fail = (t) => { bad += 1; say(false, t); };
    for (const row of rows) {
      const version = Number(row.dataset.version), kind = row.dataset.kind;
      const c = byVersion.get(version);
      if (!c) { fail(`move ${version}: shown, but no event of the match in the signed log is it`); continue; }
      if (!c.topic.endsWith(`.${TOPICS[kind] || "?"}`)) { fail(`event #${c.position}: shown as ${kind}, its stored bytes say ${c.topic}`); continue; }
      const data = V.unwrapped(c.state || {});
      for (const cell of row.querySelectorAll("[data-k]")) {
        const k = cell.dataset.k, text = cell.textContent.trim();
        let differs;
        if (k === "score") {
          const shown = text.split("–");
          differs = Array.isArray(data.totals) ? (shown.join(" ") === data.totals.join(" ") ? null : `totals=${data.totals.join("–")}`)
            : "total" in data ? (shown[data.side || 0] === String(data.total) ? null : `side ${data.side || 0}'s total=${data.total}`)
            : "nothing of it";
        } else {
          differs = shownValue(k, text, data);
        }
        if (differs) fail(`event #${c.position}: shown ${k}=${text}, its stored bytes say ${differs}`);
      }
    }
    say(bad === 0, `${rows.length} moves shown against the stored bytes of the match's events in the signed log: ${bad} differ`);
    return bad;
  }
  SabotCheck.wire(section, "run-game-check", check);
})();
