"""The names of ``frozen.py`` hold in the code under test: stored topics and transcodings,
commands with their stored arguments and answers, read models, id derivations, checkpoint body,
gRPC methods and their roles, the CLI's command paths, the environment's variable names.

The code is found from outside where it can move (every module under ``services`` imported,
aggregates and events found by their classes, commands by the ledger's methods): the seam moves
modules, these tests hold what they store and answer."""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import inspect
import io
import pkgutil
import subprocess
import sys
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from eventsourcing.domain import Aggregate, DomainEvent
from eventsourcing.utils import resolve_topic

import services
from services.bootstrap import LEDGER_GAMES
from services.ledger import ids
from services.ledger.api import Ledger
from services.ledger.config import LedgerConfig

from . import frozen

ROOT = Path(__file__).resolve().parents[2]
PREFIX = "sabot.ledger:"


def _import_everything() -> None:
    """Every module under ``services`` (what registers topics, wherever it moved)."""
    for info in pkgutil.walk_packages(services.__path__, "services."):
        if ".gen" in info.name or info.name.endswith("__main__"):
            continue
        importlib.import_module(info.name)


def _subclasses(cls: type) -> Iterator[type]:
    for sub in cls.__subclasses__():
        yield sub
        yield from _subclasses(sub)


def _classes_by_topic() -> dict[str, set[type]]:
    _import_everything()
    found: dict[str, set[type]] = {}
    for base in (Aggregate, DomainEvent):
        for cls in _subclasses(base):
            topic = vars(cls).get("TOPIC")
            if isinstance(topic, str) and topic.startswith(PREFIX):
                found.setdefault(topic, set()).add(cls)
    return found


def test_every_stored_topic_is_still_a_class_of_that_topic() -> None:
    found = _classes_by_topic()
    missing = sorted(frozen.TOPICS - set(found))
    assert not missing, f"topics no class carries any more: {missing}"
    for topic in frozen.TOPICS - frozen.ABSTRACT_TOPICS:
        resolved = resolve_topic(topic)  # how the store's rows are decoded
        assert getattr(resolved, "TOPIC", None) == topic, topic
    for topic in frozen.ORIGINATOR_TOPICS:
        assert issubclass(resolve_topic(topic), Aggregate), topic
    assert frozen.ABSTRACT_TOPICS <= frozen.TOPICS


def _ledger(tmp_path: Path) -> Ledger:
    return Ledger(LedgerConfig(store_url=f"sqlite:///{tmp_path}/frozen.db",
                               seal_key=bytes(32)), games=LEDGER_GAMES)


def test_transcodings_are_registered_by_name(tmp_path: Path) -> None:
    ledger = _ledger(tmp_path)
    try:
        names = ledger.app.mapper.transcoder.names  # type: ignore[attr-defined]
        assert set(frozen.TRANSCODINGS) <= set(names)
    finally:
        ledger.close()


def _command_parameters(method: Any) -> tuple[list[str], str]:
    signature = inspect.signature(method)
    names = [p.name for p in signature.parameters.values()
             if p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD]
    keyword_only = [p.name for p in signature.parameters.values()
                    if p.kind is inspect.Parameter.KEYWORD_ONLY]
    assert keyword_only == ["actor"], (method.__name__, keyword_only)
    assert names[:2] == ["self", "request_id"], (method.__name__, names)
    return names[2:], str(signature.return_annotation)


def ledger_method(name: str) -> Any:
    """The ledger's method ``name``: the core's, or one of the games' the composition root
    hands the ledger (declared by ``LedgerGame.face``: a method of its commands class)."""
    for game in LEDGER_GAMES:
        declared = game.face.declared().get(name)
        if declared is not None:
            return declared.impl
    return getattr(Ledger, name, None)


def _answer_type(name: str) -> Any:
    return typing.get_type_hints(ledger_method(name))["return"]


@pytest.mark.parametrize("command", sorted(frozen.COMMAND_ARGUMENTS))
def test_each_command_keeps_its_name_and_stored_arguments(command: str) -> None:
    method = ledger_method(command)
    assert callable(method), f"the ledger has no command {command!r}"
    params, _ = _command_parameters(method)
    optional = frozen.OPTIONAL_ARGUMENTS.get(command, ())
    assert [p for p in params if p not in optional] == list(frozen.COMMAND_ARGUMENTS[command])
    answer = _answer_type(command)
    assert dataclasses.is_dataclass(answer)
    _check_fields(frozen.COMMAND_ANSWERS[command], answer, set())


