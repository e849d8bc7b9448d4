"""Every game of the composition root names its module of the standalone verifier (``Game.verify``,
else the verifier's convention): the module exists in ``ops/sabot_verify``, and the verifier, as
it runs, holds a per-shoe check for the game (its own, or for a game whose rounds it verifies
apart, the fallback ``__main__`` registers). The game's entry names the module; nothing of
``services`` imports the verifier, and the verifier imports nothing of ours."""

from __future__ import annotations

import ast
import importlib
import importlib.util
from pathlib import Path

import sabot_verify

from services.bootstrap import GAMES

ROOT = Path(__file__).resolve().parents[2]


def test_every_game_names_a_verifier_module_that_checks_its_shoes() -> None:
    names = {g.name: g.verifier for g in GAMES}
    assert names["trente-et-quarante"] == "sabot_verify.shoes"
    assert names["treinta-y-una"] == "sabot_verify.treinta_y_una"
    assert names["cuarenta"] == "sabot_verify.cuarenta"
    root = Path(sabot_verify.__file__).parent
    for game, module in names.items():
        assert module.startswith("sabot_verify."), game
        assert importlib.util.find_spec(module) is not None, (game, module)
        assert importlib.util.find_spec(module).origin.startswith(str(root)), module
    importlib.import_module("sabot_verify.__main__")
    from sabot_verify import shoes

    for game, module in names.items():
        importlib.import_module(module)
        assert shoes.game_check(game) is not None, game


def test_the_services_never_import_the_verifier() -> None:
    for path in (ROOT / "services").rglob("*.py"):
        if "gen" in path.relative_to(ROOT / "services").parts:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                assert not (node.module or "").startswith("sabot_verify"), path
            elif isinstance(node, ast.Import):
                assert not any(a.name.startswith("sabot_verify") for a in node.names), path
