"""The house edge per chance of a table's ruleset, from ``domain.odds`` (isolated here).

The edge used is ``Edge.per_coup`` of the treatment a stake gets when its player chooses
nothing (``Edge.default``): the expected loss per unit per coup the stake lies on the layout, a
refait at 32..40 counting as a push; this is what ``handle`` (stakes in action at every coup
that was not void) multiplies. The exact odds take seconds per deck count: cached per process.
If ``domain.odds`` is missing or fails, :func:`house_edge` returns ``None`` and reports show the
theoretical win as unknown.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from functools import cache
from typing import Any


@cache
def _coup_odds(decks: int) -> Any:
    from domain.odds import french_coup_odds

    return french_coup_odds(decks)


@cache
def _edges(options: tuple[tuple[str, str], ...]) -> dict[str, Fraction] | None:
    try:
        from domain.odds import house_edges
        from domain.rules import HouseRules

        rules = HouseRules.from_options(dict(options))
        edges = house_edges(_coup_odds(rules.decks), rules)
        return {e.chance.value: Fraction(e.per_coup) for e in edges if e.default}
    except (ImportError, NotImplementedError, AttributeError, TypeError, ValueError):
        return None


def house_edge(options: Mapping[str, str]) -> dict[str, Fraction] | None:
    """Exact house edge per coup of each chance (``noir``, ``rouge``, ``couleur``, ``inverse``)
    under the ruleset recorded as ``options``; ``None`` when ``domain.odds`` cannot say."""
    return _edges(tuple(sorted(options.items())))
