"""One game (juego) of Treinta y Una as a state machine driven by commands.

Each command is a pure function ``(rules, round, input) -> Step``: the new round, the facts in
order (``facts``) and the money movements in order (``movements``). A command the rules refuse
raises a ``domain.errors.RuleViolation`` naming the field at fault and the rule, and changes
nothing. Everything follows from the commands and the shoe's cards: the same commands on the
same shoe give the same facts and movements.

Phases and who may act (docs/treinta-y-una.md draws it):

- ``betting``: ``open_round`` (the croupier) opens it with the banker and his bank;
  ``place_stake`` (each punter, once); ``deal`` (the croupier, for the banker) closes it;
  ``cancel_round`` (the croupier) calls it off, every stake and the bank given back.
- ``playing``: the turns, from the mano, right to left, the banker last; only the player whose
  turn it is may say ``carta`` or ``me_planto``; past the turn time the croupier may
  ``stand_for_absent`` for him (and for nobody else).
- ``showdown``: the banker stood (or went over 31); ``settle`` (the croupier) shows the hands,
  collects and pays.
- ``settled``: the round says who holds the bank next (``next_banker``) and which stakes stay
  for the next game (``carried``); ``open_round`` of the next game takes both.

The deal: three cards to each hand, one at a time, right to left: hands in turn order (the
punters who staked, from the mano, then the banker), three passes; the ``k``-th of ``h`` hands
gets the cards at shoe positions ``k``, ``h + k`` and ``2h + k``, face down. Each "carta" is the
next card of the shoe, face up.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from enum import StrEnum

from domain.cards import Card, canonical_deck
from domain.errors import FailedPrecondition, InvalidArgument, NotFound
from domain.treinta_y_una.banker import BankerChoice, BankerReason, next_banker, turn_order
from domain.treinta_y_una.facts import (
    CardDealt,
    CardDrawn,
    CarriedStakeReturned,
    Fact,
    HandBust,
    HandShown,
    Planted,
    ReturnReason,
    RoundCancelled,
    RoundOpened,
    RoundSettled,
    ShowdownDue,
    StakeCarried,
    StakePlaced,
    StakeReturned,
    TurnBegan,
)
from domain.treinta_y_una.hand import DECK, HandValue, check_spanish, evaluate
from domain.treinta_y_una.movements import Movement, MovementKind, movement
from domain.treinta_y_una.rules import BustRule, TableRules
from domain.treinta_y_una.settlement import Entry, collect_at_once, settle_stakes
from domain.treinta_y_una.stakes import Stake, bank_room, check_amount, check_cover, held_for

CARDS_DEALT = 3  # "tres cartas a cada jugador y a sí mismo"


class Phase(StrEnum):
    BETTING = "betting"
    PLAYING = "playing"
    SHOWDOWN = "showdown"
    SETTLED = "settled"


@dataclass(frozen=True, slots=True)
class Hand:
    """A hand: its cards in the order dealt, each with its shoe position; the first three face
    down."""

    player: str
    positions: tuple[int, ...] = ()
    cards: tuple[Card, ...] = ()
    stood: bool = False  # "me planto" said (or said for him)
    out: bool = False  # over 31 and lost at once

    @property
    def value(self) -> HandValue:
        return evaluate(self.cards)

    @property
    def face_down(self) -> tuple[Card, ...]:
        return self.cards[:CARDS_DEALT]

    @property
    def face_up(self) -> tuple[Card, ...]:
        return self.cards[CARDS_DEALT:]


@dataclass(frozen=True, slots=True)
class Round:
    """One game. ``seats`` lists the table counter-clockwise seen from above (each seat's next
    sits at its right); ``bank`` is what the bank holds now."""

    seats: tuple[str, ...]
    banker: str
    bank: int
    stakes: tuple[Stake, ...] = ()  # in the order accepted (carried stakes first)
    phase: Phase = Phase.BETTING
    hands: tuple[Hand, ...] = ()  # in turn order, the banker's last
    turn: int | None = None  # index in ``hands`` of the hand whose turn it is
    shoe: tuple[Card, ...] = ()
    next_position: int = 0  # the shoe position of the next card
    next_banker: BankerChoice | None = None  # once settled
    carried: tuple[Stake, ...] = ()  # once settled: the void stakes, for the next game

    @property
    def order(self) -> tuple[str, ...]:
        """The seats in turn order: the mano first, the banker last."""
        return turn_order(self.seats, self.banker)

    @property
    def mano(self) -> str:
        return self.order[0]

    @property
    def whose_turn(self) -> str | None:
        return None if self.turn is None else self.hands[self.turn].player

    def stake_of(self, player: str) -> Stake | None:
        return next((s for s in self.stakes if s.player == player), None)

    def hand_of(self, player: str) -> Hand:
        """The player's hand (all of it: for the player himself, and at the showdown)."""
        for hand in self.hands:
            if hand.player == player:
                return hand
        raise NotFound("player", "NO_HAND", f"{player!r} has no hand in this game")


