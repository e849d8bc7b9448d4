// What the check pages share (check.js: a coup; gamecheck.js: a round or a match): the list of
// results, the button that runs a check, and the signed checkpoint with the inclusion of the
// events in it; every verdict computed here, with verify.js, from the recorded facts alone.
"use strict";

const SabotCheck = (() => {
  const V = globalThis.SabotVerify;

  // say(ok, text): one line of the results (ok: true PASS, false FAIL, null a remark).
  function reporter(list) {
    return (ok, text) => {
      const li = document.createElement("li");
      li.className = ok === null ? "info" : ok ? "pass" : "fail";
      li.textContent = `${ok === null ? "·" : ok ? "PASS" : "FAIL"} ${text}`;
      list.appendChild(li);
      return ok;
    };
  }

  // Runs check(say) on a click of the button, its verdict in section.dataset.verdict.
  function wire(section, button, check) {
    const list = document.getElementById("check-results");
    const say = reporter(list);
    document.getElementById(button).addEventListener("click", () => {
      list.textContent = "";
      delete section.dataset.verdict;
      check(say).then((verdict) => { section.dataset.verdict = verdict; }).catch((e) => {
        say(false, `the check stopped: ${e.message}`);
        section.dataset.verdict = "fail";
      });
    });
  }

  // The facts of /api/coup|round|match/...; a refusal said and null.
  async function facts(url, say) {
    const answer = await fetch(url, { credentials: "same-origin" });
    if (!answer.ok) { say(false, `the record could not be read (${answer.status})`); return null; }
    return answer.json();
  }

  // The latest signed checkpoint (its Ed25519 signature, with the key the user pinned) and
  // each event's inclusion proof against its root. Where the facts carry each event's stored
  // bytes (``leaf``: the canonical JSON of its content, SABOT-EXPORT-1), the leaf is computed
  // here from those bytes, bound to the event's log position (the position is in the bytes),
  // and the proof verified from it: what is returned in ``events`` (position -> content) is
  // only what the signed log holds, for the page to compare what it shows with. Returns
  // {bad: the number of failures, events, bound: whether the leaves were computed here}.
  // ``each``: a line per event included (a coup's few), else one for them all.
  async function evidence(facts, say, kind, each) {
    const keyField = document.getElementById("pinned-key");
    if (!keyField.value && facts.checkpoint_public_key) keyField.value = facts.checkpoint_public_key;
    const events = new Map();
    const ev = facts.evidence;
    if (!ev) {
      say(null, "the signed checkpoint is the back office's and the regulator's to read, the " +
                "events' inclusion the regulator's to check: not checked here");
      return { bad: 0, events, bound: false };
    }
    let bad = 0;
    const cp = ev.checkpoint;
    const key = keyField.value.trim().toLowerCase();
    if (!/^[0-9a-f]{64}$/.test(key)) {
      say(false, "no notary public key pinned: the checkpoint's signature cannot be checked");
      return { bad: 1, events, bound: false };
    }
    const id = await V.keyId(key);
    const signed = id === cp.key_id && await V.checkpointSigned(cp, key);
    if (!say(signed, `checkpoint of ${cp.size} events signed by key ${id}`)) bad += 1;
    if (!ev.proofs) {
      say(null, ev.unproven || `the inclusion of the ${kind}'s events is the regulator's to check: not checked here`);
      return { bad, events, bound: false };
    }
    const bound = ev.proofs.some((p) => "leaf" in p);
    let inside = 0, after = 0, outside = 0;
    for (const p of ev.proofs) {
      if (p.after_checkpoint) {
        after += 1;
        if (each) say(null, `event #${p.position}: after the latest checkpoint`);
        continue;
      }
      let leafHash;
      if ("leaf" in p) {  // the event's own bytes: the leaf computed here
        if (p.leaf === null) {
          outside += 1;
          say(false, p.unexported ? `event #${p.position}: not in the export of its shoe`
                                  : `event #${p.position}: notarised, but gone from the store (deleted?)`);
          continue;
        }
        let content;
        try { content = JSON.parse(p.leaf); } catch (e) { content = null; }
        if (!content || content.position !== p.position) {
          outside += 1;
          say(false, `event #${p.position}: the bytes given are not this event's ` +
                     `(they are of position ${content ? content.position : "?"})`);
          continue;
        }
        leafHash = await V.leafHash(p.leaf);
        if (p.notarised && V.hex(leafHash) !== p.notarised) {
          say(false, `event #${p.position}: its stored bytes are not those the notary hashed ` +
                     "(edited after it was notarised?)");
        }
        p.content = content;
      } else {
        leafHash = V.unhex(p.leaf_hash);  // the notary's leaf hash, as the server gives it
      }
      const root = V.hex(await V.inclusionRoot(leafHash, p.leaf_index, p.tree_size,
                                               p.path.map(V.unhex)));
      if (root === cp.root && p.tree_size === cp.size) {
        inside += 1;
        if (p.content) events.set(p.position, p.content);
        if (each) say(true, `event #${p.position} is in the signed log (leaf ${p.leaf_index}` +
                            `${p.content ? ", computed from its stored bytes" : ""})`);
      } else {
        outside += 1;
        say(false, `event #${p.position} is not in the signed log` +
                   `${p.content ? " (its leaf, computed from its stored bytes, does not lead to the signed root)" : ""}`);
      }
    }
    if (!say(outside === 0, `${inside} events of the ${kind} are in the signed log` +
                            (bound ? ", each leaf computed here from the event's stored bytes"
                                   : " (their leaf hashes as the notary recorded them)"))) bad += 1;
    if (after && !each) say(null, `${after} events after the latest checkpoint: not signed yet`);
    return { bad, events, bound };
  }

  return { reporter, wire, facts, evidence };
})();
