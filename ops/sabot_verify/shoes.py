"""Every shoe and coup of an export recomputed: commitment, shuffle, cut, deal, outcome, settlement.

The ledger's event topics (docs/export-format.md) are the only thing shared with the server.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from sabot_verify.coup import Deal, deal, judge
from sabot_verify.settle import Stake, close_table, settle
from sabot_verify.shoe import ALGORITHM_ID, commitment, cut, digest, shuffled
from sabot_verify.topics import (
    COUP_CARD_DEALT,
    COUP_LAYOUT_RESTATED,
    COUP_MONEY_MOVED,
    COUP_OPENED,
    COUP_PREFIX,
    COUP_RESOLVED,
    COUP_SETTLED,
    COUP_STAKE_CARRIED_OVER,
    SHOE_CLOSED,
    SHOE_COUP_DEALT,
    SHOE_CUT,
    SHOE_PREFIX,
    SHOE_SHUFFLED,
    STAKE_EVENTS,
    TABLE_CLOSED,
    TABLE_OPENED,
)


def plain(value: Any) -> Any:
    """The stored JSON without the transcoder's {"_type_", "_data_"} wrappers."""
    if isinstance(value, dict):
        if set(value) == {"_type_", "_data_"}:
            return plain(value["_data_"])
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


@dataclass
class Ev:
    position: int
    originator: str
    version: int
    topic: str
    state: dict[str, Any]


@dataclass
class Verdict:
    what: str  # "coup <id> (shoe <id> #n)" or "shoe <id>"
    ok: bool
    position: int | None = None
    detail: str = ""


@dataclass
class Coup:
    coup_id: str
    events: list[Ev] = field(default_factory=list)


SeedSource = Callable[[str, dict[str, Any]], bytes | None]  # shoe id, Shuffled state -> seed


class Mismatch(Exception):
    def __init__(self, position: int | None, what: str, recorded: Any, recomputed: Any) -> None:
        super().__init__(f"{what}: recorded {recorded!r}, recomputed {recomputed!r}")
        self.position = position


def _events(records: list[dict[str, Any]]) -> list[Ev]:
    out = []
    for r in records:
        e = r.get("event")
        if not isinstance(e, dict):
            continue
        st = plain(e.get("state", {}))
        out.append(Ev(e["position"], e["originator_id"], e["version"], e["topic"], st))
    return out


def verify_shoes(
    records: list[dict[str, Any]],
    shoes: list[str] | None,
    seed_of: SeedSource,
    checkpoints: dict[int, dict[str, Any]],
    index_of: dict[int, int],
) -> list[Verdict]:
    """A verdict for every shoe (the listed ones, else every shoe shuffled in the export)."""
    evs = _events(records)
    tables: dict[str, dict[str, str]] = {}
    shoe_evs: dict[str, list[Ev]] = {}
    coups: dict[str, list[Ev]] = {}
    closing: set[str] = set()  # coups on which a table's close settled what was left
    for e in evs:
        if e.topic == TABLE_OPENED:
            tables[e.state["table_id"]] = dict(e.state["options"])
        elif e.topic == TABLE_CLOSED:
            closing.add(str(e.state.get("coup_id")))
        elif e.topic.startswith(SHOE_PREFIX):
            shoe_evs.setdefault(e.originator, []).append(e)
        elif e.topic.startswith(COUP_PREFIX):
            coups.setdefault(e.originator, []).append(e)
    wanted = shoes if shoes is not None else [
        s for s, lst in shoe_evs.items() if lst[0].topic == SHOE_SHUFFLED
    ]
    coup_cps = {cp["coup"]: cp for cp in checkpoints.values() if cp.get("coup")}
    verdicts: list[Verdict] = []
    for sid in wanted:
        verdicts += _shoe(sid, shoe_evs.get(sid, []), coups, tables, seed_of, coup_cps, index_of,
                          closing)
    return verdicts