@dataclass(frozen=True, slots=True)
class Step:
    round: Round
    facts: tuple[Fact, ...] = ()
    movements: tuple[Movement, ...] = ()


# --- checks -----------------------------------------------------------------------------------


def _check_phase(round_: Round, *phases: Phase) -> None:
    if round_.phase not in phases:
        wanted = " or ".join(p.value for p in phases)
        raise FailedPrecondition(
            "phase", "WRONG_PHASE", f"the game is {round_.phase.value}, not {wanted}"
        )


def _check_seated(round_: Round, player: object, field: str = "player") -> str:
    if not isinstance(player, str) or player not in round_.seats:
        raise NotFound(field, "NOT_SEATED", f"{player!r} has no seat at this table")
    return player


def _check_turn(round_: Round, player: object) -> int:
    """The index of the player's hand, if it is his turn to act."""
    _check_phase(round_, Phase.PLAYING)
    name = _check_seated(round_, player)
    turn = round_.whose_turn
    if name != turn:
        if all(h.player != name for h in round_.hands):
            raise FailedPrecondition(
                "player", "NOT_IN_GAME", f"{name} placed no stake in this game; it is {turn}'s turn"
            )
        raise FailedPrecondition("player", "NOT_YOUR_TURN", f"it is {turn}'s turn, not {name}'s")
    assert round_.turn is not None
    return round_.turn


def check_shoe(shoe: Sequence[Card], field: str = "shoe") -> tuple[Card, ...]:
    """A shoe of one 40-card Spanish deck, each card once, in dealing order."""
    cards = tuple(shoe)
    check_spanish(cards, field)
    if len(cards) != len(canonical_deck(DECK)) or len(set(cards)) != len(cards):
        raise InvalidArgument(
            field, "BAD_SHOE", f"must hold the 40 cards of one SPANISH-40 deck, got {len(cards)}"
        )
    return cards


# --- the commands -------------------------------------------------------------------------------


def open_round(
    rules: TableRules,
    seats: Sequence[str],
    banker: BankerChoice,
    bank: int,
    carried: Sequence[Stake] = (),
) -> Step:
    """Open a game: the seats, the banker (drawn by lot, or the last game's ``next_banker``)
    and what he puts up as the bank; ``carried``: the last game's void stakes, which stay while
    their player is seated, is not the banker and the new bank covers them (in turn order);
    the others go back to their players."""
    table = tuple(seats)
    if not 2 <= len(table) <= rules.max_players:
        raise InvalidArgument(
            "seats", "OUT_OF_RANGE", f"must be 2 to {rules.max_players} players, got {len(table)}"
        )
    for i, name in enumerate(table):
        if not isinstance(name, str) or not name:
            raise InvalidArgument(f"seats[{i}]", "BAD_PLAYER", "must be a non-empty name")
        if table.index(name) != i:
            raise InvalidArgument(f"seats[{i}]", "DUPLICATE_SEAT", f"{name} is seated twice")
    if banker.player not in table:
        raise InvalidArgument("banker", "NOT_SEATED", f"{banker.player!r} has no seat")
    if not isinstance(bank, int) or isinstance(bank, bool) or bank < 0:
        raise InvalidArgument("bank", "BAD_AMOUNT", "must be whole minor units, at least 0")
    round_ = Round(table, banker.player, bank)
    facts: list[Fact] = [RoundOpened(table, banker, bank, round_.mano)]
    moves: list[Movement] = list(movement(MovementKind.BANK_PUT_UP, banker.player, bank))
    kept: list[Stake] = []
    position = {name: i for i, name in enumerate(round_.order)}
    for stake in sorted(carried, key=lambda s: position.get(s.player, len(position))):
        if stake.player not in table:
            reason: ReturnReason | None = ReturnReason.NOT_SEATED
        elif stake.player == banker.player:
            reason = ReturnReason.BANKER
        elif bank_room(rules, bank, [*kept, stake]) < 0:
            reason = ReturnReason.BANK_CANNOT_COVER
        else:
            reason = None
        if reason is None:
            kept.append(stake)
            facts.append(StakeCarried(stake.player, stake.amount))
        else:
            moves += movement(MovementKind.RETURN, stake.player, stake.held)
            facts.append(CarriedStakeReturned(stake.player, stake.held, reason))
    return Step(replace(round_, stakes=tuple(kept)), tuple(facts), tuple(moves))


