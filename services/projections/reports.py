"""Reports from the read models: a gaming day's reconciliation, a player statement, a table's shoe
history. Each returns an ``export.Report`` (render it as text, CSV or JSON).

Money stays in integer minor units. Ratios (hold %) and the theoretical win are exact fractions
shown with two decimals. The theoretical win is ``Σ m(state, chance) × handle.<state>`` and its
95 % interval ``theoretical ± 1.96 × sqrt(Σ v(state, chance) × handle_sq.<state>)``, with ``m``
and ``v`` the exact mean and variance per unit staked of the house's result of one coup on a
stake in that state (``domain.trente_et_quarante.odds.coup_law``); the square root is taken in
integers
(``isqrt``, to a thousandth of a minor unit).
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from decimal import ROUND_HALF_EVEN, Decimal
from fractions import Fraction
from math import isqrt
from typing import Any

from domain.errors import InvalidArgument, NotFound
from services.projections.export import Report
from services.projections.games import CoupLaw, UnitsView
from services.projections.recall import iso_time
from services.projections.reconciliation import ReconciliationView, stored_setting
from services.projections.store import ReadStore

CHANCES = ("noir", "rouge", "couleur", "inverse")
Z95_PERCENT = 196  # 1.96, in hundredths
ROOT_SCALE = 1000  # the interval's square root is taken to a thousandth of a minor unit


def _dec(x: Fraction | int) -> str:
    q = Decimal(x.numerator) / Decimal(x.denominator) if isinstance(x, Fraction) else Decimal(x)
    return str(q.quantize(Decimal("0.01"), rounding=ROUND_HALF_EVEN))


def _check_day(day: str) -> None:
    parts = day.split("-")
    if len(parts) != 3 or not all(p.isdigit() for p in parts) or len(day) != 10:
        raise InvalidArgument("gaming_day", "BAD_DATE", f"must be YYYY-MM-DD, got {day!r}")


def _metrics(store: ReadStore, day: str, table_id: str | None) -> dict[tuple[str, int], Any]:
    sql = "SELECT table_id, shift, metric, chance, amount FROM {s}rm_recon WHERE gaming_day = ?"
    params: list[Any] = [day]
    if table_id is not None:
        sql += " AND table_id = ?"
        params.append(table_id)
    out: dict[tuple[str, int], dict[tuple[str, str], int]] = defaultdict(dict)
    with store.read() as tx:
        for t, shift, metric, chance, amount in tx.query(sql, params):
            out[(t, int(shift))][(metric, chance)] = int(amount)
    return out


def prison_outstanding(store: ReadStore, table_id: str, day: str, shift: int | None = None,
                       ) -> int:
    """The imprisoned stakes on the table's layout at the close of ``day``'s ``shift`` (None:
    its last shift under the setting the view was built with)."""
    if shift is None:
        shift = stored_setting(store).shifts
    with store.read() as tx:
        row = tx.one(
            "SELECT amount FROM {s}rm_recon WHERE table_id = ? AND metric = 'prison_outstanding' "
            "AND (gaming_day < ? OR (gaming_day = ? AND shift <= ?)) "
            "ORDER BY gaming_day DESC, shift DESC LIMIT 1",
            (table_id, day, day, shift),
        )
    return int(row[0]) if row else 0


TRENTE_ET_QUARANTE = "trente-et-quarante"


def table_games(store: ReadStore, views: Iterable[Any]) -> dict[str, str]:
    """table id -> its game: the game among those of ``views`` (their ``UnitsView``s) whose
    table accounts (``UnitsView.table_accounts``) it has, from ``rm_recon_account`` (the
    reconciliation view records no game). A table whose accounts match no such game, or
    several, is left out (Trente et Quarante's, whose rounds the core's views keep)."""
    kinds: dict[str, set[str]] = defaultdict(set)
    with store.read() as tx:
        for table, kind in tx.query("SELECT table_id, kind FROM {s}rm_recon_account "
                                    "WHERE table_id IS NOT NULL"):
            kinds[str(table)].add(str(kind))
    accounts = {v.game: {str(getattr(k, "value", k)) for k in v.table_accounts}
                for v in views if isinstance(v, UnitsView) and v.table_accounts}
    found = {}
    for table, held in kinds.items():
        named = [name for name, want in accounts.items() if want == held]
        if len(named) == 1:
            found[table] = named[0]
    return found


def _table_options(store: ReadStore) -> dict[str, dict[str, str]]:
    with store.read() as tx:
        return {r[0]: json.loads(r[1]) for r in tx.query(
            "SELECT table_id, options FROM {s}rm_recon_table")}


DAY_COLUMNS = (
    "table_id", "shift", "coups", "void_coups",
    *(f"handle_{c}" for c in CHANCES), "handle", "collections", "payments", "bank_win",
    "coup_results", "bank_check", "premiums", "partage", "prison_loss", "house_win", "hold_pct",
    "theoretical_win", "interval_low", "interval_high", "flag", "prison_outstanding",
    "cash_in", "cash_out", "currency",
)
# Columns in minor units of the row's currency (theoretical_win and its interval: with two
# decimals), for the human renderings (``export.to_text``).
DAY_MONEY = frozenset({
    *(f"handle_{c}" for c in CHANCES), "handle", "collections", "payments", "bank_win",
    "coup_results", "premiums", "partage", "prison_loss", "house_win", "theoretical_win",
    "interval_low", "interval_high", "prison_outstanding", "cash_in", "cash_out",
})
TOTAL = "total"  # the table_id of a grand-total row


@dataclass
class _Sum:
    """The whole day of every table and cage in one currency, added up."""

    m: dict[tuple[str, str], int] = field(default_factory=lambda: defaultdict(int))
    theo: Fraction = Fraction(0)
    var: Fraction = Fraction(0)
    known: bool = True  # every table with handle had its laws
    prison: int = 0
    bank_ok: bool = True


def gaming_day(store: ReadStore, day: str, table_id: str | None = None, *,
               views: Iterable[Any]) -> Report:
    """Per Trente et Quarante table, one row per shift and a ``day`` row: handle by chance,
    paid out, house win, hold %, premiums, partage, prison losses, imprisoned stakes
    outstanding at the close, cash at the cage, the bank-versus-coups check and the
    theoretical win with its 95 % flag. Then
    the grand total of the day across every table and cage (``Report.totals``, table_id
    ``total``: one row per currency; the theoretical win and its interval add the tables'
    means and variances, their coups being independent).

    ``day`` and the shifts are those of the site's gaming day (``gamingday``) the
    reconciliation view was built with; the ``hours`` fact describes them. ``views``: the read
    models (the games' tell their tables; the reconciliation view's ``coup_law`` gives the
    theoretical win: unknown without one)."""
    _check_day(day)
    views = tuple(views)
    law = coup_law_of(views)
    setting = stored_setting(store)  # the rows' gaming day: the site's, as built
    metrics = _metrics(store, day, table_id)
    options = _table_options(store)
    games = table_games(store, views)
    # Trente et Quarante's tables and the cage: another game's table (its bank holds the
    # players' money) is in the floor's report (``floor.floor_day``)
    tables = sorted({t for t, _ in metrics
                     if games.get(t, TRENTE_ET_QUARANTE) == TRENTE_ET_QUARANTE})
    rows: list[tuple[Any, ...]] = []
    flags = 0
    sums: dict[str, _Sum] = defaultdict(_Sum)
    for t in tables:
        shifts = sorted(s for tt, s in metrics if tt == t)
        total: dict[tuple[str, str], int] = defaultdict(int)
        currency = _currency(t, options.get(t))
        for s in shifts:
            m = metrics[(t, s)]
            for k, v in m.items():
                if k[0] != "prison_outstanding":
                    total[k] += v
            row, flagged, _ = _day_row(store, t, day, str(s), m, options.get(t), s, currency,
                                       law)
            rows.append(row)
        row, flagged, laws = _day_row(store, t, day, "day", total, options.get(t),
                                      setting.shifts, currency, law)
        flags += flagged
        rows.append(row)
        _add(sums[currency], total, laws, dict(zip(DAY_COLUMNS, row, strict=True)))
    facts = {"gaming_day": day, "tables": len([t for t in tables if not t.startswith("cage:")]),
             "flags": flags, "hours": setting.describe()}
    totals = tuple(_total_row(c, sums[c]) for c in sorted(sums))
    return Report(f"Gaming day {day}", DAY_COLUMNS, tuple(rows), facts, DAY_MONEY, totals)


def coup_law_of(views: Iterable[Any]) -> CoupLaw | None:
    """The law of one coup the reconciliation view among ``views`` was given (None: none)."""
    return next((v.coup_law for v in views if isinstance(v, ReconciliationView)), None)


def _currency(table: str, options: dict[str, str] | None) -> str:
    """A table's currency (its options), a cage's (its name: ``cage:eur``)."""
    if table.startswith("cage:"):
        return table.removeprefix("cage:").upper()
    return (options or {}).get("currency", "")


def _add(acc: _Sum, m: dict[tuple[str, str], int], laws: tuple[Fraction, Fraction] | None,
         row: dict[str, Any]) -> None:
    for k, v in m.items():
        acc.m[k] += v
    if laws is not None:
        acc.theo += laws[0]
        acc.var += laws[1]
    elif row["handle"]:
        acc.known = False
    acc.prison += row["prison_outstanding"] or 0
    acc.bank_ok = acc.bank_ok and row["bank_check"] != "DIFF"


def _total_row(currency: str, acc: _Sum) -> tuple[Any, ...]:
    laws = (acc.theo, acc.var) if acc.known else None
    row, _ = _row_of(TOTAL, "day", acc.m, laws, acc.prison, currency)
    if not acc.bank_ok:
        i = DAY_COLUMNS.index("bank_check")
        row = (*row[:i], "DIFF", *row[i + 1:])
    return row


def _day_row(store: ReadStore, table: str, day: str, shift: str, m: dict[tuple[str, str], int],
             options: dict[str, str] | None, close_shift: int, currency: str,
             law: CoupLaw | None) -> tuple[tuple[Any, ...], int, tuple[Fraction, Fraction] | None]:
    total = sum(m.get(("handle", c), 0) for c in CHANCES)
    laws = _laws(m, options, law) if options is not None and total else None
    is_cage = table.startswith("cage:")
    prison = None if is_cage else prison_outstanding(store, table, day, close_shift)
    row, flagged = _row_of(table, shift, m, laws, prison, currency)
    return row, flagged, laws


def _row_of(table: str, shift: str, m: dict[tuple[str, str], int],
            laws: tuple[Fraction, Fraction] | None, prison: int | None, currency: str,
            ) -> tuple[tuple[Any, ...], int]:
    def g(metric: str, chance: str = "") -> int:
        return m.get((metric, chance), 0)

    handle = {c: g("handle", c) for c in CHANCES}
    total = sum(handle.values())
    bank = g("bank_net")
    results = g("coup_result")
    house = bank + g("premiums") + g("partage") + g("prison_loss")
    game_win = bank + g("partage") + g("prison_loss")
    hold = _dec(Fraction(100 * house, total)) if total else None
    theo_text = low = high = None
    flag = "" if total == 0 else "unknown"
    flagged = 0
    if laws is not None and total:
        theo, var = laws
        root = isqrt(var.numerator * ROOT_SCALE**2 // var.denominator)  # sqrt(var), floored
        half = Fraction(Z95_PERCENT * root, 100 * ROOT_SCALE)
        low, high = theo - half, theo + half
        theo_text = _dec(theo)
        inside = low <= game_win <= high
        flag = "ok" if inside else "OUTSIDE_95"
        flagged = 0 if inside else 1
        low, high = _dec(low), _dec(high)  # type: ignore[assignment]
    is_cage = table.startswith("cage:")
    row = (
        table, shift, g("coups"), g("void_coups"), *handle.values(), total, g("collections"),
        g("payments"), bank, results, "" if is_cage else ("ok" if bank == results else "DIFF"),
        g("premiums"), g("partage"), g("prison_loss"), house, hold, theo_text, low, high, flag,
        prison, g("cash_in"), g("cash_out"), currency,
    )
    return row, flagged


def _laws(m: dict[tuple[str, str], int], options: dict[str, str], coup_law: CoupLaw | None,
          ) -> tuple[Fraction, Fraction] | None:
    """(theoretical win, variance of the game win) from the handle by state: each state's exact
    mean and variance per unit (``coup_law``: the game's, ``ReadGame.coup_law``); ``None`` when
    it cannot say (or there is none)."""
    if coup_law is None:
        return None
    theo = Fraction(m.get(("partage_chosen", ""), 0))  # sure gains, part of the game win
    var = Fraction(0)
    for (metric, chance), amount in m.items():
        if not metric.startswith("handle.") or not amount:
            continue
        state = metric[len("handle."):]
        law = coup_law(options, chance, state)
        if law is None:
            return None
        mean, variance = law
        theo += mean * amount
        var += variance * m.get(("handle_sq." + state, chance), 0)
    return theo, var


STATEMENT_COLUMNS = ("seq", "at", "kind", "cause", "counter_account", "stake_id", "amount",
                     "balance_after", "actor")
STATEMENT_MONEY = frozenset({"amount", "balance_after", "opening_balance", "closing_balance",
                             "balance_now"})  # in the account's currency (the fact)


def player_statement(store: ReadStore, account_id: str, since: str | None = None,
                     until: str | None = None) -> Report:
    """Every entry of the account (``since`` <= at < ``until``, ISO 8601), with the opening and
    closing balances of the period."""
    since = iso_time(since, "since")
    until = iso_time(until, "until")
    with store.read() as tx:
        acc = tx.one("SELECT kind, currency, balance, entries FROM {s}rm_account "
                     "WHERE account_id = ?", (account_id,))
        if acc is None:
            raise NotFound("account_id", "UNKNOWN_ACCOUNT", f"no account {account_id!r}")
        sql = ("SELECT s.seq, s.at, s.kind, s.cause, s.counter_account, s.stake_id, s.amount, "
               "s.balance_after, a.actor FROM {s}rm_statement s LEFT JOIN {s}rm_bankroll_actor "
               "a ON a.actor_id = s.actor WHERE s.account_id = ?")
        params: list[Any] = [account_id]
        if since is not None:
            sql += " AND s.at >= ?"
            params.append(since)
        if until is not None:
            sql += " AND s.at < ?"
            params.append(until)
        rows = tx.query(sql + " ORDER BY s.seq", params)
        opening = 0
        if rows:
            first = rows[0]
            opening = int(first[7]) - int(first[6])
        elif since is not None:
            before = tx.one("SELECT balance_after FROM {s}rm_statement WHERE account_id = ? AND "
                            "at < ? ORDER BY seq DESC LIMIT 1", (account_id, since))
            opening = int(before[0]) if before else 0
    closing = int(rows[-1][7]) if rows else opening
    facts = {"account_id": account_id, "kind": acc[0], "currency": acc[1],
             "opening_balance": opening, "closing_balance": closing, "entries": len(rows),
             "balance_now": int(acc[2])}
    return Report(f"Statement of {account_id}", STATEMENT_COLUMNS,
                  tuple(tuple(r) for r in rows), facts, STATEMENT_MONEY)


SHOE_COLUMNS = ("shoe_id", "opened_at", "closed_at", "cut_position", "cut_by", "coups",
                "cards_dealt", "position", "to_cut_card", "status", "seed_status",
                "commitment", "order_digest", "results")


def shoe_history(store: ReadStore, table_id: str) -> Report:
    """Every shoe of the table in order: cut, coups, cards, commitment and seed check, and the
    results of its coups (N noir, R rouge, = refait, V void)."""
    with store.read() as tx:
        shoes = tx.query(
            "SELECT shoe_id, opened_at, closed_at, cut_position, cut_by, coups, cards_dealt, "
            "position, to_cut_card, status, seed_status, commitment, order_digest FROM "
            "{s}rm_shoe WHERE table_id = ? ORDER BY opened_at, shoe_id", (table_id,))
        if not shoes:
            known = tx.one("SELECT count(*) FROM {s}rm_recon_table WHERE table_id = ?",
                           (table_id,))
            if not known or not known[0]:
                raise NotFound("table_id", "UNKNOWN_TABLE", f"no table {table_id!r}")
        results: dict[str, list[str]] = defaultdict(list)
        for shoe_id, result in tx.query(
            "SELECT shoe_id, result FROM {s}rm_coup WHERE table_id = ? ORDER BY number",
            (table_id,),
        ):
            results[shoe_id].append(_RESULT_LETTER.get(result, "?"))
    rows = tuple((*r, "".join(results.get(r[0], []))) for r in shoes)
    facts = {"table_id": table_id, "shoes": len(rows), "results": RESULTS_LEGEND}
    return Report(f"Shoe history of table {table_id}", SHOE_COLUMNS, rows, facts)


# What the ``results`` column's letters mean (a fact of the report: its text, CSV and JSON).
RESULTS_LEGEND = "one letter per coup, in order: N noir wins, R rouge wins, = refait, V void"


_RESULT_LETTER = {"noir": "N", "rouge": "R", "refait": "=", "void": "V"}
