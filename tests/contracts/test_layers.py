"""The import directions (docs/architecture.md, "Layers"), read from the source with ``ast``:
every ``import``/``from ... import`` of a module, at its top or inside a function or an ``if
TYPE_CHECKING`` block, counts.

- ``domain`` imports nothing from ``services`` (it is pure);
- ``services/ledger`` imports nothing from the layers that stand on it: ``services.regulator``,
  ``services.api``, ``services.cli``, ``services.projections`` (nor the composition root,
  ``services.bootstrap``, that builds them all);
- the games never import each other: not ``services/trente_et_quarante``,
  ``services/treinta_y_una``, ``services/cuarenta`` (the service side), nor their
  ``domain/<game>`` packages;
- ``services/api`` is game-neutral: none of its modules imports a game's service package
  (``services.trente_et_quarante``, ``services.treinta_y_una``, ``services.cuarenta``) nor its
  rule book (``domain.<game>``: Trente et Quarante's demo is its own,
  ``services/trente_et_quarante/demo.py``); a game plugs its servicers, its RPCs of
  ``sabot.v1.TableService`` and ``sabot.v1.RegulatorService``, its own conversions and the
  placing of its rounds' events in through its registry entry (``services.games``), which
  ``server.py``, ``tables.py``, ``regulator.py``, ``base.py`` and ``streams.py`` read;
- only the commands (``services/cli``) build the applications through the composition root:
  nothing else under ``services`` or ``domain`` imports ``services.bootstrap``, and no command
  makes a ``Ledger``, a ``LedgerConfig``, a ledger process, a notary, the read models or a
  store connection itself.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
GAMES = ("trente_et_quarante", "treinta_y_una", "cuarenta")
ABOVE_THE_LEDGER = ("services.regulator", "services.api", "services.cli", "services.projections",
                    "services.bootstrap")

# Imports that break a rule and are kept, each with its reason (none today: a new one needs
# its reason here and in the report of the change that adds it).
ALLOWED: dict[tuple[str, str], str] = {}


def _module_of(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports(path: Path, module: str | None = None) -> Iterator[tuple[int, str]]:
    """(line, module) of every import in ``path`` (the module ``module``, default: its name
    in the repository), relative imports resolved; ``from X import Y`` names ``X.Y`` as well
    as ``X`` (``from services import cuarenta`` imports a game)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    package = (module or _module_of(path)).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package[:len(package) - node.level + 1]
                base = ".".join([*up, base] if base else up)
            yield node.lineno, base
            for alias in node.names:
                yield node.lineno, f"{base}.{alias.name}"


def _under(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def _files(*folders: str) -> list[Path]:
    return sorted(p for folder in folders for p in (ROOT / folder).rglob("*.py"))


def _broken(files: list[Path], forbidden: tuple[str, ...]) -> list[str]:
    found = []
    for path in files:
        source = _module_of(path)
        for line, module in imports(path):
            rule = next((f for f in forbidden if _under(module, f)), None)
            if rule is not None and (source, module) not in ALLOWED:
                found.append(f"{path.relative_to(ROOT)}:{line}: imports {module} ({rule})")
    return sorted(set(found))


def test_the_walk_sees_every_kind_of_import(tmp_path: Path) -> None:
    """The walker itself: top-level, in a function, under TYPE_CHECKING, relative, ``from
    package import module``."""
    sample = tmp_path / "sample.py"
    sample.write_text("from typing import TYPE_CHECKING\nimport services.api.config\n"
                      "from services import cuarenta\nfrom .config import store_env\n"
                      "if TYPE_CHECKING:\n    from services.regulator.notary import Follower\n"
                      "def f():\n    from services.cli import CliError\n", encoding="utf-8")
    found = {module for _, module in imports(sample, "services.ledger.sample")}
    assert {"services.api.config", "services.cuarenta", "services.ledger.config",
            "services.regulator.notary", "services.cli.CliError"} <= found


def test_domain_imports_nothing_from_services() -> None:
    assert _broken(_files("domain"), ("services",)) == []


def test_the_ledger_imports_nothing_that_stands_on_it() -> None:
    files = _files("services/ledger")
    assert files, "services/ledger holds no module"
    assert _broken(files, ABOVE_THE_LEDGER) == []


@pytest.mark.parametrize("side", ["services", "domain"])
@pytest.mark.parametrize("game", GAMES)
def test_a_game_never_imports_another(side: str, game: str) -> None:
    others = tuple(f"{where}.{other}" for other in GAMES if other != game
                   for where in ("services", "domain"))
    files = _files(f"{side}/{game}")
    assert files, f"{side}/{game} holds no module"
    assert _broken(files, others) == []


def test_the_api_imports_no_games_package() -> None:
    files = [p for p in _files("services/api") if "gen" not in p.relative_to(ROOT).parts]
    assert len(files) > 10, "services/api holds too few modules"
    assert _broken(files, tuple(f"{where}.{game}" for game in GAMES
                                for where in ("services", "domain"))) == []


def test_only_the_commands_use_the_composition_root() -> None:
    files = [p for p in _files("services", "domain")
             if not _under(_module_of(p), "services.cli") and p.name != "bootstrap.py"]
    assert _broken(files, ("services.bootstrap",)) == []


# What the composition root builds: a command calls services/bootstrap.py for them.
BUILT_BY_THE_ROOT = ("Ledger", "LedgerConfig", "LedgerProcess", "RemoteLedger", "Follower",
                     "Notary", "signing_follower", "ReadModels", "Projector", "open_log",
                     "Database")


def test_the_commands_build_the_applications_through_the_composition_root() -> None:
    """No command module (``services/cli``) makes a ledger, its config, a ledger process, a
    notary, the read models or a store connection itself: ``services.bootstrap`` does, from the
    settings (so a setting means the same in every command)."""
    found = []
    for path in _files("services/cli"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            name = func.id if isinstance(func, ast.Name) else (
                func.attr if isinstance(func, ast.Attribute) else "")
            owner = func.value.id if isinstance(func, ast.Attribute) and isinstance(
                func.value, ast.Name) else ""
            if name in BUILT_BY_THE_ROOT and owner != "bootstrap":
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {name}(...)")
    assert found == []


def test_the_ledgers_commands_live_with_the_other_commands() -> None:
    """``sabot store init|events|balance-sheet|rerun`` are CLI code (services/cli/store.py):
    the ledger package holds no command module."""
    assert not (ROOT / "services" / "ledger" / "cli.py").exists()
    import services.cli as cli

    assert "services.cli.store" in cli.COMMAND_MODULES
    assert not [m for m in cli.COMMAND_MODULES if not _under(m, "services.cli")]


def test_the_notary_imports_no_game() -> None:
    """The notary (``services/regulator/notary.py``) signs at every game's round end without
    knowing a game: its maker hands it the games' ``round_end`` (issue 21)."""
    path = ROOT / "services" / "regulator" / "notary.py"
    forbidden = ("services.games", "services.regulator.vocabulary",
                 *(f"{where}.{game}" for game in GAMES for where in ("services", "domain")))
    assert _broken([path], forbidden) == []