def place_stake(rules: TableRules, round_: Round, player: str, amount: int) -> Step:
    """A punter's stake, before the deal: one a game, within the table's limits and the bank's
    cover. He puts up the stake and its cover (``stakes.held_for``)."""
    _check_phase(round_, Phase.BETTING)
    name = _check_seated(round_, player)
    if name == round_.banker:
        raise FailedPrecondition("player", "BANKER_CANNOT_STAKE", f"{name} holds the bank")
    if round_.stake_of(name) is not None:
        raise FailedPrecondition("player", "ALREADY_STAKED", f"{name} has a stake in this game")
    check_amount(rules, amount)
    check_cover(rules, round_.bank, round_.stakes, amount)
    held = held_for(amount)
    stake = Stake(name, amount, held)
    moves = movement(MovementKind.STAKE, name, amount) + movement(
        MovementKind.COVER, name, held - amount
    )
    return Step(
        replace(round_, stakes=(*round_.stakes, stake)), (StakePlaced(name, amount, held),), moves
    )


def cancel_round(rules: TableRules, round_: Round) -> Step:
    """Call the game off before the deal (nobody staked, the table closes): every stake, a
    carried one too, goes back to its player, the bank to the banker; the banker keeps the
    bank for the next game."""
    _check_phase(round_, Phase.BETTING)
    moves: list[Movement] = []
    facts: list[Fact] = []
    for stake in round_.stakes:
        moves += movement(MovementKind.RETURN, stake.player, stake.held)
        facts.append(StakeReturned(stake.player, stake.held))
    moves += movement(MovementKind.BANK_RETURNED, round_.banker, round_.bank)
    chosen = BankerChoice(round_.banker, BankerReason.KEPT)
    facts.append(RoundCancelled(chosen))
    after = replace(round_, phase=Phase.SETTLED, bank=0, stakes=(), next_banker=chosen)
    return Step(after, tuple(facts), tuple(moves))


def deal(rules: TableRules, round_: Round, shoe: Sequence[Card]) -> Step:
    """Close the stakes and deal three cards face down to each punter who staked and to the
    banker, one at a time, right to left; the mano's turn begins."""
    _check_phase(round_, Phase.BETTING)
    if not round_.stakes:
        raise FailedPrecondition("stakes", "NO_STAKES", "nobody has placed a stake")
    cards = check_shoe(shoe)
    staked = {s.player for s in round_.stakes}
    players = [p for p in round_.order if p in staked] + [round_.banker]
    h = len(players)
    hands = tuple(
        Hand(
            p,
            tuple(r * h + k for r in range(CARDS_DEALT)),
            tuple(cards[r * h + k] for r in range(CARDS_DEALT)),
        )
        for k, p in enumerate(players)
    )
    facts: list[Fact] = [
        CardDealt(players[k], r * h + k) for r in range(CARDS_DEALT) for k in range(h)
    ]
    facts.append(TurnBegan(players[0]))
    after = replace(
        round_,
        phase=Phase.PLAYING,
        hands=hands,
        turn=0,
        shoe=cards,
        next_position=CARDS_DEALT * h,
    )
    return Step(after, tuple(facts))


def carta(rules: TableRules, round_: Round, player: str) -> Step:
    """'Carta': the next card of the shoe, face up, to the player whose turn it is. Under
    ``bust = loses_at_once`` a hand over 31 is shown and loses at once (a punter's stake goes
    to the bank; the banker's turn ends the game's turns) and the turn passes."""
    i = _check_turn(round_, player)
    if round_.next_position >= len(round_.shoe):
        raise FailedPrecondition("shoe", "SHOE_EXHAUSTED", "no card is left: say me planto")
    hand = round_.hands[i]
    position = round_.next_position
    card = round_.shoe[position]
    hand = replace(hand, positions=(*hand.positions, position), cards=(*hand.cards, card))
    after = replace(round_, next_position=position + 1)
    facts: list[Fact] = [CardDrawn(hand.player, position, card)]
    value = hand.value
    if not (value.bust and rules.bust is BustRule.LOSES_AT_ONCE):
        return Step(_with_hand(after, i, hand), tuple(facts))
    hand = replace(hand, out=True)
    after = _with_hand(after, i, hand)
    moves: tuple[Movement, ...] = ()
    if hand.player == after.banker:
        facts.append(HandBust(hand.player, hand.cards, value.total))
    else:
        stake = after.stake_of(hand.player)
        assert stake is not None
        lost, moves, commission = collect_at_once(rules, after.banker, stake)
        after = replace(
            after,
            stakes=tuple(lost if s.player == lost.player else s for s in after.stakes),
            bank=after.bank + stake.amount - commission,
        )
        facts.append(HandBust(hand.player, hand.cards, value.total))
    passed = _next_turn(after)
    return Step(passed.round, (*facts, *passed.facts), moves)