def _check_fields(frozen_name: str, cls: Any, seen: set[str]) -> None:
    """``cls`` has the frozen fields of ``frozen_name`` (required ones still required, by name
    and type), only defaulted fields besides, and the same holds of the classes inside."""
    if frozen_name in seen:
        return
    seen.add(frozen_name)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    hints = typing.get_type_hints(cls)

    def defaulted(f: dataclasses.Field[Any]) -> bool:
        return (f.default is not dataclasses.MISSING
                or f.default_factory is not dataclasses.MISSING)

    required = dict(frozen.ANSWER_FIELDS[frozen_name])
    optional = dict(frozen.DEFAULTED_FIELDS.get(frozen_name, ()))
    for name, type_text in {**required, **optional}.items():
        assert name in fields, f"{frozen_name}.{name} is gone"
        assert str(fields[name].type) == type_text, (frozen_name, name, fields[name].type)
    for name, f in fields.items():
        if name in required:
            assert not defaulted(f), f"{frozen_name}.{name} became optional"
        else:
            assert defaulted(f), f"{frozen_name}.{name} is new and has no default"
    for name, type_text in required.items() | optional.items():
        inner = [n for n in frozen.ANSWER_FIELDS if n in type_text.replace("|", " ")
                 .replace("[", " ").replace("]", " ").replace(",", " ").split()]
        for inner_name in inner:
            _check_fields(inner_name, _find(hints[name], inner_name), seen)


def _find(tp: Any, name: str) -> Any:
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        if tp.__name__ == name:
            return tp
        for base in tp.__mro__:  # a game's subclass of a frozen view
            if base.__name__ == name:
                return tp
    for arg in typing.get_args(tp):
        found = _find(arg, name)
        if found is not None:
            return found
    return None


def test_id_derivations() -> None:
    assert str(ids.NAMESPACE) == frozen.ID_NAMESPACE
    derive = {"table_uuid": ids.table_uuid, "account_uuid": ids.account_uuid,
              "request_uuid": ids.request_uuid, "request_uuid scoped": ids.request_uuid,
              "stake_uuid": ids.stake_uuid}
    for name, (args, expected) in frozen.ID_EXAMPLES.items():
        assert str(derive[name](*args)) == expected, name  # type: ignore[operator]
    table, role, account = frozen.TABLE_ACCOUNT
    assert ids.table_account(table, role) == account
    assert ids.cage_account(frozen.CAGE_ACCOUNT[0]) == frozen.CAGE_ACCOUNT[1]


def test_checkpoint_body() -> None:
    from services.regulator.checkpoint import checkpoint_body

    body = checkpoint_body("origin", 1, bytes(32), 7, "coup")
    assert tuple(body) == frozen.CHECKPOINT_BODY


def _served_methods() -> set[str]:
    names: set[str] = set()
    gen = importlib.import_module("services.api.gen.sabot")  # sabot.v1 and each game's
    for info in pkgutil.walk_packages(gen.__path__, gen.__name__ + "."):
        if info.name.endswith("_pb2"):
            module = importlib.import_module(info.name)
            for service in module.DESCRIPTOR.services_by_name.values():
                names |= {f"/{service.full_name}/{m.name}" for m in service.methods}
    return names


def test_grpc_methods_and_their_roles() -> None:
    from services.api.roles import Role
    from services.bootstrap import ROLE_TABLE

    allowed = ROLE_TABLE.allowed  # the server's: its game write rows from the declarations
    served = _served_methods()
    missing = sorted(set(frozen.RPC_ROLES) - served)
    assert not missing, f"gRPC methods gone: {missing}"
    for method, (writes, roles) in frozen.RPC_ROLES.items():
        for role in Role:
            expected = (role is Role.ADMIN or role.value in roles
                        or (role is Role.REGULATOR and not writes))
            assert allowed(method, role) == expected, (method, role)


def _parse(argv: tuple[str, ...]) -> int:
    from services.cli import build_parser

    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        try:
            build_parser().parse_args(list(argv))
        except SystemExit as exc:
            return int(exc.code or 0)
    return 0


@pytest.mark.parametrize("path", frozen.CLI_PATHS)
def test_every_command_path_still_parses(path: str) -> None:
    assert _parse((*path.split(), "--help")) == 0, path


@pytest.mark.parametrize("argv", frozen.CLI_LINES, ids=" ".join)
def test_command_lines_the_issues_spell_out(argv: tuple[str, ...]) -> None:
    assert _parse(argv) == 0


def test_entry_points() -> None:
    serve = subprocess.run([sys.executable, "-m", "services.cli.server", "serve", "--help"],
                           capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert serve.returncode == 0, serve.stderr
    from sabot_verify.__main__ import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit) as exit_:
        main(["--help"])
    assert exit_.value.code == 0
    for flag in frozen.VERIFY_FLAGS:
        assert flag in out.getvalue(), flag


def test_environment_names_are_still_read() -> None:
    text = "\n".join(p.read_text(encoding="utf-8") for folder in ("services", "ops")
                     for p in (ROOT / folder).rglob("*.py"))
    gone = [name for name in frozen.ENVIRONMENT if f'"{name}"' not in text]
    assert not gone, f"no code reads {gone} any more (keep an old name as an alias)"
