"""Settlement of a coup re-implemented from RULES.md §1 (refait, partage, prison, insurance).

A movement is ``(kind, stake_id, amount)``; the order is: what the house takes (collection,
partage, prison_loss) before what it gives (return, payment); Couleur/Inverse before Rouge/Noir;
then layout order.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from sabot_verify.coup import Outcome

TAKES = ("collection", "partage", "prison_loss")
COLOURS = ("couleur", "inverse")


@dataclass(frozen=True)
class Stake:
    stake_id: str
    chance: str
    amount: int
    status: str = "free"  # free | prison | second_prison
    insured: bool = False
    choice: str | None = None  # partage | prison | None
    awaiting_choice: bool = False


Movement = tuple[str, str, int]  # kind, stake_id, amount


def settle(
    options: dict[str, str], stakes: list[Stake], outcome: Outcome
) -> tuple[list[Stake], list[Movement], dict[str, str]]:
    """The stakes left on the layout, the ordered movements, and each stake's fate."""
    left: list[Stake] = []
    moves: list[tuple[int, int, int, Movement]] = []
    fates: dict[str, str] = {}
    for i, s in enumerate(stakes):
        kept, fate, mv = _one(options, s, outcome)
        fates[s.stake_id] = fate
        if kept is not None:
            left.append(replace(kept, insured=False))
        for kind, amount in mv:
            if amount > 0:
                group = 0 if kind in TAKES else 1
                colour_first = 0 if s.chance in COLOURS else 1
                moves.append((group, colour_first, i, (kind, s.stake_id, amount)))
    moves.sort(key=lambda m: m[:3])  # stable: a stake's own movements keep their order
    return left, [m[3] for m in moves], fates


def _one(
    options: dict[str, str], s: Stake, o: Outcome
) -> tuple[Stake | None, str, list[tuple[str, int]]]:
    if o.result == "void" or (o.result == "refait" and not o.refait31):
        return s, "void", []
    if o.result == "refait":  # a refait at 31
        if s.insured:
            return s, "void", []
        if s.status == "prison":
            if options.get("prison_refait31") == "lost":
                return None, "prison_lost", [("prison_loss", s.amount)]
            return replace(s, status="second_prison"), "second_prison", []
        if s.status == "second_prison":
            return None, "prison_lost", [("prison_loss", s.amount)]
        if s.chance in COLOURS and options.get("couleur_inverse_on_refait31") == "returned":
            return None, "returned", [("return", s.amount)]
        rule = options.get("refait31")
        if rule == "player_choice":
            if s.choice == "partage":
                rule = "partage"
            elif s.choice == "prison":
                return replace(s, status="prison"), "imprisoned", []
            else:
                return replace(s, status="prison", awaiting_choice=True), "imprisoned", []
        if rule == "partage":
            half = s.amount // 2
            return replace(s, amount=s.amount - half), "partage", [("partage", half)]
        return replace(s, status="prison"), "imprisoned", []
    won = s.chance in o.winners()
    if s.status == "free":
        if won:
            return None, "won", [("return", s.amount), ("payment", s.amount)]
        return None, "lost", [("collection", s.amount)]
    if not won:
        return None, "prison_lost", [("prison_loss", s.amount)]
    if s.status == "second_prison":
        return replace(s, status="prison"), "back_to_prison", []
    return None, "released", [("return", s.amount)]


def close_table(options: dict[str, str], stakes: list[Stake]) -> tuple[list[Movement],
                                                                        dict[str, str]]:
    """The table's close (RULES.md §1): every stake leaves the layout, a free one back whole, one
    in prison per ``prisoners_at_close`` (``half_returned``, the default: half to the house as a
    partage, the rest back; ``returned``: whole). The movements in the settlement's order."""
    halve = options.get("prisoners_at_close", "half_returned") == "half_returned"
    moves: list[tuple[int, int, int, Movement]] = []
    fates: dict[str, str] = {}
    for i, s in enumerate(stakes):
        colour_first = 0 if s.chance in COLOURS else 1
        back = s.amount
        fates[s.stake_id] = "returned"
        if s.status != "free" and halve:
            back -= s.amount // 2
            moves.append((0, colour_first, i, ("partage", s.stake_id, s.amount // 2)))
            fates[s.stake_id] = "half_returned"
        moves.append((1, colour_first, i, ("return", s.stake_id, back)))
    moves.sort(key=lambda m: m[:3])
    return [m[3] for m in moves if m[3][2] > 0], fates
