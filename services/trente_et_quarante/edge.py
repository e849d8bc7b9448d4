"""The house edges of a Trente et Quarante table's ruleset, from
``domain.trente_et_quarante.odds`` (isolated here): the game's ``ReadGame.coup_law``, by which
the gaming-day report (``services.projections.reports``) computes the theoretical win.

:func:`coup_law` gives the exact law of one coup for a stake in a given state (the mean and the
variance per unit staked of the money the house wins in that coup,
``domain.trente_et_quarante.odds.coup_law``):
what the gaming-day report applies to ``handle.<state>`` and ``handle_sq.<state>``.

:func:`house_edge` gives per chance ``Edge.per_coup`` of the treatment a stake gets when its
player chooses nothing (``Edge.default``): the expected loss per unit per coup the stake lies on
the layout over its whole life, a refait at 32..40 counting as a push (the reports no longer use
it: it is the average over a life of the per-state means). The exact odds take seconds per deck
count: cached per process. If ``domain.trente_et_quarante.odds`` is missing or fails, both return
``None`` and
reports show the theoretical win as unknown.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from functools import cache
from typing import Any

from domain.errors import RuleViolation


@cache
def _coup_odds(decks: int) -> Any:
    from domain.trente_et_quarante.odds import french_coup_odds

    return french_coup_odds(decks)


@cache
def _edges(options: tuple[tuple[str, str], ...]) -> dict[str, Fraction] | None:
    try:
        from domain.trente_et_quarante.odds import house_edges
        from domain.trente_et_quarante.rules import HouseRules

        rules = HouseRules.from_options(dict(options))
        edges = house_edges(_coup_odds(rules.decks), rules)
        return {e.chance.value: Fraction(e.per_coup) for e in edges if e.default}
    except (ImportError, NotImplementedError, AttributeError, TypeError, ValueError):
        return None


def house_edge(options: Mapping[str, str]) -> dict[str, Fraction] | None:
    """Exact house edge per coup of each chance (``noir``, ``rouge``, ``couleur``, ``inverse``)
    under the ruleset recorded as ``options``; ``None`` when ``domain.trente_et_quarante.odds``
    cannot say."""
    return _edges(tuple(sorted(options.items())))


@cache
def _laws(options: tuple[tuple[str, str], ...], chance: str, state: str,
          ) -> tuple[Fraction, Fraction] | None:
    try:
        from domain.trente_et_quarante.chances import Chance
        from domain.trente_et_quarante.odds import coup_law
        from domain.trente_et_quarante.rules import HouseRules

        rules = HouseRules.from_options(dict(options))
        law = coup_law(_coup_odds(rules.decks), rules, Chance(chance), state)
        return Fraction(law.mean), Fraction(law.variance)
    except (ImportError, NotImplementedError, AttributeError, TypeError, ValueError, KeyError,
            RuleViolation):
        return None


def coup_law(options: Mapping[str, str], chance: str, state: str,
             ) -> tuple[Fraction, Fraction] | None:
    """(mean, variance) per unit staked of the house's result of one coup on a stake on
    ``chance`` in ``state`` (``domain.trente_et_quarante.odds.coup_law``) under the ruleset
    recorded as
    ``options``; ``None`` when ``domain.trente_et_quarante.odds`` cannot say."""
    return _laws(tuple(sorted(options.items())), chance, state)
