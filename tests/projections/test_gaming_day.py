"""The site's gaming day (SABOT_GAMING_DAY, SABOT_SHIFTS): days and shifts across zones and
daylight-saving changes, the reconciliation under a local gaming day, and a change of setting."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from domain.errors import InvalidArgument, RuleViolation
from services.bootstrap import READ_GAMES
from services.projections import default_views
from services.projections.gamingday import DEFAULT, GamingDay, from_env, in_schema, parse
from services.projections.projector import Projector
from services.projections.reconciliation import (
    ReconciliationView,
    gaming_day_and_shift,
    stored_setting,
)
from services.projections.reports import gaming_day, prison_outstanding
from services.projections.tracking import SchemaChanged
from services.projections.view import View

from .conftest import _url
from .game import Game

PARIS = parse("06:00 Europe/Paris")
# The reconciliation view's digest under the default setting: the plain digest of its tables
# and version, as before the setting existed (version 1, before the handle by stake state:
# "d6f896c9ccd8ec1e").
UTC_DIGEST = "0c99312d4f694ff9"


def _utc(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def _old(at: datetime) -> tuple[str, int]:
    """The fixed rule of the versions before the setting (06:00 UTC, three shifts)."""
    shifted = at - timedelta(hours=6)
    return shifted.date().isoformat(), 1 + shifted.hour // 8


def _spans(setting: GamingDay, start: str, hours: int, step_minutes: int = 1,
           ) -> dict[tuple[str, int], tuple[datetime, datetime]]:
    """Per (day, shift): its first and last minute (UTC) in the range, checked monotone."""
    out: dict[tuple[str, int], tuple[datetime, datetime]] = {}
    t = _utc(start)
    last: tuple[str, int] | None = None
    for _ in range(hours * 60 // step_minutes):
        key = setting.of(t)
        if last is not None:
            assert key >= last, (t, key, last)  # never back
        last = key
        first = out.get(key, (t, t))[0]
        out[key] = (first, t)
        t += timedelta(minutes=step_minutes)
    return out


def _length(span: tuple[datetime, datetime]) -> timedelta:
    return span[1] - span[0] + timedelta(minutes=1)


def test_the_default_is_the_fixed_rule_of_before() -> None:
    assert from_env({}) == DEFAULT == parse(None) == parse("  ", "") == parse("06:00 UTC", "3")
    t = _utc("2026-01-01T00:00:00")
    for _ in range(3 * 24 * 60 // 7):
        assert gaming_day_and_shift(t) == _old(t) == DEFAULT.of(t)
        assert DEFAULT.of(t.replace(tzinfo=None)) == _old(t)  # naive: UTC
        t += timedelta(minutes=7)
    assert DEFAULT.of(_utc("2026-03-02T05:59:59")) == ("2026-03-01", 3)
    assert DEFAULT.of(_utc("2026-03-02T06:00:00")) == ("2026-03-02", 1)
    # The default adds nothing to the digest: existing read models are not rebuilt.
    assert ReconciliationView().schema_digest() == UTC_DIGEST
    assert View.schema_digest(ReconciliationView()) == UTC_DIGEST
    assert ReconciliationView(parse("06:00 Etc/UTC")).schema_digest() != UTC_DIGEST
    assert DEFAULT.describe() == "shift 1 06-14, 2 14-22, 3 22-06 (UTC)"


def test_paris_on_ordinary_days() -> None:
    # Winter (UTC+1): the day starts at 05:00 UTC; summer (UTC+2): at 04:00 UTC.
    assert PARIS.of(_utc("2026-01-15T04:59:59")) == ("2026-01-14", 3)
    assert PARIS.of(_utc("2026-01-15T05:00:00")) == ("2026-01-15", 1)
    assert PARIS.of(_utc("2026-01-15T13:00:00")) == ("2026-01-15", 2)
    assert PARIS.of(_utc("2026-01-15T21:00:00")) == ("2026-01-15", 3)
    assert PARIS.of(_utc("2026-07-15T03:59:59")) == ("2026-07-14", 3)
    assert PARIS.of(_utc("2026-07-15T04:00:00")) == ("2026-07-15", 1)
    assert PARIS.of(datetime(2026, 7, 15, 6, 0, tzinfo=ZoneInfo("Europe/Paris"))) == (
        "2026-07-15", 1)
    spans = _spans(PARIS, "2026-01-15T05:00:00", 24)
    assert [_length(s) for s in spans.values()] == [timedelta(hours=8)] * 3
    assert PARIS.describe() == (
        "shift 1 06:00-14:00, 2 14:00-22:00, 3 22:00-06:00 (Europe/Paris local time)")


def test_paris_spring_forward_day_has_23_hours() -> None:
    # 2026-03-29 02:00 CET -> 03:00 CEST (01:00 UTC): the night shift of the 28th is 7 hours.
    spans = _spans(PARIS, "2026-03-28T05:00:00", 48)
    assert spans[("2026-03-28", 1)][0] == _utc("2026-03-28T05:00:00")  # 06:00 CET
    assert spans[("2026-03-28", 3)][0] == _utc("2026-03-28T21:00:00")  # 22:00 CET
    assert spans[("2026-03-29", 1)][0] == _utc("2026-03-29T04:00:00")  # 06:00 CEST
    assert spans[("2026-03-29", 2)][0] == _utc("2026-03-29T12:00:00")  # 14:00 CEST
    assert _length(spans[("2026-03-28", 1)]) == _length(spans[("2026-03-28", 2)]) == timedelta(
        hours=8)
    assert _length(spans[("2026-03-28", 3)]) == timedelta(hours=7)
    day = sum((_length(s) for k, s in spans.items() if k[0] == "2026-03-28"), timedelta())
    assert day == timedelta(hours=23)


def test_paris_fall_back_day_has_25_hours() -> None:
    # 2026-10-25 03:00 CEST -> 02:00 CET (01:00 UTC): the night shift of the 24th is 9 hours.
    spans = _spans(PARIS, "2026-10-24T04:00:00", 48)
    assert spans[("2026-10-24", 1)][0] == _utc("2026-10-24T04:00:00")  # 06:00 CEST
    assert spans[("2026-10-24", 3)][0] == _utc("2026-10-24T20:00:00")  # 22:00 CEST
    assert spans[("2026-10-25", 1)][0] == _utc("2026-10-25T05:00:00")  # 06:00 CET
    assert _length(spans[("2026-10-24", 3)]) == timedelta(hours=9)
    day = sum((_length(s) for k, s in spans.items() if k[0] == "2026-10-24"), timedelta())
    assert day == timedelta(hours=25)
    # Both passes of the repeated hour (02:00-03:00) are in the same shift.
    assert PARIS.of(_utc("2026-10-25T00:30:00")) == PARIS.of(_utc("2026-10-25T01:30:00")) == (
        "2026-10-24", 3)


def test_boundaries_in_the_changed_hour() -> None:
    """A boundary at a time that does not exist falls at the change; one at a time that occurs
    twice falls at its first occurrence, and the second pass does not go back."""
    hourly = parse("02:30 Europe/Paris", "24")
    # Spring: 02:30 does not exist; the day of the 29th starts at 03:00 CEST (01:00 UTC).
    assert hourly.of(_utc("2026-03-29T00:59:59")) == ("2026-03-28", 24)
    assert hourly.of(_utc("2026-03-29T01:00:00")) == ("2026-03-29", 1)  # 03:00 CEST
    assert hourly.of(_utc("2026-03-29T01:30:00")) == ("2026-03-29", 2)  # 03:30 CEST
    # Fall: 02:30 CEST (00:30 UTC) starts the 25th; 02:00-02:30 CET after it stays in it.
    assert hourly.of(_utc("2026-10-25T00:29:59")) == ("2026-10-24", 24)
    assert hourly.of(_utc("2026-10-25T00:30:00")) == ("2026-10-25", 1)
    assert hourly.of(_utc("2026-10-25T01:00:00")) == ("2026-10-25", 1)  # 02:00 CET
    assert hourly.of(_utc("2026-10-25T02:29:59")) == ("2026-10-25", 1)  # 03:29 CET
    assert hourly.of(_utc("2026-10-25T02:30:00")) == ("2026-10-25", 2)  # 03:30 CET
    _spans(hourly, "2026-03-28T00:00:00", 48)
    _spans(hourly, "2026-10-24T00:00:00", 48)


@pytest.mark.parametrize("text,shifts", [
    ("06:00 Europe/Paris", "3"), ("04:00 America/New_York", "2"), ("05:30 Asia/Kolkata", "4"),
    ("02:00 Australia/Lord_Howe", "24"), ("00:00 Pacific/Chatham", "1"),
    ("02:30 America/Santiago", "6"),
])
def test_every_zone_through_a_year(text: str, shifts: str) -> None:
    """Days and shifts never go back, every day has its n shifts, each day lasts 23 to 25 hours
    (half an hour for Lord Howe) and the shifts are of equal wall-clock length."""
    setting = parse(text, shifts)
    spans = _spans(setting, "2026-01-01T00:00:00", 366 * 24, step_minutes=15)
    days: Counter[str] = Counter()
    lengths: dict[str, timedelta] = {}
    for (day, shift), span in spans.items():
        assert 1 <= shift <= setting.shifts
        days[day] += 1
        lengths[day] = lengths.get(day, timedelta()) + _length(span) + timedelta(minutes=14)
    whole = sorted(days)[1:-1]
    assert all(days[d] == setting.shifts for d in whole)
    assert all(timedelta(hours=23) <= lengths[d] <= timedelta(hours=25) for d in whole)
    assert len(whole) >= 364


@pytest.mark.parametrize("day,shifts,field", [
    ("6 Europe/Paris", None, "SABOT_GAMING_DAY"), ("06:00", None, "SABOT_GAMING_DAY"),
    ("24:00 UTC", None, "SABOT_GAMING_DAY"), ("06:60 UTC", None, "SABOT_GAMING_DAY"),
    ("06:00 Europe/Pariss", None, "SABOT_GAMING_DAY"), ("06:00 ../etc", None, "SABOT_GAMING_DAY"),
    (None, "0", "SABOT_SHIFTS"), (None, "7", "SABOT_SHIFTS"), (None, "48", "SABOT_SHIFTS"),
    (None, "three", "SABOT_SHIFTS"),
])
def test_a_bad_setting_names_its_variable(day: str | None, shifts: str | None,
                                          field: str) -> None:
    with pytest.raises(InvalidArgument) as info:
        parse(day, shifts)
    assert info.value.field == field
    env = {k: v for k, v in (("SABOT_GAMING_DAY", day), ("SABOT_SHIFTS", shifts)) if v}
    with pytest.raises(InvalidArgument, match=field):
        from_env(env)


def test_the_setting_is_kept_in_the_views_digest() -> None:
    for setting in (PARIS, parse("22:15 America/New_York", "4")):
        digest = ReconciliationView(setting).schema_digest()
        assert in_schema(digest) == setting
        assert digest != ReconciliationView().schema_digest()
    assert in_schema(UTC_DIGEST) is None


def test_the_reconciliation_under_a_local_gaming_day(game: Game) -> None:
    """The played ledger filed under 06:00 Europe/Paris with four shifts equals the domain's
    figures filed under the same setting; the report tells the hours and closes at shift 4."""
    setting = parse("06:00 Europe/Paris", "4")
    try:
        p = Projector(game.ledger.app, default_views(setting, games=READ_GAMES))
        p.catch_up(batch_size=333)
        assert stored_setting(p.store) == setting
        with p.store.read() as tx:
            rows = tx.query("SELECT table_id, gaming_day, shift, metric, chance, amount "
                            "FROM {s}rm_recon WHERE metric <> 'prison_outstanding'")
        got = {tuple(r[:5]): int(r[5]) for r in rows if int(r[5]) != 0}
        expected = {k: v for k, v in game.exp.recon_under(setting).items() if v != 0}
        assert got == expected
        assert expected != {k: v for k, v in game.exp.recon.items() if v != 0}
        assert {k[2] for k in expected} >= {1, 4}
        for (table, day, shift), amount in game.exp.prison_under(setting).items():
            assert prison_outstanding(p.store, table, day, shift) == amount
        day = min(k[1] for k in expected)
        report = gaming_day(p.store, day, views=p.views)
        assert report.facts["hours"] == ("shift 1 06:00-12:00, 2 12:00-18:00, 3 18:00-00:00, "
                                         "4 00:00-06:00 (Europe/Paris local time)")
        for r in report.records():
            if r["shift"] == "day" and not str(r["table_id"]).startswith("cage:"):
                table = str(r["table_id"])
                assert r["prison_outstanding"] == prison_outstanding(p.store, table, day, 4)
                assert r["coups"] == sum(v for k, v in expected.items()
                                         if k[0] == table and k[1] == day and k[3] == "coups")
    finally:  # the shared ledger's read models back under the default
        back = Projector(game.ledger.app, default_views(DEFAULT, games=READ_GAMES))
        back.catch_up()
        assert stored_setting(back.store) == DEFAULT


def test_a_change_of_setting_rebuilds_and_stops_the_old_writer(store_env: dict[str, str],
                                                               ) -> None:
    url, extra = _url(store_env)
    g = Game(url, seed=5, extra_env=extra)
    try:
        g.open_table("t-fr", "francaise")
        g.open_player("ana", 100_000)
        utc = Projector(g.ledger.app, default_views(DEFAULT, games=READ_GAMES))
        utc.catch_up()
        before = utc.digests()["reconciliation"]
        paris = Projector(g.ledger.app, default_views(PARIS,
                                                      games=READ_GAMES))  # rebuilt under Paris
        assert paris.positions["reconciliation"] == 0
        paris.catch_up()
        assert stored_setting(paris.store) == PARIS
        g.cash("ana", -500)
        with pytest.raises(SchemaChanged) as info:
            utc.catch_up()
        message = str(info.value)
        assert "SABOT_GAMING_DAY" in message and "sabot store projections rebuild" in message
        assert "06:00 Europe/Paris" in message and isinstance(info.value, RuleViolation)
        assert paris.catch_up() >= 1  # the old writer wrote nothing: all still to apply
        # Back to the default: the rows are those of before (the digest of the rows).
        again = Projector(g.ledger.app, default_views(DEFAULT, games=READ_GAMES))
        again.rebuild()
        g2 = Projector(g.ledger.app, default_views(DEFAULT, games=READ_GAMES))
        assert g2.digests()["reconciliation"] != before  # one event more than then
        assert stored_setting(g2.store) == DEFAULT
    finally:
        g.close()


def test_a_process_given_no_setting_keeps_the_stored_one(
    store_env: dict[str, str], monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A command run without SABOT_GAMING_DAY (``sabot projections lag``, a report) must not
    rebuild the read models under the default: it adopts the setting they were built with."""
    monkeypatch.delenv("SABOT_GAMING_DAY", raising=False)
    monkeypatch.delenv("SABOT_SHIFTS", raising=False)
    url, extra = _url(store_env)
    g = Game(url, seed=6, extra_env=extra)
    try:
        g.open_table("t-fr", "francaise")
        g.open_player("ana", 100_000)
        paris = Projector(g.ledger.app, default_views(PARIS, games=READ_GAMES))
        paris.catch_up()
        built = paris.digests()["reconciliation"]
        # no setting given anywhere
        unset = Projector(g.ledger.app, default_views(games=READ_GAMES))
        assert unset.positions == paris.positions  # nothing rebuilt
        assert stored_setting(unset.store) == PARIS
        g.cash("ana", -500)
        assert unset.catch_up() >= 1  # it writes, under Paris: the other one is not stopped
        paris.catch_up()  # (nothing applied twice: the positions are compared and set)
        assert unset.digests()["reconciliation"] != built
        again = Projector(g.ledger.app, default_views(PARIS, games=READ_GAMES))
        again.rebuild()  # the rows are exactly those of a rebuild under Paris
        assert again.digests() == unset.digests() == paris.digests()
    finally:
        g.close()


