"""Who did what: the export's ``actor`` fields checked against the commands, and reported.

Each ``Request.Recorded`` event (a command) records its actor and the events it caused
(``effects``), inside the notarised content; an event record's ``actor`` field is outside it.
So the field is checked: a command's record must carry the command's own actor, and every event
it caused that is exported must carry the same one. Then the report says who dealt and settled
each coup, who shuffled, cut and closed each shoe, who placed the stakes, and how many commands
each principal ran (principals, not the network addresses they called from).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from sabot_verify.integrity import Problem
from sabot_verify.topics import (
    COUP_OPENED,
    COUP_RESOLVED,
    COUP_SETTLED,
    COUP_STAKE_PLACED,
    REQUEST_RECORDED,
    SHOE_CLOSED,
    SHOE_CUT,
    SHOE_SHUFFLED,
)

_SHOE_STEPS = ((SHOE_SHUFFLED, "shuffled"), (SHOE_CUT, "cut"), (SHOE_CLOSED, "closed"))
_COUP_STEPS = ((COUP_OPENED, "opened"), (COUP_RESOLVED, "dealt"), (COUP_SETTLED, "settled"))
_SHOE_TOPICS = {t for t, _ in _SHOE_STEPS}


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        if set(value) == {"_type_", "_data_"}:
            return _plain(value["_data_"])
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _read(state: Any) -> tuple[Any, Any]:
    """A command's ``actor`` and ``effects``, unwrapped (the rest of its state is not)."""
    if isinstance(state, dict) and set(state) != {"_type_", "_data_"}:
        return _plain(state.get("actor")), _plain(state.get("effects"))
    st = _plain(state)
    return st.get("actor"), st.get("effects")


def _name(actor: Any, peer: bool = True) -> str:
    """``principal (role)``, and where it called from (``peer``) when asked: a report names
    principals (a peer's source port would make one principal many)."""
    if not isinstance(actor, dict):
        return "no one recorded"
    who = f"{actor.get('principal', '?')} ({actor.get('role', '?')})"
    return who + (f" from {actor['peer']}" if peer and actor.get("peer") else "")


def _who(actor: Any) -> str:
    return _name(actor, peer=False)


def problems(records: list[dict[str, Any]]) -> list[Problem]:
    """Event records whose ``actor`` is not their command's."""
    by_key = {(r["event"]["originator_id"], r["event"]["version"]): r
              for r in records if isinstance(r.get("event"), dict)}
    out: list[Problem] = []
    for r in records:
        ev = r.get("event")
        if not isinstance(ev, dict) or ev.get("topic") != REQUEST_RECORDED:
            continue
        actor, effects = _read(ev.get("state", {}))
        if actor is None:  # a request stored before actors were recorded
            continue
        if r.get("actor") != actor:
            out.append(Problem(r["position"], f"the actor field of command {ev['position']} "
                               "is not the command's own"))
        for effect in effects or ():
            other = by_key.get((effect[0], effect[1])) if isinstance(effect, list) else None
            if other is not None and other.get("actor") != actor:
                out.append(Problem(other["position"], f"the event at {other['position']} names "
                                   f"{_name(other.get('actor'))}, its command {_name(actor)}"))
    return out


class Reporter:
    """Who did what, read record by record (a whole log's export streams through it): the
    steps of each shoe and coup and the stakes placed (by unit), and the commands counted."""

    def __init__(self) -> None:
        self.steps: dict[str, dict[str, str]] = {}  # shoe or coup id -> step -> who
        self.order: list[tuple[str, str]] = []  # (kind, id) in export order
        self.stakes: dict[str, Counter[str]] = {}  # coup id -> who placed stakes
        self.commands: Counter[str] = Counter()

    def feed(self, r: dict[str, Any]) -> None:
        ev = r.get("event")
        if not isinstance(ev, dict):
            return
        topic = str(ev.get("topic", ""))
        if topic == REQUEST_RECORDED:
            self.commands[_who(r.get("actor"))] += 1
            return
        word = _STEP.get(topic)
        oid = str(ev.get("originator_id"))
        if word is not None:
            if oid not in self.steps:
                self.steps[oid] = {}
                self.order.append(("shoe" if topic in _SHOE_TOPICS else "coup", oid))
            self.steps[oid][word] = _who(r.get("actor"))
        if topic == COUP_STAKE_PLACED:
            self.stakes.setdefault(oid, Counter())[_who(r.get("actor"))] += 1

    def lines(self) -> list[str]:
        """Lines saying who did what (``WHO ...``), in the order the shoes and coups appear."""
        lines: list[str] = []
        for kind, oid in self.order:
            done = "; ".join(f"{word} by {who}" for word, who in self.steps[oid].items())
            placed = self.stakes.get(oid)
            if placed:
                done += "; stakes placed by " + ", ".join(
                    f"{who} x{n}" for who, n in sorted(placed.items()))
            lines.append(f"WHO  {kind} {oid}: {done}")
        if self.commands:
            lines.append("WHO  commands: " + ", ".join(
                f"{who} {n}" for who, n in sorted(self.commands.items(),
                                                  key=lambda kv: (-kv[1], kv[0]))))
        return lines


_STEP = {t: w for t, w in (*_SHOE_STEPS, *_COUP_STEPS)}


def report(records: list[dict[str, Any]]) -> list[str]:
    """Lines saying who did what (``WHO ...``), in the order the shoes and coups appear."""
    reporter = Reporter()
    for r in records:
        reporter.feed(r)
    return reporter.lines()
