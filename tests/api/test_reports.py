"""ReadModelService against a real server, on SQLite and PostgreSQL: shoes played through the
API (mirrored in the domain engine by ``tests.projections.game``), then the reports' figures
equal the domain's; reconcile agrees; the projection thread brings the lag to 0; statements list
the movements with their causes; malformed requests name their field."""

from __future__ import annotations

import csv
import io
import json
import os
import re
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import grpc
import psycopg
import pytest
from google.protobuf.timestamp_pb2 import Timestamp
from projections.game import Game  # tests/ is on sys.path (rootdir packages)

from services.api import server
from services.api.client import Client, authed
from services.api.config import Config, parse_tokens
from services.api.gen.sabot.v1 import (
    betting_pb2,
    cashier_pb2,
    common_pb2,
    reports_pb2,
    reports_pb2_grpc,
    table_pb2,
)
from services.bootstrap import SERVED
from services.ledger.ids import stake_uuid
from tests.conftest import PG_HOST, PG_PORT, PG_USER, postgres_unavailable

from .support import failure

PG_ADMIN = f"host={PG_HOST} port={PG_PORT} user={PG_USER} dbname=postgres connect_timeout=3"
PLAYERS = ("ana", "bruno", "carla")
CHANCES = ("noir", "rouge", "couleur", "inverse")
CHANCE = {"noir": common_pb2.CHANCE_NOIR, "rouge": common_pb2.CHANCE_ROUGE,
          "couleur": common_pb2.CHANCE_COULEUR, "inverse": common_pb2.CHANCE_INVERSE}
CHOICE = {"partage": common_pb2.REFAIT31_CHOICE_PARTAGE,
          "prison": common_pb2.REFAIT31_CHOICE_PRISON}
