"""A game as the composition root holds it: its part for each layer that serves it.

A game is a package ``services/<game>/`` whose ``game.py`` defines ``GAME``, a ``Game``: one
port per layer, each the interface that layer declares (and reads nothing else of a game):

- ``ledger``: ``services.ledger.game.LedgerGame`` (its name, deck, rule book, table accounts,
  commands and their declarations, the ids its stored commands drew);
- ``api``: ``services.api.game.ApiGame`` (its servicers and services, its RPCs of the frozen
  ``sabot.v1`` services, where its rounds of a shoe belong);
- ``read``: ``services.projections.games.ReadGame`` (its own read models);
- ``regulator``: ``services.regulator.replay.RegulatorGame`` (its replay of a shoe's rounds,
  where its rounds end for the notary);
- ``turns``: ``services.turn_clock.TurnGame`` for a game whose players have a turn time (None:
  none);
- ``verify``: the module of the standalone verifier (``ops/sabot_verify``) that checks its
  shoes, by name (the verifier imports nothing of ours and nothing here imports it): it
  registers the game's per-shoe check (``sabot_verify.shoes.register_game``), which the
  verifier picks by ``Table.Opened.game``; None: the verifier's convention, ``sabot_verify.``
  and the game's name with dashes as underscores (``verifier``).

``services/bootstrap.py`` holds the list of games (one line per game) and hands each layer its
part; no layer imports this module, a game's package or the composition root
(tests/contracts/test_layers.py). See docs/architecture.md, "What adding a fourth game takes".
"""

from __future__ import annotations

from dataclasses import dataclass

from services.api.game import ApiGame
from services.ledger.game import LedgerGame
from services.projections.games import ReadGame
from services.regulator.replay import RegulatorGame
from services.turn_clock import TurnGame


@dataclass(frozen=True)
class Game:
    """One game: its port of each layer (see the module's text)."""

    ledger: LedgerGame
    api: ApiGame
    read: ReadGame
    regulator: RegulatorGame
    turns: TurnGame | None = None
    verify: str | None = None

    def __post_init__(self) -> None:
        names = {self.ledger.name, self.api.name, self.read.name, self.regulator.name,
                 *(() if self.turns is None else (self.turns.name,))}
        if len(names) != 1:
            raise ValueError(f"a game's parts name one game, not {sorted(names)}")

    @property
    def name(self) -> str:
        return self.ledger.name

    @property
    def verifier(self) -> str:
        """The verifier's module of the game (``verify``, else the verifier's convention)."""
        return self.verify or "sabot_verify." + self.name.replace("-", "_")
