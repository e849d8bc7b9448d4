"""Every shoe and coup of an export recomputed: commitment, shuffle, cut, deal, outcome, settlement.

The ledger's event topics (docs/export-format.md) are the only thing shared with the server.
"""

from __future__ import annotations

import importlib
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
    """What ``check_shoes`` reads, unwrapped: the tables' opening and closing, the shoes'
    events, and every event of an aggregate whose first event (version 1) names a shoe (a
    coup, a round, a match). Accounts, commands and links are left as they are (not copied:
    most of a whole log's events)."""
    out = []
    seen: dict[str, bool] = {}  # originator -> one of a shoe's (its version 1 names a shoe)
    for r in records:
        e = r.get("event")
        if not isinstance(e, dict):
            continue
        topic, oid = e["topic"], e["originator_id"]
        mine = seen.get(oid)
        if mine is False and topic not in (TABLE_OPENED, TABLE_CLOSED) \
                and not topic.startswith(SHOE_PREFIX):
            continue
        raw = e.get("state", {})
        if mine is None:
            mine = seen[oid] = e["version"] == 1 and isinstance(_shoe_named(raw), str)
        if mine or topic in (TABLE_OPENED, TABLE_CLOSED) or topic.startswith(SHOE_PREFIX):
            out.append(Ev(e["position"], oid, e["version"], topic, plain(raw)))
    return out


def _shoe_named(raw: Any) -> Any:
    """``plain(raw).get("shoe_id")`` without unwrapping the rest of the state (a command's is
    most of an export's bytes)."""
    if isinstance(raw, dict) and set(raw) != {"_type_", "_data_"}:
        return plain(raw.get("shoe_id"))
    return plain(raw).get("shoe_id")


@dataclass
class Pending:
    """A shoe the export holds whose card checks wait: in play (or closed after the anchor),
    its seed not revealed in the export and no regulator key to open its escrow. Its events
    are still checked as every event is (leaf hashes, proofs, the chain, the money)."""

    shoe_id: str
    table_id: str
    game: str
    position: int  # its Shoe.Shuffled
    coups: int  # coups opened so far
    settled: int  # of them, settled
    reason: str

    def to_json(self) -> dict[str, Any]:
        return {"shoe_id": self.shoe_id, "table_id": self.table_id, "game": self.game,
                "position": self.position, "coups": self.coups, "settled": self.settled,
                "reason": self.reason}


@dataclass
class ShoeContext:
    """What a game's check of one shoe is given, once the shoe itself (seed, commitment,
    shuffle, size, cut, order digest) has verified."""

    shoe_id: str
    table_id: str
    options: dict[str, str]  # the table's house rules, as text (its Table.Opened)
    cards: list[str]  # the shoe in dealing order, after the cut
    shoe_events: list[Ev]
    children: dict[str, list[Ev]]  # aggregates whose first event names the shoe (its coups)
    checkpoints: dict[str, dict[str, Any]]  # by the coup (or round) whose end they mark
    index_of: dict[int, int]  # position -> leaf index
    closing: set[str]  # coups on which a table's close settled what was left
    in_play: bool  # no Shoe.Closed in the export (checked with the escrowed seed)


GameCheck = Callable[[ShoeContext], list[Verdict]]  # the shoe's verdict line first
TRENTE_ET_QUARANTE = "trente-et-quarante"  # Table.Opened.game (absent before version 3)
GAMES: dict[str, GameCheck] = {}


def register_game(game: str, check: GameCheck) -> None:
    """A game's per-shoe check (its own module registers it; ``Table.Opened.game`` picks it,
    Trente et Quarante when the event names no game)."""
    GAMES[game] = check


def game_check(game: str) -> GameCheck | None:
    """The check registered for ``game``; a game's module named after it, dashes as
    underscores (``sabot_verify/treinta_y_una.py`` for ``treinta-y-una``), is imported on first
    use and registers itself."""
    module = game.replace("-", "_")
    if game not in GAMES and module.isidentifier() and not module.startswith("_"):
        try:
            importlib.import_module(f"sabot_verify.{module}")
        except ImportError:
            return None
    return GAMES.get(game)


IN_PLAY = ("in play: seed not revealed until Shoe.Closed; card checks deferred "
           "(give --regulator-key to open the escrowed seed)")
