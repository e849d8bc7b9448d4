"""Every Cuarenta match of an export played again from its hands' seeds (RULES.md §3, seed 001,
docs/cuarenta.md), with nothing shared with the server but the topics:

- each hand's shoe: its commitment (published in ``HandBegun``), one FRENCH-40 deck shuffled by
  SABOT-SHUFFLE-1 (no cut); the dealer passing round, the seat after it playing first;
- every deal: five cards to each seat from the dealer's next round to the dealer, by position
  (deal d of a hand of n seats starts at (d - 1) * 5 * n), each face-down card's commitment
  (SABOT-HIDDEN-1); the rondas (three of a rank) and four of a rank dealt;
- every play: the seat whose turn it is, a card of its hand (the seed's card at the position,
  its salt), a legal capture: one table card of the same rank, or two or more A-7 summing to
  it, then the whole run of the next ranks (… 6, 7, J, Q, K); caída (the base is the card the
  opponent has just played), limpia (the table cleared), their points and the 38-point rule;
  a card left only when it may be (``must_capture``), the largest set under ``most_cards``;
- every hand's end: the cards each side won, the cartón, the cards left on the table, the
  totals; the match won at 40 (or by four of a rank, or a forfeit) and the pot paid: the
  house's commission (rounded down) then the winning side's players, shared.

A changed card, play or score is found at its position (``Verdict.position``: the event's).
"""

from __future__ import annotations

import hashlib
import hmac
import itertools
import struct
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any
from uuid import UUID

from sabot_verify.shoe import commitment, digest, shuffled
from sabot_verify.shoes import Verdict
from sabot_verify.topics import (
    CUARENTA_MATCH_CAPTURED,
    CUARENTA_MATCH_DEALT,
    CUARENTA_MATCH_FORFEITED,
    CUARENTA_MATCH_FOUR_DEALT,
    CUARENTA_MATCH_HAND_BEGUN,
    CUARENTA_MATCH_HAND_SCORED,
    CUARENTA_MATCH_MONEY_MOVED,
    CUARENTA_MATCH_OPENED,
    CUARENTA_MATCH_PLAYED,
    CUARENTA_MATCH_RONDA_SCORED,
    CUARENTA_MATCH_WON,
    SHOE_SHUFFLED,
)

HIDDEN = b"SABOT-HIDDEN-1"
MATCH_PREFIX = CUARENTA_MATCH_OPENED.rsplit(".", 1)[0] + "."
RANKS = "A234567JQK"  # upward, as the run goes: 7 is followed by J
SUMS = {r: i + 1 for i, r in enumerate("A234567")}
FIVE = 5
GAME = 40
AT_38 = 38
WITHHELD = {"off": set(), "no_limpia": {"limpia"}, "caida_only": {"limpia", "ronda", "carton"}}

SeedSource = Callable[[str, dict[str, Any]], bytes | None]


class _InPlay(Exception):
    """A hand in play whose seed is not revealed (and no regulator key opens its escrow)."""


class _Bad(Exception):
    def __init__(self, position: int, message: str) -> None:
        super().__init__(message)
        self.position = position


@dataclass
class _Ev:
    position: int
    topic: str
    state: dict[str, Any]


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        if set(value) == {"_type_", "_data_"}:
            return _plain(value["_data_"])
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def salt(seed: bytes, shoe_id: UUID, position: int) -> bytes:
    return hmac.new(seed, HIDDEN + shoe_id.bytes + struct.pack(">I", position),
                    hashlib.sha256).digest()


def card_commitment(s: bytes, position: int, code: str) -> str:
    return hashlib.sha256(HIDDEN + s + struct.pack(">I", position) + code.encode()).hexdigest()