def me_planto(rules: TableRules, round_: Round, player: str) -> Step:
    """'Me planto': the player whose turn it is stands; the turn passes (after the banker's:
    the showdown)."""
    i = _check_turn(round_, player)
    return _stand(round_, i, for_absent=False)


def stand_for_absent(rules: TableRules, round_: Round, player: str, waited_seconds: int) -> Step:
    """The croupier says 'me planto' for the player whose turn it is, once the table's turn
    time has passed (``waited_seconds``: since his turn began, by the caller's clock)."""
    if rules.turn_seconds == 0:
        raise FailedPrecondition(
            "turn_seconds", "NO_TURN_TIME", "this table has no turn time: the player must act"
        )
    if (
        not isinstance(waited_seconds, int)
        or isinstance(waited_seconds, bool)
        or waited_seconds < 0
    ):
        raise InvalidArgument("waited_seconds", "BAD_DURATION", "must be whole seconds, at least 0")
    i = _check_turn(round_, player)
    if waited_seconds < rules.turn_seconds:
        raise FailedPrecondition(
            "waited_seconds",
            "TURN_TIME_NOT_UP",
            f"{player} has {rules.turn_seconds - waited_seconds} s of his "
            f"{rules.turn_seconds} s left",
        )
    return _stand(round_, i, for_absent=True)


def settle(rules: TableRules, round_: Round) -> Step:
    """The showdown: the banker shows his cards, then each punter in turn order (a hand shown
    when it went over 31 is not shown again); the bank collects, then pays; the bank goes back
    to the banker; the round names the next banker and the stakes carried over."""
    _check_phase(round_, Phase.SHOWDOWN)
    banker_hand = round_.hands[-1]
    punters = round_.hands[:-1]
    facts: list[Fact] = [_shown(banker_hand)] if not banker_hand.out else []
    facts += [_shown(h) for h in punters if not h.out]
    entries = []
    for hand in punters:
        stake = round_.stake_of(hand.player)
        assert stake is not None
        entries.append(Entry(stake, hand.value))
    result = settle_stakes(rules, round_.banker, round_.bank, banker_hand.value, entries)
    chosen = next_banker(
        rules,
        round_.seats,
        round_.banker,
        banker_hand.value,
        [(h.player, h.value) for h in punters],
    )
    facts += result.facts
    facts.append(RoundSettled(chosen, tuple((s.player, s.amount) for s in result.carried)))
    after = replace(
        round_,
        phase=Phase.SETTLED,
        bank=0,
        stakes=(),
        next_banker=chosen,
        carried=result.carried,
    )
    return Step(after, tuple(facts), result.movements)


# --- the turns ------------------------------------------------------------------------------


def _with_hand(round_: Round, i: int, hand: Hand) -> Round:
    hands = list(round_.hands)
    hands[i] = hand
    return replace(round_, hands=tuple(hands))


def _stand(round_: Round, i: int, for_absent: bool) -> Step:
    hand = round_.hands[i]
    after = _with_hand(round_, i, replace(hand, stood=True))
    passed = _next_turn(after)
    return Step(passed.round, (Planted(hand.player, for_absent), *passed.facts))


def _next_turn(round_: Round) -> Step:
    """The turn passes to the next hand; after the banker's, to the showdown."""
    assert round_.turn is not None
    nxt = round_.turn + 1
    if nxt >= len(round_.hands):
        return Step(replace(round_, turn=None, phase=Phase.SHOWDOWN), (ShowdownDue(),))
    return Step(replace(round_, turn=nxt), (TurnBegan(round_.hands[nxt].player),))


def _shown(hand: Hand) -> HandShown:
    value = hand.value
    return HandShown(hand.player, hand.cards, value.total, value.real, value.bust)
