"""The ledger's methods as the ledger socket (SABOT-LEDGER-WIRE-1, ``wire.py``) declares them:
a command or a query, its parameters in order with their types, and its answer's type.

Data only (it imports the views, not the wire, the ledger or a game), so that every game's
package can declare its own methods (``LedgerGame.methods``) without an import cycle:
the socket's table is the core's methods and every registered game's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from services.ledger.batch import CashBatchResult
from services.ledger.views import (
    AccountView,
    ShoeClosed,
    ShoeOpened,
    ShoeView,
    Statement,
    StoredEvent,
    TableClosed,
    TableView,
)

COMMAND, QUERY = "command", "query"
STR, OPT_STR, INT, OPT_INT, OPT_MAP, ACTOR = "str", "str?", "int", "int?", "map?", "actor"
# A list of words (account ids, card codes): a JSON array of strings; one text of words
# separated by spaces (the form before arrays) is still accepted, so the frames stay
# SABOT-LEDGER-WIRE-1.
WORDS, OPT_WORDS = "words", "words?"
# A batch's items (``services/ledger/batch.py``): a JSON array of maps of texts, integers,
# booleans and nulls; and a boolean.
ITEMS, BOOL = "items", "bool"
REQUEST_ID = ("request_id", STR)  # every command's first parameter
ACTOR_PARAM = ("actor", ACTOR)  # and its last


@dataclass(frozen=True)
class Method:
    """A method of the ledger the socket serves: a command or a query, its parameters in order
    (name, type), and the type of its answer."""

    kind: str
    params: tuple[tuple[str, str], ...]
    answer: Any

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.params)


def command(*params: tuple[str, str], answer: Any) -> Method:
    """A command: its request id first, then ``params``, then its actor."""
    return Method(COMMAND, (REQUEST_ID, *params, ACTOR_PARAM), answer)


def query(*params: tuple[str, str], answer: Any) -> Method:
    return Method(QUERY, tuple(params), answer)


# The core's methods: tables, shoes, accounts, the log (each game adds its own).
CORE_METHODS: dict[str, Method] = {
    "open_table": command(("table_id", STR), ("preset", STR), ("overrides", OPT_MAP),
                          ("game", OPT_STR), answer=TableView),
    "open_shoe": command(("table_id", STR), ("shoe_id", OPT_STR), ("deck_kind", STR),
                         answer=ShoeOpened),
    "cut": command(("shoe_id", STR), ("position", INT), ("cut_by", STR), answer=ShoeView),
    "close_shoe": command(("shoe_id", STR), answer=ShoeClosed),
    "close_table": command(("table_id", STR), answer=TableClosed),
    "open_account": command(("account_id", STR), ("currency", STR), answer=AccountView),
    "deposit": command(("account_id", STR), ("amount", INT), answer=AccountView),
    "withdraw": command(("account_id", STR), ("amount", INT), answer=AccountView),
    "cash_batch": command(("movements", ITEMS), ("atomic", BOOL), answer=CashBatchResult),
    "get_table": query(("table_id", STR), answer=TableView),
    "get_shoe": query(("shoe_id", STR), answer=ShoeView),
    "list_tables": query(("page_size", INT), ("page_token", STR),
                         answer=tuple[list[TableView], str]),
    "get_account": query(("account_id", STR), answer=AccountView),
    "statement": query(("account_id", STR), ("after", INT), ("limit", INT), answer=Statement),
    "read_events": query(("after_position", INT), ("limit", INT), ("topics", OPT_WORDS),
                         answer=list[StoredEvent]),
    "balances": query(answer=dict[str, int]),
    "audit_balances": query(answer=dict[str, int]),
    "writer_status": query(answer=dict[str, Any]),
    # answered from the ledger process's memory, at once (the health monitor, the metrics)
    "writer_state": query(answer=dict[str, Any]),
    "writer_metrics": query(answer=str),
}
CORE_NAMES = frozenset(CORE_METHODS)