def carton(cards: int, rounding: str) -> int:
    """Seed 001's table: under 20 nothing; the points column 6 + (n - 20); the tantos column
    (3 + ceil((n - 20) / 2) tantos of 2 points) under ``up_to_tanto``."""
    if cards < 20:
        return 0
    if rounding == "up_to_tanto":
        return 2 * (3 + (cards - 19) // 2)
    return 6 + cards - 20


def shares(amount: int, seats: list[int]) -> list[tuple[int, int]]:
    part, rest = divmod(amount, len(seats))
    out = [(s, part + (1 if i < rest else 0)) for i, s in enumerate(seats)]
    return [(s, a) for s, a in out if a > 0]


# --- captures -----------------------------------------------------------------------------------


def _run(rest: list[str], rank: str) -> list[str]:
    """The ranks of the run after ``rank`` while ``rest`` (the table less the base) has one."""
    ranks = {c[:-1] for c in rest}
    out = []
    i = RANKS.index(rank) + 1
    while i < len(RANKS) and RANKS[i] in ranks:
        out.append(RANKS[i])
        i += 1
    return out


def _bases(table: list[str], card: str) -> list[list[str]]:
    """Every base the card may take: one table card of its rank, or 2+ A-7 summing to it."""
    rank = card[:-1]
    out = [[c] for c in table if c[:-1] == rank]
    if rank in SUMS:
        small = [c for c in table if c[:-1] in SUMS]
        for k in range(2, len(small) + 1):
            for combo in itertools.combinations(small, k):
                if sum(SUMS[c[:-1]] for c in combo) == SUMS[rank]:
                    out.append(list(combo))
    return out


def capture_sizes(table: list[str], card: str) -> list[int]:
    sizes = []
    for base in _bases(table, card):
        rest = [c for c in table if c not in base]
        sizes.append(len(base) + len(_run(rest, card[:-1])))
    return sizes


def check_capture(table: list[str], card: str, taken: list[str]) -> list[str] | None:
    """The base of ``taken`` if it is a legal capture of ``card`` on ``table``, else None."""
    if len(set(taken)) != len(taken) or not set(taken) <= set(table):
        return None
    for base in _bases(table, card):
        if not set(base) <= set(taken):
            continue
        rest = [c for c in table if c not in base]
        run = sorted((c for c in taken if c not in base), key=lambda c: RANKS.index(c[:-1]))
        if [c[:-1] for c in run] == _run(rest, card[:-1]):
            return base
    return None


# --- a match ------------------------------------------------------------------------------------


@dataclass
class _Match:
    options: dict[str, str]
    seats: list[str]
    dealer: int
    points: list[int] = field(default_factory=lambda: [0, 0])
    hand: int = 0
    deal: int = 0
    turn: int = 0
    shoe: str = ""
    seed: bytes = b""
    cards: list[str] = field(default_factory=list)
    hands: list[list[int]] = field(default_factory=list)  # positions by seat
    table: list[str] = field(default_factory=list)
    won: list[int] = field(default_factory=lambda: [0, 0])  # cards won this hand
    last: tuple[int, str] | None = None
    last_capturer: int | None = None
    to_act: int | None = None
    over: bool = False

    @property
    def n(self) -> int:
        return len(self.seats)

    @property
    def first(self) -> int:
        return (self.dealer + 1) % self.n

    def held(self, source: str, side: int) -> bool:
        rule = self.options.get("rule_38", "no_limpia")
        return self.points[side] >= AT_38 and source in WITHHELD.get(rule, set())


class _Check:
    def __init__(self, events: list[_Ev], shuffles: dict[str, dict[str, Any]],
                 seed_of: SeedSource) -> None:
        self.evs = events
        self.at = 0
        self.shuffles = shuffles
        self.seed_of = seed_of
        self.m: _Match | None = None
        self.money: list[tuple[str, int | None, int]] = []

    # --- reading the record ---------------------------------------------------------------

    def take(self, topic: str, what: str) -> _Ev:
        if self.at >= len(self.evs):
            last = self.evs[-1].position if self.evs else 0
            raise _Bad(last, f"{what}: the match's record ends before it")
        e = self.evs[self.at]
        if e.topic != topic:
            raise _Bad(e.position, f"{what}: recorded {e.topic.rsplit(':', 1)[-1]}")
        self.at += 1
        return e

    @staticmethod
    def same(e: _Ev, what: str, recorded: Any, recomputed: Any) -> None:
        if recorded != recomputed:
            raise _Bad(e.position, f"{what}: recorded {recorded!r}, recomputed {recomputed!r}")

    # --- the match ------------------------------------------------------------------------

    def run(self) -> str:
        e = self.take(CUARENTA_MATCH_OPENED, "the match's opening")
        s = e.state
        m = self.m = _Match(dict(s["options"]), list(s["seats"]), int(s["dealer"]))
        if int(s["players"]) != m.n or m.options.get("players") != str(m.n) or m.n not in (2, 4):
            raise _Bad(e.position, f"{m.n} seats, options for {m.options.get('players')}")
        stake = int(m.options.get("stake", "0"))
        self.same(e, "the stake", int(s["stake"]), stake)
        self.pay([("stake", seat, a) for side in (0, 1)
                  for seat, a in shares(stake, [i for i in range(m.n) if i % 2 == side])])
        plays = hands = 0
        while self.at < len(self.evs) and not m.over:
            e = self.evs[self.at]
            if e.topic == CUARENTA_MATCH_HAND_BEGUN:
                self.begin(self.take(e.topic, "a hand"))
                hands += 1
            elif e.topic == CUARENTA_MATCH_DEALT:
                self.deal()
            elif e.topic == CUARENTA_MATCH_PLAYED:
                self.play(self.take(e.topic, "a play"))
                plays += 1
            elif e.topic == CUARENTA_MATCH_FORFEITED:
                self.forfeit(self.take(e.topic, "a forfeit"))
            else:
                raise _Bad(e.position, f"{e.topic.rsplit(':', 1)[-1]} where no command is")
        if self.at < len(self.evs):
            raise _Bad(self.evs[self.at].position, "events after the match's end")
        state = "won" if m.over else "in play"
        return (f"{hands} hands, {plays} plays replayed ({state}; "
                f"{m.points[0]}-{m.points[1]})")

    def pay(self, moves: list[tuple[str, int | None, int]]) -> None:
        for kind, seat, amount in moves:
            e = self.take(CUARENTA_MATCH_MONEY_MOVED, f"{kind} movement")
            got = (e.state["kind"], e.state["seat"], int(e.state["amount"]))
            self.same(e, "a movement", got, (kind, seat, amount))

    def begin(self, e: _Ev) -> None:
        m = self.m
        assert m is not None
        s = e.state
        if m.hand:  # the deal passes to the next seat
            m.dealer = (m.dealer + 1) % m.n
        m.hand += 1
        self.same(e, "hand", s["hand"], m.hand)
        self.same(e, "dealer", (s["dealer"], s["first"]), (m.dealer, m.first))
        sid = str(s["shoe_id"])
        shuffled_state = self.shuffles.get(sid)
        if shuffled_state is None:
            raise _Bad(e.position, f"the hand's shoe {sid} is not in the export")
        seed = self.seed_of(sid, shuffled_state)
        if seed is None:
            raise _InPlay(f"verified to hand {m.hand}, in play: its seed is not revealed "
                          "(--regulator-key opens the escrowed seed)")
        self.same(e, "the shoe's commitment", s["commitment"], commitment(seed, UUID(sid)))
        self.same(e, "the shoe", (shuffled_state["commitment"], shuffled_state["deck_kind"],
                                  int(shuffled_state["decks"])),
                  (s["commitment"], "FRENCH-40", 1))
        m.shoe, m.seed = sid, seed
        m.cards = shuffled(seed, UUID(sid), "FRENCH-40", 1)
        m.deal = m.turn = 0
        m.hands = [[] for _ in range(m.n)]
        m.table, m.won, m.last, m.last_capturer, m.to_act = [], [0, 0], None, None, None

    def deal(self) -> None:
        m = self.m
        assert m is not None
        if m.to_act is not None or (m.hand == 0):
            e = self.evs[self.at]
            raise _Bad(e.position, "a deal while cards are in hand")
        if m.deal >= 40 // (FIVE * m.n):
            raise _Bad(self.evs[self.at].position, "a deal after the pack was dealt")
        m.deal += 1
        start = (m.deal - 1) * FIVE * m.n
        order = [(m.first + k) % m.n for k in range(m.n)]
        sid = UUID(m.shoe)
        for k, seat in enumerate(order):
            e = self.take(CUARENTA_MATCH_DEALT, f"deal {m.deal} to seat {seat}")
            positions = list(range(start + k * FIVE, start + (k + 1) * FIVE))
            want = [{"position": p, "holder": m.seats[seat],
                     "commitment": card_commitment(salt(m.seed, sid, p), p, m.cards[p])}
                    for p in positions]
            got = [{"position": c["position"], "holder": c["holder"],
                    "commitment": c["commitment"]} for c in e.state["cards"]]
            self.same(e, f"deal {m.deal} to seat {seat}", (e.state["seat"], got), (seat, want))
            m.hands[seat] = positions
        if m.options.get("caida_across_deals", "true") != "true":
            m.last = None
        m.to_act = m.first
        for seat in order:
            counts = Counter(m.cards[p][:-1] for p in m.hands[seat])
            most = max(counts.values())
            side = seat % 2
            if most >= 4 and m.options.get("four_of_a_kind") == "wins_match":
                e = self.take(CUARENTA_MATCH_FOUR_DEALT, f"four of a rank to seat {seat}")
                rank = next(r for r, k in counts.items() if k >= 4)
                self.same(e, "four of a rank", (e.state["seat"], e.state["rank"]), (seat, rank))
                self.win(side, "four_of_a_kind")
                return
            if most >= 3:
                e = self.take(CUARENTA_MATCH_RONDA_SCORED, f"the ronda of seat {seat}")
                value = int(m.options.get("ronda_points", "2"))
                held = m.held("ronda", side)
                m.points[side] += 0 if held else value
                self.same(e, f"seat {seat}'s ronda",
                          (e.state["seat"], e.state["points"], e.state["withheld"],
                           e.state["total"]),
                          (seat, 0 if held else value, value if held else 0, m.points[side]))
                if m.points[side] >= GAME:
                    self.win(side, "points")
                    return

    def play(self, e: _Ev) -> None:
        m = self.m
        assert m is not None
        s = e.state
        seat, position, card = int(s["seat"]), int(s["position"]), str(s["card"])
        if m.to_act is None:
            raise _Bad(e.position, "a play while no seat has the turn")
        self.same(e, "the seat to play", seat, m.to_act)
        if position not in m.hands[seat]:
            raise _Bad(e.position, f"position {position} is not in seat {seat}'s hand")
        self.same(e, f"the card at position {position}", card, m.cards[position])
        self.same(e, "its salt", s["salt"], salt(m.seed, UUID(m.shoe), position).hex())
        m.turn += 1
        self.same(e, "the play's number", (s["hand"], s["deal"], s["turn"]),
                  (m.hand, m.deal, m.turn))
        side = seat % 2
        taken = list(s["capture"])
        self.same(e, "whether it captures", bool(s["captures"]), bool(taken))
        m.hands[seat].remove(position)
        if taken:
            base = check_capture(m.table, card, taken)
            if base is None:
                raise _Bad(e.position, f"{card} cannot take {' '.join(taken)} from "
                           f"{' '.join(m.table) or 'an empty table'}")
            if m.options.get("capture_choice") == "most_cards" and len(taken) < max(
                    capture_sizes(m.table, card)):
                raise _Bad(e.position, f"{card} takes fewer cards than it may (most_cards)")
            caida = (len(base) == 1 and m.last is not None and base[0] == m.last[1]
                     and m.last[0] % 2 != side)
            limpia = len(taken) == len(m.table)
            points = held = 0
            for source, earned, option in (("caida", caida, "caida_points"),
                                           ("limpia", limpia, "limpia_points")):
                if earned:
                    value = int(m.options.get(option, "2"))
                    if m.held(source, side):
                        held += value
                    else:
                        points += value
            kind = ("caida_limpia" if caida and limpia else "caida" if caida
                    else "limpia" if limpia else "capture")
            m.points[side] += points
            c = self.take(CUARENTA_MATCH_CAPTURED, f"the capture of play {m.turn}")
            self.same(c, "the capture",
                      (c.state["card"], sorted(c.state["taken"]), c.state["kind"],
                       c.state["points"], c.state["withheld"], c.state["total"]),
                      (card, sorted(taken), kind, points, held, m.points[side]))
            m.table = [x for x in m.table if x not in taken]
            m.won[side] += 1 + len(taken)
            m.last, m.last_capturer = None, side
            if m.points[side] >= GAME:
                self.win(side, "points")
                return
        else:
            if m.options.get("must_capture") == "true" and capture_sizes(m.table, card):
                raise _Bad(e.position, f"{card} could capture and must (must_capture)")
            m.table.append(card)
            m.last = (seat, card)
        if any(m.hands):
            m.to_act = (seat + 1) % m.n
            return
        m.to_act = None
        if m.deal * FIVE * m.n == 40:
            self.end_hand()

    def end_hand(self) -> None:
        m = self.m
        assert m is not None
        e = self.take(CUARENTA_MATCH_HAND_SCORED, f"the end of hand {m.hand}")
        left_to = None
        if (m.options.get("table_at_hand_end") == "last_capturer" and m.table
                and m.last_capturer is not None):
            left_to = m.last_capturer
            m.won[left_to] += len(m.table)
        rounding = m.options.get("carton_rounding", "points_column")
        earned = [carton(m.won[side], rounding) for side in (0, 1)]
        held = [earned[side] if m.held("carton", side) else 0 for side in (0, 1)]
        scored = [earned[side] - held[side] for side in (0, 1)]
        m.points = [m.points[0] + scored[0], m.points[1] + scored[1]]
        s = e.state
        self.same(e, f"hand {m.hand}'s end",
                  (s["hand"], s["cards"], s["carton"], s["withheld"], s["left_on_table"],
                   s["left_to"], s["totals"], s["order_digest"]),
                  (m.hand, m.won, scored, held, m.table, left_to, m.points, digest(m.cards)))
        first = m.first % 2
        for side in (first, 1 - first):
            if m.points[side] >= GAME:
                self.win(side, "points")
                return

    def forfeit(self, e: _Ev) -> None:
        m = self.m
        assert m is not None
        seat = int(e.state["seat"])
        if e.state["reason"] not in ("abandoned", "turn_time") or not 0 <= seat < m.n:
            raise _Bad(e.position, f"a forfeit by seat {seat} for {e.state['reason']!r}")
        if e.state["reason"] == "turn_time" and m.to_act != seat:
            raise _Bad(e.position, f"seat {seat} did not have the turn")
        self.same(e, "the side forfeiting", e.state["side"], seat % 2)
        self.win(1 - seat % 2, "forfeit")

    def win(self, side: int, reason: str) -> None:
        m = self.m
        assert m is not None
        e = self.take(CUARENTA_MATCH_WON, "the match's end")
        self.same(e, "the winner", (e.state["side"], e.state["reason"], e.state["totals"]),
                  (side, reason, m.points))
        m.over = True
        m.to_act = None
        pot = 2 * int(m.options.get("stake", "0"))
        rate = Fraction(m.options.get("commission_rate", "0"))
        house = pot * rate.numerator // rate.denominator
        moves: list[tuple[str, int | None, int]] = [("commission", None, house)] if house else []
        moves += [("payout", seat, a)
                  for seat, a in shares(pot - house, [i for i in range(m.n) if i % 2 == side])]
        self.pay(moves)


def match_shoes(records: list[dict[str, Any]]) -> set[str]:
    """The shoes of the export's Cuarenta hands (verified here)."""
    out = set()
    for r in records:
        e = r.get("event")
        if isinstance(e, dict) and e.get("topic") == CUARENTA_MATCH_HAND_BEGUN:
            out.add(str(_plain(e.get("state", {})).get("shoe_id")))
    return out


def verify_matches(records: list[dict[str, Any]], seed_of: SeedSource) -> list[Verdict]:
    """A verdict for every Cuarenta match of the export."""
    shuffles: dict[str, dict[str, Any]] = {}
    matches: dict[str, list[_Ev]] = {}
    for r in records:
        e = r.get("event")
        if not isinstance(e, dict):
            continue
        topic = e["topic"]
        if topic.startswith(MATCH_PREFIX):
            matches.setdefault(e["originator_id"], []).append(
                _Ev(e["position"], topic, _plain(e.get("state", {}))))
        elif topic == SHOE_SHUFFLED:
            shuffles[e["originator_id"]] = _plain(e.get("state", {}))
    out = []
    for mid, evs in matches.items():
        what = f"cuarenta match {mid}"
        if evs[0].topic != CUARENTA_MATCH_OPENED:
            out.append(Verdict(what, False, evs[0].position, "the export lacks its opening"))
            continue
        what += f" ({evs[0].state['table_id']})"
        try:
            out.append(Verdict(what, True, None, _Check(evs, shuffles, seed_of).run()))
        except _InPlay as in_play:
            out.append(Verdict(what, True, None, str(in_play)))
        except _Bad as bad:
            out.append(Verdict(what, False, bad.position, str(bad)))
        except (KeyError, TypeError, ValueError, IndexError) as exc:
            out.append(Verdict(what, False, evs[0].position, f"malformed event: {exc!r}"))
    return out
