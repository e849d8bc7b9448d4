"""No function over 80 lines in ``domain/``, ``services/`` and ``ops/`` (issue 21 item 6),
generated code excepted (``services/api/gen``, ``*_pb2.py``, ``*_pb2_grpc.py``): a function
that long holds more than one meaning; split it by meaning (see ``Cuarenta._record``: a deal's
facts, a turn's, an end's, the match won).

``LONG`` lists the functions that were longer when the test came and are still to split, each
with the length it may not exceed: the list only shrinks (a function split, its line goes; one
that grows, or a new one over 80, fails)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LIMIT = 80

# path:function -> its length when this test came (to split; never longer)
LONG: dict[str, int] = {
}


def _generated(path: Path) -> bool:
    return path.name.endswith(("_pb2.py", "_pb2_grpc.py")) or "gen" in path.parts


def lengths() -> Iterator[tuple[str, int]]:
    """Every function of the three trees, as ``path:name`` and its length in lines."""
    for tree in ("domain", "services", "ops"):
        for path in sorted((ROOT / tree).rglob("*.py")):
            if _generated(path.relative_to(ROOT)):
                continue
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    assert node.end_lineno is not None
                    name = f"{path.relative_to(ROOT)}:{node.name}"
                    yield name, node.end_lineno - node.lineno + 1


def test_no_function_is_over_80_lines() -> None:
    over = {name: n for name, n in lengths() if n > LIMIT and n > LONG.get(name, 0)}
    assert over == {}, "split these by meaning: " + ", ".join(
        f"{name} ({n} lines)" for name, n in sorted(over.items()))


def test_the_list_of_long_functions_only_shrinks() -> None:
    found = dict(lengths())
    split = sorted(name for name in LONG if found.get(name, 0) <= LIMIT)
    assert split == [], f"no longer over {LIMIT} lines: take them off LONG: {split}"


def test_the_limit_is_checked_on_real_code() -> None:
    found = dict(lengths())
    assert "services/cuarenta/commands.py:_record" in found  # (split: under the limit)
    assert found["services/cuarenta/commands.py:_record"] <= LIMIT
    assert not any("_pb2" in name for name in found)
