// "Check this coup": every verdict computed here, from the recorded facts alone (checkui.js,
// verify.js).
"use strict";
(() => {
  const section = document.getElementById("check");
  if (!section) return;
  const V = globalThis.SabotVerify;

  async function check(say) {
    const facts = await SabotCheck.facts(`/api/coup/${section.dataset.coup}`, say);
    if (!facts) return "fail";
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
      bad = 0;
      for (const card of facts.dealt || []) {  // each recorded event, as the store holds it
        if (sabot[card.position] !== card.card) {
          bad += 1;
          say(false, `card at position ${card.position} (event #${card.event}): recorded ${card.card}, the shuffle gives ${sabot[card.position]}`);
        }
      }
      all = say(bad === 0, `${(facts.dealt || []).length} recorded card events against the shuffle: ${bad} differ`) && all;
    }
    all = (await SabotCheck.evidence(facts, say, "coup", true)) === 0 && all;
    say(all, all ? "the coup checks" : "the coup does not check: see above");
    return all ? "pass" : "fail";
  }
  SabotCheck.wire(section, "run-check", check);
})();