def _shoe(
    sid: str,
    sevs: list[Ev],
    coups: dict[str, list[Ev]],
    tables: dict[str, dict[str, str]],
    seed_of: SeedSource,
    coup_cps: dict[str, dict[str, Any]],
    index_of: dict[int, int],
    closing: frozenset[str] | set[str] = frozenset(),
) -> list[Verdict]:
    name = f"shoe {sid}"
    if not sevs or sevs[0].topic != SHOE_SHUFFLED:
        return [Verdict(name, False, None, "its Shuffled event is not in the export")]
    sh = sevs[0]
    s = sh.state
    options = tables.get(s["table_id"])
    if options is None:
        return [Verdict(name, False, None, "its table's Opened event is not in the export")]
    if s.get("algorithm") != ALGORITHM_ID:
        return [Verdict(name, False, sh.position, f"unknown algorithm {s.get('algorithm')!r}")]
    seed = seed_of(sid, s)
    if seed is None:
        return [Verdict(name, False, None, "seed not revealed (shoe in play): "
                        "give --regulator-key to open the escrowed seed")]
    if commitment(seed, UUID(sid)) != s["commitment"]:
        return [Verdict(name, False, sh.position, "the seed does not match the commitment")]
    cards = shuffled(seed, UUID(sid), s["deck_kind"], int(s["decks"]))
    if len(cards) != s["size"]:
        return [Verdict(name, False, sh.position, f"size {s['size']}, shoe has {len(cards)}")]
    cut_pos = None
    for e in sevs[1:]:
        if e.topic == SHOE_CUT:
            cut_pos = int(e.state["position"])
        elif e.topic == SHOE_CLOSED:
            want = e.state.get("order_digest")
            if want is not None and want != digest(cut(cards, cut_pos)):
                return [Verdict(name, False, e.position, "order digest differs")]
    sabot = cut(cards, cut_pos)
    mine = sorted(
        (c for c, lst in coups.items() if lst and lst[0].state.get("shoe_id") == sid),
        key=lambda c: coups[c][0].state["number_in_shoe"],
    )
    out = [Verdict(name, True, None, f"commitment, shuffle and cut verified ({len(mine)} coups)")]
    position = 0
    carried: list[Stake] | None = None
    dealt = [e for e in sevs if e.topic == SHOE_COUP_DEALT]
    for n, cid in enumerate(mine, 1):
        cevs = coups[cid]
        label = f"coup {cid} (shoe {sid[:8]} #{n})"
        try:
            position, carried = _coup(options, sabot, cevs, position, carried, n,
                                      cid in closing)
            rec = next((d for d in dealt if d.state["coup_id"] == cid), None)
            if rec is not None and rec.state["next_position"] != position:
                raise Mismatch(rec.position, "shoe next position", rec.state["next_position"],
                               position)
            settled = [e for e in cevs if e.topic == COUP_SETTLED]
            if settled:
                cp = coup_cps.get(cid)
                if cp is None:
                    raise Mismatch(settled[0].position, "checkpoint at the coup's end", None,
                                   "a signed checkpoint")
                if index_of.get(settled[0].position, cp["size"]) >= cp["size"]:
                    raise Mismatch(settled[0].position, "coup end inside its checkpoint",
                                   cp["size"], "a larger tree")
            out.append(Verdict(label, True, None, "identical" if settled else "identical so far"))
        except Mismatch as m:
            out.append(Verdict(label, False, m.position, str(m)))
            position = None  # type: ignore[assignment]
            break
        except (KeyError, TypeError, ValueError) as exc:
            out.append(Verdict(label, False, cevs[0].position, f"malformed event: {exc!r}"))
            break
    return out


def _stake(d: dict[str, Any]) -> Stake:
    return Stake(d["stake_id"], d["chance"], int(d["amount"]), d["status"], bool(d["insured"]),
                 d.get("choice"), bool(d.get("awaiting_choice", False)))


def _key(s: Stake) -> tuple[Any, ...]:
    return (s.stake_id, s.chance, s.amount, s.status, s.insured, s.choice, s.awaiting_choice)


