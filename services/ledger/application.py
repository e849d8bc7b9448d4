"""The eventsourcing application holding the ledger's aggregates (events table ``sabot_events``)."""

from __future__ import annotations

from typing import Any, ClassVar

from eventsourcing.application import Application
from eventsourcing.persistence import JSONTranscoder

from services.ledger import transcodings
from services.ledger.account import Account
from services.ledger.config import APP_NAME


class LedgerApplication(Application):  # type: ignore[type-arg]
    """Accounts are snapshotted every 500 events so a busy account loads fast after a restart."""

    name = APP_NAME
    snapshotting_intervals: ClassVar[dict[type[Any], int]] = {Account: 500}

    def register_transcodings(self, transcoder: JSONTranscoder) -> None:
        super().register_transcodings(transcoder)
        transcodings.register(transcoder)


def new_application(env: dict[str, Any]) -> LedgerApplication:
    return LedgerApplication(env=env)
