"""Reports (gaming day, statement, shoe history), reconcile and the CLI, on a played ledger."""

from __future__ import annotations

import csv
import io
import json
import math
from collections import Counter
from fractions import Fraction
from pathlib import Path

import pytest

from domain.errors import InvalidArgument, NotFound
from domain.trente_et_quarante.chances import Chance
from domain.trente_et_quarante.odds import CoupOdds, coup_law
from domain.trente_et_quarante.rules import HouseRules, house_rules
from services.bootstrap import READ_GAMES
from services.projections import default_views
from services.projections.export import to_csv, to_json, to_text
from services.projections.projector import Projector
from services.projections.reconcile import reconcile
from services.projections.reconciliation import ReconciliationView
from services.projections.reports import gaming_day, player_statement, shoe_history
from services.trente_et_quarante import edge

from .game import Game


def _projector(game: Game) -> Projector:
    p = Projector(game.ledger.app, default_views(games=READ_GAMES))
    p.catch_up()
    return p


def _days(game: Game) -> list[str]:
    return sorted({k[1] for k in game.exp.recon if not k[0].startswith("cage:")})


def test_gaming_day_report_adds_up(game: Game) -> None:
    p = _projector(game)
    for day in _days(game):
        report = gaming_day(p.store, day, views=p.views)
        recs = report.records()
        for r in recs:
            exp = Counter[str]()
            for (t, d, shift, metric, chance), v in game.exp.recon.items():
                if t == r["table_id"] and d == day and (r["shift"] in ("day", str(shift))):
                    exp[metric + ("_" + chance if chance else "")] += v
            assert r["handle"] == sum(exp[f"handle_{c}"] for c in
                                      ("noir", "rouge", "couleur", "inverse"))
            assert r["handle_noir"] == exp["handle_noir"]
            assert r["payments"] == exp["payments"]
            assert r["bank_win"] == exp["bank_net"] == r["coup_results"]
            assert r["house_win"] == (exp["bank_net"] + exp["premiums"] + exp["partage"]
                                      + exp["prison_loss"])
            assert (r["cash_in"], r["cash_out"]) == (exp["cash_in"], exp["cash_out"])
            if r["table_id"].startswith("t-"):
                assert r["bank_check"] == "ok"
                if r["handle"]:
                    hold = Fraction(100 * r["house_win"], r["handle"])
                    assert abs(Fraction(r["hold_pct"]) - hold) <= Fraction(1, 200)
        assert {r["table_id"] for r in recs if r["shift"] == "day"} == {
            k[0] for k in game.exp.recon if k[1] == day
        }
    with pytest.raises(InvalidArgument) as bad:
        gaming_day(p.store, "01/03/2026", views=p.views)
    assert bad.value.field == "gaming_day"


def _hand_law(rules: HouseRules, odds: CoupOdds, chance: str, state: str,
              ) -> tuple[Fraction, Fraction]:
    """Mean and variance per unit of the house's result of one coup on a stake in ``state``,
    worked out by hand from RULES.md (not from domain.settlement): the money that moves in the
    coup, +1 the stake collected or lost in prison, -1 paid, +1/2 a partage, 0 otherwise."""
    status, *flags = state.split(":")
    insured = "insured" in flags
    choice = next((f for f in flags if f != "insured"), None)
    free = status == "free"
    win, lose = (Fraction(-1) if free else Fraction(0)), Fraction(1)
    if insured:
        r31 = Fraction(0)  # the 31 is void for an insured stake
    elif status == "second_prison":
        r31 = Fraction(1)  # lost on a 31 under both prison rules
    elif status == "prison":
        r31 = Fraction(1 if rules.prison_refait31.value == "lost" else 0)
    elif chance in ("couleur", "inverse") and rules.couleur_inverse_on_refait31.value == "returned":
        r31 = Fraction(0)
    elif rules.refait31.value == "partage" or (
        rules.refait31.value == "player_choice" and choice == "partage"
    ):
        r31 = Fraction(1, 2)
    else:
        r31 = Fraction(0)  # imprisoned: no money moves in this coup
    w = odds.decided / 2
    mean = w * win + w * lose + odds.refait31 * r31
    second = w * win * win + w * lose * lose + odds.refait31 * r31 * r31
    return mean, second - mean * mean


