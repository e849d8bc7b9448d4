"""A Cuarenta match as a state machine: commands in, a new state and the facts out.

Every command is a pure function ``(match, input) -> Step`` (the new match, the facts in order,
the money movements) or raises a ``domain.errors.RuleViolation`` naming the field and the rule;
a refused command changes nothing. Given the same rules, packs and commands, a match gives the
same facts.

Seats and turns: seats 0 … players-1 sit round the table in playing order; seat ``s`` plays for
side ``s % 2`` (in a four-handed match partners sit opposite: seats 0 and 2 against 1 and 3).
In each deal the dealer gives five cards to each player in one batch, starting with the seat
after the dealer and ending with himself; the seat after the dealer plays first, then each seat
in turn, the dealer last. The deal passes to the next seat after each hand.

Phases and who may act:
- ``AWAITING_PACK``: ``begin_hand(match, pack)``: the house commits the hand's shuffled pack.
- ``AWAITING_DEAL``: ``deal(match)``: five cards to each seat from the pack; rondas (and four
  of a kind) are announced and scored at once, in playing order.
- ``PLAYING``: ``play(match, seat, card, capture)`` by the seat whose turn it is. After the last
  card of a deal the match awaits the next deal; after the last deal of the hand the cartón is
  scored (``HandScored``) and the match awaits the next hand's pack.
- at any phase but ``OVER``: ``forfeit(match, seat, reason)``: the seat's side loses.
- ``OVER``: nothing. The match ends the moment a side reaches 40 points: at the capture, the
  ronda or the cartón that brings it there, mid-deal if need be (nothing after it is played or
  scored); or at a forfeit; or when four of a rank are dealt (option ``four_of_a_kind``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any

from domain.cards import Card
from domain.cuarenta.captures import Capture, capture_named, legal_captures
from domain.cuarenta.facts import (
    CardPlayed,
    CardsCaptured,
    Dealt,
    EndReason,
    Fact,
    Forfeited,
    ForfeitReason,
    FourOfAKindDealt,
    HandBegun,
    HandScored,
    MatchOpened,
    MatchWon,
    RondaScored,
)
from domain.cuarenta.ranks import card_order, check_pack, parse_card, parse_cards
from domain.cuarenta.rules import GAME_POINTS, HAND_SIZE, CuarentaRules, TableAtHandEnd
from domain.cuarenta.scoring import (
    Announcement,
    Source,
    announcement,
    carton,
    ronda_rank,
    withheld,
)
from domain.cuarenta.stakes import Movement, hold_stakes, pay_winner
from domain.errors import FailedPrecondition, InvalidArgument
from domain.shuffle import order_digest


class Phase(StrEnum):
    AWAITING_PACK = "awaiting_pack"
    AWAITING_DEAL = "awaiting_deal"
    PLAYING = "playing"
    OVER = "over"


@dataclass(frozen=True, slots=True)
class LastPlay:
    """The card last played, while it lies on the table (a capture of it by rank is a caída)."""

    seat: int
    card: Card


@dataclass(frozen=True, slots=True)
class Match:
    rules: CuarentaRules
    dealer: int  # the current hand's dealer (the next hand's, awaiting a pack)
    phase: Phase = Phase.AWAITING_PACK
    points: tuple[int, int] = (0, 0)  # side 0, side 1
    hand: int = 0  # the current hand's number (the last one's, awaiting a pack)
    deals: int = 0  # deals dealt in this hand
    turn: int = 0  # plays made in this hand
    pack: tuple[Card, ...] = ()  # this hand's pack, in dealing order (SECRET until dealt)
    hands: tuple[tuple[Card, ...], ...] = ()  # each seat's cards (PRIVATE to the seat)
    table: tuple[Card, ...] = ()  # face up, in the order they came
    won: tuple[tuple[Card, ...], tuple[Card, ...]] = ((), ())  # each side's cards this hand
    to_act: int | None = None  # the seat whose turn it is (PLAYING only)
    last_played: LastPlay | None = None
    last_capturer: int | None = None  # the side that captured last in this hand
    winner: int | None = None
    end: EndReason | None = None

    @property
    def players(self) -> int:
        return self.rules.players

    @property
    def first(self) -> int:
        """The seat that plays first in each deal of the hand: the dealer's next."""
        return (self.dealer + 1) % self.players

    @property
    def stock(self) -> tuple[Card, ...]:
        """The cards of the pack not dealt yet."""
        return self.pack[self.deals * HAND_SIZE * self.players :]


