"""One declaration per command (issue 21): a game's command is one line of its ``Face``
(``services.ledger.methods``), and that line gives the ledger's method, the ledger socket's
``Method`` and the typed call of the servicers, locally and over the socket.

Frozen here: the socket's whole table (SABOT-LEDGER-WIRE-1), the core's and the three games',
method by method, parameter by parameter (``frozen.LEDGER_METHODS``, written from the
hand-made tables the declarations replaced): a client made before must send the same frames.
"""

from __future__ import annotations

import ast
import inspect
import types
import typing
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Union

import pytest

from domain.errors import NotFound
from domain.treinta_y_una.rules import TABLE as TYU_TABLE
from services.bootstrap import LEDGER_GAMES
from services.cuarenta.commands import CuarentaLedger
from services.ledger import wire
from services.ledger.api import Ledger
from services.ledger.config import LedgerConfig
from services.ledger.methods import CORE_METHODS, Declared, Face, command, method_of
from services.ledger.remote import LedgerHost, RemoteLedger
from services.treinta_y_una.commands import TreintaYUna, TreintaYUnaLedger
from services.trente_et_quarante.commands import TrenteEtQuaranteLedger
from tests.contracts import frozen

ROOT = Path(__file__).resolve().parents[2]
KEY = bytes(range(32))


def _text(tp: Any) -> str:
    """A type as ``frozen.LEDGER_METHODS`` writes it."""
    origin = typing.get_origin(tp)
    if origin in (Union, types.UnionType):
        return " | ".join(sorted(_text(a) for a in typing.get_args(tp)))
    if origin is not None:
        return f"{origin.__name__}[{', '.join(_text(a) for a in typing.get_args(tp))}]"
    if tp is Any:
        return "Any"
    if tp is type(None):
        return "None"
    if tp.__module__ == "builtins":
        return str(tp.__qualname__)
    return f"{tp.__module__}.{tp.__qualname__}"


def test_the_sockets_table_is_frozen() -> None:
    schema = wire.schema_of(LEDGER_GAMES)
    made = {name: (m.kind, " ".join(f"{n}:{t}" for n, t in m.params), _text(m.answer))
            for name, m in schema.methods.items()}
    assert made == frozen.LEDGER_METHODS


def test_each_games_methods_are_its_faces_declarations() -> None:
    faces = {"trente-et-quarante": TrenteEtQuaranteLedger, "treinta-y-una": TreintaYUnaLedger,
             "cuarenta": CuarentaLedger}
    for game in LEDGER_GAMES:
        assert game.face is faces[game.name]
        declared = game.face.declared()
        assert dict(game.methods) == {s: d.method for s, d in declared.items()}
        for stored, d in declared.items():
            # the declaration's method is one of the game's commands object, and its Method
            # is read from that method's signature
            assert d.stored == stored
            assert getattr(game.commands, d.impl.__name__) is d.impl, stored
            assert d.method == method_of(d.kind, d.impl)


def test_a_declaration_reads_its_wire_types_from_the_signature() -> None:
    assert TreintaYUnaLedger.open_round.method.params == (
        ("request_id", "str"), ("table_id", "str"), ("seats", "str"), ("bank", "int"),
        ("round_id", "str?"), ("actor", "actor"))
    assert CuarentaLedger.play.method.params[-2:] == (("capture", "words?"), ("actor", "actor"))

    def bad(self: object, request_id: str, when: float) -> int:  # no wire type for a float
        return 0

    with pytest.raises(TypeError, match="no wire type"):
        method_of("query", bad)
    with pytest.raises(TypeError, match="request_id first, actor last"):
        command("bad", TreintaYUna.get_round).method  # noqa: B018


def test_the_socket_client_types_every_core_method_as_the_ledgers() -> None:
    declared = {v.stored: v for v in vars(RemoteLedger).values() if isinstance(v, Declared)}
    # every core method but read_events (read on the server's own connection, typed there)
    assert set(declared) == set(CORE_METHODS) - {"read_events"}
    for stored, d in declared.items():
        assert d.impl is getattr(Ledger, stored), stored
    assert inspect.signature(RemoteLedger.read_events) == inspect.signature(Ledger.read_events)


def _getattr_classes(path: Path) -> Iterator[str]:
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ClassDef) and any(
                isinstance(f, ast.FunctionDef) and f.name == "__getattr__" for f in node.body):
            yield node.name