def test_theoretical_win_and_flag(game: Game, monkeypatch: pytest.MonkeyPatch) -> None:
    """theo = sum over the stakes in action, by their state before the coup, of the stake x
    the mean of the house's result of that coup in that state; the flag says whether the game
    win lies in theo +- 1.96 sqrt(sum of variance x stake^2). Expected figures from the played
    game's own record of the stakes' states and a hand computation of the laws."""
    p = _projector(game)
    rules = {"t-fr": house_rules("francaise"), "t-it": house_rules("italiana", {
        "cut_card": "finish_coup"}), "t-es": house_rules("espanola", {"decks": "2"})}
    checked = 0
    chosen = 0
    states: set[str] = set()
    for day in _days(game):
        for r in gaming_day(p.store, day, views=p.views).records():
            if r["shift"] != "day" or r["table_id"] not in rules or not r["handle"]:
                continue
            table_rules = rules[r["table_id"]]
            odds = edge._coup_odds(table_rules.decks)  # french_coup_odds, cached
            theo = var = Fraction(0)
            for (t, d, shift, metric, chance), v in game.exp.recon.items():
                if t == r["table_id"] and d == day and metric == "partage_chosen":
                    theo += v  # taken by a player's decision: a sure gain
                    chosen += v
                if t != r["table_id"] or d != day or not metric.startswith("handle."):
                    continue
                state = metric[len("handle."):]
                states.add(state)
                mean, variance = _hand_law(table_rules, odds, chance, state)
                law = coup_law(odds, table_rules, Chance(chance), state)
                assert (law.mean, law.variance) == (mean, variance), state
                theo += mean * v
                var += variance * game.exp.recon[(t, d, shift, "handle_sq." + state, chance)]
            assert abs(Fraction(r["theoretical_win"]) - theo) <= Fraction(1, 200)
            half = 1.96 * math.sqrt(var)
            low, high = Fraction(r["interval_low"]), Fraction(r["interval_high"])
            assert abs(float(low) - (float(theo) - half)) <= 0.006
            assert abs(float(high) - (float(theo) + half)) <= 0.006
            assert low <= theo <= high
            win = r["bank_win"] + r["partage"] + r["prison_loss"]
            assert r["flag"] == ("ok" if low <= win <= high else "OUTSIDE_95")
            checked += 1
    assert checked >= 3
    # the played log has imprisoned, insured and partage-choice stakes in action
    assert {"free", "prison", "free:insured", "free:partage"} <= states, states
    assert chosen > 0
    day = _days(game)[0]
    recon = next(v for v in p.views if isinstance(v, ReconciliationView))  # the law it holds
    monkeypatch.setattr(recon, "coup_law", lambda options, chance, state: (Fraction(1), 0))
    flags = {r["flag"] for r in gaming_day(p.store, day, views=p.views).records() if r["handle"]}
    assert flags == {"OUTSIDE_95"}  # a 100 % edge: the house should have won every stake
    monkeypatch.setattr(recon, "coup_law", lambda options, chance, state: None)
    unknown = {r["flag"] for r in gaming_day(p.store, day, views=p.views).records() if r["handle"]}
    assert unknown == {"unknown"}


