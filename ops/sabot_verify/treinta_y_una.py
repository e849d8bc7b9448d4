"""Every Treinta y Una round of an export recomputed from its shoe's seed (RULES.md §2, seed 003,
docs/treinta-y-una.md), with nothing shared with the server but the topics:

- the round's shoe: its commitment, one SPANISH-40 deck shuffled by SABOT-SHUFFLE-1 (no cut);
- the bank's lot (SABOT-TYU-BANK-LOT-1: HMAC_DRBG with the seed, the shoe id as the nonce);
- the deal right to left (the k-th of h hands gets positions k, h + k, 2h + k) and each
  face-down card's commitment (SABOT-HIDDEN-1); each "carta" the next card of the shoe;
- every card shown (at a bust or the showdown): the seed's card at its position, its salt;
  each shown hand's total and whether it is a treinta y una real;
- each stake's outcome and multiple against the banker's hand; who holds the bank next.

A changed card is found at its position (``Verdict.position`` is the event's log position).
"""

from __future__ import annotations

import hashlib
import hmac
import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any
from uuid import UUID

from sabot_verify.shoe import Drbg, commitment, cut, shuffled
from sabot_verify.shoes import ShoeContext, Verdict, register_game
from sabot_verify.topics import (
    SHOE_CUT,
    SHOE_SHUFFLED,
    TREINTA_Y_UNA_ROUND_CARD_DEALT,
    TREINTA_Y_UNA_ROUND_CARD_DRAWN,
    TREINTA_Y_UNA_ROUND_HAND_BUST,
    TREINTA_Y_UNA_ROUND_HAND_SHOWN,
    TREINTA_Y_UNA_ROUND_OPENED,
    TREINTA_Y_UNA_ROUND_SETTLED,
    TREINTA_Y_UNA_ROUND_STAKE_SETTLED,
)

LOT = b"SABOT-TYU-BANK-LOT-1"
HIDDEN = b"SABOT-HIDDEN-1"
ROUND_PREFIX = TREINTA_Y_UNA_ROUND_OPENED.rsplit(".", 1)[0] + "."
FIGURES = ("10", "11", "12")


@dataclass
class _Ev:
    position: int
    originator: str
    topic: str
    state: dict[str, Any]


class _Bad(Exception):
    def __init__(self, position: int, message: str) -> None:
        super().__init__(message)
        self.position = position


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