LOG_LINE = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \[|\{\"")
CSV, JSON = reports_pb2.EXPORT_FORMAT_CSV, reports_pb2.EXPORT_FORMAT_JSON


def _money(amount: int) -> common_pb2.Money:
    return common_pb2.Money(currency_code="EUR", amount_minor=amount)


class ApiLedger:
    """What ``Game`` calls on a ``Ledger``, sent through the gRPC API with each role's token."""

    def __init__(self, target: str, tokens: dict[str, str]) -> None:
        self.client = {who: Client(target, token) for who, token in tokens.items()}
        self.shoe: dict[str, str] = {}  # table id -> its open shoe's name
        self.coup: dict[str, str] = {}  # coup id -> its name
        self.owner: dict[str, str] = {}  # stake id -> player

    def close(self) -> None:
        for c in self.client.values():
            c.close()

    def open_table(self, rid: str, table_id: str, preset: str,
                   overrides: dict[str, str]) -> None:
        self.client["croupier"].tables.OpenTable(table_pb2.OpenTableRequest(
            request_id=rid, table_id=table_id, preset=preset, overrides=overrides))

    def open_account(self, rid: str, account_id: str) -> None:
        self.client["cashier"].cashier.OpenAccount(cashier_pb2.OpenAccountRequest(
            request_id=rid, account_id=account_id, currency_code="EUR"))

    def deposit(self, rid: str, account_id: str, amount: int) -> None:
        self.client["cashier"].cashier.Deposit(cashier_pb2.DepositRequest(
            request_id=rid, name=f"accounts/{account_id}", amount=_money(amount)))

    def withdraw(self, rid: str, account_id: str, amount: int) -> None:
        self.client["cashier"].cashier.Withdraw(cashier_pb2.WithdrawRequest(
            request_id=rid, name=f"accounts/{account_id}", amount=_money(amount)))

    def open_shoe(self, rid: str, table_id: str) -> Any:
        shoe = self.client["croupier"].tables.OpenShoe(table_pb2.OpenShoeRequest(
            request_id=rid, parent=f"tables/{table_id}"))
        self.shoe[table_id] = shoe.name
        return SimpleNamespace(shoe_id=shoe.name.rsplit("/", 1)[1], decks=shoe.decks,
                               deck_kind=shoe.deck_kind, commitment=shoe.commitment)

    def _shoe_name(self, shoe_id: str) -> str:
        return next(n for n in self.shoe.values() if n.endswith("/" + shoe_id))

    def cut(self, rid: str, shoe_id: str, position: int, cut_by: str) -> None:
        self.client["croupier"].tables.CutShoe(table_pb2.CutShoeRequest(
            request_id=rid, name=self._shoe_name(shoe_id), cut_position=position,
            cut_by=cut_by))

    def close_shoe(self, rid: str, shoe_id: str) -> None:
        self.client["croupier"].tables.CloseShoe(table_pb2.CloseShoeRequest(
            request_id=rid, name=self._shoe_name(shoe_id)))

    def open_coup(self, rid: str, table_id: str) -> Any:
        coup = self.client["croupier"].tables.OpenCoup(table_pb2.OpenCoupRequest(
            request_id=rid, parent=self.shoe[table_id]))
        coup_id = coup.name.rsplit("/", 1)[1]
        self.coup[coup_id] = coup.name
        return SimpleNamespace(coup_id=coup_id, start_position=coup.start_position)

    def _step(self, method: str, request_type: Any, rid: str, coup_id: str) -> None:
        getattr(self.client["croupier"].tables, method)(request_type(
            request_id=rid, name=self.coup[coup_id]))

    def close_betting(self, rid: str, coup_id: str) -> None:
        self._step("CloseBetting", table_pb2.CloseBettingRequest, rid, coup_id)

    def deal(self, rid: str, coup_id: str) -> None:
        self._step("DealCoup", table_pb2.DealCoupRequest, rid, coup_id)

    def settle(self, rid: str, coup_id: str) -> None:
        self._step("SettleCoup", table_pb2.SettleCoupRequest, rid, coup_id)

    def place_stake(self, rid: str, coup_id: str, player: str, chance: str, amount: int,
                    stake_id: str, choice: str | None) -> None:
        self.owner[str(stake_uuid(coup_id, player, stake_id))] = player  # the ledger's id
        self.client[player].betting.PlaceStake(betting_pb2.PlaceStakeRequest(
            request_id=rid, coup=self.coup[coup_id], stake_id=stake_id,
            account=f"accounts/{player}", chance=CHANCE[chance], amount=_money(amount),
            refait31_choice=CHOICE[choice] if choice else common_pb2.REFAIT31_CHOICE_UNSPECIFIED))

    def _on_stake(self, method: str, request_type: Any, rid: str, coup_id: str,
                  stake_id: str, **extra: Any) -> None:
        table = self.coup[coup_id].split("/")[1]
        getattr(self.client[self.owner[stake_id]].betting, method)(request_type(
            request_id=rid, coup=self.coup[coup_id], name=f"tables/{table}/stakes/{stake_id}",
            **extra))

    def raise_stake(self, rid: str, coup_id: str, stake_id: str, amount: int) -> None:
        self._on_stake("RaiseStake", betting_pb2.RaiseStakeRequest, rid, coup_id, stake_id,
                       amount=_money(amount))

    def withdraw_stake(self, rid: str, coup_id: str, stake_id: str) -> None:
        self._on_stake("WithdrawStake", betting_pb2.WithdrawStakeRequest, rid, coup_id,
                       stake_id)

    def insure(self, rid: str, coup_id: str, stake_id: str) -> None:
        self._on_stake("InsureStake", betting_pb2.InsureStakeRequest, rid, coup_id, stake_id)

    def half_withdraw(self, rid: str, coup_id: str, stake_id: str) -> None:
        self._on_stake("HalfWithdrawStake", betting_pb2.HalfWithdrawStakeRequest, rid,
                       coup_id, stake_id)

    def choose_refait31(self, rid: str, coup_id: str, stake_id: str, choice: str) -> None:
        self._on_stake("ChooseRefait31", betting_pb2.ChooseRefait31Request, rid, coup_id,
                       stake_id, refait31_choice=CHOICE[choice])

    def move_imprisoned(self, rid: str, coup_id: str, stake_id: str, chance: str) -> None:
        self._on_stake("MoveStake", betting_pb2.MoveStakeRequest, rid, coup_id, stake_id,
                       chance=CHANCE[chance])


class Served(SimpleNamespace):
    game: Game
    running: Any
    tokens: dict[str, str]
    target: str
    clients: list[Client]

    def reports(self, who: str = "back_office") -> Any:
        """The ReadModelService stub with ``who``'s token."""
        client = Client(self.target, self.tokens[who])
        self.clients.append(client)
        return reports_pb2_grpc.ReadModelServiceStub(
            authed(client.channel, self.tokens[who], 30.0))


def _pg_url() -> tuple[str, str]:
    try:
        with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
            conn.execute("SELECT 1")
    except psycopg.OperationalError as exc:
        postgres_unavailable("PostgreSQL unreachable", str(exc))
    name = f"sabot_test_reports_{os.getpid()}_{uuid.uuid4().hex[:6]}"
    with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return f"postgresql://{PG_USER}@{PG_HOST}:{PG_PORT}/{name}", name


@pytest.fixture(scope="module",
                params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def served(request: pytest.FixtureRequest,
           tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """A server over a Game's ledger (the Game's clock and seeds); the Game plays through the
    API: a full shoe at a table française, part of two shoes at an italiana, cash at the cage."""
    database = None
    if request.param == "sqlite":
        url = f"sqlite:///{Path(tmp_path_factory.mktemp('reports')) / 'sabot.db'}"
    else:
        url, database = _pg_url()
    game = Game(url, seed=11)
    tokens = {r: f"tok-{r}-{uuid.uuid4().hex[:8]}" for r in
              ("croupier", "cashier", "back_office", "regulator", "admin")}
    tokens |= {p: f"tok-{p}-{uuid.uuid4().hex[:8]}" for p in PLAYERS}
    spec = ",".join(f"{t}:{r}" if r not in PLAYERS else f"{t}:player:{r}"
                    for r, t in tokens.items())
    config = Config(listen="127.0.0.1:0", store=url, tokens=parse_tokens(spec),
                    seal_key=bytes(range(32)), workers=8)
    running = server.start(config, game.ledger, games=SERVED)
    target = f"127.0.0.1:{running.port}"
    api = ApiLedger(target, tokens)
    game.ledger = api  # type: ignore[assignment]  # the Game now plays through the API
    clients: list[Client] = []
    try:
        game.open_table("t-fr", "francaise")
        game.open_table("t-it", "italiana", {"cut_card": "finish_coup"})
        for i, name in enumerate(PLAYERS):
            game.open_player(name, 5_000_000 + i)
        game.play_shoe("t-fr")
        game.play_shoe("t-it", max_coups=8)
        game.cash("bruno", -12_345)
        game.play_shoe("t-it", max_coups=6)
        yield Served(game=game, running=running, tokens=tokens, target=target, clients=clients)
    finally:
        api.close()
        for c in clients:
            c.close()
        running.stop(grace=1)
        keeper = running.projections
        if database:
            with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
    # graceful shutdown stopped the projection thread
    assert keeper is not None and keeper._thread is not None
    assert not keeper._thread.is_alive()


def _days(game: Game) -> list[str]:
    return sorted({k[1] for k in game.exp.recon})


def _expected(game: Game, table: str, day: str, shift: int) -> Counter[str]:
    exp = Counter[str]()
    for (t, d, s, metric, chance), v in game.exp.recon.items():
        if t == table and d == day and shift in (0, s):
            exp[metric + ("_" + chance if chance else "")] += v
    return exp


def test_the_projection_thread_brings_the_lag_to_zero(served: Served) -> None:
    """Only GetProjectionLag is called (it does not catch up): the server's thread does."""
    stub = served.reports()
    served.game.cash("carla", 777)  # a new event: the thread is poked
    for _ in range(100):
        lag = stub.GetProjectionLag(reports_pb2.GetProjectionLagRequest())
        if all(p.events_behind == 0 for p in lag.projections):
            break
        time.sleep(0.1)
    views = {p.view: p for p in lag.projections}
    # the core's four views and each registered game's own (Game.projections)
    assert set(views) == {"bankrolls", "shoes", "recall", "reconciliation",
                          "treinta_y_una_rounds", "cuarenta_matches"}
    assert all(p.events_behind == 0 and p.seconds_behind == 0.0 for p in views.values()), lag
    assert {p.head for p in views.values()} == {served.running.projections.head()}
    assert served.running.projections.errors == 0


def test_gaming_day_report_equals_the_domain(served: Served) -> None:
    game = served.game
    stub = served.reports("regulator")
    days = _days(game)
    assert len(days) >= 2  # the clock crossed 06:00: two gaming days, several shifts
    seen_shifts = 0
    for day in days:
        report = stub.GetGamingDayReport(reports_pb2.GetGamingDayReportRequest(gaming_day=day))
        assert report.gaming_day == day
        tables = {r.table or r.cage for r in report.rows if r.shift == 0}
        assert tables == {"tables/" + k[0] if not k[0].startswith("cage:") else k[0]
                          for k in game.exp.recon if k[1] == day}
        for r in report.rows:
            table = r.table.removeprefix("tables/") or r.cage
            exp = _expected(game, table, day, r.shift)
            seen_shifts += r.shift != 0
            handles = {h.chance: h.amount_minor for h in r.handle_by_chance}
            assert handles == {CHANCE[c]: exp[f"handle_{c}"] for c in CHANCES}
            assert r.handle_minor == sum(exp[f"handle_{c}"] for c in CHANCES)
            assert (r.coups, r.void_coups) == (exp["coups"], exp["void_coups"])
            assert (r.collections_minor, r.payments_minor) == (exp["collections"],
                                                               exp["payments"])
            assert r.bank_win_minor == exp["bank_net"] == r.coup_results_minor
            assert r.bank_check_ok
            assert (r.premiums_minor, r.partage_minor, r.prison_loss_minor) == (
                exp["premiums"], exp["partage"], exp["prison_loss"])
            assert r.house_win_minor == (exp["bank_net"] + exp["premiums"] + exp["partage"]
                                         + exp["prison_loss"])
            assert (r.cash_in_minor, r.cash_out_minor) == (exp["cash_in"], exp["cash_out"])
            if r.handle_minor:
                hold = Fraction(100 * r.house_win_minor, r.handle_minor)
                assert abs(Fraction(r.hold_percent) - hold) <= Fraction(1, 200)
                assert r.flag in ("ok", "OUTSIDE_95")
                low, high = Fraction(r.interval_low), Fraction(r.interval_high)
                assert low <= Fraction(r.theoretical_win) <= high
                win = r.bank_win_minor + r.partage_minor + r.prison_loss_minor
                assert r.flag == ("ok" if low <= win <= high else "OUTSIDE_95")
            else:
                assert r.hold_percent == "" and r.flag == ""
            if r.table and r.shift:
                assert r.prison_outstanding_minor == game.exp.prison.get(
                    (table, day, r.shift), r.prison_outstanding_minor)
        one = stub.GetGamingDayReport(reports_pb2.GetGamingDayReportRequest(
            table="tables/t-fr", gaming_day=day))
        assert {r.table for r in one.rows} <= {"tables/t-fr"}
        assert [r for r in report.rows if r.table == "tables/t-fr"] == list(one.rows)
    assert seen_shifts > len(days)


def test_gaming_day_exports(served: Served) -> None:
    stub = served.reports()
    day = _days(served.game)[-1]
    plain = stub.GetGamingDayReport(reports_pb2.GetGamingDayReportRequest(gaming_day=day))
    assert plain.export == b"" and plain.export_media_type == ""
    as_csv = stub.GetGamingDayReport(reports_pb2.GetGamingDayReportRequest(
        gaming_day=day, format=CSV))
    assert as_csv.export_media_type == "text/csv"
    text = as_csv.export.decode()
    assert text.startswith("table_id,shift,") and "#" not in text  # the header row first
    rows = list(csv.DictReader(io.StringIO(
        "\n".join(ln for ln in text.splitlines() if not ln.startswith("#")))))
    assert [int(r["handle"]) for r in rows] == [r.handle_minor for r in plain.rows]
    as_json = stub.GetGamingDayReport(reports_pb2.GetGamingDayReportRequest(
        gaming_day=day, format=JSON))
    doc = json.loads(as_json.export)
    assert as_json.export_media_type == "application/json"
    assert doc["facts"]["gaming_day"] == day
    assert [r["house_win"] for r in doc["rows"]] == [r.house_win_minor for r in plain.rows]


def test_reconcile_agrees(served: Served) -> None:
    answer = served.reports("admin").Reconcile(reports_pb2.ReconcileRequest())
    assert answer.agree and not answer.differences
    assert answer.accounts == len(served.game.exp.balances)
    assert answer.position == served.running.projections.head()


def test_a_statement_lists_the_movements_with_their_causes(served: Served) -> None:
    game = served.game
    stub = served.reports("ana")  # a player reads its own statement
    whole = stub.GetPlayerStatement(reports_pb2.GetPlayerStatementRequest(
        account="accounts/ana", page_size=1000))
    assert [(ln.amount_minor, ln.kind) for ln in whole.lines] == game.exp.statements["ana"]
    assert whole.closing_balance_minor == whole.balance_now_minor == game.exp.balances["ana"]
    assert whole.opening_balance_minor == 0 and whole.entries == len(whole.lines)
    assert whole.next_page_token == ""
    assert all(ln.cause for ln in whole.lines)
    coups = {c.split("/")[-1] for c in served.game.ledger.coup.values()}  # type: ignore[attr-defined]
    staked = [ln for ln in whole.lines if ln.kind == "stake"]
    assert staked and all(ln.cause.removeprefix("coup:") in coups for ln in staked)
    assert all(ln.stake_id for ln in staked)
    # pages of 7 give the same lines
    lines: list[Any] = []
    token = ""
    while True:
        page = stub.GetPlayerStatement(reports_pb2.GetPlayerStatementRequest(
            account="accounts/ana", page_size=7, page_token=token))
        lines += page.lines
        token = page.next_page_token
        if not token:
            break
        assert len(page.lines) == 7
    assert lines == list(whole.lines)
    # a time range: before and from the middle entry
    mid = whole.lines[len(whole.lines) // 2].time
    before = stub.GetPlayerStatement(reports_pb2.GetPlayerStatementRequest(
        account="accounts/ana", end_time=mid, page_size=1000))
    after = stub.GetPlayerStatement(reports_pb2.GetPlayerStatementRequest(
        account="accounts/ana", start_time=mid, page_size=1000, format=CSV))
    assert list(before.lines) + list(after.lines) == list(whole.lines)
    assert after.opening_balance_minor == before.closing_balance_minor
    assert after.export.decode().count("\n") > len(after.lines)
    # the cashier may read it; another player may not
    other = served.reports("bruno")
    code, field, _ = failure(other.GetPlayerStatement,
                             reports_pb2.GetPlayerStatementRequest(account="accounts/ana"))
    assert (code, field) == (grpc.StatusCode.PERMISSION_DENIED, "account")
    assert served.reports("cashier").GetPlayerStatement(reports_pb2.GetPlayerStatementRequest(
        account="accounts/ana")).entries == whole.entries


def test_shoe_history(served: Served) -> None:
    game = served.game
    stub = served.reports()
    answer = stub.ListShoeHistory(reports_pb2.ListShoeHistoryRequest(parent="tables/t-it",
                                                                     page_size=1, format=JSON))
    assert len(answer.shoes) == 1 and answer.next_page_token
    second = stub.ListShoeHistory(reports_pb2.ListShoeHistoryRequest(
        parent="tables/t-it", page_size=1, page_token=answer.next_page_token))
    assert len(second.shoes) == 1 and not second.next_page_token
    assert len(json.loads(answer.export)["rows"]) == 1
    (fr,) = stub.ListShoeHistory(reports_pb2.ListShoeHistoryRequest(parent="tables/t-fr")).shoes
    for shoe in (*answer.shoes, *second.shoes, fr):
        exp = game.exp.shoes[shoe.name.rsplit("/", 1)[1]]
        assert (shoe.coups, shoe.position, shoe.cut_position) == (
            exp["coups"], exp["position"], exp["cut_position"])
        assert shoe.seed_status == "verified" and shoe.commitment == exp["commitment"]
        assert len(shoe.results) == exp["coups"] and shoe.close_time.seconds > 0


def test_recall_coups_by_table_shoe_coup_player_and_time(served: Served) -> None:
    game = served.game
    stub = served.reports()
    fr = [c for c, e in game.exp.coups.items() if e["table_id"] == "t-fr"]
    seen: list[Any] = []
    token = ""
    while True:
        page = stub.RecallCoups(reports_pb2.RecallCoupsRequest(
            table="tables/t-fr", page_size=25, page_token=token))
        seen += page.coups
        token = page.next_page_token
        if not token:
            break
    assert sorted(c.coup.rsplit("/", 1)[1] for c in seen) == sorted(fr)
    assert [c.number for c in seen] == sorted((c.number for c in seen), reverse=True)
    for c in seen:
        exp = game.exp.coups[c.coup.rsplit("/", 1)[1]]
        assert (c.result, c.noir_total, c.rouge_total, c.announcement) == (
            exp["result"], exp["noir_total"] or 0, exp["rouge_total"] or 0,
            exp["announcement"])  # a total is 0 on the wire when the row was not finished
        cards = [json.loads(s.detail_json)["code"] for s in c.steps if s.kind == "Coup.CardDealt"]
        assert cards == exp["cards"]
        assert [s.step for s in c.steps] == list(range(1, len(c.steps) + 1))
    one = seen[len(seen) // 2]
    (only,) = stub.RecallCoups(reports_pb2.RecallCoupsRequest(coup=one.coup)).coups
    assert only == one
    shoe = one.coup.rsplit("/coups/", 1)[0]
    assert len(stub.RecallCoups(reports_pb2.RecallCoupsRequest(
        shoe=shoe, page_size=100)).coups) == len(fr)
    ana = stub.RecallCoups(reports_pb2.RecallCoupsRequest(player="accounts/ana",
                                                          page_size=100)).coups
    assert ana and all(any(s.account_id == "ana" for s in c.steps) for c in ana)
    ranged = stub.RecallCoups(reports_pb2.RecallCoupsRequest(
        table="tables/t-fr", start_time=one.open_time, page_size=100)).coups
    assert ranged[-1] == one and len(ranged) == len(fr) - one.number + 1


def _ts(seconds: int, nanos: int = 0) -> Timestamp:
    return Timestamp(seconds=seconds, nanos=nanos)


def test_malformed_requests_name_their_field(served: Served) -> None:
    stub = served.reports()
    bad = grpc.StatusCode.INVALID_ARGUMENT
    missing = grpc.StatusCode.NOT_FOUND
    day = reports_pb2.GetGamingDayReportRequest
    cases: list[tuple[Any, Any, grpc.StatusCode, str]] = [
        (stub.GetGamingDayReport, day(gaming_day=""), bad, "gaming_day"),
        (stub.GetGamingDayReport, day(gaming_day="01/03/2026"), bad, "gaming_day"),
        (stub.GetGamingDayReport, day(gaming_day="2026-02-30"), bad, "gaming_day"),
        (stub.GetGamingDayReport, day(gaming_day="2026-03-01", table="tables/nope"), missing,
         "table"),
        (stub.GetGamingDayReport, day(gaming_day="2026-03-01", table="t-fr"), bad, "table"),
        (stub.GetGamingDayReport, day(gaming_day="2026-03-01",
                                     format=reports_pb2.ExportFormat.ValueType(9)), bad, "format"),
        (stub.GetPlayerStatement, reports_pb2.GetPlayerStatementRequest(
            account="accounts/nobody"), missing, "account"),
        (stub.GetPlayerStatement, reports_pb2.GetPlayerStatementRequest(
            account="ana"), bad, "account"),
        (stub.GetPlayerStatement, reports_pb2.GetPlayerStatementRequest(
            account="accounts/ana", start_time=_ts(2_000_000_000),
            end_time=_ts(1_000_000_000)), bad, "end_time"),
        (stub.GetPlayerStatement, reports_pb2.GetPlayerStatementRequest(
            account="accounts/ana", start_time=_ts(1, 2_000_000_000)), bad, "start_time"),
        (stub.GetPlayerStatement, reports_pb2.GetPlayerStatementRequest(
            account="accounts/ana", end_time=_ts(10**12)), bad, "end_time"),
        (stub.GetPlayerStatement, reports_pb2.GetPlayerStatementRequest(
            account="accounts/ana", page_token="garbage!"), bad, "page_token"),
        (stub.GetPlayerStatement, reports_pb2.GetPlayerStatementRequest(
            account="accounts/ana", page_size=-1), bad, "page_size"),
        (stub.ListShoeHistory, reports_pb2.ListShoeHistoryRequest(parent="tables/nope"),
         missing, "parent"),
        (stub.ListShoeHistory, reports_pb2.ListShoeHistoryRequest(parent=""), bad, "parent"),
        (stub.ListShoeHistory, reports_pb2.ListShoeHistoryRequest(
            parent="tables/t-fr", page_token="eyJxIjoiMCJ9"), bad, "page_token"),
        (stub.RecallCoups, reports_pb2.RecallCoupsRequest(table="tables/nope"), missing,
         "table"),
        (stub.RecallCoups, reports_pb2.RecallCoupsRequest(
            coup="tables/t-fr/shoes/x/coups/y"), bad, "coup"),
        (stub.RecallCoups, reports_pb2.RecallCoupsRequest(
            player="people/ana"), bad, "player"),
        (stub.RecallCoups, reports_pb2.RecallCoupsRequest(page_size=-5), bad, "page_size"),
    ]
    for call, request, code, field in cases:
        got = failure(call, request)
        assert got[:2] == (code, field), (request, got)
    # a token is bound to the filters it was issued for
    first = stub.ListShoeHistory(reports_pb2.ListShoeHistoryRequest(parent="tables/t-it",
                                                                    page_size=1))
    got = failure(stub.ListShoeHistory, reports_pb2.ListShoeHistoryRequest(
        parent="tables/t-fr", page_size=1, page_token=first.next_page_token))
    assert got[:2] == (bad, "page_token")


def test_roles_of_the_reports(served: Served) -> None:
    day = reports_pb2.GetGamingDayReportRequest(gaming_day=_days(served.game)[0])
    for who in ("croupier", "cashier", "ana"):
        got = failure(served.reports(who).GetGamingDayReport, day)
        assert got[0] == grpc.StatusCode.PERMISSION_DENIED, who
    for who in ("back_office", "regulator", "admin"):
        assert served.reports(who).GetGamingDayReport(day).rows


def _out(capsys: pytest.CaptureFixture[str]) -> str:
    """What a command printed, without the server's log lines (same process)."""
    text = capsys.readouterr().out
    return "".join(ln for ln in text.splitlines(keepends=True)
                   if not LOG_LINE.match(ln))


def test_client_commands(served: Served, capsys: pytest.CaptureFixture[str]) -> None:
    from services.cli import main

    common = ["--target", served.target, "--token", served.tokens["back_office"]]
    day = _days(served.game)[-1]
    assert main(["reports", "reconcile", *common]) == 0
    assert "agree" in _out(capsys)
    # Trente et Quarante's report by chance under its explicit layout (issue 22: the floor's
    # report of every game is the command's default)
    assert main(["reports", "day", day, "--table", "t-fr", "--export", "csv", "--layout",
                 "chances", *common]) == 0
    out = _out(capsys)
    assert out.startswith("table_id,shift,") and "tables/" not in out and "t-fr" in out
    assert main(["reports", "day", day, "--table", "t-fr", "--export", "csv", *common]) == 0
    out = _out(capsys)
    assert out.startswith("game,table_id,shift,") and "tables/" not in out and "t-fr" in out
    assert main(["reports", "day", day, *common]) == 0  # the floor's text
    out = _out(capsys)
    assert "Trente et Quarante (EUR)" in out and max(map(len, out.splitlines())) <= 100
    assert main(["reports", "statement", "ana", "--page-size", "3", "--format", "json",
                 *common]) == 0
    doc = json.loads(_out(capsys))
    assert len(doc["lines"]) == 3 and doc["next_page_token"]
    assert main(["reports", "lag", *common]) == 0
    assert "reconciliation" in _out(capsys)
    assert main(["reports", "recall", "--table", "t-it", "--page-size", "1", *common]) == 0
    assert "Coup.CardDealt" in _out(capsys)


def test_the_projection_thread_can_be_turned_off() -> None:
    from services.api.config import ConfigError
    from services.settings import Settings

    assert Settings.load(env={}, env_file=None).projections is True
    assert Settings.load(env={"SABOT_PROJECTIONS": "off"}, env_file=None).projections is False
    with pytest.raises(ConfigError, match="SABOT_PROJECTIONS"):
        Settings.load(env={"SABOT_PROJECTIONS": "sometimes"}, env_file=None)


def test_gaming_days_in_the_sites_setting(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                          ) -> None:
    """Under 06:00 Europe/Paris (05:00 UTC in March) with four shifts, GetGamingDayReport takes
    the site's gaming day: its rows are the domain's figures filed under that setting."""
    from services.api.reports import ReadModelServicer
    from services.projections.gamingday import parse

    setting = parse("06:00 Europe/Paris", "4")
    # The server's keeper takes Config.gaming_day when server.start passes it, else reads the
    # environment: both say the same here.
    monkeypatch.setenv("SABOT_GAMING_DAY", "06:00 Europe/Paris")
    monkeypatch.setenv("SABOT_SHIFTS", "4")
    url = f"sqlite:///{tmp_path / 'sabot.db'}"
    game = Game(url, seed=13)
    config = Config(listen="127.0.0.1:0", store=url, seal_key=bytes(range(32)), workers=4,
                    gaming_day=setting)
    running = server.start(config, game.ledger, games=SERVED)
    try:
        game.open_table("t-fr", "francaise")
        for i, name in enumerate(PLAYERS):
            game.open_player(name, 5_000_000 + i)
        game.play_shoe("t-fr", max_coups=25)
        expected = game.exp.recon_under(setting)
        assert {k[1:3] for k in expected} != {k[1:3] for k in game.exp.recon}
        servicer = next(s for s in running.servicers if isinstance(s, ReadModelServicer))
        shifts = set()
        for day in sorted({k[1] for k in expected}):
            report = servicer.GetGamingDayReport(
                reports_pb2.GetGamingDayReportRequest(gaming_day=day), None)  # type: ignore[arg-type]
            assert report.gaming_day == day and report.rows
            for r in report.rows:
                table = r.table.removeprefix("tables/") or r.cage
                exp = Counter[str]()
                for (t, d, s, metric, chance), v in expected.items():
                    if t == table and d == day and r.shift in (0, s):
                        exp[metric + ("_" + chance if chance else "")] += v
                shifts.add(r.shift)
                assert (r.coups, r.void_coups) == (exp["coups"], exp["void_coups"])
                assert r.handle_minor == sum(exp[f"handle_{c}"] for c in CHANCES)
                assert r.house_win_minor == (exp["bank_net"] + exp["premiums"]
                                             + exp["partage"] + exp["prison_loss"])
                assert (r.cash_in_minor, r.cash_out_minor) == (exp["cash_in"], exp["cash_out"])
            assert {r.shift for r in report.rows} <= {0, 1, 2, 3, 4}
        assert 4 in shifts
    finally:
        running.stop(grace=1)
