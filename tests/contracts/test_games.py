"""A contract every game passes (issue 21), on SQLite and PostgreSQL: parametrised over the
composition root's games (``services.bootstrap.GAMES``), each game played by its driver below
(a game without one fails ``test_every_registered_game_has_a_driver``).

For each game, on one ledger: a round begun and in play (cards dealt) hides every shoe's seed
(no stored event holds it in clear); a command the rules refuse stores nothing; a command
issued again with its request id gets its first answer and stores nothing; the round played
to its end (its shoes closed: their seeds revealed) conserves money (every currency's
postings sum to zero, every account's balance is the sum of its entries); then on the closed
store the notary, given the games' ``ROUND_END``, signs a checkpoint naming the round after
its end; the regulator's replay of the round answers identical; the export verifies
(``sabot-verify`` VERIFIED).

The games are the composition root's (``services.bootstrap.GAMES``) and a toy
(``tests/contracts/toy.py``: carta alta), handed to each layer as the root hands the real
ones: the ledger its ``LedgerGame``s, the notary the games' round ends, the regulator their
replays (``bootstrap.ledger_games``, ``round_end``, ``served``), the verifier its shoe check.
"""

from __future__ import annotations

import io
import json
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol
from uuid import UUID

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from sabot_verify.__main__ import run as verify_run

from domain.errors import RuleViolation
from services import topics as T
from services.bootstrap import GAMES, ledger_games, round_end, served
from services.cuarenta.replay import replay_match
from services.ledger.api import Ledger
from services.ledger.seal import unseal
from services.ledger.shoe import Shoe
from services.regulator.checkpoint import Checkpoint, public_key_bytes
from services.regulator.export import write_export
from services.regulator.notary import Notary
from services.regulator.replay import Replayer, verdict
from services.regulator.source import Database, EventTable
from tests.cuarenta.support import Game as CuarentaGame
from tests.cuarenta.support import Referee, fund
from tests.cuarenta.support import player as cuarenta_player
from tests.regulator.play import CHAIN_PUBLIC, SEAL_KEY, Player, make_ledger
from tests.treinta_y_una.support import CROUPIER, Croupier, fund_players, game, open_table
from tests.treinta_y_una.support import player as tyu_player

from . import toy

# the composition root's games and the toy, handed to each layer alike
CONTRACT_GAMES = (*GAMES, toy.GAME)
LEDGER_GAMES = ledger_games(CONTRACT_GAMES)
REGULATOR_GAMES = served(CONTRACT_GAMES).regulator
ROUND_END = round_end(CONTRACT_GAMES)

NOTARY_KEY = Ed25519PrivateKey.from_private_bytes(bytes([77]) * 32)


class Driver(Protocol):
    """How the contract plays one game (``face_down``: whether it deals cards face down)."""

    face_down: bool

    def setup(self, ledger: Ledger, rng: random.Random) -> None:
        """Its table(s) and funded players."""

    def start(self, ledger: Ledger) -> tuple[str, Any, Callable[[], Any]]:
        """A round begun and in play, its cards dealt: (its id, the answer of the last
        command, that command issued again with the same request id)."""

    def hidden(self, ledger: Ledger, round_id: str) -> list[str]:
        """The faces of the round's face-down cards, as their holders read them (none for a
        game whose cards are dealt face up)."""

    def refuse(self, ledger: Ledger, round_id: str) -> None:
        """A command the rules refuse (it raises a ``RuleViolation``)."""

    def finish(self, ledger: Ledger, round_id: str) -> None:
        """The round played to its end, its shoes closed."""

    def replay(self, events: EventTable, notary: Notary, round_id: str) -> Any:
        """The regulator's replay of the round: an iterable of ``ReplayStep``."""