def value(codes: list[str]) -> tuple[int, bool, bool]:
    """(best total not above 31 or the lowest, real, over 31) of a hand of SPANISH-40 codes."""
    ranks = [c[:-1] for c in codes]
    low = sum(10 if r in FIGURES else int(r) for r in ranks)
    aces = ranks.count("1")
    high = min(aces, max(31 - low, 0) // 10)
    total = low + 10 * high
    real = len(ranks) == 3 and aces == 1 and sum(r in FIGURES for r in ranks) == 2
    return total, real, total > 31


def lot_index(seed: bytes, nonce: UUID, seats: int) -> int:
    return Drbg(seed, nonce.bytes, LOT).below(seats)


SeedSource = Callable[[str, dict[str, Any]], bytes | None]


@dataclass
class _Round:
    round_id: str
    events: list[_Ev] = field(default_factory=list)


def round_shoes(records: list[dict[str, Any]]) -> set[str]:
    """The shoes of the export's Treinta y Una rounds (verified here, not as Trente et
    Quarante shoes)."""
    out = set()
    for r in records:
        e = r.get("event")
        if isinstance(e, dict) and e.get("topic") == TREINTA_Y_UNA_ROUND_OPENED:
            out.add(str(_plain(e.get("state", {})).get("shoe_id")))
    return out


def verify_rounds(records: list[dict[str, Any]], seed_of: SeedSource) -> list[Verdict]:
    shoes: dict[str, list[_Ev]] = {}
    rounds: dict[str, _Round] = {}
    for r in records:
        e = r.get("event")
        if not isinstance(e, dict):
            continue
        topic = e["topic"]
        if not (topic.startswith(ROUND_PREFIX) or topic in (SHOE_SHUFFLED, SHOE_CUT)):
            continue  # not a round's, nor its shoe's: nothing to unwrap
        ev = _Ev(e["position"], e["originator_id"], topic, _plain(e.get("state", {})))
        if ev.topic.startswith(ROUND_PREFIX):
            rounds.setdefault(ev.originator, _Round(ev.originator)).events.append(ev)
        elif ev.topic in (SHOE_SHUFFLED, SHOE_CUT):
            shoes.setdefault(ev.originator, []).append(ev)
    out = []
    for rid, rnd in rounds.items():
        opened = rnd.events[0]
        what = f"treinta y una round {rid}"
        if opened.topic != TREINTA_Y_UNA_ROUND_OPENED:
            out.append(Verdict(what, False, opened.position, "the export lacks its opening"))
            continue
        what += f" ({opened.state['table_id']} #{opened.state['number']})"
        try:
            out.append(Verdict(what, True, None, _verify(rnd, shoes, seed_of)))
        except _Bad as bad:
            out.append(Verdict(what, False, bad.position, str(bad)))
    return out


def _verify(rnd: _Round, shoes: dict[str, list[_Ev]], seed_of: SeedSource) -> str:
    opened = rnd.events[0]
    st = opened.state
    options = st["options"]
    sid = str(st["shoe_id"])
    shoe_evs = shoes.get(sid, [])
    if not shoe_evs or shoe_evs[0].topic != SHOE_SHUFFLED:
        raise _Bad(opened.position, f"its shoe {sid} is not in the export")
    shuffled_state = shoe_evs[0].state
    if shuffled_state.get("commitment") != st["commitment"]:
        raise _Bad(opened.position, "the round's commitment is not its shoe's")
    seed = seed_of(sid, shuffled_state)
    if seed is None:
        return "not checked: the seed is not revealed (give --regulator-key)"
    if commitment(seed, UUID(sid)) != st["commitment"]:
        raise _Bad(shoe_evs[0].position, "the seed does not open the shoe's commitment")
    cut_at = next((e.state["position"] for e in shoe_evs if e.topic == SHOE_CUT), None)
    cards = cut(shuffled(seed, UUID(sid), str(shuffled_state["deck_kind"]),
                         int(shuffled_state["decks"])), cut_at)
    seats = list(st["seats"])
    if st.get("lot") is not None:
        lot = st["lot"]
        index = lot_index(seed, UUID(lot["nonce"]), len(lot["seats"]))
        if index != lot["index"] or lot["seats"][index] != st["banker"]:
            raise _Bad(opened.position, f"the lot draws seat {index}, the round records "
                       f"{lot['index']} ({st['banker']})")
    dealt: list[tuple[str, int]] = []
    hands: dict[str, list[str]] = {}
    results = 0
    next_position = 0
    shown: dict[str, tuple[int, bool, bool]] = {}
    order: list[str] = []
    for e in rnd.events[1:]:
        s = e.state
        if e.topic == TREINTA_Y_UNA_ROUND_CARD_DEALT:
            p = int(s["position"])
            if p >= len(cards):
                raise _Bad(e.position, f"position {p}: outside the shoe")
            if card_commitment(salt(seed, UUID(sid), p), p, cards[p]) != s["commitment"]:
                raise _Bad(e.position, f"position {p}: the commitment is not the seed's card")
            dealt.append((s["player"], p))
            hands.setdefault(s["player"], []).append(cards[p])
            if s["player"] not in order:
                order.append(s["player"])
            next_position = max(next_position, p + 1)
        elif e.topic == TREINTA_Y_UNA_ROUND_CARD_DRAWN:
            p = int(s["position"])
            if p != next_position or p >= len(cards):
                raise _Bad(e.position, f"position {p}: carta out of order (next {next_position})")
            if cards[p] != s["code"]:
                raise _Bad(e.position, f"position {p}: carta {s['code']}, the seed deals "
                           f"{cards[p]}")
            hands.setdefault(s["player"], []).append(cards[p])
            next_position = p + 1
        elif e.topic in (TREINTA_Y_UNA_ROUND_HAND_SHOWN, TREINTA_Y_UNA_ROUND_HAND_BUST):
            for card in s["shown"]:
                p = int(card["position"])
                if not 0 <= p < len(cards) or cards[p] != card["code"]:
                    real_card = cards[p] if 0 <= p < len(cards) else "nothing"
                    raise _Bad(e.position, f"position {p}: shown {card['code']}, the seed "
                               f"deals {real_card}")
                if salt(seed, UUID(sid), p).hex() != card["salt"]:
                    raise _Bad(e.position, f"position {p}: the salt is not the seed's")
            if list(s["cards"]) != hands.get(s["player"], []):
                raise _Bad(e.position, f"{s['player']}: shown {s['cards']}, dealt "
                           f"{hands.get(s['player'])}")
            total, real, bust = value(list(s["cards"]))
            if total != s["total"] or (e.topic == TREINTA_Y_UNA_ROUND_HAND_SHOWN
                                       and (real != s["real"] or bust != s["bust"])):
                raise _Bad(e.position, f"{s['player']}: total {s['total']}, recomputed {total}")
            shown[s["player"]] = (total, real, bust)
        elif e.topic == TREINTA_Y_UNA_ROUND_STAKE_SETTLED:
            results += 1
            _check_stake(e, options, shown, st["banker"])
        elif e.topic == TREINTA_Y_UNA_ROUND_SETTLED:
            _check_next_banker(e, options, shown, st["banker"], order, seats)
    _check_deal(dealt, order)
    return (f"{len(dealt)} cards dealt face down, {next_position} from the shoe; lot "
            f"{'checked' if st.get('lot') is not None else 'none'}; {results} stakes settled")


def _check_deal(dealt: list[tuple[str, int]], order: list[str]) -> None:
    h = len(order)
    for k, player in enumerate(order):
        mine = [p for who, p in dealt if who == player]
        if mine != [k, h + k, 2 * h + k]:
            raise _Bad(0, f"{player}: dealt positions {mine}, right to left gives "
                       f"{[k, h + k, 2 * h + k]}")


def _rank(hand: tuple[int, bool, bool], options: dict[str, str]) -> tuple[int, int, int]:
    total, real, bust = hand
    if bust:
        return (0, 0, 0)
    return (1, total, int(real and options.get("real_outranks_plain") == "true"))


def _check_stake(e: _Ev, options: dict[str, str], shown: dict[str, tuple[int, bool, bool]],
                 banker: str) -> None:
    s = e.state
    mine, his = shown.get(s["player"]), shown.get(banker)
    if mine is None or his is None:
        raise _Bad(e.position, f"{s['player']}: settled without both hands shown")
    if mine[2] and options.get("bust") == "loses_at_once":
        outcome = "lost"
    elif _rank(mine, options) > _rank(his, options):
        outcome = "won"
    elif _rank(mine, options) < _rank(his, options) or options.get("tie") == "banker_wins":
        outcome = "lost"
    else:
        outcome = "void"
    multiple = {"won": 2 if mine[1] else 1, "lost": 2 if his[1] else 1, "void": 0}[outcome]
    if (s["outcome"], s["multiple"]) != (outcome, multiple):
        raise _Bad(e.position, f"{s['player']}: recorded {s['outcome']} x{s['multiple']}, "
                   f"recomputed {outcome} x{multiple}")
    if outcome == "won" and s["paid"] + s["short"] != s["amount"] * multiple:
        raise _Bad(e.position, f"{s['player']}: paid {s['paid']} + short {s['short']}, due "
                   f"{s['amount'] * multiple}")
    if outcome == "lost" and s["paid"] != s["amount"] * multiple:
        raise _Bad(e.position, f"{s['player']}: collected {s['paid']}, due "
                   f"{s['amount'] * multiple}")
    rate = Fraction(str(options.get("commission", "0")))

    def cut(amount: int) -> int:  # rounded down (RULES.md, Money)
        return amount * rate.numerator // rate.denominator

    at_once = s["amount"] if outcome == "lost" and mine[2] and (
        options.get("bust") == "loses_at_once") else 0
    if outcome == "void":
        due = 0
    elif outcome == "lost" and int(options.get("ruling", "1")) < 2:  # each collection alone
        due = cut(at_once) + cut(s["paid"] - at_once)
    else:  # ruling 2 (issue 22 item 9): all one winner collects from one counterparty, once
        due = cut(s["paid"])
    if s.get("commission", 0) != due:
        raise _Bad(e.position, f"{s['player']}: commission {s.get('commission', 0)}, "
                   f"recomputed {due}")


def _check_next_banker(e: _Ev, options: dict[str, str],
                       shown: dict[str, tuple[int, bool, bool]], banker: str,
                       order: list[str], seats: list[str]) -> None:
    punters = [p for p in order if p != banker]
    if shown.get(banker, (0, False, False))[0] == 31:
        expected = banker
    else:
        made = [p for p in punters if shown.get(p, (0, False, False))[0] == 31]
        if made and options.get("several_31") == "real_first":
            made.sort(key=lambda p: not shown[p][1])
        if made:
            expected = made[0]
        elif options.get("bank_without_31") == "passes_to_mano":
            if int(options.get("ruling", "1")) >= 2 and punters:  # the first dealt in
                expected = punters[0]
            else:  # ruling 1: the seat at the banker's right
                b = seats.index(banker)
                expected = seats[(b + 1) % len(seats)]
        else:
            expected = banker
    if e.state["next_banker"] != expected:
        raise _Bad(e.position, f"next banker {e.state['next_banker']}, recomputed {expected}")


def _shoe_check(ctx: ShoeContext) -> list[Verdict]:
    """A round's shoe (one deck, one round): the shoe's own checks passed; its round (the lot,
    the commitments and salts, which need the seed) is checked by ``verify_rounds``."""
    rounds = [c for c, evs in ctx.children.items() if evs[0].topic == TREINTA_Y_UNA_ROUND_OPENED]
    return [Verdict(f"shoe {ctx.shoe_id}", True, None,
                    f"commitment and shuffle verified; round {', '.join(rounds) or 'none'} "
                    "checked below")]


register_game("treinta-y-una", _shoe_check)