NO_ESCROW = ("in play: seed not revealed until Shoe.Closed, and none escrowed (shuffled "
             "without the regulator's key); card checks deferred")


def verify_shoes(
    records: list[dict[str, Any]],
    shoes: list[str] | None,
    seed_of: SeedSource,
    checkpoints: dict[int, dict[str, Any]],
    index_of: dict[int, int],
) -> list[Verdict]:
    """A verdict for every shoe (the listed ones, else every shoe shuffled in the export); a
    shoe in play without its seed is a failure here (``check_shoes`` lists it as pending)."""
    verdicts, pending = check_shoes(records, shoes, seed_of, checkpoints, index_of)
    return verdicts + [Verdict(f"shoe {p.shoe_id}", False, None, IN_PLAY) for p in pending]


def check_shoes(
    records: list[dict[str, Any]],
    shoes: list[str] | None,
    seed_of: SeedSource,
    checkpoints: dict[int, dict[str, Any]],
    index_of: dict[int, int],
) -> tuple[list[Verdict], list[Pending]]:
    """A verdict for every shoe checked (the listed ones, else every shoe shuffled in the
    export), and the shoes in play whose seed is not at hand: pending, not failed."""
    evs = _events(records)
    tables: dict[str, dict[str, Any]] = {}
    shoe_evs: dict[str, list[Ev]] = {}
    children: dict[str, dict[str, list[Ev]]] = {}  # shoe id -> its coups' (rounds') events
    by_originator: dict[str, list[Ev]] = {}
    closing: set[str] = set()  # coups on which a table's close settled what was left
    for e in evs:
        if e.topic == TABLE_OPENED:
            tables[e.state["table_id"]] = e.state
        elif e.topic == TABLE_CLOSED:
            closing.add(str(e.state.get("coup_id")))
        elif e.topic.startswith(SHOE_PREFIX):
            shoe_evs.setdefault(e.originator, []).append(e)
            continue
        mine = by_originator.setdefault(e.originator, [])
        mine.append(e)
        if len(mine) == 1 and isinstance(e.state.get("shoe_id"), str) and e.version == 1:
            children.setdefault(e.state["shoe_id"], {})[e.originator] = mine
    wanted = shoes if shoes is not None else [
        s for s, lst in shoe_evs.items() if lst[0].topic == SHOE_SHUFFLED
    ]
    coup_cps = {cp["coup"]: cp for cp in checkpoints.values() if cp.get("coup")}
    verdicts: list[Verdict] = []
    pending: list[Pending] = []
    for sid in dict.fromkeys(wanted):
        sevs = shoe_evs.get(sid, [])
        found = _shoe(sid, sevs, children.get(sid, {}), tables, seed_of, coup_cps, index_of,
                      closing)
        if isinstance(found, Pending):
            pending.append(found)
        else:
            verdicts += found
    return verdicts, pending


def _shoe(
    sid: str,
    sevs: list[Ev],
    children: dict[str, list[Ev]],
    tables: dict[str, dict[str, Any]],
    seed_of: SeedSource,
    coup_cps: dict[str, dict[str, Any]],
    index_of: dict[int, int],
    closing: set[str],
) -> list[Verdict] | Pending:
    """The shoe itself (game-neutral), then its game's check; Pending when in play and its
    seed cannot be had."""
    name = f"shoe {sid}"
    if not sevs or sevs[0].topic != SHOE_SHUFFLED:
        return [Verdict(name, False, None, "its Shuffled event is not in the export")]
    sh = sevs[0]
    s = sh.state
    opened = tables.get(s["table_id"])
    if opened is None:
        return [Verdict(name, False, None, "its table's Opened event is not in the export")]
    game = str(opened.get("game") or TRENTE_ET_QUARANTE)
    if s.get("algorithm") != ALGORITHM_ID:
        return [Verdict(name, False, sh.position, f"unknown algorithm {s.get('algorithm')!r}")]
    in_play = not any(e.topic == SHOE_CLOSED for e in sevs)
    seed = seed_of(sid, s)
    if seed is None and in_play:  # its events are checked all the same; its cards wait
        rounds = [c for c in children.values() if c[0].topic.endswith("Opened")]
        settled = sum(1 for c in rounds if any(e.topic.endswith("Settled") for e in c))
        reason = IN_PLAY if s.get("escrowed_seed") else NO_ESCROW
        return Pending(sid, str(s["table_id"]), game, sh.position, len(rounds), settled, reason)
    check = game_check(game)
    if seed is None:
        return [Verdict(name, False, None, "its Shoe.Closed reveals no seed")]
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
    if check is None:  # the shoe verified; its game's rounds wait for a module of its own
        return [Verdict(name, True, None, "commitment, shuffle and cut verified; no check of "
                        f"the game {game!r} in this verifier: its rounds are not replayed")]
    ctx = ShoeContext(sid, str(s["table_id"]), dict(opened.get("options") or {}),
                      cut(cards, cut_pos), sevs, children, coup_cps, index_of, closing, in_play)
    return check(ctx)