class TrenteEtQuarante:
    """A coup on a shoe, then the shoe closed (its seed revealed at its close)."""

    face_down = False

    def setup(self, ledger: Ledger, rng: random.Random) -> None:
        self.player = Player(ledger, rng, "tq", "francaise")

    def start(self, ledger: Ledger) -> tuple[str, Any, Callable[[], Any]]:
        p = self.player
        self.shoe = p.open_shoe()
        cid = ledger.open_coup(p.rid(), p.table).coup_id
        ledger.place_stake(p.rid(), cid, p.players[0], "noir", 500)
        rid = p.rid()
        return cid, ledger.deal(rid, cid), lambda: ledger.deal(rid, cid)

    def hidden(self, ledger: Ledger, round_id: str) -> list[str]:
        return []  # its cards are dealt face up: its secret is the shoe's seed

    def refuse(self, ledger: Ledger, round_id: str) -> None:
        p = self.player
        ledger.place_stake(p.rid(), round_id, p.players[1], "rouge", 500)  # betting closed

    def finish(self, ledger: Ledger, round_id: str) -> None:
        p = self.player
        ledger.settle(p.rid(), round_id)
        ledger.close_shoe(p.rid(), self.shoe)

    def replay(self, events: EventTable, notary: Notary, round_id: str) -> Any:
        return Replayer(events, notary, games=REGULATOR_GAMES).shoe(self.shoe)


class TreintaYUna:
    """A round: stakes, the deal (face down), the turns, the settlement (its shoe closed)."""

    face_down = True

    def setup(self, ledger: Ledger, rng: random.Random) -> None:
        open_table(ledger, "tyu-1", commission="5%")
        fund_players(ledger)
        self.croupier = Croupier(ledger, game(ledger))

    def start(self, ledger: Ledger) -> tuple[str, Any, Callable[[], Any]]:
        c = self.croupier
        view = c.stakes(c.open())
        rid = c.rid()
        self.dealt = c.tyu.deal(rid, view.round_id, actor=CROUPIER)
        self.shoe = self.dealt.shoe_id
        return view.round_id, self.dealt, lambda: c.tyu.deal(rid, view.round_id,
                                                             actor=CROUPIER)

    def hidden(self, ledger: Ledger, round_id: str) -> list[str]:
        hands = [self.croupier.tyu.my_hand(round_id, p, tyu_player(p)) for p in self.dealt.seats]
        return [s.code for h in hands for s in h.slots if s.face_down and s.code]

    def refuse(self, ledger: Ledger, round_id: str) -> None:
        c = self.croupier
        punter = next(s for s in self.dealt.seats if s != self.dealt.banker)
        c.tyu.place_stake(c.rid(), round_id, punter, 1_000, actor=CROUPIER)  # dealt already

    def finish(self, ledger: Ledger, round_id: str) -> None:
        c = self.croupier
        view = c.turns(self.dealt)
        assert c.tyu.settle(c.rid(), view.round_id, actor=CROUPIER).phase == "settled"

    def replay(self, events: EventTable, notary: Notary, round_id: str) -> Any:
        return Replayer(events, notary, games=REGULATOR_GAMES).shoe(self.shoe)


class Cuarenta:
    """A whole match: each hand dealt from a committed shoe of its own, closed at its end."""

    face_down = True

    def setup(self, ledger: Ledger, rng: random.Random) -> None:
        ledger.open_table("ct", "mesa", "seed", {"commission_rate": "5%"}, game="cuarenta")
        fund(ledger, ["eva", "fede"], 10_000)
        self.game = CuarentaGame(ledger)

    def start(self, ledger: Ledger) -> tuple[str, Any, Callable[[], Any]]:
        match = self.game.open_match("o1", "mesa", "eva fede", 500).match
        self.referee = Referee(self.game, match)
        rid = self.referee.rid()
        step = self.game.deal(rid, match.match_id)  # the first hand dealt
        self.referee.match = step.match
        return match.match_id, step, lambda: self.game.deal(rid, match.match_id)

    def hidden(self, ledger: Ledger, round_id: str) -> list[str]:
        seats = self.referee.match.seats
        return [c.card for seat, who in enumerate(seats)
                for c in self.game.hand(round_id, seat, actor=cuarenta_player(who)).cards]

    def refuse(self, ledger: Ledger, round_id: str) -> None:
        self.game.open_match("o-big", "mesa", "eva fede", 10**9)  # beyond their balances

    def finish(self, ledger: Ledger, round_id: str) -> None:
        assert self.referee.finish().phase == "over"

    def replay(self, events: EventTable, notary: Notary, round_id: str) -> Any:
        return replay_match(events, round_id)


