"""The floor's gaming-day report (issue 22): on a store holding one demo of each game, played
through a real server, the report offline (``sabot store report day``) and online
(``GetGamingDayReport``, layout floor) holds every table of every game with its own figures,
in text, CSV and JSON; its figures and totals equal those folded here from the event log
(independently of the read models), and the house's and the cage's balances on the balance
sheet. SQLite and PostgreSQL."""

from __future__ import annotations

import csv
import io
import json
import secrets
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from fractions import Fraction
from pathlib import Path
from typing import Any

import grpc
import pytest

import services.cli as climod
from services import topics as T
from services.api import demo, server
from services.api.client import Client
from services.api.config import Config, demo_tokens
from services.api.gen.sabot.v1 import cashier_pb2, reports_pb2
from services.api.roles import Role
from services.bootstrap import LEDGER_GAMES, SERVED
from services.cli import cuarenta, treinta_y_una
from services.ledger.api import Ledger, LedgerConfig, read_log
from services.projections.gamingday import DEFAULT
from services.trente_et_quarante import demo as tq_demo

from .support import failure

TQ, TYU, C40 = "trente-et-quarante", "treinta-y-una", "cuarenta"
HOUSE = {TQ: {"bank", "house_insurance", "house_partage", "house_prison"}, TYU: {"house"},
         C40: {"house_commission"}}


@dataclass
class Folded:
    """The day folded from the log: per table its game, currency, units, handle, house win;
    per cage its deposits and withdrawals."""

    game: dict[str, str] = field(default_factory=dict)
    currency: dict[str, str] = field(default_factory=dict)
    options: dict[str, dict[str, str]] = field(default_factory=dict)
    units: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    handle: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    win: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    cash: dict[str, list[int]] = field(default_factory=lambda: defaultdict(lambda: [0, 0]))
    days: set[str] = field(default_factory=set)


def _fold(ledger: Ledger, day: str) -> Folded:
    out = Folded()
    accounts: dict[str, tuple[str, str, str | None]] = {}
    round_table: dict[str, str] = {}
    round_stakes: dict[str, int] = defaultdict(int)
    match_table: dict[str, str] = {}
    match_stakes: dict[str, int] = defaultdict(int)
    match_won: set[str] = set()
    events = []
    after = 0
    while batch := read_log(ledger.app, after, 10_000):
        events += batch
        after = batch[-1].position
    for e in events:
        s, oid = e.state, e.originator_id
        at = e.timestamp or datetime.fromisoformat(str(s["timestamp"]))
        today = DEFAULT.of(at)[0] == day
        out.days.add(DEFAULT.of(at)[0])
        if e.topic == T.TABLE_OPENED:
            out.game[s["table_id"]] = s.get("game", TQ)
            out.options[s["table_id"]] = dict(s["options"])
            out.currency[s["table_id"]] = s["options"].get("currency", "")
        elif e.topic == T.ACCOUNT_OPENED:
            accounts[oid] = (s["account_id"], s["kind"], s.get("table_id"))
        elif e.topic in T.ACCOUNT_CREDITS | T.ACCOUNT_DEBITS and today:
            name, kind, table = accounts[oid]
            credit = e.topic in T.ACCOUNT_CREDITS
            amount = int(s["amount"])
            if table is not None and kind in HOUSE[out.game[table]]:
                out.win[table] += amount if credit else -amount
            elif kind == "cage":
                out.cash[name][1 if credit else 0] += amount
        elif e.topic == T.COUP_RESOLVED and today:
            if str(s["result"]) != "void":
                out.units[_coup_table(events, oid)] += 1
        elif e.topic == T.TREINTA_Y_UNA_ROUND_OPENED:
            round_table[oid] = s["table_id"]
        elif e.topic == T.TREINTA_Y_UNA_ROUND_STAKE_PLACED:
            round_stakes[oid] += int(s["amount"])
        elif e.topic in (T.TREINTA_Y_UNA_ROUND_SETTLED, T.TREINTA_Y_UNA_ROUND_CANCELLED):
            if today:
                out.units[round_table[oid]] += 1
                out.handle[round_table[oid]] += round_stakes[oid]
        elif e.topic == T.CUARENTA_MATCH_OPENED:
            match_table[oid] = s["table_id"]
        elif e.topic == T.CUARENTA_MATCH_MONEY_MOVED and s["kind"] == "stake":
            match_stakes[oid] += int(s["amount"])
        elif e.topic == T.CUARENTA_MATCH_WON and today:
            match_won.add(oid)
            out.units[match_table[oid]] += 1
    for oid in match_won:
        out.handle[match_table[oid]] += match_stakes[oid]
    return out


