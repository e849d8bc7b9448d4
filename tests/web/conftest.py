"""A real server (SQLite, a notary signing checkpoints) with a closed one-deck shoe of Trente
et Quarante, a settled Treinta y Una round (and one in play), a Cuarenta match played through
the API and, at a table of its own, a round of two other players called off (``OTHER``), and the
web console in front of it; Playwright drives Debian's chromium (never a browser of its own
download). The fixture is one per test process (``-n 2``: two), shared by every test of it:
its tests read it, and the few that play on write at tables of their own."""

from __future__ import annotations

import io
import itertools
import json
import os
import shutil
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from services.api import logs, server
from services.api.client import Client, new_request_id
from services.api.config import Config, parse_tokens
from services.api.gen.sabot.v1 import betting_pb2, cashier_pb2, common_pb2, events_pb2, table_pb2
from services.bootstrap import LEDGER_GAMES, SERVED
from services.ledger.api import Ledger, LedgerConfig
from services.regulator.checkpoint import public_key_bytes

KEY = bytes(range(32))
SEED = bytes.fromhex("2681de5d9808d4aac823a5a53ba27f2843cfbacbd0cbaa839f27ef876c6ef52a")
HIDDEN = bytes.fromhex("5eed" * 16)  # the second shoe's seed: never revealed (in play)
CHECKPOINT_KEY = Ed25519PrivateKey.from_private_bytes(bytes(range(1, 33)))
ROLES = ("admin", "croupier", "cashier", "back_office", "regulator")
PLAYERS = ("anne", "bruno")
OTHER = "chiara"  # a player anne never plays with: seated with bruno at a table of its own
CHROMIUM = os.environ.get("SABOT_CHROMIUM", shutil.which("chromium") or "/usr/bin/chromium")
ARTIFACTS = Path(os.environ.get("SABOT_WEB_ARTIFACTS", "var/test-artifacts/web"))


@dataclass
class Played:
    target: str
    tokens: dict[str, str]
    table: str = ""
    shoe: str = ""
    coups: list[str] = field(default_factory=list)
    seed: bytes = SEED
    open_coup: str = ""  # a coup of a shoe still in play (its seed HIDDEN, unrevealed)
    tyu_table: str = ""  # a Treinta y Una table: a settled round, then one still in play
    round: str = ""
    open_round: str = ""
    cuarenta_table: str = ""  # a Cuarenta table: a match played to its end
    match: str = ""
    other_round: str = ""  # bruno and OTHER's round, called off before the deal
    drawn: list[bytes] = field(default_factory=list)  # every seed the ledger drew, in order
    checkpoint_public_key: str = public_key_bytes(CHECKPOINT_KEY.public_key()).hex()
    store: Path = Path()  # the SQLite file (the insider of tests/web/test_tamper.py edits it)
    positions: dict[str, list[int]] = field(default_factory=dict)  # unit id -> its events'

    def client(self, who: str) -> Client:
        return Client(self.target, self.tokens[who])


def _money(minor: int) -> common_pb2.Money:
    return common_pb2.Money(currency_code="EUR", amount_minor=minor)