class HighCard:
    """The toy's round: a stake, two cards dealt face up, the settlement (its shoe closed)."""

    face_down = False

    def setup(self, ledger: Ledger, rng: random.Random) -> None:
        ledger.open_table("toy-t", "toy", "casa", None, toy.NAME)
        ledger.open_account("toy-a", "lola")
        ledger.deposit("toy-d", "lola", 10_000)
        self.face = ledger.game(toy.HighCardLedger)

    def start(self, ledger: Ledger) -> tuple[str, Any, Callable[[], Any]]:
        opened = self.face.open_round("toy-o", "toy", "lola", 500)
        self.shoe = opened.shoe_id
        dealt = self.face.deal("toy-deal", opened.round_id)
        return opened.round_id, dealt, lambda: self.face.deal("toy-deal", opened.round_id)

    def hidden(self, ledger: Ledger, round_id: str) -> list[str]:
        return []  # dealt face up: its secret is the shoe's seed

    def refuse(self, ledger: Ledger, round_id: str) -> None:
        self.face.deal("toy-deal-2", round_id)  # dealt already

    def finish(self, ledger: Ledger, round_id: str) -> None:
        assert self.face.settle("toy-s", round_id).phase == "settled"

    def replay(self, events: EventTable, notary: Notary, round_id: str) -> Any:
        return Replayer(events, notary, games=REGULATOR_GAMES).shoe(self.shoe)


DRIVERS: dict[str, Callable[[], Driver]] = {
    "trente-et-quarante": TrenteEtQuarante,
    "treinta-y-una": TreintaYUna,
    "cuarenta": Cuarenta,
    toy.NAME: HighCard,
}


def test_every_registered_game_has_a_driver() -> None:
    assert sorted(g.name for g in CONTRACT_GAMES) == sorted(DRIVERS)
    assert toy.NAME not in {g.name for g in GAMES}  # the toy is the tests' own


@dataclass
class Played:
    """What the contract saw of one game's round on one store."""

    url: str
    game: str
    face_down: bool = False
    round_id: str = ""
    seeds_in_play: list[str] = field(default_factory=list)  # found in clear while in play
    hidden: list[str] = field(default_factory=list)  # the face-down cards' faces, in play
    faces_in_play: list[str] = field(default_factory=list)  # of those, found in an event
    refused: RuleViolation | None = None
    refused_stored: int = -1  # events a refused command added
    first: Any = None
    again: Any = None
    retry_stored: int = -1  # events a retry added
    events_after: list[Any] = field(default_factory=list)
    seeds: dict[str, str] = field(default_factory=dict)  # shoe id -> its seed (hex)
    signed: list[Checkpoint] = field(default_factory=list)
    verdict: Any = None  # the regulator's replay of the round
    verified: int = -1  # sabot-verify's exit code on the export
    report: str = ""
    summary: dict[str, Any] = field(default_factory=dict)


def _count(ledger: Ledger) -> int:
    n, after = 0, 0
    while batch := ledger.read_events(after, 1000):
        n += len(batch)
        after = batch[-1].position
    return n


def _log(ledger: Ledger) -> list[Any]:
    out, after = [], 0
    while batch := ledger.read_events(after, 1000):
        out += batch
        after = batch[-1].position
    return out


def _seeds(ledger: Ledger, events: list[Any]) -> dict[str, str]:
    """Every shoe's seed (hex), unsealed as the ledger does."""
    out = {}
    for e in events:
        if e.topic == T.SHOE_SHUFFLED:
            shoe: Any = ledger.app.repository.get(UUID(e.originator_id))
            assert isinstance(shoe, Shoe)
            out[e.originator_id] = unseal(SEAL_KEY, shoe.sealed_seed, shoe.id).hex()
    return out


def _in_clear(events: list[Any], seed: str) -> list[str]:
    return [e.topic for e in events if seed in json.dumps(e.state, default=str)]


