"""One list of stored topics (``services/topics.py``), equal to the aggregates' ``TOPIC``s, read
by every reader, copied (on purpose, and kept equal here) by the standalone verifier.

A topic is stored in every event's ``topic`` column, in each ``Created`` event's
``originator_topic`` and in each snapshot row: renaming one, or a reader restating one that then
drifts (``vocabulary.STAKE_EVENTS`` once listed the abstract ``Coup.StakeChanged``,
``projections.topics.STAKE_EVENTS`` did not), breaks stores or readers silently.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import re
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import sabot_verify
import sabot_verify.topics as verifier_topics
from eventsourcing.domain import BaseAggregate, DomainEvent, Snapshot
from eventsourcing.utils import resolve_topic

import services
from services import topics

from . import frozen

ROOT = Path(__file__).resolve().parents[2]
# Event classes never stored: the base of every stake event (no fate maps to it).
ABSTRACT = frozenset({"sabot.ledger:Coup.StakeChanged"})


def _modules() -> Iterator[ModuleType]:
    """Every module of ``services`` (wherever a game's aggregates live, they are found)."""
    for info in pkgutil.walk_packages(services.__path__, "services."):
        yield importlib.import_module(info.name)


def _classes(owner: type | ModuleType, module: str) -> Iterator[type]:
    for value in vars(owner).values():
        if inspect.isclass(value) and value.__module__ == module:
            yield value
            yield from _classes(value, module)


def _own_topic(cls: type) -> str | None:
    """The literal ``TOPIC`` the class declares (the library wraps a nested event class in a
    generated subclass of the same name: the declaration is on that base)."""
    for base in cls.__mro__:
        if (base.__module__, base.__qualname__) == (cls.__module__, cls.__qualname__):
            topic = base.__dict__.get("TOPIC")
            if isinstance(topic, str):
                return topic
    return None


def _declared() -> dict[str, set[str]]:
    """The literal TOPICs the code declares: aggregates, stored events, snapshots, bases; and
    under ``untopiced`` the event classes without one (each must have its own)."""
    found: dict[str, set[str]] = {"aggregates": set(), "events": set(), "snapshots": set(),
                                  "bases": set(), "abstract": set(), "untopiced": set()}
    for module in _modules():
        for cls in _classes(module, module.__name__):
            if not issubclass(cls, BaseAggregate | DomainEvent):
                continue
            topic = _own_topic(cls)
            if topic is None:
                if cls.__name__ != "Created":  # the library's default, unused: Opened etc. are
                    found["untopiced"].add(f"{cls.__module__}:{cls.__qualname__}")
                continue
            if issubclass(cls, BaseAggregate):
                found["aggregates"].add(topic)
            elif issubclass(cls, Snapshot):
                found["snapshots"].add(topic)
            elif cls.__name__ == "Event":
                found["bases"].add(topic)  # each aggregate's base of its events
            elif topic in ABSTRACT:
                found["abstract"].add(topic)
            else:
                found["events"].add(topic)
                assert resolve_topic(topic) in cls.__mro__, topic  # the class it decodes to
    return found


def test_the_list_is_the_aggregates_topics() -> None:
    found = _declared()
    assert not found["untopiced"], "event classes without their own TOPIC"
    assert found["events"] == set(topics.EVENTS)
    assert found["aggregates"] == set(topics.AGGREGATES)
    assert found["snapshots"] == set(topics.SNAPSHOTS)
    assert found["abstract"] == set(ABSTRACT)
    assert set(topics.ALL) == found["events"] | found["snapshots"]
    assert all(t.startswith(topics.P) for t in found["events"] | found["aggregates"])
    assert {t.removesuffix(".Event") for t in found["bases"]} == set(topics.AGGREGATES)
    # the core's 5 aggregates and 14 stored events, Trente et Quarante's 1 and 28, 1 snapshot
    # topic (with the 6 bases and the abstract StakeChanged: the 56 TOPIC strings of SEAM §0)
    assert (len(topics.CORE_AGGREGATES), len(topics.CORE)) == (5, 14)
    assert (len(topics.TRENTE_ET_QUARANTE_AGGREGATES), len(topics.TRENTE_ET_QUARANTE)) == (1, 28)
    assert len(topics.SNAPSHOTS) == 1 and len(found["bases"]) == len(topics.AGGREGATES)
    assert not topics.CORE & topics.TRENTE_ET_QUARANTE
    # Treinta y Una's 1 aggregate and 17 events (16 of its round, 1 on the core's Table)
    assert (len(topics.TREINTA_Y_UNA_AGGREGATES), len(topics.TREINTA_Y_UNA)) == (1, 17)
    assert not (topics.CORE | topics.TRENTE_ET_QUARANTE) & topics.TREINTA_Y_UNA
    # and the names S0 froze (tests/contracts/frozen.py), each game's added since
    assert topics.ALL | topics.AGGREGATES == frozen.TOPICS - frozen.ABSTRACT_TOPICS
    assert topics.AGGREGATES == frozen.ORIGINATOR_TOPICS


def test_one_list_of_stake_events() -> None:
    """The 18 concrete stake events: every subclass of ``Coup.StakeChanged``, not it."""
    from services.trente_et_quarante.coup import Coup

    def subclasses(cls: type) -> set[type]:
        return {c for s in cls.__subclasses__() for c in {s} | subclasses(s)}

    concrete = {c.TOPIC for c in subclasses(Coup.StakeChanged)}
    assert set(topics.STAKE_EVENTS) == concrete
    assert len(topics.STAKE_EVENTS) == 18 and not topics.STAKE_EVENTS & ABSTRACT
    assert topics.STAKE_EVENTS <= topics.COUP_EVENTS <= topics.TRENTE_ET_QUARANTE
    coup = {t for t in topics.EVENTS if t.startswith(topics.COUP + ".")}
    assert set(topics.COUP_EVENTS) == coup
    for group, aggregate in ((topics.SHOE_EVENTS, topics.SHOE),
                             (topics.TABLE_EVENTS, topics.TABLE)):
        assert set(group) == {t for t in topics.EVENTS if t.startswith(aggregate + ".")}
    assert topics.ACCOUNT_ENTRIES == topics.ACCOUNT_CREDITS | topics.ACCOUNT_DEBITS
    from services.ledger.account import DEBIT_TOPICS, ENTRY_TOPICS

    assert (topics.ACCOUNT_DEBITS, topics.ACCOUNT_ENTRIES) == (DEBIT_TOPICS, ENTRY_TOPICS)


def _constant_name(topic: str) -> str:
    words = r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])"  # TreintaYUna: TREINTA_Y_UNA
    return re.sub(words, "_", topics.short(topic).replace(".", "_")).upper()