def side_of(seat: int) -> int:
    """A seat's side: partners sit opposite, so seats 0 and 2 are side 0, 1 and 3 side 1."""
    return seat % 2


@dataclass(frozen=True, slots=True)
class Step:
    match: Match
    facts: tuple[Fact, ...] = ()
    movements: tuple[Movement, ...] = ()


@dataclass(frozen=True, slots=True)
class Play:
    """A legal play: the seat, its card, and what it takes (None: the card stays on the table)."""

    seat: int
    card: Card
    capture: Capture | None

    @property
    def codes(self) -> tuple[str, ...]:
        """The capture set as codes, in table order (() for a card left on the table)."""
        return tuple(c.code for c in self.capture.taken) if self.capture else ()


# --- checks -----------------------------------------------------------------------------------


_AWAITING = {
    Phase.AWAITING_PACK: "the next hand's pack",
    Phase.AWAITING_DEAL: "the deal",
    Phase.PLAYING: "a play",
}


def _require(match: Match, phase: Phase, action: str) -> None:
    if match.phase is Phase.OVER:
        raise FailedPrecondition("match", "MATCH_OVER", f"the match is over: cannot {action}")
    if match.phase is not phase:
        raise FailedPrecondition(
            "match",
            "WRONG_PHASE",
            f"cannot {action} now: the match awaits {_AWAITING[match.phase]}",
        )


def _seat(match: Match, seat: object) -> int:
    if isinstance(seat, bool) or not isinstance(seat, int) or not 0 <= seat < match.players:
        raise InvalidArgument(
            "seat", "UNKNOWN_SEAT", f"must be a seat 0 to {match.players - 1}, got {seat!r}"
        )
    return seat


def turn_expired(rules: CuarentaRules, elapsed_seconds: float) -> bool:
    """Whether a player who has had the turn for ``elapsed_seconds`` (measured by the caller:
    the rule book has no clock) has run out of time and forfeits (``forfeit(…, TURN_TIME)``)."""
    return elapsed_seconds >= rules.turn_seconds


# --- the commands -----------------------------------------------------------------------------


def open_match(rules: CuarentaRules, dealer: int | None = None) -> Step:
    """A new match: scores at 0, the table empty, each side's stake held. The first hand's
    dealer is ``dealer`` (default: the last seat, so seat 0 plays first); how it is drawn is the
    caller's (Pagat: cards dealt face up until the first diamond)."""
    dealer = rules.players - 1 if dealer is None else dealer
    if isinstance(dealer, bool) or not isinstance(dealer, int) or not 0 <= dealer < rules.players:
        raise InvalidArgument(
            "dealer", "UNKNOWN_SEAT", f"must be a seat 0 to {rules.players - 1}, got {dealer!r}"
        )
    match = Match(rules=rules, dealer=dealer, hands=((),) * rules.players)
    return Step(match, (MatchOpened(rules.players, dealer, rules.options()),), hold_stakes(rules))


def begin_hand(match: Match, pack: Sequence[Card]) -> Step:
    """A new hand with its own shuffled pack (a new committed shoe per hand; the cards in dealing
    order, e.g. ``ranks.shuffled_pack``). The table starts empty."""
    _require(match, Phase.AWAITING_PACK, "begin a hand")
    cards = check_pack(pack)
    hand = match.hand + 1
    new = replace(
        match,
        phase=Phase.AWAITING_DEAL,
        hand=hand,
        deals=0,
        turn=0,
        pack=cards,
        **_between_hands(match),
    )
    return Step(new, (HandBegun(hand, match.dealer, new.first, order_digest(cards)),))


