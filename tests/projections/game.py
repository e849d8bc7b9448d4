"""Plays shoes through the ledger and, beside it, through the domain engine alone.

The domain side (``Expected``) is what the read models must equal: balances and statements from
the domain's movements, shoe state from the domain's deals, coups from ``judge``, and the
reconciliation figures from the settlement fates and movements, at the times the clock gave.
"""

from __future__ import annotations

import itertools
import random
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID

from domain.cards import DeckKind
from domain.errors import RuleViolation
from domain.shuffle import load_sabot
from domain.trente_et_quarante.chances import Chance
from domain.trente_et_quarante.deal import CARDS_BEHIND_CUT_CARD, deal_coup
from domain.trente_et_quarante.layout import (
    Layout,
    Refait31Choice,
    Role,
    StakeStatus,
    Step,
    choose_refait31,
    close_betting,
    close_table,
    end_of_shoe,
    half_withdraw,
    insure,
    move_imprisoned,
    place_stake,
    raise_stake,
    withdraw_stake,
)
from domain.trente_et_quarante.odds import stake_state
from domain.trente_et_quarante.outcome import Outcome, Result, judge
from domain.trente_et_quarante.rules import HouseRules, house_rules
from domain.trente_et_quarante.settlement import settle
from services.bootstrap import LEDGER_GAMES
from services.ledger.api import Ledger, LedgerConfig
from services.ledger.ids import stake_uuid
from services.projections.gamingday import GamingDay
from services.projections.reconciliation import gaming_day_and_shift

HOUSE_METRIC = {
    Role.BANK: "bank_net",
    Role.HOUSE_INSURANCE: "premiums",
    Role.HOUSE_PARTAGE: "partage",
    Role.HOUSE_PRISON: "prison_loss",
}
SETTLED_IN_ACTION = {
    "won", "lost", "void", "partage", "imprisoned", "second_prison", "released",
    "back_to_prison", "prison_lost", "returned",
}


class Clock:
    """The ledger's clock: moved on by the driver, one step per command."""

    def __init__(self, start: datetime, step: timedelta) -> None:
        self.now = start
        self.step = step

    def __call__(self) -> datetime:
        return self.now

    def tick(self) -> datetime:
        self.now += self.step
        return self.now


@dataclass
class Expected:
    balances: Counter[str] = field(default_factory=Counter)
    statements: dict[str, list[tuple[int, str]]] = field(default_factory=dict)
    shoe_cards: dict[str, Counter[tuple[int, str]]] = field(default_factory=dict)
    shoes: dict[str, dict[str, Any]] = field(default_factory=dict)
    coups: dict[str, dict[str, Any]] = field(default_factory=dict)
    recon: Counter[tuple[str, str, int, str, str]] = field(default_factory=Counter)
    prison: dict[tuple[str, str, int], int] = field(default_factory=dict)
    # The same figures with their times, to file them under any gaming-day setting.
    recon_log: list[tuple[datetime, str, str, str, int]] = field(default_factory=list)
    prison_log: list[tuple[datetime, str, int]] = field(default_factory=list)

    def add(self, table: str, t: datetime, metric: str, chance: str, amount: int) -> None:
        day, shift = gaming_day_and_shift(t)
        self.recon[(table, day, shift, metric, chance)] += amount
        self.recon_log.append((t, table, metric, chance, amount))

    def set_prison(self, table: str, t: datetime, amount: int) -> None:
        day, shift = gaming_day_and_shift(t)
        self.prison[(table, day, shift)] = amount
        self.prison_log.append((t, table, amount))

    def recon_under(self, setting: GamingDay) -> Counter[tuple[str, str, int, str, str]]:
        out: Counter[tuple[str, str, int, str, str]] = Counter()
        for t, table, metric, chance, amount in self.recon_log:
            day, shift = gaming_day_and_shift(t, setting)
            out[(table, day, shift, metric, chance)] += amount
        return out

    def prison_under(self, setting: GamingDay) -> dict[tuple[str, str, int], int]:
        out: dict[tuple[str, str, int], int] = {}
        for t, table, amount in self.prison_log:
            day, shift = gaming_day_and_shift(t, setting)
            out[(table, day, shift)] = amount
        return out

    def post(self, debit: str, credit: str, amount: int, kind: str) -> None:
        self.balances[debit] -= amount
        self.balances[credit] += amount
        self.statements.setdefault(debit, []).append((-amount, kind))
        self.statements.setdefault(credit, []).append((amount, kind))