def test_each_constant_is_named_after_its_topic() -> None:
    """``sabot.ledger:Coup.StakePlaced`` is ``COUP_STAKE_PLACED``, each topic once."""
    named = {k: v for k, v in vars(topics).items()
             if k.isupper() and isinstance(v, str) and v != topics.P}
    assert sorted(named.values()) == sorted(set(named.values()))  # no topic under two names
    for name, topic in named.items():
        want = "CHAINED_SNAPSHOT" if topic == topics.CHAINED_SNAPSHOT else _constant_name(topic)
        assert name == want, topic
    assert set(named.values()) == topics.ALL | topics.AGGREGATES


def _literals(path: Path) -> Iterator[tuple[int, str, str]]:
    """``(line, value, where)`` of every string constant naming a stored topic (docstrings
    aside); ``where`` is ``TOPIC`` for a class's own ``TOPIC = "…"``, else the assigned name."""
    tree = ast.parse(path.read_text("utf-8"))
    docstrings = {id(n.value) for n in ast.walk(tree)
                  if isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant)}
    targets: dict[int, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(
                node.targets[0], ast.Name):
            for inner in ast.walk(node.value):
                targets[id(inner)] = node.targets[0].id
    for node in ast.walk(tree):
        if (isinstance(node, ast.Constant) and isinstance(node.value, str)
                and node.value.startswith("sabot.ledger:") and id(node) not in docstrings):
            yield node.lineno, node.value, targets.get(id(node), "")


# The writer's own module names its evidence's topics (it writes them, reads none back).
WRITER_CONSTANTS = {"services/ledger/evidence.py": {"LINKED_TOPIC", "SNAPSHOT_TOPIC"}}


def test_readers_restate_no_topic() -> None:
    """Outside ``services/topics.py`` a topic is spelled only as an aggregate's own ``TOPIC``:
    every reader imports the list."""
    restated = []
    for path in sorted((ROOT / "services").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel == "services/topics.py" or "/gen/" in rel:
            continue
        for line, value, where in _literals(path):
            if where != "TOPIC" and where not in WRITER_CONSTANTS.get(rel, set()):
                restated.append(f"{rel}:{line}: {value!r}")
    assert not restated, "topics spelled outside services/topics.py:\n" + "\n".join(restated)


def test_the_verifier_copy_is_the_server_list() -> None:
    """``ops/sabot_verify/topics.py``: the same names, the same values, and the verifier spells
    no topic anywhere else."""
    assert verifier_topics.P == topics.P
    copied = {k: v for k, v in vars(verifier_topics).items() if k.isupper() and k != "P"}
    assert copied
    for name, value in copied.items():
        if name.endswith("_PREFIX"):  # every event of one aggregate
            aggregate = topics.P + name.removesuffix("_PREFIX").title()
            assert aggregate in topics.AGGREGATES and value == aggregate + ".", name
        else:
            assert value == getattr(topics, name), name
    root = Path(sabot_verify.__file__).parent
    elsewhere = [f"{p.name}:{line}" for p in sorted(root.glob("*.py")) if p.name != "topics.py"
                 for line, _, _ in _literals(p)]
    assert not elsewhere, f"the verifier spells topics outside its topics.py: {elsewhere}"
    assert "sabot.ledger:" not in "".join(
        p.read_text("utf-8") for p in root.glob("*.py") if p.name != "topics.py")


def test_every_topic_is_documented() -> None:
    """docs/export-format.md names every stored topic (what an auditor reads in an export)."""
    doc = (ROOT / "docs" / "export-format.md").read_text("utf-8")
    missing = sorted(t for t in topics.ALL | topics.AGGREGATES if f"`{t}`" not in doc)
    assert not missing, f"docs/export-format.md does not list {missing}"


def test_the_list_is_data_only() -> None:
    """``services/topics.py`` imports nothing: any layer may read it."""
    tree = ast.parse((ROOT / "services" / "topics.py").read_text("utf-8"))
    imports = [n for n in ast.walk(tree) if isinstance(n, ast.Import | ast.ImportFrom)]
    assert all(isinstance(n, ast.ImportFrom) and n.module == "__future__" for n in imports)
