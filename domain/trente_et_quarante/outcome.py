"""The outcome of a dealt coup: the winning row or the refait, Couleur/Inverse, the announcement.

API CONTRACT (implementation owned by the domain helper; keep these names and signatures).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from domain.cards import Colour
from domain.trente_et_quarante.announcements import announce_decided, announce_refait, announce_void
from domain.trente_et_quarante.chances import Chance
from domain.trente_et_quarante.deal import ROW_STOPS_ABOVE, CoupDeal


class Result(StrEnum):
    NOIR = "noir"  # the Noir row wins
    ROUGE = "rouge"  # the Rouge row wins
    REFAIT = "refait"  # equal totals (see refait_total: 31 or 32..40)
    VOID = "void"  # not finished (cut card under void_coup, or sabot exhausted)


@dataclass(frozen=True, slots=True)
class Outcome:
    result: Result
    noir_total: int | None
    rouge_total: int | None
    refait_total: int | None  # set only when result is REFAIT
    couleur: bool | None  # True: Couleur wins, False: Inverse wins, None: no winning row
    winning_chances: frozenset[Chance]  # empty unless a row won
    announcement: str  # the croupier's words, e.g. "sept, huit. Rouge perd, et la couleur gagne"

    @property
    def is_refait31(self) -> bool:
        return self.result is Result.REFAIT and self.refait_total == 31

    @property
    def decided(self) -> bool:
        """A row won (the only coups that count as a win or a loss for a stake)."""
        return self.result is Result.NOIR or self.result is Result.ROUGE


REFAIT_WHERE_STAKES_ARE_HELD = 31  # the refait that imprisons or halves stakes

# The winning row's colour: the Noir row is black, the Rouge row red.
_ROW_COLOUR = {Result.NOIR: Colour.BLACK, Result.ROUGE: Colour.RED}
_ROW_CHANCE = {Result.NOIR: Chance.NOIR, Result.ROUGE: Chance.ROUGE}
_WINNERS: dict[tuple[Result, bool], frozenset[Chance]] = {
    (row, couleur): frozenset({_ROW_CHANCE[row], Chance.COULEUR if couleur else Chance.INVERSE})
    for row in (Result.NOIR, Result.ROUGE)
    for couleur in (True, False)
}
_NOBODY: frozenset[Chance] = frozenset()


def _decided(noir: int, rouge: int, couleur: bool) -> Outcome:
    result = Result.NOIR if noir < rouge else Result.ROUGE
    words = announce_decided(noir, rouge, result is Result.ROUGE, couleur)
    return Outcome(result, noir, rouge, None, couleur, _WINNERS[result, couleur], words)


def _refait(total: int) -> Outcome:
    return Outcome(Result.REFAIT, total, total, total, None, _NOBODY, announce_refait(total))


# Every finished coup's outcome, made once (outcomes are immutable values): a row's total is
# 31..40, so there are 90 decided pairs x Couleur/Inverse and 10 refaits.
_TOTALS = range(ROW_STOPS_ABOVE + 1, ROW_STOPS_ABOVE + 11)
_DECIDED_OUTCOMES: dict[tuple[int, int, bool], Outcome] = {
    (noir, rouge, couleur): _decided(noir, rouge, couleur)
    for noir in _TOTALS
    for rouge in _TOTALS
    if noir != rouge
    for couleur in (True, False)
}
_REFAIT_OUTCOMES: dict[int, Outcome] = {total: _refait(total) for total in _TOTALS}


def judge(deal: CoupDeal) -> Outcome:
    """The lower total wins; Couleur when the Noir row's first card has the winner's colour."""
    noir, rouge = deal.noir_total, deal.rouge_total
    if not deal.complete or noir is None or rouge is None:
        return Outcome(Result.VOID, noir, rouge, None, None, _NOBODY, announce_void())
    if noir == rouge:
        return _REFAIT_OUTCOMES.get(noir) or _refait(noir)
    winner = _ROW_COLOUR[Result.NOIR if noir < rouge else Result.ROUGE]
    couleur = deal.cards[0].card.colour == winner
    return _DECIDED_OUTCOMES.get((noir, rouge, couleur)) or _decided(noir, rouge, couleur)