class Game:
    """One ledger and its domain mirror; ``rng`` picks the players' moves."""

    def __init__(self, store_url: str, seed: int = 1, extra_env: dict[str, str] | None = None,
                 step: timedelta = timedelta(seconds=97)) -> None:
        self.rng = random.Random(seed)
        self.clock = Clock(datetime(2026, 3, 1, 4, 0, tzinfo=UTC), step)
        self._ids = (UUID(int=(seed << 64) + i) for i in itertools.count(1))
        self._req = itertools.count(1)
        self.seeds: dict[str, bytes] = {}
        self._seed_log: list[bytes] = []
        self.ledger = Ledger(LedgerConfig(
            store_url=store_url, seal_key=bytes(range(32)), clock=self.clock,
            new_id=lambda: next(self._ids), new_seed=self._new_seed,
            extra_env=dict(extra_env or {}),
        ), games=LEDGER_GAMES)
        self.exp = Expected()
        self.rules: dict[str, HouseRules] = {}
        self.layouts: dict[str, Layout] = {}
        self.players: list[str] = []
        self.closed_with_prisoners = 0  # prisoners on the layout of the table closed, if any

    def _new_seed(self) -> bytes:
        seed = random.Random(len(self._seed_log) * 7919 + 1).randbytes(32)
        self._seed_log.append(seed)
        return seed

    def rid(self) -> str:
        return f"req-{next(self._req)}"

    def close(self) -> None:
        self.ledger.close()

    # --- setup ------------------------------------------------------------------------------

    def open_table(self, table_id: str, preset: str, overrides: dict[str, str] | None = None,
                   ) -> None:
        self.clock.tick()
        self.ledger.open_table(self.rid(), table_id, preset, overrides or {})
        self.rules[table_id] = house_rules(preset, overrides or {})
        self.layouts[table_id] = Layout()
        for role in ("bank", "layout", "house_insurance", "house_partage", "house_prison"):
            self.exp.balances[f"table:{table_id}:{role}"] += 0

    def open_player(self, name: str, deposit: int) -> None:
        self.clock.tick()
        self.ledger.open_account(self.rid(), name)
        self.exp.balances[name] += 0
        self.players.append(name)
        self.cash(name, deposit)

    def cash(self, name: str, amount: int) -> None:
        """Deposit (amount > 0) or withdraw (amount < 0) at the cage."""
        t = self.clock.tick()
        if amount > 0:
            self.ledger.deposit(self.rid(), name, amount)
            self.exp.post("cage:eur", name, amount, "cash_in")
            self.exp.add("cage:eur", t, "cash_in", "", amount)
        else:
            self.ledger.withdraw(self.rid(), name, -amount)
            self.exp.post(name, "cage:eur", -amount, "cash_out")
            self.exp.add("cage:eur", t, "cash_out", "", -amount)

    # --- the mirror -------------------------------------------------------------------------

    def _account(self, table: str, role: Role, player: str) -> str:
        return player if role is Role.PLAYER else f"table:{table}:{role.value}"

    def _apply(self, table: str, step: Step, t: datetime, in_action: bool = False) -> None:
        for m in step.movements:
            debit = self._account(table, m.source, m.player)
            credit = self._account(table, m.destination, m.player)
            self.exp.post(debit, credit, m.amount, m.kind.value)
            for role, sign in ((m.source, -1), (m.destination, 1)):
                if role in HOUSE_METRIC:
                    self.exp.add(table, t, HOUSE_METRIC[role], "", sign * m.amount)
            if in_action:
                if m.kind.value in ("collection", "payment"):
                    self.exp.add(table, t, m.kind.value + "s", "", m.amount)
                if m.destination is Role.BANK:
                    self.exp.add(table, t, "coup_result", "", m.amount)
                if m.source is Role.BANK:
                    self.exp.add(table, t, "coup_result", "", -m.amount)
        if not in_action:
            for m in step.movements:
                if m.kind.value == "partage":  # a player's decision between coups, or the close
                    self.exp.add(table, t, "partage_chosen", "", m.amount)
        if in_action:
            before = {s.stake_id: s for s in self.layouts[table].stakes}
            for f in step.fates:
                if f.fate.value in SETTLED_IN_ACTION:
                    c = f.chance.value
                    s = before[f.stake_id]
                    state = stake_state(s.status.value, s.insured,
                                        s.choice.value if s.choice else None)
                    self.exp.add(table, t, "handle", c, f.amount_before)
                    self.exp.add(table, t, "handle_sq", c, f.amount_before ** 2)
                    self.exp.add(table, t, "handle." + state, c, f.amount_before)
                    self.exp.add(table, t, "handle_sq." + state, c, f.amount_before ** 2)
        self.layouts[table] = step.layout
        self.exp.set_prison(table, t, sum(
            s.amount for s in step.layout.stakes
            if s.status in (StakeStatus.PRISON, StakeStatus.SECOND_PRISON)
        ))

    def _try(self, table: str, make: Any, send: Any) -> bool:
        """Run a betting command in the domain; if the rules allow it, in the ledger too."""
        try:
            step = make()
        except RuleViolation:
            return False
        t = self.clock.tick()
        send()
        self._apply(table, step, t)
        return True

    # --- play -------------------------------------------------------------------------------

    def play_shoe(self, table: str, max_coups: int | None = None,
                  stop: Callable[[Outcome], bool] | None = None) -> str:
        """Play a shoe to its cut card, or ``max_coups`` coups, or the first coup whose outcome
        ``stop`` accepts; then close it."""
        rules = self.rules[table]
        self.clock.tick()
        opened = self.ledger.open_shoe(self.rid(), table)
        shoe_id = opened.shoe_id
        seed = self.seeds[shoe_id] = self._last_seed()
        self.clock.tick()
        cut = self.rng.randint(1, opened.decks * 52 - 1)
        self.ledger.cut(self.rid(), shoe_id, cut, self.players[0])
        sabot = load_sabot(seed, UUID(shoe_id), DeckKind(opened.deck_kind), opened.decks, cut)
        size = len(sabot.cards)
        self.exp.shoe_cards[shoe_id] = Counter()
        info = self.exp.shoes[shoe_id] = {
            "table_id": table, "size": size, "position": 0, "coups": 0, "cut_position": cut,
            "cut_card_reached": False, "commitment": opened.commitment,
        }
        position = 0
        n = 0
        while max_coups is None or n < max_coups:
            n += 1
            self.clock.tick()
            coup = self.ledger.open_coup(self.rid(), table)
            assert coup.start_position == position
            self._bets(table, coup.coup_id, rules)
            t = self.clock.tick()
            self.ledger.close_betting(self.rid(), coup.coup_id)
            self._apply(table, close_betting(rules, self.layouts[table]), t)
            deal = deal_coup(sabot.cards, position, rules.cut_card)
            outcome = judge(deal)
            t = self.clock.tick()
            self.ledger.deal(self.rid(), coup.coup_id)
            metric = "void_coups" if outcome.result is Result.VOID else "coups"
            self.exp.add(table, t, metric, "", 1)
            for d in deal.cards:
                self.exp.shoe_cards[shoe_id][(d.card.value, d.card.colour.value)] += 1
            self.exp.coups[coup.coup_id] = {
                "table_id": table, "shoe_id": shoe_id, "result": outcome.result.value,
                "noir_total": outcome.noir_total, "rouge_total": outcome.rouge_total,
                "announcement": outcome.announcement, "cards": [d.card.code for d in deal.cards],
            }
            position = deal.next_position
            info["position"] = position
            info["coups"] += 1
            info["cut_card_reached"] = info["cut_card_reached"] or deal.cut_card_reached
            t = self.clock.tick()
            step = settle(rules, self.layouts[table], outcome)
            self.ledger.settle(self.rid(), coup.coup_id)
            self._apply(table, step, t, in_action=outcome.result is not Result.VOID)
            self.exp.coups[coup.coup_id]["movements"] = [
                (m.kind.value, m.stake_id, m.amount) for m in step.movements
            ]
            if deal.cut_card_reached or (stop is not None and stop(outcome)):
                break
        t = self.clock.tick()
        self.ledger.close_shoe(self.rid(), shoe_id)
        self._apply(table, end_of_shoe(self.layouts[table]), t)
        info["closed"] = True
        info["to_cut_card"] = size - CARDS_BEHIND_CUT_CARD - position
        return shoe_id

    def close_table(self, table: str) -> int:
        """Close the table (between shoes): the stakes left leave the layout. Returns how many
        were in prison."""
        prisoners = sum(s.status is not StakeStatus.FREE for s in self.layouts[table].stakes)
        t = self.clock.tick()
        self.ledger.close_table(self.rid(), table)
        self._apply(table, close_table(self.rules[table], self.layouts[table]), t)
        return prisoners

    def _last_seed(self) -> bytes:
        # The ledger drew exactly one seed for the shoe: replay our generator's last draw.
        return self._seed_log[-1]

    def _bets(self, table: str, coup_id: str, rules: HouseRules) -> None:
        rng = self.rng
        chances = [Chance.NOIR, Chance.ROUGE]
        if rules.chances.value == "all":
            chances += [Chance.COULEUR, Chance.INVERSE]
        lo, hi = rules.min_stake, min(rules.max_stake, rules.min_stake * 20)
        for player in self.players:
            layout = self.layouts[table]
            for s in layout.of_player(player):
                r = rng.random()
                if s.awaiting_choice and r < 0.5:
                    choice = rng.choice([Refait31Choice.PARTAGE, Refait31Choice.PRISON])
                    self._try(table, lambda s=s, c=choice: choose_refait31(
                        rules, self.layouts[table], s.stake_id, c),
                        lambda s=s, c=choice: self.ledger.choose_refait31(
                            self.rid(), coup_id, s.stake_id, c.value))
                elif s.status is StakeStatus.FREE and r < 0.15:
                    self._try(table, lambda s=s: withdraw_stake(rules, self.layouts[table],
                                                                s.stake_id),
                              lambda s=s: self.ledger.withdraw_stake(self.rid(), coup_id,
                                                                     s.stake_id))
                elif s.status is StakeStatus.FREE and r < 0.3:
                    amt = rng.randint(1, 5) * lo
                    self._try(table, lambda s=s, a=amt: raise_stake(rules, self.layouts[table],
                                                                    s.stake_id, a),
                              lambda s=s, a=amt: self.ledger.raise_stake(self.rid(), coup_id,
                                                                         s.stake_id, a))
                elif s.status is not StakeStatus.FREE and r < 0.4 and rules.half_withdrawal:
                    self._try(table, lambda s=s: half_withdraw(rules, self.layouts[table],
                                                               s.stake_id),
                              lambda s=s: self.ledger.half_withdraw(self.rid(), coup_id,
                                                                    s.stake_id))
                elif s.status is not StakeStatus.FREE and r < 0.5 and rules.move_imprisoned:
                    to = rng.choice(chances)
                    self._try(table, lambda s=s, c=to: move_imprisoned(
                        rules, self.layouts[table], s.stake_id, c),
                        lambda s=s, c=to: self.ledger.move_imprisoned(
                            self.rid(), coup_id, s.stake_id, c.value))
            if rng.random() < 0.7:
                chance = rng.choice(chances)
                amount = rng.randint(lo, hi)
                sid = str(UUID(int=rng.getrandbits(128)))
                pick: Refait31Choice | None = None
                if rules.refait31.value == "player_choice" and rng.random() < 0.3:
                    pick = rng.choice([Refait31Choice.PARTAGE, Refait31Choice.PRISON])
                # the stake's id is the ledger's, made from the coup, the account and ours
                self._try(
                    table,
                    lambda c=chance, a=amount, i=sid, ch=pick, who=player: place_stake(
                        rules, self.layouts[table], str(stake_uuid(coup_id, who, i)), who, c,
                        a, ch),
                    lambda c=chance, a=amount, i=sid, ch=pick, who=player: (
                        self.ledger.place_stake(self.rid(), coup_id, who, c.value, a, i,
                                                ch.value if ch is not None else None)),
                )
            if rules.insurance_rate > 0:
                for s in self.layouts[table].of_player(player):
                    if not s.insured and rng.random() < 0.2:
                        self._try(table, lambda s=s: insure(rules, self.layouts[table],
                                                            s.stake_id),
                                  lambda s=s: self.ledger.insure(self.rid(), coup_id, s.stake_id))
