"""Which site a store belongs to, as its evidence chain records it (docs/operations.md, "Many
sites").

A store's site is the one its chain's last link names (``services/ledger/evidence.py``: every
link a writer of a site signs names it); a store whose links name none (a single site, or a
store written before sites) belongs to no site yet. The offline notary (``sabot store
checkpoint``, ``sabot store export``) signs its checkpoints with that site's origin
(``checkpoint_origin``); told another site (``--site``), it refuses (``SiteMismatch``).
"""

from __future__ import annotations

import json

from services.ledger.evidence import CHAIN_ID
from services.regulator.checkpoint import checkpoint_origin
from services.regulator.source import EventTable


class SiteMismatch(ValueError):
    """The store belongs to another site than the one the command was given."""


def recorded_site(events: EventTable) -> str | None:
    """The site the store's last link names (None: no link, or one that names no site)."""
    last = events.last_version(CHAIN_ID)
    if last is None:
        return None
    try:
        site = json.loads(last.state).get("site")
    except (ValueError, AttributeError):
        return None  # a malformed link: the chain's check names it
    return None if site is None else str(site)


def store_site(events: EventTable, configured: str | None) -> str | None:
    """The site of the store's log: the one its chain records, else the one the command was
    given (``configured``, None: none); ``SiteMismatch`` when both are known and differ."""
    recorded = recorded_site(events)
    if recorded is not None and configured is not None and recorded != configured:
        raise SiteMismatch(f"the store belongs to site {recorded!r} (its evidence chain's last "
                           f"link names it), not to site {configured!r}")
    return recorded if recorded is not None else configured


def store_origin(events: EventTable, configured: str | None) -> str:
    """The origin the store's checkpoints name (``store_site``'s site)."""
    return checkpoint_origin(store_site(events, configured))


__all__ = ["SiteMismatch", "recorded_site", "store_origin", "store_site"]