def trente_et_quarante(ctx: ShoeContext) -> list[Verdict]:
    """Every coup of the shoe in order: deal, outcome, settlement, carried stakes, the
    shoe's end and the table's close, each coup's end under a signed checkpoint."""
    sid, coups, options, sabot = ctx.shoe_id, ctx.children, ctx.options, ctx.cards
    mine = sorted(
        (c for c, lst in coups.items() if lst[0].topic == COUP_OPENED),
        key=lambda c: coups[c][0].state["number_in_shoe"],
    )
    so_far = "; in play: checked with the escrowed seed, so far" if ctx.in_play else ""
    out = [Verdict(f"shoe {sid}", True, None,
                   f"commitment, shuffle and cut verified ({len(mine)} coups){so_far}")]
    position = 0
    carried: list[Stake] | None = None
    dealt = [e for e in ctx.shoe_events if e.topic == SHOE_COUP_DEALT]
    for n, cid in enumerate(mine, 1):
        cevs = coups[cid]
        label = f"coup {cid} (shoe {sid[:8]} #{n})"
        try:
            position, carried = _coup(options, sabot, cevs, position, carried, n,
                                      cid in ctx.closing)
            rec = next((d for d in dealt if d.state["coup_id"] == cid), None)
            if rec is not None and rec.state["next_position"] != position:
                raise Mismatch(rec.position, "shoe next position", rec.state["next_position"],
                               position)
            settled = [e for e in cevs if e.topic == COUP_SETTLED]
            if settled:
                cp = ctx.checkpoints.get(cid)
                if cp is None:
                    raise Mismatch(settled[0].position, "checkpoint at the coup's end", None,
                                   "a signed checkpoint")
                if ctx.index_of.get(settled[0].position, cp["size"]) >= cp["size"]:
                    raise Mismatch(settled[0].position, "coup end inside its checkpoint",
                                   cp["size"], "a larger tree")
            out.append(Verdict(label, True, None, "identical" if settled else "identical so far"))
        except Mismatch as m:
            out.append(Verdict(label, False, m.position, str(m)))
            break
        except (KeyError, TypeError, ValueError) as exc:
            out.append(Verdict(label, False, cevs[0].position, f"malformed event: {exc!r}"))
            break
    return out


register_game(TRENTE_ET_QUARANTE, trente_et_quarante)


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
    """One coup replayed from its events: where its next coup starts, and the stakes it leaves
    (carried over, or the layout while still betting)."""
    _opening(evs, expected_start, carried)
    play = _Play(options, deal(sabot, expected_start, options["cut_card"]), closes_table)
    for e in evs[1:]:
        play.step(e)
    return play.end(expected_start)


def _opening(evs: list[Ev], expected_start: int, carried: list[Stake] | None) -> None:
    """The coup opens where the shoe stands, with the stakes the coup before it left."""
    opened = evs[0]
    if opened.topic != COUP_OPENED:
        raise Mismatch(opened.position, "first event", opened.topic, "Coup.Opened")
    if opened.state["start_position"] != expected_start:
        raise Mismatch(opened.position, "start position", opened.state["start_position"],
                       expected_start)
    carried_in = [_stake(e.state["stake"]) for e in evs if e.topic == COUP_STAKE_CARRIED_OVER]
    if carried is not None and sorted(map(_key, carried_in)) != sorted(map(_key, carried)):
        pos = next((e.position for e in evs if e.topic == COUP_STAKE_CARRIED_OVER),
                   opened.position)
        raise Mismatch(pos, "stakes carried over", sorted(map(_key, carried_in)),
                       sorted(map(_key, carried)))


