"""``sabot rules GAME …``: each game's rule book answers questions from the command line.

Each game has a module of its own (``GAME_MODULES``) defining ``register(games)``, which adds the
game's sub-parser to ``sabot rules``, and ``cmd_odds(args)``, which ``sabot odds --game GAME``
calls. A module not written yet is left out.
"""

from __future__ import annotations

import importlib
import importlib.util
from types import ModuleType
from typing import Any

from services.cli import commands

# the game's name on the command line -> the module of its rule-book commands
GAME_MODULES = {
    "treinta-y-una": "services.cli.rules_treinta_y_una",
    "cuarenta": "services.cli.rules_cuarenta",
}
DEFAULT_GAME = "trente-et-quarante"  # served by ``sabot odds`` itself (services/cli/odds.py)


def game_module(game: str) -> ModuleType | None:
    """The rule-book command module of ``game``, or None if it has none (yet)."""
    name = GAME_MODULES.get(game)
    if name is None or importlib.util.find_spec(name) is None:
        return None
    return importlib.import_module(name)


def games() -> tuple[str, ...]:
    """Every game ``sabot odds --game`` knows."""
    return (DEFAULT_GAME, *(g for g in GAME_MODULES if game_module(g) is not None))


def register(sub: Any) -> None:
    sub = commands(sub)
    games_ = sub.group("rules")
    for game in GAME_MODULES:
        module = game_module(game)
        if module is not None:
            module.register(games_)
