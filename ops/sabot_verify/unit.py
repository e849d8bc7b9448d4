"""A unit's export is whole: what a shoe's (round's, match's) export leaves out as ``leaf``
records (hashes only) must not be the unit's own.

A SABOT-EXPORT-2 export of ranges holds in full its unit's events, the commands that wrote them
and everything those commands wrote; any other leaf of its ranges may be a ``leaf`` record, its
content unseen. The Merkle proof and the chain's digests prove every leaf is in the log and in
its place, not whose it is, so two checks make a left-out event of the unit visible:

- every command held in full (``Request.Recorded`` with its ``effects``) has each event it
  wrote held in full: a posting, card or stake of the unit turned into a ``leaf`` record is
  named at its command;
- every game aggregate held (a shoe, coup, Treinta y Una round, Cuarenta match) has all its
  versions from 1 to its last held: one left out is named where the gap is.

A unit's end left out (its ``Shoe.Closed`` and the commands after) shows as a shoe not closed:
pending, its cards not checked, never VERIFIED as closed.
"""

from __future__ import annotations

from typing import Any

from sabot_verify.integrity import Export, Problem
from sabot_verify.topics import REQUEST_RECORDED, P

GAME_AGGREGATES = (P + "Shoe.", P + "Coup.", P + "CuarentaMatch.", P + "TreintaYUnaRound.")


def problems(exp: Export) -> list[Problem]:
    """What of the unit a narrowed SABOT-EXPORT-2 export leaves out (none for the whole log or
    an older format: they hold every leaf in full)."""
    if not exp.multi or exp.header.get("coverage") == "log":
        return []
    held: dict[tuple[str, int], int] = {}
    versions: dict[str, list[tuple[int, int, str]]] = {}
    for r in exp.events:
        ev = r.get("event")
        if not isinstance(ev, dict):
            continue
        key = (str(ev.get("originator_id")), ev.get("version"))
        if isinstance(key[1], int):
            held[(key[0], key[1])] = int(r.get("position") or 0)
        topic = str(ev.get("topic"))
        if topic.startswith(GAME_AGGREGATES) and isinstance(key[1], int):
            versions.setdefault(key[0], []).append((key[1], int(r.get("position") or 0), topic))
    out: list[Problem] = []
    for r in exp.events:
        ev = r.get("event")
        if not isinstance(ev, dict) or ev.get("topic") != REQUEST_RECORDED:
            continue
        out += _command(ev, held)
    for oid, vs in versions.items():
        vs.sort()
        expected = 1
        for version, position, topic in vs:
            if version != expected:
                what = topic.removeprefix(P).split(".", 1)[0]
                gone = (f"version {expected}" if version == expected + 1
                        else f"versions {expected} to {version - 1}")
                out.append(Problem(position, f"position {position}: {what} {oid}: {gone} not in "
                                             "the export (left out?)"))
                break
            expected = version + 1
    return out


def _command(ev: dict[str, Any], held: dict[tuple[str, int], int]) -> list[Problem]:
    state = ev.get("state")
    effects = state.get("effects") if isinstance(state, dict) else None
    if not isinstance(effects, list):
        return []  # recorded before commands listed their effects
    position = ev.get("position")
    for item in effects:
        try:
            key = (str(item[0]), int(item[1]))
        except (TypeError, ValueError, IndexError):
            return [Problem(position, f"position {position}: a malformed effect {item!r}")]
        if key not in held:
            rid = state.get("request_id") if isinstance(state, dict) else None
            return [Problem(position, f"position {position}: command {rid!r} wrote {key[0]} "
                                      f"version {key[1]}, which the export does not hold in "
                                      "full (left out?)")]
    return []