class _Play:
    """A coup's events after its opening, phase by phase: betting (the layout), the cards
    dealt against the shoe, the outcome, the settlement, and what the shoe's end or the
    table's close moved after it."""

    def __init__(self, options: dict[str, str], d: Deal, closes_table: bool) -> None:
        self.options, self.d, self.closes_table = options, d, closes_table
        self.outcome = judge(d)
        self.cards = iter(d.cards)
        self.phase = "betting"
        self.layout: list[Stake] = []
        self.moves: list[tuple[int, tuple[str, str, int]]] = []
        self.fates: list[tuple[int, str, str]] = []
        self.expected_moves: list[tuple[str, str, int]] = []
        self.expected_fates: dict[str, str] = {}
        self.left: list[Stake] = []

    def step(self, e: Ev) -> None:
        st, phase = e.state, self.phase
        if e.topic == COUP_STAKE_CARRIED_OVER:
            self.layout.append(_stake(st["stake"]))
        elif e.topic == COUP_LAYOUT_RESTATED:
            self._restated(e)
        elif e.topic in STAKE_EVENTS and phase in ("settling", "settled"):
            self.fates.append((e.position, st["stake_id"], st["fate"]))
        elif e.topic in STAKE_EVENTS and phase == "betting":
            self._staked(st)
        elif e.topic == COUP_CARD_DEALT:
            want = next(self.cards, None)
            got = (st["row"], st["code"], st["position"], st["running_total"])
            if got != want:
                raise Mismatch(e.position, "card dealt", list(got), want and list(want))
        elif e.topic == COUP_RESOLVED:
            self._resolved(e)
        elif e.topic == COUP_MONEY_MOVED and phase in ("settling", "settled"):
            self.moves.append((e.position, (st["kind"], st["stake_id"], int(st["amount"]))))
        elif e.topic == COUP_SETTLED:
            self._settled(e)

    def _restated(self, e: Ev) -> None:
        restated = sorted(map(_key, (_stake(x) for x in e.state["stakes"])))
        if self.phase == "betting":
            self.layout = [_stake(x) for x in e.state["stakes"]]
        elif self.phase == "settling" and restated != sorted(map(_key, self.left)):
            raise Mismatch(e.position, "layout after settlement", restated,
                           sorted(map(_key, self.left)))

    def _staked(self, st: dict[str, Any]) -> None:
        layout = self.layout
        new = _stake(st["stake"]) if st.get("stake") else None
        idx = next((i for i, s in enumerate(layout) if s.stake_id == st["stake_id"]), None)
        if idx is None and new is not None:
            layout.append(new)
        elif idx is not None and new is None:
            layout.pop(idx)
        elif idx is not None and new is not None:
            layout[idx] = new

    def _resolved(self, e: Ev) -> None:
        st, d, outcome = e.state, self.d, self.outcome
        extra = next(self.cards, None)
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
        self.left, self.expected_moves, self.expected_fates = _settle(
            self.options, self.layout, outcome)
        self.phase = "settling"

    def _settled(self, e: Ev) -> None:
        _compare_settlement(e.position, self.moves, self.expected_moves, self.fates,
                            self.expected_fates)
        self.phase = "settled"
        left = self.left
        # anything after is the shoe's end: every free stake goes back, whole
        self.expected_moves = [("return", s.stake_id, s.amount) for s in left
                               if s.status == "free"]
        self.expected_fates = {s.stake_id: "returned" for s in left if s.status == "free"}
        if self.closes_table:  # then the table's close: the prisoners leave too
            more, more_fates = close_table(self.options,
                                           [s for s in left if s.status != "free"])
            self.expected_moves += more
            self.expected_fates.update(more_fates)
        self.moves, self.fates = [], []

    def end(self, expected_start: int) -> tuple[int, list[Stake]]:
        """Where the next coup starts and the stakes left, once every event is read."""
        if self.phase == "settling":  # resolved, not yet settled: compare what is there
            _compare_settlement(None, self.moves, self.expected_moves[: len(self.moves)],
                                self.fates, self.expected_fates)
        if self.phase == "settled" and (self.moves or self.fates):
            _compare_settlement(None, self.moves, self.expected_moves, self.fates,
                                self.expected_fates)
            self.left = [] if self.closes_table else [s for s in self.left
                                                      if s.status != "free"]
        if self.phase == "betting":
            return expected_start, self.layout
        return self.d.next_position, self.left


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