def test_player_statement_report(game: Game) -> None:
    p = _projector(game)
    report = player_statement(p.store, "ana")
    assert [(r["amount"], r["kind"]) for r in report.records()] == game.exp.statements["ana"]
    assert report.facts["closing_balance"] == game.exp.balances["ana"]
    mid = report.records()[len(report.rows) // 2]["at"]
    later = player_statement(p.store, "ana", since=mid)
    earlier = player_statement(p.store, "ana", until=mid)
    assert len(later.rows) + len(earlier.rows) == len(report.rows)
    assert later.facts["opening_balance"] == earlier.facts["closing_balance"]
    closing = later.facts["opening_balance"] + sum(r[6] for r in later.rows)
    assert closing == game.exp.balances["ana"]
    with pytest.raises(NotFound):
        player_statement(p.store, "nobody")


def test_shoe_history_report(game: Game) -> None:
    p = _projector(game)
    report = shoe_history(p.store, "t-it")
    assert len(report.rows) == 2
    assert "N noir wins, R rouge wins, = refait, V void" in to_text(report)  # the legend
    for r in report.records():
        exp = game.exp.shoes[r["shoe_id"]]
        assert (r["coups"], r["position"], r["seed_status"]) == (exp["coups"], exp["position"],
                                                                  "verified")
        assert len(r["results"]) == exp["coups"]
    with pytest.raises(NotFound):
        shoe_history(p.store, "no-such-table")


def test_exports_parse_back(game: Game) -> None:
    p = _projector(game)
    report = gaming_day(p.store, _days(game)[0], views=p.views)
    doc = json.loads(to_json(report))
    assert doc["rows"] == json.loads(json.dumps(report.records(), default=str))
    lines = [ln for ln in to_csv(report).splitlines() if not ln.startswith("#")]
    parsed = list(csv.DictReader(io.StringIO("\n".join(lines))))
    assert [r["table_id"] for r in parsed] == [r["table_id"] for r in report.records()]
    assert [int(r["handle"]) for r in parsed] == [r["handle"] for r in report.records()]
    assert report.title in to_text(report)


def test_reconcile_agrees_then_lists_differences(game: Game) -> None:
    p = _projector(game)
    result = reconcile(game.ledger.app, projector=p)
    assert result.ok and result.accounts == len(game.exp.balances)
    assert reconcile(game.ledger.app, write_side=game.ledger.balances(), projector=p).ok
    with p.store.transaction() as tx:
        tx.execute("UPDATE {s}rm_account SET balance = balance + 1 WHERE account_id = 'carla'")
    try:
        bad = reconcile(game.ledger.app, projector=p)
        assert not bad.ok
        (d,) = bad.differences
        assert (d.account_id, d.read_model, d.write_side) == (
            "carla", game.exp.balances["carla"] + 1, game.exp.balances["carla"])
        assert bad.report().facts["result"] == "DIFFER"
    finally:
        p.rebuild()
    assert reconcile(game.ledger.app, projector=p).ok


def test_cli_commands(game: Game, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import services.cli as climod
    from services.cli import main
    from services.cli import projections as cli

    modules = climod.COMMAND_MODULES
    if "services.cli.projections" not in modules:
        climod.COMMAND_MODULES = (*modules, "services.cli.projections")  # type: ignore[assignment]
    try:
        schema = game.ledger.config.extra_env.get("POSTGRES_SCHEMA")
        url = [game.ledger.config.store_url, *(["--schema", schema] if schema else [])]
        assert main(["projections", "rebuild", "--store", *url]) == 0
        assert "same" in capsys.readouterr().out
        assert main(["reconcile", "--store", *url, "--format", "json"]) == 0
        assert json.loads(capsys.readouterr().out)["facts"]["result"] == "agree"
        out = tmp_path / "day.csv"
        day = _days(game)[0]
        # Trente et Quarante's report by chance, as before, under its explicit layout (issue 22:
        # the floor's report of every game is the default).
        assert main(["report", "day", "--store", *url, "--day", day, "--format", "csv",
                     "--layout", "chances", "--output", str(out)]) == 0
        # The CSV is its header row and rows (issue 12: no comment lines); the facts: JSON.
        assert out.read_text().startswith("table_id,shift,coups,")
        assert "#" not in out.read_text()
        assert main(["report", "day", "--store", *url, "--day", day, "--format", "csv",
                     "--output", str(out)]) == 0
        assert out.read_text().startswith("game,table_id,shift,units,handle_minor,")
        assert "#" not in out.read_text()
        assert main(["report", "day", "--store", *url, "--day", day, "--format", "json"]) == 0
        assert json.loads(capsys.readouterr().out)["facts"]["gaming_day"] == day
        assert main(["report", "statement", "--store", *url, "--account", "bruno"]) == 0
        assert "Statement of bruno" in capsys.readouterr().out
        assert main(["report", "shoes", "--store", *url, "--table", "t-es", "--format",
                     "json"]) == 0
        assert json.loads(capsys.readouterr().out)["facts"]["shoes"] == 1
        assert main(["projections", "lag", "--store", *url]) == 0
        lags = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
        assert {x["events_behind"] for x in lags} == {0}
        assert main(["report", "day", "--store", *url, "--day", "2026-13"]) == 2
        assert "gaming_day" in capsys.readouterr().err
        assert main(["report", "statement", "--store", *url, "--account", "zed"]) == 3
        assert cli.register is not None
    finally:
        climod.COMMAND_MODULES = modules


def test_read_models_facade(game: Game) -> None:
    from services.projections.service import ReadModels

    rm = ReadModels(game.ledger.app, games=READ_GAMES)
    assert rm.reconcile(game.ledger.balances()).ok
    assert {lag.events_behind for lag in rm.lag()} == {0}
    assert len(rm.recall(table_id="t-es", limit=3)) == 3
    assert rm.gaming_day(_days(game)[0]).facts["tables"] >= 1
    assert rm.player_statement("carla").facts["closing_balance"] == game.exp.balances["carla"]
    assert rm.shoe_history("t-fr").facts["shoes"] == 1
    assert rm.digests() == rm.rebuild()


def test_bad_arguments_name_their_field(game: Game) -> None:
    from services.projections.recall import recall

    p = _projector(game)
    for kwargs, field in (({"limit": 0}, "limit"), ({"limit": 10_001}, "limit"),
                          ({"since": "yesterday"}, "since"), ({"until": "3/1/2026"}, "until")):
        with pytest.raises(InvalidArgument) as bad:
            recall(p.store, **kwargs)
        assert bad.value.field == field
    with pytest.raises(InvalidArgument) as bad:
        player_statement(p.store, "ana", since="soon")
    assert bad.value.field == "since"
    # A date alone means its start, in UTC; both forms select the same entries.
    day = _days(game)[-1]
    assert player_statement(p.store, "ana", since=day).rows == player_statement(
        p.store, "ana", since=f"{day}T00:00:00+00:00").rows
