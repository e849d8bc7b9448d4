"""Canonical JSON: sorted keys, no spaces, UTF-8, so the same content always hashes the same."""

from __future__ import annotations

import json
from typing import Any


def canonical_json(value: Any, *, strict: bool = True) -> bytes:
    """The canonical encoding; ``strict`` refuses floats (money and counts are integers)."""
    if strict:
        _reject_floats(value)
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    ).encode("utf-8")


def _reject_floats(value: Any) -> None:
    if isinstance(value, float):
        raise ValueError(f"canonical JSON holds no floats, got {value!r}")
    if isinstance(value, dict):
        for v in value.values():
            _reject_floats(v)
    elif isinstance(value, list | tuple):
        for v in value:
            _reject_floats(v)