def test_the_cli_reads_the_setting(game: Game, tmp_path: Path,
                                   monkeypatch: pytest.MonkeyPatch,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    import services.cli as climod
    from services.cli import main

    if "services.cli.projections" not in climod.COMMAND_MODULES:
        monkeypatch.setattr(climod, "COMMAND_MODULES",
                            (*climod.COMMAND_MODULES, "services.cli.projections"))
    schema = game.ledger.config.extra_env.get("POSTGRES_SCHEMA")
    url = [game.ledger.config.store_url, *(["--schema", schema] if schema else [])]
    monkeypatch.setenv("SABOT_GAMING_DAY", "06:00 Mars/Olympus")
    assert main(["projections", "lag", "--store", *url]) == 2
    assert "SABOT_GAMING_DAY" in capsys.readouterr().err
    monkeypatch.setenv("SABOT_GAMING_DAY", "06:00 UTC")
    monkeypatch.setenv("SABOT_SHIFTS", "7")
    assert main(["projections", "lag", "--store", *url]) == 2
    assert "SABOT_SHIFTS" in capsys.readouterr().err
    monkeypatch.setenv("SABOT_GAMING_DAY", "06:00 Europe/Paris")
    monkeypatch.delenv("SABOT_SHIFTS")
    try:
        day = min(k[1] for k in game.exp.recon_under(PARIS))
        assert main(["report", "day", "--store", *url, "--day", day, "--format", "json"]) == 0
        assert "Europe/Paris local time" in capsys.readouterr().out
    finally:
        monkeypatch.delenv("SABOT_GAMING_DAY")
        # back to the default
        Projector(game.ledger.app, default_views(DEFAULT, games=READ_GAMES)).catch_up()
