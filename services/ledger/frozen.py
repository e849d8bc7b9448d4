"""Frozen dataclasses made without their generated ``__init__`` (issue 25: the library's events,
stored events, notifications and recordings, a few per stake).

A frozen dataclass's ``__init__`` sets each field through ``object.__setattr__``, one call per
field. Where that ``__init__`` is the one ``dataclasses`` wrote (no ``__post_init__`` but the
library's ``DomainEvent`` check, which the caller makes itself, no ``__new__``, no slots), the
object it makes is exactly an instance whose ``__dict__`` holds the fields in their order:
``make`` builds that directly (``made_alike`` says where it may). The objects are equal to, and
hold the same attributes in the same order as, the ones their class makes
(tests/ledger/test_trigger.py, tests/ledger/test_frozen.py).
"""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

from eventsourcing.domain import DomainEvent

T = TypeVar("T")

# per class: its fields' names in order, or None (made by its own ``__init__``)
_FIELDS: dict[type[Any], tuple[str, ...] | None] = {}


def fields_of(cls: type[Any]) -> tuple[str, ...] | None:
    """The names of ``cls``'s fields in order, if ``make`` may make it; else None."""
    if cls in _FIELDS:
        return _FIELDS[cls]
    found: tuple[str, ...] | None = None
    if dataclasses.is_dataclass(cls) and _dataclass_init(cls):
        fields = dataclasses.fields(cls)
        names = tuple(f.name for f in fields)
        if all(f.init for f in fields) and "__dict__" not in names:
            found = names
    _FIELDS[cls] = found
    return found


def _dataclass_init(cls: type[Any]) -> bool:
    """Whether ``cls`` is made by its dataclass ``__init__`` and nothing else: that ``__init__``
    written by ``dataclasses``, the library's ``DomainEvent.__post_init__`` or none, no
    ``__new__`` of its own, no slots."""
    init = cls.__init__
    new: object = cls.__new__
    code = getattr(init, "__code__", None)
    post_init = getattr(cls, "__post_init__", None)
    return (
        code is not None
        and "__create_fn__" in getattr(code, "co_qualname", "")
        and (post_init is None or post_init is DomainEvent.__post_init__)
        and new is object.__new__
        and "__slots__" not in vars(cls)
    )


def make(cls: type[T], values: dict[str, Any]) -> T:
    """An instance of ``cls`` (``fields_of(cls)`` not None) whose fields are ``values``, given
    in the order of the fields (``cls(**values)``, without its ``__init__``)."""
    made: T = object.__new__(cls)
    vars(made).update(values)
    return made