def _coup_table(events: list[Any], coup: str) -> str:
    return next(str(e.state["table_id"]) for e in events
                if e.originator_id == coup and e.topic == T.COUP_OPENED)


@pytest.fixture
def played(store_url: str, tmp_path: Path) -> Iterator[tuple[str, Ledger, str, str]]:
    """A fresh store with one demo of each game, played through a server: (store URL, the
    ledger, the server's target, a back-office token)."""
    tokens = demo_tokens(tuple(f"{n}-{secrets.token_hex(2)}" for n in
                               ("anne", "bruno", "chiara", "dora")))
    ledger = Ledger(LedgerConfig(store_url=store_url, seal_key=secrets.token_bytes(32)),
                    games=LEDGER_GAMES)
    running = server.start(Config(listen="127.0.0.1:0", store=store_url, tokens=tokens),
                           ledger, games=SERVED)
    target = f"127.0.0.1:{running.port}"
    office = next(t for t, p in tokens.items() if p.role is Role.BACK_OFFICE)
    try:
        tq_demo.play(target, demo.cast_from(tokens, "t"), say=lambda _: None, cut=150)
        cast = treinta_y_una.cast_of(tokens)
        treinta_y_una.play(target, cast.croupier, cast.cashier, cast.players,
                           say=lambda _: None)
        cuarenta.play(target, demo.cast_from(tokens, "c"), say=lambda _: None)
        yield store_url, ledger, target, office
    finally:
        running.stop(grace=1)
        ledger.close()


def _store_args(url: str) -> list[str]:
    return ["--store", url]


def _cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    modules = climod.COMMAND_MODULES
    if "services.cli.projections" not in modules:
        climod.COMMAND_MODULES = (*modules, "services.cli.projections")  # type: ignore[assignment]
    try:
        capsys.readouterr()
        assert climod.main(args) == 0
        return capsys.readouterr().out
    finally:
        climod.COMMAND_MODULES = modules


