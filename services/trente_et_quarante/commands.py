"""Trente et Quarante's commands and queries on the ledger: coups, stakes, the deal and the
settlement (``TrenteEtQuarante``, built by the ledger with its ``Core``; registered in
``game.py``). Each command runs through ``Core.run`` (the single writer's unit of work); the
rule book is ``domain/trente_et_quarante/``. Also its parts of the core's shoe and table
commands: ``shoe_closing`` (the free stakes back to their players), ``table_closing`` (the
stakes left settled per ``prisoners_at_close``), ``table_layout`` (the stakes a table view
shows) and ``table_rounds`` (its latest coup and how many)."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from datetime import datetime
from functools import lru_cache
from typing import Any
from uuid import UUID

from eventsourcing.persistence import StoredEvent

from domain.errors import FailedPrecondition, InvalidArgument, NotFound
from domain.trente_et_quarante.chances import Chance
from domain.trente_et_quarante.deal import deal_coup
from domain.trente_et_quarante.layout import (
    Layout,
    Movement,
    MovementKind,
    Refait31Choice,
    Role,
    Stake,
    Step,
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
from domain.trente_et_quarante.layout import choose_refait31 as choose_refait31_step
from domain.trente_et_quarante.outcome import Outcome, Result, judge
from domain.trente_et_quarante.rules import HouseRules
from domain.trente_et_quarante.settlement import settle
from services.api.roles import Role as Caller
from services.ledger.account import Account
from services.ledger.actor import SYSTEM, Actor
from services.ledger.core import (
    Core,
    TableClosing,
    Transfer,
    check_amount,
    check_open,
    make_token,
    page_size_of,
    read_token,
    unwrapped,
)
from services.ledger.errors import AlreadyExists, PermissionDenied
from services.ledger.game import GameCommands
from services.ledger.ids import movement_account, parse_uuid, stake_uuid
from services.ledger.methods import Face, command, query
from services.ledger.shoe import Shoe
from services.ledger.table import Table
from services.ledger.views import MovementView, StakeView, StepView
from services.ledger.writer import UnitOfWork
from services.trente_et_quarante import stake_batch
from services.trente_et_quarante.coup import (
    COUP_IDS,
    FATE_EVENTS,
    Coup,
    CoupStarted,
    Phase,
    last_coup_id,
)
from services.trente_et_quarante.stake_batch import StakeBatchResult
from services.trente_et_quarante.views import (
    CardView,
    CoupSteps,
    CoupView,
    FateView,
    StakeResult,
)

GAME = "trente-et-quarante"  # its name (``Table.Opened.game``)


class TrenteEtQuarante(GameCommands):
    """The game's commands and queries over the ledger's ``core`` (thread-safe)."""

    def __init__(self, core: Core) -> None:
        super().__init__(core)

    # --- the core's commands: the game's part -----------------------------------------------

    def shoe_closing(self, unit: UnitOfWork, table: Table, shoe: Shoe, ts: datetime
                     ) -> tuple[MovementView, ...]:
        """``close_shoe``: refused while the table's latest coup is not settled
        (FAILED_PRECONDITION ``COUP_IN_PROGRESS``); the free stakes go back to their players
        (prisoners stay on the layout)."""
        last = self._last_coup(unit, table)
        if last is not None and last.phase != Phase.SETTLED:
            raise FailedPrecondition(
                "shoe_id", "COUP_IN_PROGRESS", f"coup {last.id} is not settled yet"
            )
        if last is None:
            return ()
        step = end_of_shoe(last.domain_layout())
        return tuple(self._apply_step(unit, table, last, step, ts))

    def table_closing(self, unit: UnitOfWork, table: Table, ts: datetime) -> TableClosing:
        """``close_table``: every stake left on the layout leaves it, free stakes returned and
        prisoners settled per ``prisoners_at_close`` (``domain.trente_et_quarante.layout
        .close_table``), recorded on the table's latest coup as a shoe's end is."""
        rules = self._rules(table)
        last = self._last_coup(unit, table)
        settled: list[MovementView] = []
        stakes = 0
        if last is not None:
            step = close_table(rules, last.domain_layout())
            stakes = len(step.fates)
            settled = self._apply_step(unit, table, last, step, ts)
        return TableClosing(str(last.id) if last is not None else None,
                            rules.prisoners_at_close.value, stakes, tuple(settled))

    def table_rounds(self, table: Table) -> tuple[str | None, int]:
        """What a table view shows of its rounds: its latest coup (None: none) and how many
        coups opened at it."""
        return table.latest_round(COUP_IDS)

    def table_layout(self, unit: UnitOfWork, table: Table
                     ) -> tuple[tuple[StakeView, ...], str | None]:
        """What a table view shows of the game: the stakes on the layout now and the shoe of
        the latest coup."""
        last = self._last_coup(unit, table)
        if last is None:
            return (), None
        return tuple(_stake_view(s) for s in last.layout), last.shoe_id

    # --- helpers ----------------------------------------------------------------------------

    def _coup(self, unit: UnitOfWork, coup_id: str) -> Coup:
        return self.core.get(unit, Coup, coup_id, "coup")

    def _rules(self, table: Table) -> HouseRules:
        return _rules_of(tuple(sorted(table.options.items())))

    def _role_account(self, unit: UnitOfWork, table_id: str, role: Role, player: str) -> Account:
        name = movement_account(table_id, role, player)
        return self.core.account(unit, name)

    def _check_funds(self, unit: UnitOfWork, table_id: str, movements: tuple[Movement, ...],
                     currency: str) -> None:
        """Refuse a step that would take a player's balance below zero (field ``amount``)."""
        self.core.check_movements(unit, movements, currency)

    def _apply_step(self, unit: UnitOfWork, table: Table, coup: Coup, step: Step, ts: datetime,
                    record_movements: bool = True,
                    command_event: tuple[str, type[Coup.StakeChanged]] | None = None,
                    ) -> list[MovementView]:
        """Record a domain step on the coup: its movements through the ledger's money step
        (``Core.transfer``: each its double entry, and a ``MoneyMoved`` when
        ``record_movements``), then each stake's fate (``command_event``: the event class for
        the commanded stake's fate), then the layout if it differs."""
        moved: list[MovementView] = []
        transfers = [
            Transfer(self._role_account(unit, table.table_id, m.source, m.player),
                     self._role_account(unit, table.table_id, m.destination, m.player),
                     m.amount, m.kind.value, m.stake_id, m)
            for m in step.movements
        ]

        first = coup.movement_seq + 1  # the seq of the step's first movement

        def record(t: Transfer[Movement]) -> None:
            m = t.movement
            assert m is not None
            view = MovementView(first + len(moved), t.kind, m.stake_id, m.player,
                                m.chance.value, t.amount, t.debit.account_id,
                                t.credit.account_id)
            if record_movements:
                coup.trigger_event(
                    Coup.MoneyMoved, timestamp=ts, seq=view.seq, kind=view.kind,
                    stake_id=view.stake_id, account_id=view.account_id, chance=view.chance,
                    amount=view.amount, debit_account=view.debit_account,
                    credit_account=view.credit_account,
                )
            moved.append(view)

        self.core.transfer(transfers, str(coup.id), ts, record)
        after = step.layout
        for f in step.fates:
            event_class = FATE_EVENTS[f.fate]
            if command_event is not None and command_event[0] == f.stake_id:
                event_class = command_event[1]
            extra: dict[str, Any] = {}
            if event_class is Coup.InsuranceBought:
                extra["premium"] = sum(
                    m.amount for m in step.movements
                    if m.stake_id == f.stake_id and m.kind is MovementKind.PREMIUM
                )
            coup.trigger_event(
                event_class, timestamp=ts, **extra, stake_id=f.stake_id, account_id=f.player,
                chance=f.chance.value, fate=f.fate.value, amount_before=f.amount_before,
                amount_after=f.amount_after,
                status_after=f.status_after.value if f.status_after is not None else None,
                stake=after.find(f.stake_id) if f.status_after is not None else None,
            )
        # a betting step's events land the coup on the step's own layout (``Layout.put``):
        # told apart from it without comparing every stake
        if coup.domain_layout() != step.layout:
            coup.trigger_event(Coup.LayoutRestated, timestamp=ts, stakes=step.layout.stakes)
        coup.adopt(step.layout)  # the coup's layout equals the step's now: keep its index
        return moved

    def _last_coup(self, unit: UnitOfWork, table: Table) -> Coup | None:
        last = last_coup_id(table)
        return None if last is None else self._coup(unit, last)

    def open_coup(
        self, request_id: str, table_id: str, coup_id: str | None = None,
        shoe_id: str | None = None, *, actor: Actor = SYSTEM,
    ) -> CoupView:
        """Open the next coup at the table (betting open); the layout is carried over.
        ``shoe_id``, when given, must be the table's open shoe (FAILED_PRECONDITION
        ``SHOE_NOT_OPEN``): checked in the decision, so a retry gets the first answer."""

        def decide(unit: UnitOfWork) -> CoupView:
            table = self.core.table(unit, table_id, game=GAME)
            check_open(table)
            if table.shoe_id is None:
                raise FailedPrecondition("table_id", "NO_SHOE", "no shoe is open at the table")
            if shoe_id is not None and str(parse_uuid(shoe_id, "shoe_id")) != table.shoe_id:
                raise FailedPrecondition(
                    "shoe_id", "SHOE_NOT_OPEN", f"shoe {shoe_id} is not the table's open shoe"
                )
            shoe = self.core.shoe(unit, table.shoe_id)
            if shoe.cut_position is None:
                raise FailedPrecondition("table_id", "SHOE_NOT_CUT", "the shoe is not cut yet")
            if shoe.cut_card_reached:
                raise FailedPrecondition(
                    "table_id", "SHOE_MUST_CLOSE", "the cut card came out: close the shoe"
                )
            last = self._last_coup(unit, table)
            if last is not None and last.phase != Phase.SETTLED:
                raise FailedPrecondition(
                    "table_id", "COUP_IN_PROGRESS", f"coup {last.id} is not settled yet"
                )
            cid = self.core.id_for(unit, Coup, coup_id, "coup")
            ts = unit.now
            coup = Coup._create(
                Coup.Opened, id=cid, timestamp=ts, table_id=table.table_id,
                shoe_id=str(shoe.id), number=table.round_count(COUP_IDS) + 1,
                number_in_shoe=shoe.coups + 1, start_position=shoe.position,
            )
            unit.add(coup)
            if last is not None:
                for stake in last.layout:
                    coup.trigger_event(
                        Coup.StakeCarriedOver, timestamp=ts, from_coup_id=str(last.id),
                        stake=stake,
                    )
            table.trigger_event(CoupStarted, timestamp=ts, coup_id=str(cid))
            return self._coup_view(coup)

        args = {"table_id": table_id, "coup_id": coup_id}
        if shoe_id is not None:
            args["shoe_id"] = shoe_id
        return self.core.run(TrenteEtQuaranteLedger.open_coup.stored, request_id, args, decide,
                             CoupView, actor)

    def _betting(
        self,
        name: str,
        request_id: str,
        args: dict[str, Any],
        coup_id: str,
        stake_id: Callable[[], str],
        step_of: Callable[[UnitOfWork, HouseRules, Layout, str], Step],
        actor: Actor,
        command_event: type[Coup.StakeChanged] | None = None,
        account_id: str | None = None,
    ) -> StakeResult:
        """A betting command: ``account_id`` for a new stake (else the stake ``stake_id()``
        exists). The owner is decided here, from the actor, before anything else: a player
        acts on its own account's stakes only (PERMISSION_DENIED naming ``account_id`` or
        ``stake_id``), whatever the stake's state and whoever asks the server."""

        def decide(unit: UnitOfWork) -> StakeResult:
            if account_id is not None and not actor.acts_for(account_id):
                raise PermissionDenied(
                    "account_id", "NOT_YOUR_ACCOUNT", "a player stakes from its own account only"
                )
            coup = self._coup(unit, coup_id)
            sid = stake_id()
            if account_id is None and actor.is_player:
                owner = coup.owner(sid)
                if owner is not None and not actor.acts_for(owner):
                    raise PermissionDenied(
                        "stake_id", "NOT_YOUR_STAKE", "the stake is another player's"
                    )
            if coup.phase != Phase.BETTING:
                raise FailedPrecondition(
                    "coup_id", "BETTING_CLOSED", f"betting is closed for coup {coup_id}"
                )
            table = self.core.table(unit, coup.table_id)
            rules = self._rules(table)
            step = step_of(unit, rules, coup.domain_layout(), sid)
            self._check_funds(unit, table.table_id, step.movements, rules.currency)
            ts = unit.now
            fate_player = next((f.player for f in step.fates if f.stake_id == sid), None)
            before = coup.stake(sid) if fate_player is None else None
            moved = self._apply_step(
                unit, table, coup, step, ts, record_movements=False,
                command_event=(sid, command_event) if command_event is not None else None,
            )
            stake = coup.stake(sid)
            player = (
                stake.player if stake is not None
                else fate_player or (before.player if before else "")
            )
            balance = self.core.account(unit, player).balance if player else 0
            return StakeResult(
                str(coup.id), _stake_view(stake) if stake else None, tuple(moved), balance
            )

        return self.core.run(name, request_id, args, decide, StakeResult, actor)

    def place_stake(
        self,
        request_id: str,
        coup_id: str,
        account_id: str,
        chance: str,
        amount: int,
        stake_id: str | None = None,
        choice: str | None = None,
        *,
        actor: Actor = SYSTEM,
    ) -> StakeResult:
        """A new stake (player -> layout). FAILED_PRECONDITION field ``amount`` beyond the
        player's balance. The stake's id is the ledger's: a fresh one, or, when the client
        gives ``stake_id`` (a UUID), ``ids.stake_uuid(coup_id, account_id, stake_id)``: the
        client's id then only keeps the account from placing that stake twice on the coup
        (ALREADY_EXISTS ``STAKE_EXISTS``), and ids never collide across coups or tables."""
        chosen: list[str] = []

        def new_stake_id() -> str:
            if stake_id is not None:
                client = str(parse_uuid(stake_id, "stake_id"))
                return str(stake_uuid(str(parse_uuid(coup_id, "coup_id")), account_id, client))
            if not chosen:
                chosen.append(str(self.core.config.new_id()))
            return chosen[-1]

        def step_of(unit: UnitOfWork, rules: HouseRules, layout: Layout, sid: str) -> Step:
            self.core.player(unit, account_id, rules.currency)
            c = _chance(chance)
            amt = check_amount(amount)
            ch = _choice(choice) if choice is not None else None
            if stake_id is not None and self._coup(unit, coup_id).owner(sid) is not None:
                raise AlreadyExists("stake_id", "STAKE_EXISTS",
                                    f"stake {stake_id} was placed on the coup already")
            return place_stake(rules, layout, sid, account_id, c, amt, ch)

        args = {"coup_id": coup_id, "account_id": account_id, "chance": chance,
                "amount": amount, "stake_id": stake_id, "choice": choice}
        return self._betting(TrenteEtQuaranteLedger.place_stake.stored, request_id, args, coup_id,
                             new_stake_id, step_of,
                             actor, account_id=account_id)

    def raise_stake(self, request_id: str, coup_id: str, stake_id: str, amount: int, *,
                    actor: Actor = SYSTEM) -> StakeResult:
        """Add ``amount`` to a free stake."""
        return self._betting(
            TrenteEtQuaranteLedger.raise_stake.stored, request_id,
            {"coup_id": coup_id, "stake_id": stake_id, "amount": amount},
            coup_id, lambda: stake_id,
            lambda u, r, lay, sid: raise_stake(r, lay, sid, check_amount(amount)), actor,
        )

    def withdraw_stake(self, request_id: str, coup_id: str, stake_id: str, *,
                       actor: Actor = SYSTEM) -> StakeResult:
        """Take a free stake back, whole."""
        return self._betting(
            TrenteEtQuaranteLedger.withdraw_stake.stored, request_id,
            {"coup_id": coup_id, "stake_id": stake_id},
            coup_id, lambda: stake_id, lambda u, r, lay, sid: withdraw_stake(r, lay, sid), actor,
        )

    def insure(self, request_id: str, coup_id: str, stake_id: str, *,
               actor: Actor = SYSTEM) -> StakeResult:
        """Buy insurance on a stake for this coup (premium player -> house insurance)."""
        return self._betting(
            TrenteEtQuaranteLedger.insure.stored, request_id,
            {"coup_id": coup_id, "stake_id": stake_id},
            coup_id, lambda: stake_id, lambda u, r, lay, sid: insure(r, lay, sid), actor,
        )

    def choose_refait31(
        self, request_id: str, coup_id: str, stake_id: str, choice: str, *,
        actor: Actor = SYSTEM,
    ) -> StakeResult:
        """``partage`` or ``prison`` (under refait31 ``player_choice``)."""
        return self._betting(
            TrenteEtQuaranteLedger.choose_refait31.stored, request_id,
            {"coup_id": coup_id, "stake_id": stake_id, "choice": choice},
            coup_id, lambda: stake_id,
            lambda u, r, lay, sid: choose_refait31_step(r, lay, sid, _choice(choice)), actor,
            command_event=Coup.Refait31Chosen,
        )

    def half_withdraw(self, request_id: str, coup_id: str, stake_id: str, *,
                      actor: Actor = SYSTEM) -> StakeResult:
        """An imprisoned stake: the house takes half, the player gets the rest back."""
        return self._betting(
            TrenteEtQuaranteLedger.half_withdraw.stored, request_id,
            {"coup_id": coup_id, "stake_id": stake_id},
            coup_id, lambda: stake_id, lambda u, r, lay, sid: half_withdraw(r, lay, sid), actor,
        )

    def move_imprisoned(
        self, request_id: str, coup_id: str, stake_id: str, chance: str, *,
        actor: Actor = SYSTEM,
    ) -> StakeResult:
        """An imprisoned stake: the house takes half, the rest goes (still in prison) to
        ``chance``."""
        return self._betting(
            TrenteEtQuaranteLedger.move_imprisoned.stored, request_id,
            {"coup_id": coup_id, "stake_id": stake_id, "chance": chance},
            coup_id, lambda: stake_id,
            lambda u, r, lay, sid: move_imprisoned(r, lay, sid, _chance(chance)), actor,
        )

    def stake_batch(self, request_id: str, coup_id: str, items: list[dict[str, Any]],
                    atomic: bool = False, *, actor: Actor = SYSTEM) -> StakeBatchResult:
        """Several places, raises and withdrawals on one coup in one command
        (``stake_batch.py``)."""
        return stake_batch.run(self, _WORDS, request_id, coup_id, items, atomic, actor)

    def _close_betting(self, unit: UnitOfWork, table: Table, coup: Coup, ts: datetime) -> None:
        step = close_betting(self._rules(table), coup.domain_layout())
        self._apply_step(unit, table, coup, step, ts)
        coup.trigger_event(Coup.BettingClosed, timestamp=ts)

    def close_betting(self, request_id: str, coup_id: str, *, actor: Actor = SYSTEM
                      ) -> CoupView:
        """No more stakes; stakes still awaiting a choice stay in prison."""

        def decide(unit: UnitOfWork) -> CoupView:
            coup = self._coup(unit, coup_id)
            if coup.phase != Phase.BETTING:
                raise FailedPrecondition("coup_id", "BETTING_CLOSED", "betting is closed already")
            table = self.core.table(unit, coup.table_id)
            self._close_betting(unit, table, coup, unit.now)
            return self._coup_view(coup)

        return self.core.run(TrenteEtQuaranteLedger.close_betting.stored, request_id,
                             {"coup_id": coup_id}, decide, CoupView,
                         actor)

    def deal(self, request_id: str, coup_id: str, *, actor: Actor = SYSTEM) -> CoupView:
        """Deal the coup: one event per card, then the coup resolved (totals, outcome,
        announcement). Closes betting first if still open."""

        def decide(unit: UnitOfWork) -> CoupView:
            coup = self._coup(unit, coup_id)
            if coup.phase not in (Phase.BETTING, Phase.CLOSED):
                raise FailedPrecondition("coup_id", "ALREADY_DEALT", "the coup was dealt already")
            table = self.core.table(unit, coup.table_id)
            shoe = self.core.shoe(unit, coup.shoe_id)
            rules = self._rules(table)
            dealt = deal_coup(self.core.cards(shoe).cards, shoe.position, rules.cut_card)
            outcome = judge(dealt)
            ts = unit.now
            if coup.phase == Phase.BETTING:
                self._close_betting(unit, table, coup, ts)
            for card in dealt.cards:
                coup.trigger_event(
                    Coup.CardDealt, timestamp=ts, row=card.row.value, code=card.card.code,
                    position=card.position, running_total=card.running_total,
                )
            coup.trigger_event(
                Coup.Resolved, timestamp=ts, noir_total=outcome.noir_total,
                rouge_total=outcome.rouge_total, result=outcome.result.value,
                refait_total=outcome.refait_total, couleur=outcome.couleur,
                winning_chances=tuple(sorted(c.value for c in outcome.winning_chances)),
                announcement=outcome.announcement, cut_card_reached=dealt.cut_card_reached,
                next_position=dealt.next_position,
            )
            shoe.trigger_event(
                Shoe.CoupDealt, timestamp=ts, coup_id=str(coup.id),
                next_position=dealt.next_position, cut_card_reached=dealt.cut_card_reached,
            )
            return self._coup_view(coup)

        return self.core.run(TrenteEtQuaranteLedger.deal.stored, request_id, {"coup_id": coup_id},
                             decide, CoupView, actor)

    def settle(self, request_id: str, coup_id: str, *, actor: Actor = SYSTEM) -> CoupView:
        """Settle the dealt coup: every movement in RULES.md order, then each stake's fate."""

        def decide(unit: UnitOfWork) -> CoupView:
            coup = self._coup(unit, coup_id)
            if coup.phase != Phase.DEALT:
                raise FailedPrecondition(
                    "coup_id", "NOT_DEALT" if coup.phase != Phase.SETTLED else "ALREADY_SETTLED",
                    f"the coup is {coup.phase}, it must be dealt",
                )
            table = self.core.table(unit, coup.table_id)
            step = settle(self._rules(table), coup.domain_layout(), _outcome(coup))
            ts = unit.now
            self._apply_step(unit, table, coup, step, ts)
            coup.trigger_event(Coup.Settled, timestamp=ts)
            return self._coup_view(coup)

        return self.core.run(TrenteEtQuaranteLedger.settle.stored, request_id,
                             {"coup_id": coup_id}, decide, CoupView, actor)

    def _coup_view(self, coup: Coup) -> CoupView:
        reached = _PHASES.index(coup.phase) if coup.phase in _PHASES else 0
        wanted = {topic: key for topic, key in _PHASE_EVENTS[:reached]}
        times = self.core.event_times(coup, wanted) if wanted else {}
        return CoupView(
            coup_id=str(coup.id), table_id=coup.table_id, shoe_id=coup.shoe_id,
            number=coup.number, number_in_shoe=coup.number_in_shoe, phase=coup.phase,
            start_position=coup.start_position,
            cards=tuple(CardView(*c) for c in coup.cards),
            noir_total=coup.noir_total, rouge_total=coup.rouge_total, result=coup.result,
            refait_total=coup.refait_total, couleur=coup.couleur,
            winning_chances=tuple(coup.winning_chances), announcement=coup.announcement,
            cut_card_reached=coup.cut_card_reached,
            layout=tuple(_stake_view(s) for s in coup.layout),
            movements=tuple(MovementView(**m) for m in coup.movements),
            fates=tuple(FateView(**f) for f in coup.fates),
            create_time=coup.created_on.isoformat(),
            betting_close_time=times.get("closed"), deal_time=times.get("dealt"),
            settle_time=times.get("settled"),
        )

    def get_coup(self, coup_id: str) -> CoupView:
        return self.core.read(lambda u: self._coup_view(self._coup(u, coup_id)))

    def stake_account(self, coup_id: str, stake_id: str) -> str:
        """The account of a stake that is or was on the coup's layout (it never changes: an
        owner check on it holds for a retry even after the stake left the layout). NOT_FOUND
        field ``stake_id`` if the stake never was on this coup."""

        def read(unit: UnitOfWork) -> str:
            owner = self._coup(unit, coup_id).owner(stake_id)
            if owner is None:
                raise NotFound("stake_id", "UNKNOWN_STAKE",
                               f"stake {stake_id} was never on the coup")
            return owner

        return self.core.read(read)

    def list_coups(
        self, table_id: str, shoe_id: str | None = None, page_size: int = 50, page_token: str = ""
    ) -> tuple[list[CoupView], str]:
        """The coups of a table (or of one of its shoes) in the order they were played, at most
        ``page_size`` (1..1000) after the page ``page_token`` ended (opaque, bound to the same
        table and shoe). Returns the coups and the next page's token ("" on the last page)."""
        size = page_size_of(page_size)
        scope = f"{table_id}/{shoe_id or '-'}"
        offset = int(read_token(page_token, "coups", scope)) if page_token else 0

        def ids(unit: UnitOfWork) -> list[str]:
            table = self.core.table(unit, table_id)
            if shoe_id is None:
                return self.core.all_rounds(table, COUP_IDS, CoupStarted.TOPIC, "coup_id")
            shoe = self.core.shoe(unit, shoe_id)
            if shoe.table_id != table.table_id:
                raise NotFound("shoe_id", "UNKNOWN_SHOE", f"no shoe {shoe_id!r} at the table")
            return self._shoe_coups(unit, table, shoe)

        found = self.core.read(ids)
        # one coup per read: a long page does not hold the writer up
        coups = [self.get_coup(c) for c in found[offset : offset + size]]
        more = offset + size < len(found)
        token = make_token("coups", scope, str(offset + size)) if more else ""
        return coups, token

    def _shoe_coups(self, unit: UnitOfWork, table: Table, shoe: Shoe) -> list[str]:
        """The shoe's coups in order: the dealt ones (from the shoe's events), then the
        table's latest coup if it belongs to the shoe and is not dealt yet."""
        ids = [
            str(json.loads(e.state)["coup_id"])
            for e in self.core.app.recorder.select_events(shoe.id, lte=shoe.version)
            if e.topic == Shoe.CoupDealt.TOPIC
        ]
        last = self._last_coup(unit, table)
        if last is not None and last.shoe_id == str(shoe.id) and str(last.id) not in ids:
            ids.append(str(last.id))
        return ids

    def last_coups(self, table_id: str, n: int = 10) -> list[CoupSteps]:
        """The table's last ``n`` coups, newest first, each with every recorded step in order,
        its position in the log and who caused it (the actor of its command), and who dealt."""
        if not isinstance(n, int) or not 1 <= n <= 100:
            raise InvalidArgument("n", "OUT_OF_RANGE", "must be 1 to 100")
        found = self.core.read(lambda u: self.core.latest_rounds(
            self.core.table(u, table_id), COUP_IDS, CoupStarted.TOPIC, "coup_id", n))
        answer = []
        for cid in reversed(found):
            coup = self.get_coup(cid)
            stored = self.core.read(functools.partial(self._checked_events, UUID(cid)))
            actors = self.core.actors_of(UUID(cid),
                                         [(e.originator_version, e.topic) for e in stored])
            steps = tuple(
                StepView(e.originator_version, e.topic, str(state.get("timestamp")), state,
                         *actors.get(e.originator_version, (0, None)))
                for e in stored
                for state in [unwrapped(json.loads(e.state))]
            )
            dealt_by = next((s.actor for s in steps if s.topic == Coup.Resolved.TOPIC), None)
            answer.append(CoupSteps(coup, steps, dealt_by))
        return answer

    def _checked_events(self, oid: UUID, _unit: UnitOfWork) -> list[StoredEvent]:
        """An aggregate's stored events, each checked as the writer checks what it loads
        (``ChainGuard``: covered by a link it trusts, and the event that link hashed): an
        event edited, inserted or deleted in the store raises ``ChainBroken``, which the
        read (``core.read``) answers as the writer does, ``EvidenceBroken`` naming its
        position, the writer halted. Without evidence (a bench's store), as stored."""
        guard = getattr(self.core.app.events, "guard", None)
        if guard is None:
            return list(self.core.app.recorder.select_events(oid))
        rows = guard.rows.stream(oid)
        guard.check(rows, oid, None)
        return [row.stored() for row in rows]


