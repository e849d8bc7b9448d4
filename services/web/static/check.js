// "Check this coup": every verdict computed here, from the recorded facts alone.
"use strict";
(() => {
  const section = document.getElementById("check");
  if (!section) return;
  const V = globalThis.SabotVerify;
  const list = document.getElementById("check-results");
  const say = (ok, text) => {
    const li = document.createElement("li");
    li.className = ok === null ? "info" : ok ? "pass" : "fail";
    li.textContent = `${ok === null ? "·" : ok ? "PASS" : "FAIL"} ${text}`;
    list.appendChild(li);
    return ok;
  };

  async function check() {
    list.textContent = "";
    const answer = await fetch(`/api/coup/${section.dataset.coup}`, { credentials: "same-origin" });
    if (!answer.ok) { say(false, `the record could not be read (${answer.status})`); return; }
    const facts = await answer.json();
    const keyField = document.getElementById("pinned-key");
    if (!keyField.value && facts.checkpoint_public_key) keyField.value = facts.checkpoint_public_key;
    const shoe = facts.shoe;
    let all = true;
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
    }
    const ev = facts.evidence;
    if (!ev) {
      say(null, "the signed checkpoint is the regulator's and the back office's to read: not checked here");
    } else {
      const cp = ev.checkpoint;
      const key = keyField.value.trim().toLowerCase();
      if (!/^[0-9a-f]{64}$/.test(key)) {
        all = say(false, "no notary public key pinned: the checkpoint's signature cannot be checked") && false;
      } else {
        const id = await V.keyId(key);
        const signed = id === cp.key_id && await V.checkpointSigned(cp, key);
        all = say(signed, `checkpoint of ${cp.size} events signed by key ${id}`) && all;
      }
      for (const p of ev.proofs || []) {
        if (p.after_checkpoint) { say(null, `event #${p.position}: after the latest checkpoint`); continue; }
        const root = V.hex(await V.inclusionRoot(V.unhex(p.leaf_hash), p.leaf_index, p.tree_size,
                                                 p.path.map(V.unhex)));
        all = say(root === cp.root && p.tree_size === cp.size,
                  `event #${p.position} is in the signed log (leaf ${p.leaf_index})`) && all;
      }
    }
    say(all, all ? "the coup checks" : "the coup does not check: see above");
    section.dataset.verdict = all ? "pass" : "fail";
  }
  document.getElementById("run-check").addEventListener("click", () => {
    check().catch((e) => { say(false, `the check stopped: ${e.message}`); section.dataset.verdict = "fail"; });
  });
})();