def test_the_floor_report_holds_every_game_and_equals_the_log(
        played: tuple[str, Ledger, str, str], capsys: pytest.CaptureFixture[str]) -> None:
    url, ledger, target, office = played
    client = Client(target)
    try:
        reports = client.as_(office).read_models
        sheet = client.as_(office).reports.GetBalanceSheet(cashier_pb2.GetBalanceSheetRequest())
        day = DEFAULT.of(datetime.now().astimezone())[0]
        typed = reports.GetGamingDayReport(reports_pb2.GetGamingDayReportRequest(
            gaming_day=day, layout=reports_pb2.GAMING_DAY_LAYOUT_FLOOR))
        online = {f: reports.GetGamingDayReport(reports_pb2.GetGamingDayReportRequest(
            gaming_day=day, layout=reports_pb2.GAMING_DAY_LAYOUT_FLOOR, format=v)).export.decode()
            for f, v in (("csv", reports_pb2.EXPORT_FORMAT_CSV),
                         ("json", reports_pb2.EXPORT_FORMAT_JSON),
                         ("text", reports_pb2.EXPORT_FORMAT_TEXT))}
        # without a layout the export is the chances' report, as before the layout
        plain = reports.GetGamingDayReport(reports_pb2.GetGamingDayReportRequest(
            gaming_day=day, format=reports_pb2.EXPORT_FORMAT_CSV)).export.decode()
        assert plain.startswith("table_id,shift,coups,")
        unknown = reports_pb2.GamingDayLayout.ValueType(7)
        assert failure(reports.GetGamingDayReport, reports_pb2.GetGamingDayReportRequest(
            gaming_day=day, layout=unknown)) == (grpc.StatusCode.INVALID_ARGUMENT, "layout",
                                                 "INVALID_ARGUMENT")
    finally:
        client.close()
    folded = _fold(ledger, day)
    tables = {t for t in folded.game}
    assert {folded.game[t] for t in tables} == {TQ, TYU, C40}

    offline = {f: _cli(["store", "report", "day", *_store_args(url), "--day", day,
                        "--format", f], capsys) for f in ("csv", "json", "text")}
    # the server's export is the command's
    assert online["csv"] == offline["csv"] and online["text"] == offline["text"]
    assert json.loads(online["json"]) == json.loads(offline["json"])

    # CSV: a row per table's day, each with its game's figures, equal to the log's
    rows = list(csv.DictReader(io.StringIO(offline["csv"])))
    days = {r["table_id"]: r for r in rows
            if r["shift"] == "day" and r["game"] in (TQ, TYU, C40) and r["table_id"] != "total"}
    assert set(days) == tables
    for t, r in days.items():
        assert r["game"] == folded.game[t] and r["currency"] == folded.currency[t] == "EUR"
        assert int(r["units"]) == folded.units[t], t
        assert int(r["house_win_minor"]) == folded.win[t], t
        if folded.game[t] != TQ:
            assert int(r["handle_minor"]) == folded.handle[t], t
        assert r["reconciled"] == "ok"
        assert int(r["handle_minor"]) > 0
    # Cuarenta's theoretical win: its rate x the pot; Treinta y Una (no commission): none
    c40 = next(t for t in tables if folded.game[t] == C40)
    rate = Fraction(folded.options[c40]["commission_rate"])
    assert Fraction(days[c40]["theoretical_win_minor"]) == rate * folded.handle[c40]
    tyu = next(t for t in tables if folded.game[t] == TYU)
    assert days[tyu]["edge"] == "none" and days[tyu]["theoretical_win_minor"] == ""
    tq = next(t for t in tables if folded.game[t] == TQ)
    assert days[tq]["edge"] == "odds" and days[tq]["flag"] in ("ok", "OUTSIDE_95")
    # Trente et Quarante's figures are its report by chance's, that report tested against the
    # domain (tests/api/test_reports.py); the other games' tables are not in it
    by_chance = {r.table.removeprefix("tables/") or r.cage: r for r in typed.rows
                 if r.shift == 0}
    assert set(by_chance) == {tq, *folded.cash}
    assert int(days[tq]["handle_minor"]) == by_chance[tq].handle_minor
    assert int(days[tq]["house_win_minor"]) == by_chance[tq].house_win_minor
    assert days[tq]["theoretical_win_minor"] == by_chance[tq].theoretical_win
    # the totals across games and the cage: the house's and the cage's movements of the day
    total = next(r for r in rows if r["game"] == "all")
    assert int(total["house_win_minor"]) == sum(folded.win.values())
    assert int(total["handle_minor"]) == sum(int(r["handle_minor"]) for r in days.values())
    cages = [r for r in rows if r["game"] == "cage"]
    assert {r["table_id"]: [int(r["deposits_minor"]), int(r["withdrawals_minor"])]
            for r in cages} == dict(folded.cash)
    assert int(total["deposits_minor"]) == sum(d for d, _ in folded.cash.values())
    if folded.days == {day}:  # the whole store is of this day: its balances are the day's
        balances = {b.account_id: b.balance_minor for b in sheet.balances}
        house = sum(v for k, v in balances.items()
                    if k.startswith("table:") and k.rsplit(":", 1)[1] in HOUSE[
                        folded.game[k.split(":")[1]]])
        assert int(total["house_win_minor"]) == house
        cage = balances["cage:eur"]
        assert cage == int(total["withdrawals_minor"]) - int(total["deposits_minor"])

    # JSON: a section per game, its unit stated; the same figures
    doc = json.loads(offline["json"])
    assert doc["unit"].startswith("minor units")
    assert {s["game"] for s in doc["sections"]} == {TQ, TYU, C40}
    for s in doc["sections"]:
        for r in s["rows"]:
            if r["shift"] == "day":
                assert r["house_win_minor"] == folded.win[r["table_id"]]
    assert doc["totals"][0]["house_win_minor"] == int(total["house_win_minor"])

    # the typed answer: the same sections and totals
    assert {s.game for s in typed.sections} == {TQ, TYU, C40}
    for s in typed.sections:
        for r in s.rows:
            if r.shift == 0:
                assert r.house_win_minor == folded.win[r.table.removeprefix("tables/")]
    assert typed.floor_totals[0].house_win_minor == int(total["house_win_minor"])
    assert {c.cage: [c.deposits_minor, c.withdrawals_minor] for c in typed.cage} == dict(
        folded.cash)

    # text: every table, each game's section, on one screen width
    text = offline["text"]
    assert all(len(line) <= 100 for line in text.splitlines())
    for t in tables:
        assert t in text
    for title in ("Trente et Quarante (EUR)", "Treinta y Una (EUR)", "Cuarenta (EUR)",
                  "All games", "Cage"):
        assert title in text
    # the per-chance report stays available
    chances = _cli(["store", "report", "day", *_store_args(url), "--day", day, "--format", "csv",
                    "--layout", "chances"], capsys)
    assert chances.startswith("table_id,shift,coups,void_coups,handle_noir,")

