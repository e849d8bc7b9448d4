"""The standalone verifier imports only the standard library, ``cryptography`` and itself."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import sabot_verify

ALLOWED = {"cryptography", "sabot_verify", "__future__"}


def test_verifier_imports_nothing_of_the_server() -> None:
    root = Path(sabot_verify.__file__).parent
    seen: set[str] = set()
    for path in root.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.Import):
                seen |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                seen.add(node.module.split(".")[0])
    outside = {m for m in seen if m not in ALLOWED and m not in sys.stdlib_module_names}
    assert not outside, f"the verifier imports {sorted(outside)}"