def _play(played: Played) -> None:
    c = {who: Client(played.target, token) for who, token in played.tokens.items()}
    try:
        for p in (*PLAYERS, OTHER):
            c["cashier"].cashier.OpenAccount(cashier_pb2.OpenAccountRequest(
                request_id=new_request_id(), account_id=p, currency_code="EUR"))
            c["cashier"].cashier.Deposit(cashier_pb2.DepositRequest(
                request_id=new_request_id(), name=f"accounts/{p}", amount=_money(1_000_000)))
        t = c["croupier"].tables
        table = t.OpenTable(table_pb2.OpenTableRequest(
            request_id=new_request_id(), table_id=f"web-{uuid.uuid4().hex[:6]}",
            overrides={"decks": "1"}))
        played.table = table.name
        shoe = t.OpenShoe(table_pb2.OpenShoeRequest(request_id=new_request_id(),
                                                    parent=table.name))
        t.CutShoe(table_pb2.CutShoeRequest(request_id=new_request_id(), name=shoe.name,
                                           cut_position=26, cut_by="anne"))
        played.shoe = shoe.name
        for _ in range(20):
            coup = t.OpenCoup(table_pb2.OpenCoupRequest(request_id=new_request_id(),
                                                        parent=shoe.name))
            for player, chance in zip(PLAYERS, (common_pb2.CHANCE_NOIR, common_pb2.CHANCE_ROUGE),
                                      strict=True):
                if any(s.account == f"accounts/{player}" for s in coup.layout):
                    continue
                c[player].betting.PlaceStake(betting_pb2.PlaceStakeRequest(
                    request_id=new_request_id(), coup=coup.name, account=f"accounts/{player}",
                    chance=chance, amount=_money(1_000)))
            dealt = t.DealCoup(table_pb2.DealCoupRequest(request_id=new_request_id(),
                                                         name=coup.name))
            t.SettleCoup(table_pb2.SettleCoupRequest(request_id=new_request_id(),
                                                     name=coup.name))
            played.coups.append(coup.name)
            if dealt.cut_card_reached:
                break
        t.CloseShoe(table_pb2.CloseShoeRequest(request_id=new_request_id(), name=shoe.name))
        second = t.OpenShoe(table_pb2.OpenShoeRequest(request_id=new_request_id(),
                                                      parent=table.name))
        t.CutShoe(table_pb2.CutShoeRequest(request_id=new_request_id(), name=second.name,
                                           cut_position=7, cut_by="bruno"))
        coup = t.OpenCoup(table_pb2.OpenCoupRequest(request_id=new_request_id(),
                                                    parent=second.name))
        t.DealCoup(table_pb2.DealCoupRequest(request_id=new_request_id(), name=coup.name))
        played.open_coup = coup.name
        _play_round(played, c)
        _play_match(played, c)
        other = c["croupier"].rounds.open_table(f"tyu-{uuid.uuid4().hex[:6]}").name
        played.other_round = c["croupier"].rounds.open_round(other, ["bruno", OTHER], 20_000,
                                                            "EUR").name
        c["croupier"].rounds.cancel(played.other_round)
        feed = c["back_office"].feed.StreamEvents(events_pb2.StreamEventsRequest(
            batch_size=1000, stop_at_end=True))
        for batch in feed:
            for e in batch.events:
                played.positions.setdefault(e.aggregate_id, []).append(e.position)
    finally:
        for client in c.values():
            client.close()


def _play_round(played: Played, c: dict[str, Client]) -> None:
    """A Treinta y Una round played to its settlement (its shoe closed: the seed revealed),
    then a second round dealt and left in play (its face-down cards and seed secret)."""
    rounds = c["croupier"].rounds
    played.tyu_table = rounds.open_table(f"tyu-{uuid.uuid4().hex[:6]}").name
    for n in range(2):
        r = rounds.open_round(played.tyu_table, list(PLAYERS), 20_000, "EUR")
        for p in PLAYERS:
            if r.banker.split("/")[-1] != p:
                r = c[p].rounds.place_stake(r.name, p, 1_000, "EUR")
        r = rounds.deal(r.name)
        if n == 1:
            played.open_round = r.name
            return
        while r.phase == "playing":
            who = r.whose_turn.split("/")[-1]
            me = c[who].rounds
            hand = me.my_hand(r.name, who)
            r = me.carta(r.name, who) if hand.total < 21 else me.me_planto(r.name, who)
        played.round = rounds.settle(r.name).name


def _play_match(played: Played, c: dict[str, Client]) -> None:
    """A Cuarenta match played to its end (every hand's shoe closed: its seed revealed)."""
    matches = c["croupier"].matches
    played.cuarenta_table = matches.open_table(f"cu-{uuid.uuid4().hex[:6]}",
                                               overrides={"commission_rate": "5%"}).name
    m = matches.open(played.cuarenta_table, list(PLAYERS), 1_000, "EUR").match
    played.match = m.name
    while m.phase != "over":
        if m.phase == "awaiting_deal":
            m = matches.deal(m.name).match
            continue
        me = c[PLAYERS[m.to_act % 2]].matches
        hand = me.hand(m.name, m.to_act)
        best = max(hand.legal, key=lambda p: (p.points, len(p.capture)))
        if not best.capture:
            best = min(hand.legal, key=lambda p: (len(p.capture) > 0, p.card))
        m = me.play(m.name, m.to_act, best.card, best.capture,
                    leave_on_table=not best.capture).match