def deal(match: Match) -> Step:
    """Five cards to each seat in one batch, from the seat after the dealer to the dealer; then
    the announcements, in the same order: four of a rank ends the match (``four_of_a_kind =
    wins_match``), three of a rank scores a ronda."""
    _require(match, Phase.AWAITING_DEAL, "deal")
    rules, n = match.rules, match.players
    number = match.deals + 1
    start = match.deals * HAND_SIZE * n
    order = [(match.first + k) % n for k in range(n)]
    hands = list(match.hands)
    facts: list[Fact] = []
    for k, seat in enumerate(order):
        cards = match.pack[start + k * HAND_SIZE : start + (k + 1) * HAND_SIZE]
        hands[seat] = cards
        facts.append(Dealt(match.hand, number, seat, cards))
    new = replace(
        match,
        phase=Phase.PLAYING,
        deals=number,
        hands=tuple(hands),
        to_act=match.first,
        last_played=match.last_played if rules.caida_across_deals else None,
    )
    for seat in order:
        said = announcement(rules, hands[seat])
        if said is None:
            continue
        side = side_of(seat)
        if said is Announcement.FOUR_OF_A_KIND:
            rank = ronda_rank(hands[seat]) or ""
            facts.append(FourOfAKindDealt(match.hand, number, seat, side, rank))
            return _won(new, side, EndReason.FOUR_OF_A_KIND, facts)
        held = withheld(rules, Source.RONDA, new.points[side])
        points = 0 if held else rules.ronda_points
        new = replace(new, points=_add(new.points, side, points))
        facts.append(
            RondaScored(
                match.hand,
                number,
                seat,
                side,
                points,
                rules.ronda_points if held else 0,
                new.points[side],
            )
        )
        if new.points[side] >= GAME_POINTS:
            return _won(new, side, EndReason.POINTS, facts)
    return Step(new, tuple(facts))


def play(
    match: Match,
    seat: int,
    card: Card | str,
    capture: Iterable[Card | str] | str | None = None,
) -> Step:
    """The seat whose turn it is plays ``card`` from its hand.

    ``capture`` names the table cards the card takes (the whole set: the base and its run):
    ``None`` takes what the card takes when there is no choice (nothing, or its only legal set)
    and is refused when there are several; ``()`` leaves the card on the table (refused under
    ``must_capture`` when it could take); a set must be a legal capture (``capture_named``: of
    two cards of a rank the table holds, either may be named)."""
    _require(match, Phase.PLAYING, "play")
    seat = _seat(match, seat)
    if seat != match.to_act:
        raise FailedPrecondition(
            "seat", "OUT_OF_TURN", f"it is seat {match.to_act}'s turn, not seat {seat}'s"
        )
    played = parse_card(card)
    held = match.hands[seat]
    if played not in held:
        raise FailedPrecondition("card", "CARD_NOT_HELD", f"seat {seat} does not hold {played}")
    rules, side = match.rules, side_of(seat)
    chosen = _chosen(match, played, _caida_target(match, side), side, capture)

    hands = list(match.hands)
    hands[seat] = tuple(c for c in held if c != played)
    turn = match.turn + 1
    captures = chosen is not None
    facts: list[Fact] = [CardPlayed(match.hand, match.deals, turn, seat, played, captures)]
    if chosen is None:
        new = replace(
            match,
            hands=tuple(hands),
            turn=turn,
            table=(*match.table, played),
            last_played=LastPlay(seat, played),
        )
    else:
        taken = set(chosen.taken)
        won = list(match.won)
        won[side] = (*won[side], played, *chosen.taken)
        new = replace(
            match,
            hands=tuple(hands),
            turn=turn,
            table=tuple(c for c in match.table if c not in taken),
            won=(won[0], won[1]),
            points=_add(match.points, side, chosen.points),
            last_played=None,
            last_capturer=side,
        )
        facts.append(
            CardsCaptured(
                match.hand,
                match.deals,
                turn,
                seat,
                side,
                played,
                chosen.taken,
                chosen.kind,
                chosen.points,
                chosen.withheld,
                new.points[side],
            )
        )
        if new.points[side] >= GAME_POINTS:
            return _won(new, side, EndReason.POINTS, facts)
    if any(new.hands):
        return Step(replace(new, to_act=(seat + 1) % match.players), tuple(facts))
    if new.deals < rules.deals_per_hand:
        return Step(replace(new, phase=Phase.AWAITING_DEAL, to_act=None), tuple(facts))
    return _end_hand(new, facts)