def test_no_getattr_on_a_game_commands_path() -> None:
    """The ledger, the socket's client and the servicers' base find no method by name at run
    time: mypy sees each call (``Face``)."""
    for path in ("services/ledger/api.py", "services/ledger/remote.py",
                 "services/api/base.py", "services/ledger/methods.py"):
        assert list(_getattr_classes(ROOT / path)) == [], path
    for path in ("services/api/base.py", "services/cli/server.py", "services/ledger/api.py",
                 "services/ledger/remote.py"):
        assert "cast(" not in (ROOT / path).read_text(), path


@contextmanager
def _both_sides(tmp_path: Path) -> Iterator[tuple[Ledger, RemoteLedger]]:
    """A ledger on a SQLite file, and the socket client of its host."""
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    ledger = Ledger(LedgerConfig(store_url=url, seal_key=KEY), batching=True,
                    games=LEDGER_GAMES)
    host = LedgerHost(ledger, str(tmp_path / "ledger.sock")).start()
    remote = RemoteLedger(str(tmp_path / "ledger.sock"), url, secret=host.secret,
                          games=LEDGER_GAMES)
    try:
        yield ledger, remote
    finally:
        remote.close()
        host.close()
        ledger.close()


def test_a_face_calls_the_same_command_locally_and_over_the_socket(tmp_path: Path) -> None:
    with _both_sides(tmp_path) as (ledger, remote):
        for side, table_id in ((ledger, "t-here"), (remote, "t-there")):
            rounds = side.game(TreintaYUnaLedger)
            assert rounds.list_rounds is rounds.list_rounds  # bound once
            table = side.open_table("r-" + table_id, table_id, TYU_TABLE.default_preset, None,
                                    "treinta-y-una")
            assert table.game == "treinta-y-una"
            assert rounds.list_rounds(table_id) == []
            assert rounds.latest_round(table_id) is None
            with pytest.raises(NotFound):
                rounds.get_round("00000000-0000-4000-8000-000000000000")
        with pytest.raises(ValueError, match="plays no game"):
            ledger.game(Face)
        with pytest.raises(ValueError, match="plays no game"):
            remote.game(Face)


def test_every_core_methods_typed_signature_is_its_wire_method() -> None:
    """The socket's core table (``CORE_METHODS``, written by hand, frozen) and the ledger's
    typed signatures (what mypy checks a call against, locally and through ``RemoteLedger``)
    say the same: no call mypy passes is refused on the socket (``open_table``'s preset was
    ``str | None`` against the wire's ``str``)."""
    for v in vars(RemoteLedger).values():
        if isinstance(v, Declared):
            made = method_of(v.kind, v.impl)
            assert made.params == CORE_METHODS[v.stored].params, v.stored
            assert made.answer == CORE_METHODS[v.stored].answer, v.stored
    assert dict(CORE_METHODS["open_table"].params)["preset"] == "str"  # frozen: unchanged
    assert inspect.signature(Ledger.open_table).parameters["preset"].default == ""


def test_a_table_opened_with_no_preset_plays_the_rule_books_default_on_both_sides(
        tmp_path: Path) -> None:
    """``preset`` omitted or "" (the wire's and the gRPC field's empty text): the rule book's
    default, stored by its name, locally and over the socket alike; a retry with the default's
    name is the same command (its first answer); None is refused before the socket."""
    default = TYU_TABLE.default_preset
    with _both_sides(tmp_path) as (ledger, remote):
        for side, where in ((ledger, "here"), (remote, "there")):
            empty = side.open_table(f"r-{where}-1", f"t-{where}-1", "", None, "treinta-y-una")
            omitted = side.open_table(f"r-{where}-2", f"t-{where}-2", game="treinta-y-una")
            assert empty.preset == omitted.preset == default, where
            again = side.open_table(f"r-{where}-1", f"t-{where}-1", default, None,
                                    "treinta-y-una")
            assert again == empty, where
        with pytest.raises(TypeError, match="preset must be str"):
            remote.open_table("r-none", "t-none", None, None, "treinta-y-una")  # type: ignore[arg-type]
        assert [t.table_id for t in ledger.list_tables(50, "")[0]] == [
            "t-here-1", "t-here-2", "t-there-1", "t-there-2"]
