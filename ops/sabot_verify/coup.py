"""The deal and the outcome of a Trente et Quarante coup, re-implemented from RULES.md §1."""

from __future__ import annotations

from dataclasses import dataclass, field

BEHIND_CUT_CARD = 5


@dataclass
class Deal:
    start: int
    cards: list[tuple[str, str, int, int]] = field(default_factory=list)  # row, code, pos, total
    noir: int | None = None
    rouge: int | None = None
    cut_card_reached: bool = False
    next_position: int = 0

    @property
    def complete(self) -> bool:
        return self.noir is not None and self.rouge is not None


def deal(sabot: list[str], start: int, cut_card: str) -> Deal:
    """Noir row until its total passes 30, then Rouge. ``cut_card``: void_coup or finish_coup."""
    d = Deal(start)
    pos = start
    limit = len(sabot) - BEHIND_CUT_CARD
    for row in ("noir", "rouge"):
        total = 0
        while total <= 30:
            if pos >= limit:
                d.cut_card_reached = True
                if cut_card == "void_coup" or pos >= len(sabot):
                    d.next_position = pos
                    return d
            total += _value(sabot[pos])
            d.cards.append((row, sabot[pos], pos, total))
            pos += 1
        if row == "noir":
            d.noir = total
        else:
            d.rouge = total
    d.next_position = pos
    return d


def _value(code: str) -> int:
    r = code[:-1]
    return 1 if r == "A" else 10 if r in ("T", "J", "Q", "K") else int(r)


@dataclass(frozen=True)
class Outcome:
    result: str  # noir, rouge, refait, void
    noir: int | None
    rouge: int | None
    couleur: bool | None  # True: Couleur wins; False: Inverse wins

    @property
    def refait31(self) -> bool:
        return self.result == "refait" and self.noir == 31

    def winners(self) -> set[str]:
        if self.result not in ("noir", "rouge"):
            return set()
        return {self.result, "couleur" if self.couleur else "inverse"}


def judge(d: Deal) -> Outcome:
    if not d.complete:
        return Outcome("void", d.noir, d.rouge, None)
    assert d.noir is not None and d.rouge is not None
    if d.noir == d.rouge:
        return Outcome("refait", d.noir, d.rouge, None)
    winner = "noir" if d.noir < d.rouge else "rouge"
    first_red = d.cards[0][1][-1] in "HD"
    return Outcome(winner, d.noir, d.rouge, first_red == (winner == "rouge"))