@contextmanager
def serving(where: Path) -> Iterator[Played]:
    """A server on a fresh SQLite store in ``where``, everything of ``_play`` played on it."""
    logs.configure(stream=io.StringIO())
    store = where / "sabot.db"
    url = f"sqlite:///{store}"
    tokens = {r: f"tok-{r}-{uuid.uuid4().hex}" for r in ROLES}
    tokens.update({p: f"tok-player-{p}-{uuid.uuid4().hex}" for p in (*PLAYERS, OTHER)})
    spec = ",".join(f"{t}:{r}" if r in ROLES else f"{t}:player:{r}" for r, t in tokens.items())
    seeds = itertools.chain((SEED, HIDDEN), iter(lambda: os.urandom(32), b""))
    drawn: list[bytes] = []

    def new_seed() -> bytes:
        drawn.append(next(seeds))
        return drawn[-1]

    ledger = Ledger(LedgerConfig(store_url=url, seal_key=KEY, new_seed=new_seed), batching=True,
                    games=LEDGER_GAMES)
    running = server.start(Config(listen="127.0.0.1:0", store=url, tokens=parse_tokens(spec),
                                  seal_key=KEY, workers=8,
                                  checkpoint_key=CHECKPOINT_KEY.private_bytes_raw()), ledger,
                                  games=SERVED)
    played = Played(f"127.0.0.1:{running.port}", tokens, drawn=drawn, store=store)
    try:
        _play(played)
        assert running.notary is not None
        assert running.notary.checkpoint_now(30) is not None  # every event under a signed head
        yield played
    finally:
        running.stop(grace=1)
        ledger.close()


@contextmanager
def console_of(played: Played) -> Iterator[str]:
    """The web console in front of ``played``'s server: its address."""
    from services.api.tls import open_channel
    from services.cli.web import start_console

    channel = open_channel(played.target)
    running = start_console("127.0.0.1:0", played.target, channel,
                            checkpoint_public_key=played.checkpoint_public_key)
    try:
        yield running.url
    finally:
        running.stop()
        channel.close()


@pytest.fixture(scope="package")
def played(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Played]:
    with serving(tmp_path_factory.mktemp("web")) as found:
        yield found


@pytest.fixture(scope="package")
def console(played: Played) -> Iterator[str]:
    with console_of(played) as url:
        yield url


@pytest.fixture(scope="package")
def browser() -> Iterator[Any]:
    if not Path(CHROMIUM).is_file():
        pytest.fail(f"no chromium at {CHROMIUM}: apt-get install chromium (Debian's package)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            yield b
        finally:
            b.close()


def shot(page: Any, name: str) -> None:
    """A screenshot of the page, kept as a test artifact."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


class Tampered:
    """A page whose answers of ``pattern`` are changed on their way to the browser by ``change``
    (the facts as JSON, edited in place), as a lying console or network would. An error of
    ``change`` is kept in ``errors`` (the answer then goes unchanged), not left to surface later
    in Playwright's own event loop, where it once stood as an IndexError in a page's teardown;
    ``close`` removes the route, waiting for any handler still running, then the page."""

    def __init__(self, page: Any, pattern: str, change: Callable[[Any], None]) -> None:
        self.page, self.change = page, change
        self.errors: list[str] = []
        page.route(pattern, self._handle)

    def _handle(self, route: Any) -> None:
        answer = route.fetch()
        try:
            facts = answer.json()
            self.change(facts)
        except Exception as exc:  # kept for the test to see
            self.errors.append(repr(exc))
            route.fulfill(response=answer)
            return
        route.fulfill(response=answer, body=json.dumps(facts))

    def close(self) -> None:
        self.page.unroute_all(behavior="wait")
        self.page.close()