def forfeit(match: Match, seat: int, reason: ForfeitReason | str) -> Step:
    """The seat's side forfeits: ``abandoned`` (at any time before the end) or ``turn_time``
    (only the seat whose turn it is, once ``turn_expired``). The other side wins the stakes."""
    if match.phase is Phase.OVER:
        raise FailedPrecondition("match", "MATCH_OVER", "the match is over: cannot forfeit")
    seat = _seat(match, seat)
    try:
        why = ForfeitReason(reason)
    except ValueError:
        names = ", ".join(r.value for r in ForfeitReason)
        raise InvalidArgument(
            "reason", "UNKNOWN_REASON", f"unknown reason {reason!r} (one of {names})"
        ) from None
    on_turn = match.phase is Phase.PLAYING and seat == match.to_act
    if why is ForfeitReason.TURN_TIME and not on_turn:
        raise FailedPrecondition(
            "seat", "NOT_ON_TURN", f"seat {seat} does not have the turn: it cannot run out of time"
        )
    side = side_of(seat)
    return _won(match, 1 - side, EndReason.FORFEIT, [Forfeited(seat, side, why)])


# --- queries ----------------------------------------------------------------------------------


def legal_plays(match: Match) -> tuple[Play, ...]:
    """The legal plays of the seat whose turn it is: for each card of its hand (in hand order)
    each capture it may make (one per distinct outcome, see ``legal_captures``: of two cards of
    a rank either may be named), then leaving it on the table where that is allowed."""
    if match.phase is not Phase.PLAYING or match.to_act is None:
        return ()
    seat = match.to_act
    side = side_of(seat)
    target = _caida_target(match, side)
    plays: list[Play] = []
    for card in match.hands[seat]:
        captures = legal_captures(match.rules, match.table, card, target, match.points[side])
        plays.extend(Play(seat, card, c) for c in captures)
        if not (match.rules.must_capture and captures):
            plays.append(Play(seat, card, None))
    return tuple(plays)


@dataclass(frozen=True, slots=True)
class View:
    """What one seat (or, ``seat`` None, a watcher) may see of the match: everything face up,
    its own cards, and of the others' only how many they hold. Never the pack."""

    phase: Phase
    hand: int
    deal: int
    dealer: int
    to_act: int | None
    points: tuple[int, int]
    table: tuple[Card, ...]
    last_played: LastPlay | None
    held: tuple[int, ...]  # how many cards each seat holds
    own: tuple[Card, ...]  # the seat's own cards (() for a watcher)
    won: tuple[int, int]  # how many cards each side has won this hand
    stock: int  # cards not dealt yet
    winner: int | None


def view(match: Match, seat: int | None = None) -> View:
    """The match as ``seat`` sees it (None: as a watcher, a display or the back office)."""
    if seat is not None:
        seat = _seat(match, seat)
    return View(
        phase=match.phase,
        hand=match.hand,
        deal=match.deals,
        dealer=match.dealer,
        to_act=match.to_act,
        points=match.points,
        table=match.table,
        last_played=match.last_played,
        held=tuple(len(h) for h in match.hands),
        own=() if seat is None else match.hands[seat],
        won=(len(match.won[0]), len(match.won[1])),
        stock=len(match.stock),
        winner=match.winner,
    )


# --- inside -----------------------------------------------------------------------------------


def _add(points: tuple[int, int], side: int, more: int) -> tuple[int, int]:
    return (points[0] + more, points[1]) if side == 0 else (points[0], points[1] + more)


def _caida_target(match: Match, side: int) -> Card | None:
    """The card a capture by rank would take as a caída: the opponent's last card, still on the
    table."""
    last = match.last_played
    return last.card if last is not None and side_of(last.seat) != side else None