def _coup(
    options: dict[str, str],
    sabot: list[str],
    evs: list[Ev],
    expected_start: int,
    carried: list[Stake] | None,
    number: int,
    closes_table: bool = False,
) -> tuple[int, list[Stake]]:
    opened = evs[0]
    if opened.topic != COUP_OPENED:
        raise Mismatch(opened.position, "first event", opened.topic, "Coup.Opened")
    if opened.state["start_position"] != expected_start:
        raise Mismatch(opened.position, "start position", opened.state["start_position"],
                       expected_start)
    layout: list[Stake] = []
    carried_in = [_stake(e.state["stake"]) for e in evs if e.topic == COUP_STAKE_CARRIED_OVER]
    if carried is not None and sorted(map(_key, carried_in)) != sorted(map(_key, carried)):
        pos = next((e.position for e in evs if e.topic == COUP_STAKE_CARRIED_OVER),
                   opened.position)
        raise Mismatch(pos, "stakes carried over", sorted(map(_key, carried_in)),
                       sorted(map(_key, carried)))
    d: Deal = deal(sabot, expected_start, options["cut_card"])
    outcome = judge(d)
    cards = iter(d.cards)
    phase = "betting"
    moves: list[tuple[int, tuple[str, str, int]]] = []
    fates: list[tuple[int, str, str]] = []
    expected_moves: list[tuple[str, str, int]] = []
    expected_fates: dict[str, str] = {}
    left: list[Stake] = []
    for e in evs[1:]:
        st = e.state
        if e.topic == COUP_STAKE_CARRIED_OVER:
            layout.append(_stake(st["stake"]))
        elif e.topic == COUP_LAYOUT_RESTATED:
            restated = sorted(map(_key, (_stake(x) for x in st["stakes"])))
            if phase == "betting":
                layout = [_stake(x) for x in st["stakes"]]
            elif phase == "settling" and restated != sorted(map(_key, left)):
                raise Mismatch(e.position, "layout after settlement", restated,
                               sorted(map(_key, left)))
        elif e.topic in STAKE_EVENTS and phase == "settling":
            fates.append((e.position, st["stake_id"], st["fate"]))
        elif e.topic in STAKE_EVENTS and phase == "betting":
            new = _stake(st["stake"]) if st.get("stake") else None
            idx = next((i for i, s in enumerate(layout) if s.stake_id == st["stake_id"]), None)
            if idx is None and new is not None:
                layout.append(new)
            elif idx is not None and new is None:
                layout.pop(idx)
            elif idx is not None and new is not None:
                layout[idx] = new
        elif e.topic == COUP_CARD_DEALT:
            want = next(cards, None)
            got = (st["row"], st["code"], st["position"], st["running_total"])
            if got != want:
                raise Mismatch(e.position, "card dealt", list(got), want and list(want))
        elif e.topic == COUP_RESOLVED:
            extra = next(cards, None)
            if extra is not None:
                raise Mismatch(e.position, "card dealt", None, list(extra))
            mine = {
                "noir_total": d.noir, "rouge_total": d.rouge, "result": outcome.result,
                "refait_total": d.noir if outcome.result == "refait" else None,
                "couleur": outcome.couleur, "winning_chances": sorted(outcome.winners()),
                "cut_card_reached": d.cut_card_reached, "next_position": d.next_position,
            }
            for k, v in mine.items():
                got_v = sorted(st[k]) if k == "winning_chances" else st[k]
                if got_v != v:
                    raise Mismatch(e.position, f"outcome {k}", got_v, v)
            left, expected_moves, expected_fates = _settle(options, layout, outcome)
            phase = "settling"
        elif e.topic == COUP_MONEY_MOVED and phase == "settling":
            moves.append((e.position, (st["kind"], st["stake_id"], int(st["amount"]))))
        elif e.topic == COUP_SETTLED:
            _compare_settlement(e.position, moves, expected_moves, fates, expected_fates)
            phase = "settled"
            # anything after is the shoe's end: every free stake goes back, whole
            expected_moves = [("return", s.stake_id, s.amount) for s in left if s.status == "free"]
            expected_fates = {s.stake_id: "returned" for s in left if s.status == "free"}
            if closes_table:  # then the table's close: the prisoners leave too
                more, more_fates = close_table(options, [s for s in left if s.status != "free"])
                expected_moves += more
                expected_fates.update(more_fates)
            moves, fates = [], []
        elif phase == "settled" and e.topic == COUP_MONEY_MOVED:
            moves.append((e.position, (st["kind"], st["stake_id"], int(st["amount"]))))
        elif phase == "settled" and e.topic in STAKE_EVENTS:
            fates.append((e.position, st["stake_id"], st["fate"]))
    if phase == "settling":  # resolved, not yet settled: compare what is there
        _compare_settlement(None, moves, expected_moves[: len(moves)], fates, expected_fates)
    if phase == "settled" and (moves or fates):
        _compare_settlement(None, moves, expected_moves, fates, expected_fates)
        left = [] if closes_table else [s for s in left if s.status != "free"]
    if phase == "betting":
        return expected_start, layout
    return d.next_position, left


def _settle(
    options: dict[str, str], layout: list[Stake], outcome: Any
) -> tuple[list[Stake], list[tuple[str, str, int]], dict[str, str]]:
    return settle(options, layout, outcome)


def _compare_settlement(
    end: int | None,
    moves: list[tuple[int, tuple[str, str, int]]],
    expected: list[tuple[str, str, int]],
    fates: list[tuple[int, str, str]],
    expected_fates: dict[str, str],
) -> None:
    for i, want in enumerate(expected):
        if i >= len(moves):
            raise Mismatch(end, f"movement {i + 1}", None, list(want))
        pos, got = moves[i]
        if got != want:
            raise Mismatch(pos, f"movement {i + 1}", list(got), list(want))
    if len(moves) > len(expected):
        pos, got = moves[len(expected)]
        raise Mismatch(pos, f"movement {len(expected) + 1}", list(got), None)
    for pos, stake_id, fate in fates:
        if expected_fates.get(stake_id) != fate:
            raise Mismatch(pos, f"fate of stake {stake_id}", fate, expected_fates.get(stake_id))
