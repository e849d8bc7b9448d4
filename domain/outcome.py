"""The outcome of a dealt coup: the winning row or the refait, Couleur/Inverse, the announcement.

API CONTRACT (implementation owned by the domain helper; keep these names and signatures).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from domain.chances import Chance
from domain.deal import CoupDeal


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


def judge(deal: CoupDeal) -> Outcome:
    raise NotImplementedError