# the RPCs that call its commands (the frozen sabot.v1 services')
_TABLE, _BETTING = "/sabot.v1.TableService/", "/sabot.v1.BettingService/"
_CROUPIER, _PLAYER = (Caller.CROUPIER,), (Caller.PLAYER,)


class TrenteEtQuaranteLedger(Face):
    """The game's commands and queries as the ledger declares them, each once: its stored name
    (the ledger's method, the socket's: frozen) and the method above that decides it (its
    arguments and answer: ``services.ledger.methods``), and for a command who may call it
    through which RPCs (the role table's rows: ``services.api.roles.role_table``). Its
    servicers call them through ``ledger.game(TrenteEtQuaranteLedger)``."""

    # the croupier runs the coup (sabot.v1.TableService); a player stakes (its own account:
    # the ledger decides; sabot.v1.BettingService)
    open_coup = command("open_coup", TrenteEtQuarante.open_coup, roles=_CROUPIER,
                        rpcs=(_TABLE + "OpenCoup",))
    place_stake = command("place_stake", TrenteEtQuarante.place_stake, roles=_PLAYER,
                          rpcs=(_BETTING + "PlaceStake",))
    raise_stake = command("raise_stake", TrenteEtQuarante.raise_stake, roles=_PLAYER,
                          rpcs=(_BETTING + "RaiseStake",))
    withdraw_stake = command("withdraw_stake", TrenteEtQuarante.withdraw_stake, roles=_PLAYER,
                             rpcs=(_BETTING + "WithdrawStake",))
    insure = command("insure", TrenteEtQuarante.insure, roles=_PLAYER,
                     rpcs=(_BETTING + "InsureStake",))
    choose_refait31 = command("choose_refait31", TrenteEtQuarante.choose_refait31,
                              roles=_PLAYER, rpcs=(_BETTING + "ChooseRefait31",))
    half_withdraw = command("half_withdraw", TrenteEtQuarante.half_withdraw, roles=_PLAYER,
                            rpcs=(_BETTING + "HalfWithdrawStake",))
    move_imprisoned = command("move_imprisoned", TrenteEtQuarante.move_imprisoned,
                              roles=_PLAYER, rpcs=(_BETTING + "MoveStake",))
    stake_batch = command("stake_batch", TrenteEtQuarante.stake_batch, roles=_PLAYER,
                          rpcs=(_BETTING + "BatchStakes",))
    close_betting = command("close_betting", TrenteEtQuarante.close_betting, roles=_CROUPIER,
                            rpcs=(_TABLE + "CloseBetting",))
    deal = command("deal", TrenteEtQuarante.deal, roles=_CROUPIER, rpcs=(_TABLE + "DealCoup",))
    settle = command("settle", TrenteEtQuarante.settle, roles=_CROUPIER,
                     rpcs=(_TABLE + "SettleCoup",))
    get_coup = query("get_coup", TrenteEtQuarante.get_coup)
    stake_account = query("stake_account", TrenteEtQuarante.stake_account)
    list_coups = query("list_coups", TrenteEtQuarante.list_coups)
    last_coups = query("last_coups", TrenteEtQuarante.last_coups)