def _codes(capture: Capture) -> str:
    return " ".join(c.code for c in sorted(capture.taken, key=card_order))


def _chosen(
    match: Match,
    card: Card,
    target: Card | None,
    side: int,
    capture: Iterable[Card | str] | str | None,
) -> Capture | None:
    """The legal capture the play names, None for a card left on the table."""
    rules, table, points = match.rules, match.table, match.points[side]
    if capture is None:
        legal = legal_captures(rules, table, card, target, points)
        if len(legal) <= 1:
            return legal[0] if legal else None
        choices = " | ".join(_codes(c) for c in legal)
        raise FailedPrecondition(
            "capture",
            "CAPTURE_CHOICE_REQUIRED",
            f"{card} can take {len(legal)} sets: name one ({choices})",
        )
    named = parse_cards(capture.split() if isinstance(capture, str) else capture, "capture")
    if not named:
        if rules.must_capture and legal_captures(rules, table, card, target, points):
            raise FailedPrecondition(
                "capture", "MUST_CAPTURE", f"{card} can capture, and a possible capture is taken"
            )
        return None
    absent = [c.code for c in named if c not in table]
    if absent:
        raise FailedPrecondition(
            "capture", "NOT_ON_TABLE", f"not on the table: {' '.join(absent)}"
        )
    chosen = capture_named(rules, table, card, named, target, points)
    if chosen is not None:
        return chosen
    codes = " ".join(c.code for c in sorted(named, key=card_order))
    allowed = " | ".join(_codes(c) for c in legal_captures(rules, table, card, target, points))
    raise FailedPrecondition(
        "capture",
        "ILLEGAL_CAPTURE",
        f"{card} cannot take {codes}: same rank, or A-7 summing to it, then the whole run "
        f"upward; it can take {allowed or 'nothing'}",
    )


def _between_hands(match: Match) -> dict[str, Any]:
    """What a match holds between two hands (``replace``'s fields): no card in a hand, on the
    table or won, nobody to act, no last play or capturer."""
    return {"hands": ((),) * match.players, "table": (), "won": ((), ()), "to_act": None,
            "last_played": None, "last_capturer": None}


def _end_hand(match: Match, facts: list[Fact]) -> Step:
    """The hand's last card is played: the cards left on the table, the cartón, the next deal."""
    rules = match.rules
    left = match.table
    left_to: int | None = None
    won = list(match.won)
    if (
        rules.table_at_hand_end is TableAtHandEnd.LAST_CAPTURER
        and left
        and match.last_capturer is not None
    ):
        left_to = match.last_capturer
        won[left_to] = (*won[left_to], *left)
    counts = (len(won[0]), len(won[1]))
    points = [0, 0]
    held = [0, 0]
    for side in (0, 1):
        earned = carton(rules, counts[side])
        if withheld(rules, Source.CARTON, match.points[side]):
            held[side] = earned
        else:
            points[side] = earned
    totals = (match.points[0] + points[0], match.points[1] + points[1])
    facts.append(
        HandScored(
            match.hand,
            counts,
            (points[0], points[1]),
            (held[0], held[1]),
            left,
            left_to,
            totals,
        )
    )
    new = replace(
        match,
        phase=Phase.AWAITING_PACK,
        points=totals,
        dealer=(match.dealer + 1) % match.players,
        pack=(),
        **_between_hands(match),
    )
    # Both cartóns are counted at once; should both sides reach 40, the side that does not
    # deal (the first to play, "la mano") counts first and wins.
    first_side = side_of(match.first)
    for side in (first_side, 1 - first_side):
        if totals[side] >= GAME_POINTS:
            return _won(new, side, EndReason.POINTS, facts)
    return Step(new, tuple(facts))


def _won(match: Match, side: int, reason: EndReason, facts: list[Fact]) -> Step:
    over = replace(match, phase=Phase.OVER, winner=side, end=reason, to_act=None)
    facts.append(MatchWon(side, reason, over.points))
    return Step(over, tuple(facts), pay_winner(match.rules, side))