def _play(name: str, url: str) -> Played:
    driver = DRIVERS[name]()
    ledger, rng = make_ledger(url, 5, games=LEDGER_GAMES)
    out = Played(url, name, face_down=driver.face_down)
    try:
        driver.setup(ledger, rng)
        out.round_id, out.first, again = driver.start(ledger)
        events = _log(ledger)
        out.seeds_in_play = [s for s in _seeds(ledger, events).values() if _in_clear(events, s)]
        out.hidden = driver.hidden(ledger, out.round_id)
        out.faces_in_play = [c for c in out.hidden if _in_clear(events, json.dumps(c))]
        before = _count(ledger)
        try:
            driver.refuse(ledger, out.round_id)
        except RuleViolation as exc:
            out.refused = exc
        out.refused_stored = _count(ledger) - before
        before = _count(ledger)
        out.again = again()
        out.retry_stored = _count(ledger) - before
        driver.finish(ledger, out.round_id)
        out.events_after = _log(ledger)
        out.seeds = _seeds(ledger, out.events_after)
    finally:
        ledger.close()
    db = Database(url)
    try:
        notary = Notary(db, EventTable(db), NOTARY_KEY, "sabot-test", ROUND_END)
        out.signed = notary.sync()
        notary.checkpoint_now()
        out.verdict = verdict(driver.replay(EventTable(db), notary, out.round_id))
        public = public_key_bytes(NOTARY_KEY.public_key())
        toy.register_verifier()  # the toy's shoe check, as a game's verifier module registers
        buf, report = io.StringIO(), io.StringIO()
        write_export(buf, EventTable(db), notary, public)
        out.verified = verify_run(buf.getvalue().splitlines(), checkpoint_key=public,
                                  chain_keys=[CHAIN_PUBLIC],  # the operator's keys pinned
                                  out=report, summary=out.summary)
        out.report = report.getvalue()
    finally:
        db.close()
    return out


_PLAYED: dict[tuple[str, str], Played] = {}


@pytest.fixture(params=sorted(DRIVERS))
def played(request: pytest.FixtureRequest, store_url: str) -> Iterator[Played]:
    """The game's round played on the store (once per game and store kind)."""
    kind = "sqlite" if store_url.startswith("sqlite") else "postgres"
    key = (request.param, kind)
    if key not in _PLAYED:
        _PLAYED[key] = _play(request.param, store_url)
    yield _PLAYED[key]


def test_a_round_in_play_hides_every_seed_until_its_shoe_closes(played: Played) -> None:
    assert played.seeds_in_play == []


def test_a_face_down_card_is_in_no_stored_event_while_in_play(played: Played) -> None:
    assert played.faces_in_play == []
    if played.face_down:  # (Trente et Quarante and the toy deal face up)
        assert len(played.hidden) >= 4, played.hidden


def test_every_seed_is_revealed_by_its_shoes_close(played: Played) -> None:
    for shoe, seed in played.seeds.items():  # revealed at the end, by the shoe's close only
        found = _in_clear(played.events_after, seed)  # (and the answer of the command closing
        assert T.SHOE_CLOSED in found and set(found) <= {T.SHOE_CLOSED,  # it, if it shows it)
                                                         T.REQUEST_RECORDED}, (shoe, found)


def test_a_refused_command_stores_nothing(played: Played) -> None:
    assert played.refused is not None
    assert played.refused_stored == 0


def test_a_retry_gets_the_first_answer_and_stores_nothing(played: Played) -> None:
    assert played.again == played.first
    assert played.retry_stored == 0


def test_a_whole_round_conserves_money(played: Played) -> None:
    net: dict[str, int] = {}
    per_account: dict[str, int] = {}
    last_balance: dict[str, int] = {}
    currency: dict[str, str] = {}
    for e in played.events_after:
        if e.topic == T.ACCOUNT_OPENED:
            currency[e.originator_id] = e.state["currency"]
        elif e.topic in T.ACCOUNT_ENTRIES:
            sign = -1 if e.topic in T.ACCOUNT_DEBITS else 1
            amount = sign * int(e.state["amount"])
            net[currency[e.originator_id]] = net.get(currency[e.originator_id], 0) + amount
            per_account[e.originator_id] = per_account.get(e.originator_id, 0) + amount
            last_balance[e.originator_id] = int(e.state["balance"])
    assert net and all(v == 0 for v in net.values()), net
    assert per_account == last_balance


def test_the_notary_signs_a_checkpoint_at_the_rounds_end(played: Played) -> None:
    ends = [c for c in played.signed if c.coup == played.round_id]
    assert len(ends) == 1 and ends[0].position is not None
    end = next(e for e in played.events_after if e.originator_id == played.round_id
               and ROUND_END(e) == played.round_id)
    assert ends[0].position >= end.position  # the round's end is inside the checkpoint
    index = [e.position for e in played.events_after].index(ends[0].position)
    assert ends[0].size == index + 1


def test_the_regulators_replay_of_the_round_is_identical(played: Played) -> None:
    v = played.verdict
    assert v.identical and v.steps > 5, str(v)


def test_the_export_verifies(played: Played) -> None:
    assert played.verified == 0, played.report
    assert played.summary["verdict"] == "VERIFIED", played.report
