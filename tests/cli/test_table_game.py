"""``sabot table get`` and ``sabot table list`` show the game a table plays."""

from __future__ import annotations

import json
import re

import pytest

from .conftest import Served
from .test_bad_input import run


def test_table_get_and_list_show_the_game(served: Served,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["table", "get", served.table, *served.admin()], capsys)
    assert code == 0 and re.search(r"^game +trente-et-quarante$", out, re.M), out
    code, out, _ = run(["table", "get", served.table, *served.admin(), "--format", "json"],
                       capsys)
    assert code == 0 and json.loads(out)["game"] == "trente-et-quarante"
    code, out, _ = run(["table", "list", *served.admin(), "--format", "json"], capsys)
    assert code == 0
    tables = json.loads(out)["tables"]
    assert tables and all(t["game"] for t in tables)
    assert {t["name"]: t["game"] for t in tables}[served.table] == "trente-et-quarante"
    code, out, _ = run(["table", "list", *served.admin()], capsys)
    assert code == 0 and "trente-et-quarante" in out, out
