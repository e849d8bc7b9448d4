"""A simple way to play, for demonstrations and tests: the capture worth most, else the lowest
card.

Among the legal plays of the seat to act: the capture scoring the most points, then taking the
most cards; with no capture, the lowest card (by rank, then suit) is left on the table. Ties go
to the first in ``legal_plays`` order, so the choice is deterministic.
"""

from __future__ import annotations

from domain.cuarenta.match import Match, Play, legal_plays
from domain.cuarenta.ranks import card_order


def choose(match: Match) -> Play | None:
    """The policy's play for the seat whose turn it is (None when nobody is to play)."""
    plays = legal_plays(match)
    if not plays:
        return None
    captures = [p for p in plays if p.capture is not None]
    if captures:
        return max(
            captures,
            key=lambda p: (p.capture.points, len(p.capture.taken)) if p.capture else (0, 0),
        )
    return min(plays, key=lambda p: card_order(p.card))
