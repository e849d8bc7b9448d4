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
- the layers that serve the games, the ledger (``services/ledger``), the API
  (``services/api``), the read side (``services/projections``), the regulator
  (``services/regulator``) and the turn clock (``services/turn_clock.py``), are game-neutral:
  none imports a game's package (``services.<game>``, ``domain.<game>``), the games' plug
  (``services.games``) or the composition root (``services.bootstrap``). Each declares the
  port it needs of a game (``LedgerGame``, ``ApiGame``, ``ReadGame``, ``RegulatorGame``,
  ``TurnGame``) and is handed the games' parts by the composition root, which holds the list
  of games;
- ``services.games`` (a game's ports, one per layer) is imported only by the games' packages
  and the composition root;
- the modules every layer stands on (``services/traces.py``, ``topics.py``, ``files.py``,
  ``version.py``, ``metrics.py``) import no layer above them;
- only the commands (``services/cli``) build the applications through the composition root:
  nothing else under ``services`` or ``domain`` imports ``services.bootstrap``, and no command
  makes a ``Ledger``, a ``LedgerConfig``, a ledger process, a notary, the read models or a
  store connection itself;
- no import cycle anywhere in ``services`` (every import counted, as above): a cycle is a
  layer that reaches up.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
GAMES = ("trente_et_quarante", "treinta_y_una", "cuarenta")
ABOVE_THE_LEDGER = ("services.regulator", "services.api", "services.cli", "services.projections",
                    "services.bootstrap")
GAME_PACKAGES = tuple(f"{where}.{game}" for game in GAMES for where in ("services", "domain"))
# The layers that serve the games, each with its port of a game: handed the games, naming none.
SERVING_LAYERS = {
    "the ledger": "services/ledger",
    "the API": "services/api",
    "the read side": "services/projections",
    "the regulator": "services/regulator",
    "the turn clock": "services/turn_clock.py",
}
BASE_MODULES = ("traces", "topics", "files", "version", "metrics")

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
    found = []
    for folder in folders:
        path = ROOT / folder
        found += [path] if path.suffix == ".py" else [
            p for p in path.rglob("*.py") if "gen" not in p.relative_to(ROOT).parts]
    return sorted(found)


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


@pytest.mark.parametrize("layer", sorted(SERVING_LAYERS))
def test_a_layer_that_serves_the_games_imports_none_of_them(layer: str) -> None:
    """No game's package, no games' plug, no composition root: the layer's port of a game is
    its own, and the composition root hands it the games."""
    files = _files(SERVING_LAYERS[layer])
    assert files, f"{layer} holds no module"
    assert _broken(files, (*GAME_PACKAGES, "services.games", "services.bootstrap")) == []


def test_only_the_games_and_the_composition_root_use_the_games_plug() -> None:
    files = [p for p in _files("services", "domain")
             if _module_of(p) not in ("services.games", "services.bootstrap")
             and not any(_under(_module_of(p), f"services.{game}") for game in GAMES)]
    assert _broken(files, ("services.games",)) == []


def test_the_base_modules_import_no_layer_above_them() -> None:
    files = [ROOT / "services" / f"{name}.py" for name in BASE_MODULES]
    assert _broken(files, ("services.",)) == []


def import_graph(files: list[Path]) -> dict[str, set[str]]:
    """module -> the modules among ``files`` it imports (every import, as ``imports`` reads
    them: ``from package import module`` names the module)."""
    modules = {_module_of(p): p for p in files}
    return {m: {t for _, t in imports(p) if t in modules and t != m}
            for m, p in modules.items()}


def cycles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """Every cycle of ``graph``: its strongly connected components of more than one module
    (Tarjan's algorithm, iterative), each sorted, and a module importing itself."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            step = next(edges, None)
            if step is not None:
                if step not in index:
                    index[step] = low[step] = len(index)
                    stack.append(step)
                    on_stack.add(step)
                    work.append((step, iter(sorted(graph[step]))))
                elif step in on_stack:
                    low[node] = min(low[node], index[step])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found)


def test_the_cycle_finder_finds_every_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"e"}, "e": {"d", "f"}, "f": set(),
             "g": {"a"}}
    assert cycles(graph) == [["a", "b", "c"], ["d", "e"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle_anywhere_in_services() -> None:
    files = _files("services")
    assert len(files) > 100, "services holds too few modules"
    assert cycles(import_graph(files)) == []


def test_the_notary_imports_no_game() -> None:
    """The notary (``services/regulator/notary.py``) signs at every game's round end without
    knowing a game: its maker hands it the games' ``round_end`` (issue 21)."""
    path = ROOT / "services" / "regulator" / "notary.py"
    forbidden = ("services.games", "services.regulator.vocabulary",
                 *(f"{where}.{game}" for game in GAMES for where in ("services", "domain")))
    assert _broken([path], forbidden) == []
