"""What the ledger needs of a game (its port): ``LedgerGame``, handed to ``Ledger`` by the
composition root (``services/bootstrap.py``), and ``GameCommands``, the base of a game's
commands object.

A ``LedgerGame`` says:

- ``name`` (``Table.Opened.game``, what ``open_table(game=...)`` names), ``deck_kind`` (the only
  deck its shoes are shuffled from: ``open_shoe`` refuses another) and ``options`` (its rule
  book's ``domain.options.OptionTable``: ``open_table`` builds the table's rules from it and
  records ``OptionTable.text`` of them; ``Core.rules`` reads them back);
- ``table_accounts``: the account roles opened with each of its tables
  (``table:<table_id>:<role>``, in the table's currency);
- ``commands``: its commands object's class, built with the ledger's ``Core``;
- ``face``: its typed commands (``services.ledger.methods.Face``), each declared once: its
  stored name and the method of ``commands`` that decides it (its arguments and answer that
  method's signature); they are the ledger's commands and queries of the game
  (``methods``: their part of the socket's table), each command run through ``Core.run``
  (inside the single writer's unit of work, its request and answer stored with its actor);
  their stored names are unique across the core and every game handed in;
- ``transcodings``: how the event store writes its value types (``eventsourcing``
  ``Transcoding``s, by name: frozen, tests/contracts), registered by every ledger application
  that reads or writes its events (``LedgerApplication(env, transcodings)``);
- ``rerun_ids``: for the re-run of stored commands (``services.ledger.replay``, ``sabot store
  rerun``): ``rerun_ids(command, arguments, answer)``, the ids one of its stored commands drew
  (``LedgerConfig.new_id``), in the order it drew them; None: read from the aggregates the
  command created (its new round or match, then its shoes).

``GameCommands`` holds the core and the game's part of the core's table and shoe commands
(``shoe_closing``, ``table_closing``, ``table_layout``, ``table_rounds``), each a no-op unless
the game has one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from eventsourcing.persistence import Transcoding

from domain.cards import DeckKind
from domain.options import OptionTable
from services.ledger.core import Core, TableClosing
from services.ledger.methods import Face, Method
from services.ledger.shoe import Shoe
from services.ledger.table import Table
from services.ledger.views import MovementView, StakeView
from services.ledger.writer import UnitOfWork

RerunIds = Callable[[str, Mapping[str, Any], Mapping[str, Any]], Sequence[str]]


class GameCommands:
    """The base of a game's commands object: the ledger's ``core``, and the game's part of the
    core's commands on its tables (a no-op unless the game overrides it)."""

    def __init__(self, core: Core) -> None:
        self.core = core

    def shoe_closing(self, unit: UnitOfWork, table: Table, shoe: Shoe, ts: datetime
                     ) -> Sequence[MovementView]:
        """``close_shoe``: what the game settles first (refuses, or returns the movements)."""
        return ()

    def table_closing(self, unit: UnitOfWork, table: Table, ts: datetime) -> TableClosing:
        """``close_table``: what the game settles when its table closes for good."""
        return TableClosing()

    def table_layout(self, unit: UnitOfWork, table: Table
                     ) -> tuple[tuple[StakeView, ...], str | None]:
        """What a table view shows of the game's layout: its stakes, and the latest round's
        shoe."""
        return (), None

    def table_rounds(self, table: Table) -> tuple[str | None, int]:
        """What a table view shows of its rounds: the latest (None: none), and how many."""
        return None, 0


@dataclass(frozen=True)
class LedgerGame:
    """One game as the ledger plays it (see the module's text)."""

    name: str
    deck_kind: DeckKind
    options: OptionTable[Any]
    commands: type[GameCommands] = GameCommands
    face: type[Face] = Face
    table_accounts: tuple[str, ...] = ()
    rerun_ids: RerunIds | None = None
    transcodings: tuple[Transcoding, ...] = ()

    @property
    def methods(self) -> Mapping[str, Method]:
        """Its commands' and queries' part of the ledger socket's table (``face``'s)."""
        return self.face.methods()

    def decks(self, rules: Any) -> int:
        """How many decks one of its shoes holds under ``rules`` (its option ``decks``, else
        one)."""
        return int(getattr(rules, "decks", 1))