_PHASES = (Phase.BETTING, Phase.CLOSED, Phase.DEALT, Phase.SETTLED)
_PHASE_EVENTS = (  # the event that ends each phase, and the key of its time
    (Coup.BettingClosed.TOPIC, "closed"),
    (Coup.Resolved.TOPIC, "dealt"),
    (Coup.Settled.TOPIC, "settled"),
)


@lru_cache(maxsize=1024)
def _rules_of(options: tuple[tuple[str, str], ...]) -> HouseRules:
    return HouseRules.from_options(dict(options))


def _chance(text: str) -> Chance:
    try:
        return Chance(text)
    except ValueError:
        raise InvalidArgument(
            "chance", "UNKNOWN_CHANCE", "must be noir, rouge, couleur or inverse"
        ) from None


def _choice(text: str) -> Refait31Choice:
    try:
        return Refait31Choice(text)
    except ValueError:
        raise InvalidArgument("choice", "UNKNOWN_CHOICE", "must be partage or prison") from None


def _stake_view(s: Stake) -> StakeView:
    return StakeView(
        s.stake_id, s.player, s.chance.value, s.amount, s.status.value, s.insured,
        s.choice.value if s.choice is not None else None, s.awaiting_choice,
    )


_WORDS = stake_batch.Words(_chance, _choice, _stake_view)


def _outcome(coup: Coup) -> Outcome:
    assert coup.result is not None and coup.announcement is not None
    return Outcome(
        result=Result(coup.result), noir_total=coup.noir_total, rouge_total=coup.rouge_total,
        refait_total=coup.refait_total, couleur=coup.couleur,
        winning_chances=frozenset(Chance(c) for c in coup.winning_chances),
        announcement=coup.announcement,
    )
