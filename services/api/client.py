"""A small client of sabot.v1: one channel (plaintext, TLS or mTLS), the stubs, and the bearer
token on every call."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import grpc
from grpc_health.v1 import health_pb2_grpc

from services.api.gen.sabot.cuarenta.v1 import cuarenta_pb2, cuarenta_pb2_grpc
from services.api.gen.sabot.treinta_y_una.v1 import treinta_y_una_pb2 as tyu_pb2
from services.api.gen.sabot.treinta_y_una.v1 import treinta_y_una_pb2_grpc as tyu_pb2_grpc
from services.api.gen.sabot.v1 import (
    betting_pb2,
    betting_pb2_grpc,
    cashier_pb2,
    cashier_pb2_grpc,
    common_pb2,
    events_pb2_grpc,
    regulator_pb2,
    regulator_pb2_grpc,
    reports_pb2_grpc,
    table_pb2,
    table_pb2_grpc,
)
from services.api.tls import channel_credentials, open_channel

PemSource = Path | str | bytes  # a PEM file's path, or its bytes
Req = TypeVar("Req")
Resp = TypeVar("Resp")


def new_request_id() -> str:
    return str(uuid.uuid4())


@dataclass(frozen=True)
class _Details(grpc.ClientCallDetails):
    """A call's details with the bearer token and the default timeout filled in."""

    method: str
    timeout: float | None
    metadata: grpc.Metadata | None
    credentials: grpc.CallCredentials | None
    wait_for_ready: bool | None
    compression: grpc.Compression | None


if TYPE_CHECKING:  # (generic in the stubs only)
    _UnaryUnary = grpc.UnaryUnaryClientInterceptor[Any, Any]
    _UnaryStream = grpc.UnaryStreamClientInterceptor[Any, Any]
else:
    _UnaryUnary, _UnaryStream = (grpc.UnaryUnaryClientInterceptor,
                                 grpc.UnaryStreamClientInterceptor)


class _Bearer(_UnaryUnary, _UnaryStream):
    """Every call on the channel carries ``authorization: Bearer <token>`` (unless the caller
    gives metadata of its own) and ``timeout`` (unless the caller gives one; None: none)."""

    def __init__(self, metadata: grpc.Metadata, timeout: float | None) -> None:
        self._metadata = metadata
        self._timeout = timeout

    def _details(self, d: grpc.ClientCallDetails) -> grpc.ClientCallDetails:
        return _Details(d.method, self._timeout if d.timeout is None else d.timeout,
                        self._metadata if d.metadata is None else d.metadata, d.credentials,
                        d.wait_for_ready, d.compression)

    def intercept_unary_unary(
        self, continuation: Callable[[grpc.ClientCallDetails, Any], grpc.CallFuture[Any]],
        client_call_details: grpc.ClientCallDetails, request: Any,
    ) -> grpc.CallFuture[Any]:
        return continuation(self._details(client_call_details), request)

    def intercept_unary_stream(
        self, continuation: Callable[[grpc.ClientCallDetails, Any], grpc.CallIterator[Any]],
        client_call_details: grpc.ClientCallDetails, request: Any,
    ) -> grpc.CallIterator[Any]:
        return continuation(self._details(client_call_details), request)


def authed(channel: grpc.Channel, token: str | None, timeout: float | None) -> grpc.Channel:
    """``channel`` with ``token`` and ``timeout`` on every call (``_Bearer``): the generated
    stubs over it are typed, so mypy checks every request a caller builds."""
    metadata = (("authorization", f"Bearer {token}"),) if token else ()
    return grpc.intercept_channel(channel, _Bearer(metadata, timeout))


class Client:
    """Every sabot.v1 service over one channel, as one caller (one token, or on an mTLS server
    the client certificate alone). The raw stubs (``tables``, ``betting``, ``treinta_y_una``,
    ``cuarenta``, ...) take the generated requests; ``rounds`` (Treinta y Una) and ``matches``
    (Cuarenta) are typed calls that make the request ids (``last_request_id``) and names.

    ``tls_ca``: the CA of the server's certificate (a TLS channel; with ``tls_ca=True`` the
    system's roots); ``tls_cert`` and ``tls_key``: this client's certificate and key (mTLS).
    Without them the channel is plaintext."""

    def __init__(
        self,
        target: str,
        token: str | None = None,
        *,
        channel: grpc.Channel | None = None,
        timeout: float | None = 30.0,
        tls_ca: PemSource | bool | None = None,
        tls_cert: PemSource | None = None,
        tls_key: PemSource | None = None,
    ) -> None:
        self.owns_channel = channel is None
        if channel is None:
            tls = None
            if tls_ca is not None or tls_cert is not None or tls_key is not None:
                ca = None if isinstance(tls_ca, bool) else tls_ca
                tls = channel_credentials(ca, tls_cert, tls_key)
            channel = open_channel(target, tls)
        self.channel = channel
        self.token = token
        self.metadata: tuple[tuple[str, str], ...] = (
            (("authorization", f"Bearer {token}"),) if token else ())
        self.timeout = timeout
        unary = authed(self.channel, token, timeout)  # (streams: no deadline of ours)
        streams = authed(self.channel, token, None)
        self.tables = table_pb2_grpc.TableServiceStub(unary)
        self.betting = betting_pb2_grpc.BettingServiceStub(unary)
        self.cashier = cashier_pb2_grpc.CashierServiceStub(unary)
        self.reports = cashier_pb2_grpc.ReportServiceStub(unary)
        self.watch = events_pb2_grpc.WatchServiceStub(streams)
        self.feed = events_pb2_grpc.FeedServiceStub(streams)
        self.recall = events_pb2_grpc.RecallServiceStub(unary)
        self.read_models = reports_pb2_grpc.ReadModelServiceStub(unary)
        self.regulator = regulator_pb2_grpc.RegulatorServiceStub(streams)
        self.treinta_y_una = tyu_pb2_grpc.TreintaYUnaServiceStub(unary)
        self.cuarenta = cuarenta_pb2_grpc.CuarentaServiceStub(unary)
        self.health = health_pb2_grpc.HealthStub(self.channel)
        # The games' typed calls (request ids made when not given: ``last_request_id``).
        self.rounds = TreintaYUnaCalls(self)
        self.matches = CuarentaCalls(self)
        self.batch = BatchCalls(self)  # the batch calls (a layout, a cashier's movements)
        self.last_request_id = ""

    def as_(self, token: str) -> Client:
        """The same channel, another caller."""
        return Client("", token, channel=self.channel)

    def close(self) -> None:
        if self.owns_channel:
            self.channel.close()


# --- the games' typed calls ------------------------------------------------------------------


def _table(name: str) -> str:
    """``tables/{table}`` from a table's name or its bare id."""
    return name if name.startswith("tables/") else f"tables/{name}"


def _account(name: str) -> str:
    """``accounts/{account}`` from an account's name or its bare id."""
    return name if name.startswith("accounts/") else f"accounts/{name}"


def _money(amount: int, currency: str) -> common_pb2.Money:
    return common_pb2.Money(currency_code=currency, amount_minor=amount)


@dataclass(frozen=True)
class Replay:
    """A regulator's replay: the steps sent (every one, or only the differences) and the
    verdict (identical, how many steps were compared, the first difference)."""

    steps: tuple[regulator_pb2.ReplayStep, ...]
    verdict: regulator_pb2.ReplayVerdict

    @property
    def identical(self) -> bool:
        return bool(self.verdict.identical)


class _Calls:
    """A game's typed calls over one ``Client``'s channel and token. Every mutating call takes
    ``request_id`` (a retry with the same id returns the first answer); when not given a new
    one is made and kept in ``last_request_id`` (the client's too), so a retry can reuse it."""

    def __init__(self, client: Client) -> None:
        self._client = client

    def _unary(self, method: grpc.UnaryUnaryMultiCallable[Req, Resp], request: Req) -> Resp:
        return method(request, metadata=self._client.metadata, timeout=self._client.timeout)

    def _stream(self, method: grpc.UnaryStreamMultiCallable[Req, Resp],
                request: Req) -> Iterator[Resp]:
        yield from method(request, metadata=self._client.metadata)

    @property
    def _regulator(self) -> regulator_pb2_grpc.RegulatorServiceStub:
        return regulator_pb2_grpc.RegulatorServiceStub(self._client.channel)

    def _rid(self, request_id: str | None) -> str:
        rid = request_id or new_request_id()
        self._client.last_request_id = rid
        return rid

    def _replay(self, answers: Iterable[regulator_pb2.ReplayResponse]) -> Replay:
        steps: list[regulator_pb2.ReplayStep] = []
        verdict = regulator_pb2.ReplayVerdict()
        for answer in answers:
            steps.extend(answer.steps)
            if answer.HasField("verdict"):
                verdict = answer.verdict
        return Replay(tuple(steps), verdict)


_CHANCES: dict[str, common_pb2.Chance.ValueType] = {
    "noir": common_pb2.CHANCE_NOIR, "rouge": common_pb2.CHANCE_ROUGE,
    "couleur": common_pb2.CHANCE_COULEUR, "inverse": common_pb2.CHANCE_INVERSE}
_CHOICES: dict[str, common_pb2.Refait31Choice.ValueType] = {
    "": common_pb2.REFAIT31_CHOICE_UNSPECIFIED, "partage": common_pb2.REFAIT31_CHOICE_PARTAGE,
    "prison": common_pb2.REFAIT31_CHOICE_PRISON}


class BatchCalls(_Calls):
    """The batch calls (issue 25 item 2): a player's terminal places, raises and withdraws
    several stakes of one coup in one ``BettingService.BatchStakes`` call; a cashier makes
    several deposits and withdrawals in one ``CashierService.BatchMovements`` call. Each item
    gets its own answer (``results[i].result`` / ``.account``, or ``.error`` with its code,
    reason and field); ``atomic=True``: all or nothing (the first refused item refuses the
    call: an ``RpcError`` naming ``stakes[i].<field>``). One request id for the batch: a retry
    with it returns the first answer. Items are made by the static methods (amounts in minor
    units; chances in the game's words)::

        client.batch.stakes(coup, [BatchCalls.place("anne", "noir", 1_000),
                                   BatchCalls.place("anne", "couleur", 500)])
    """

    @staticmethod
    def place(account: str, chance: str, amount: int, currency: str = "", *,
              stake_id: str = "", refait31_choice: str = "") -> betting_pb2.StakeItem:
        return betting_pb2.StakeItem(
            action=betting_pb2.STAKE_ACTION_PLACE, account=_account(account),
            chance=_CHANCES[chance], amount=_money(amount, currency), stake_id=stake_id,
            refait31_choice=_CHOICES[refait31_choice])

    @staticmethod
    def raise_(stake: str, amount: int, currency: str = "") -> betting_pb2.StakeItem:
        """Add ``amount`` to the stake ``tables/{table}/stakes/{stake}``."""
        return betting_pb2.StakeItem(action=betting_pb2.STAKE_ACTION_RAISE, name=stake,
                                     amount=_money(amount, currency))

    @staticmethod
    def withdraw(stake: str) -> betting_pb2.StakeItem:
        return betting_pb2.StakeItem(action=betting_pb2.STAKE_ACTION_WITHDRAW, name=stake)

    @staticmethod
    def deposit(account: str, amount: int, currency: str = "") -> cashier_pb2.CageMovement:
        return cashier_pb2.CageMovement(kind=cashier_pb2.CAGE_MOVEMENT_KIND_DEPOSIT,
                                        name=_account(account), amount=_money(amount, currency))

    @staticmethod
    def withdrawal(account: str, amount: int, currency: str = "") -> cashier_pb2.CageMovement:
        return cashier_pb2.CageMovement(kind=cashier_pb2.CAGE_MOVEMENT_KIND_WITHDRAWAL,
                                        name=_account(account), amount=_money(amount, currency))

    def stakes(self, coup: str, items: Sequence[betting_pb2.StakeItem], *, atomic: bool = False,
               request_id: str | None = None) -> betting_pb2.BatchStakesResponse:
        """The items on the coup ``tables/{table}/shoes/{shoe}/coups/{coup}``."""
        stub = betting_pb2_grpc.BettingServiceStub(self._client.channel)
        return self._unary(stub.BatchStakes, betting_pb2.BatchStakesRequest(
            request_id=self._rid(request_id), coup=coup, stakes=items, atomic=atomic))

    def movements(self, items: Sequence[cashier_pb2.CageMovement], *, atomic: bool = False,
                  request_id: str | None = None) -> cashier_pb2.BatchMovementsResponse:
        stub = cashier_pb2_grpc.CashierServiceStub(self._client.channel)
        return self._unary(stub.BatchMovements, cashier_pb2.BatchMovementsRequest(
            request_id=self._rid(request_id), movements=items, atomic=atomic))


class TreintaYUnaCalls(_Calls):
    """Treinta y Una (``sabot.treinta_y_una.v1.TreintaYUnaService``) for every role: the
    croupier opens the table and its rounds, deals, settles; a player stakes, says "carta" or
    "me planto" and sees its own hand (its own token); the regulator replays a round. Tables
    and accounts by name or bare id; rounds by name (``tables/{table}/rounds/{round}``)."""

    def __init__(self, client: Client) -> None:
        super().__init__(client)
        self._stub = tyu_pb2_grpc.TreintaYUnaServiceStub(client.channel)

    def open_table(self, table_id: str, preset: str = "",
                   overrides: Mapping[str, str] | None = None, *,
                   request_id: str | None = None) -> tyu_pb2.Table:
        return self._unary(self._stub.OpenTable, tyu_pb2.OpenTableRequest(
            request_id=self._rid(request_id), table_id=table_id, preset=preset,
            overrides=dict(overrides or {})))

    def open_round(self, table: str, seats: Sequence[str], bank: int, currency: str = "", *,
                   round_id: str = "", request_id: str | None = None) -> tyu_pb2.Round:
        return self._unary(self._stub.OpenRound, tyu_pb2.OpenRoundRequest(
            request_id=self._rid(request_id), parent=_table(table),
            seats=[_account(s) for s in seats], bank=_money(bank, currency),
            round_id=round_id))

    def place_stake(self, round: str, player: str, amount: int, currency: str = "", *,
                    request_id: str | None = None) -> tyu_pb2.Round:
        return self._unary(self._stub.PlaceStake, tyu_pb2.PlaceStakeRequest(
            request_id=self._rid(request_id), round=round, player=_account(player),
            amount=_money(amount, currency)))

    def deal(self, round: str, *, request_id: str | None = None) -> tyu_pb2.Round:
        return self._unary(self._stub.Deal, tyu_pb2.DealRequest(
            request_id=self._rid(request_id), round=round))

    def carta(self, round: str, player: str, *, request_id: str | None = None) -> tyu_pb2.Round:
        return self._unary(self._stub.Carta, tyu_pb2.CartaRequest(
            request_id=self._rid(request_id), round=round, player=_account(player)))

    def me_planto(self, round: str, player: str, *,
                  request_id: str | None = None) -> tyu_pb2.Round:
        return self._unary(self._stub.MePlanto, tyu_pb2.MePlantoRequest(
            request_id=self._rid(request_id), round=round, player=_account(player)))

    def stand_for_absent(self, round: str, player: str, *,
                         request_id: str | None = None) -> tyu_pb2.Round:
        return self._unary(self._stub.StandForAbsent, tyu_pb2.StandForAbsentRequest(
            request_id=self._rid(request_id), round=round, player=_account(player)))

    def settle(self, round: str, *, request_id: str | None = None) -> tyu_pb2.Round:
        return self._unary(self._stub.SettleRound, tyu_pb2.SettleRoundRequest(
            request_id=self._rid(request_id), round=round))

    def cancel(self, round: str, *, request_id: str | None = None) -> tyu_pb2.Round:
        return self._unary(self._stub.CancelRound, tyu_pb2.CancelRoundRequest(
            request_id=self._rid(request_id), round=round))

    def get(self, round: str) -> tyu_pb2.Round:
        return self._unary(self._stub.GetRound, tyu_pb2.GetRoundRequest(name=round))

    def latest(self, table: str) -> tyu_pb2.Round:
        return self._unary(self._stub.GetLatestRound,
            tyu_pb2.GetLatestRoundRequest(parent=_table(table)))

    def list(self, table: str, page_size: int = 0,
             page_token: str = "") -> tyu_pb2.ListRoundsResponse:
        return self._unary(self._stub.ListRounds, tyu_pb2.ListRoundsRequest(
            parent=_table(table), page_size=page_size, page_token=page_token))

    def my_hand(self, round: str, player: str) -> tyu_pb2.Hand:
        return self._unary(self._stub.GetMyHand, tyu_pb2.GetMyHandRequest(
            round=round, player=_account(player)))

    def watch(self, round: str, after_position: int = 0) -> Iterator[tyu_pb2.RoundStep]:
        """Every step of the round as it happens, until the round ends."""
        for answer in self._stream(self._stub.WatchRound, tyu_pb2.WatchRoundRequest(
                round=round, after_position=after_position)):
            yield from answer.steps

    def recall(self, round: str) -> tyu_pb2.RoundRecall:
        return self._unary(self._stub.RecallRound,
            tyu_pb2.RecallRoundRequest(name=round))

    def reconciliation(self, table: str, gaming_day: str = "") -> tyu_pb2.Reconciliation:
        return self._unary(self._stub.GetReconciliation,
            tyu_pb2.GetReconciliationRequest(table=_table(table), gaming_day=gaming_day))

    def replay(self, round: str, differences_only: bool = False) -> Replay:
        """The regulator's replay of the round (``RegulatorService.ReplayRound``)."""
        request = regulator_pb2.ReplayRoundRequest(name=round, differences_only=differences_only)
        return self._replay(self._stream(self._regulator.ReplayRound, request))


class CuarentaCalls(_Calls):
    """Cuarenta (``sabot.cuarenta.v1.CuarentaService``) for every role: the croupier opens the
    table and its matches and deals; a player sees its own hand and plays its own seat (its
    own token); the regulator replays a match. Tables and accounts by name or bare id;
    matches by name (``tables/{table}/matches/{match}``)."""

    def __init__(self, client: Client) -> None:
        super().__init__(client)
        self._stub = cuarenta_pb2_grpc.CuarentaServiceStub(client.channel)
        self._tables = table_pb2_grpc.TableServiceStub(client.channel)

    def open_table(self, table_id: str, preset: str = "",
                   overrides: Mapping[str, str] | None = None, *,
                   request_id: str | None = None) -> table_pb2.Table:
        return self._unary(self._tables.OpenTable, table_pb2.OpenTableRequest(
            request_id=self._rid(request_id), table_id=table_id, preset=preset,
            overrides=dict(overrides or {}), game="cuarenta"))

    def open(self, table: str, seats: Sequence[str], stake: int, currency: str = "", *,
             preset: str = "", options: Mapping[str, str] | None = None,
             dealer: int | None = None, match_id: str = "",
             request_id: str | None = None) -> cuarenta_pb2.MatchStep:
        request = cuarenta_pb2.OpenMatchRequest(
            request_id=self._rid(request_id), table=_table(table), match_id=match_id,
            seats=[_account(s) for s in seats], stake=_money(stake, currency), preset=preset,
            options=dict(options or {}))
        if dealer is not None:
            request.dealer = dealer
        return self._unary(self._stub.OpenMatch, request)

    def deal(self, match: str, *, request_id: str | None = None) -> cuarenta_pb2.MatchStep:
        return self._unary(self._stub.Deal, cuarenta_pb2.DealRequest(
            request_id=self._rid(request_id), match=match))

    def play(self, match: str, seat: int, card: str, capture: Sequence[str] = (),
             leave_on_table: bool = False, *,
             request_id: str | None = None) -> cuarenta_pb2.MatchStep:
        return self._unary(self._stub.PlayCard, cuarenta_pb2.PlayCardRequest(
            request_id=self._rid(request_id), match=match, seat=seat, card=card,
            capture=list(capture), leave_on_table=leave_on_table))

    def forfeit(self, match: str, seat: int, reason: str = "abandoned", *,
                request_id: str | None = None) -> cuarenta_pb2.MatchStep:
        return self._unary(self._stub.Forfeit, cuarenta_pb2.ForfeitRequest(
            request_id=self._rid(request_id), match=match, seat=seat, reason=reason))

    def get(self, match: str) -> cuarenta_pb2.Match:
        return self._unary(self._stub.GetMatch,
            cuarenta_pb2.GetMatchRequest(name=match))

    def list(self, table: str, page_size: int = 0,
             page_token: str = "") -> cuarenta_pb2.ListMatchesResponse:
        return self._unary(self._stub.ListMatches,
            cuarenta_pb2.ListMatchesRequest(parent=_table(table), page_size=page_size,
                                            page_token=page_token))

    def hand(self, match: str, seat: int) -> cuarenta_pb2.Hand:
        return self._unary(self._stub.GetHand,
            cuarenta_pb2.GetHandRequest(match=match, seat=seat))

    def moves(self, match: str, after: int = 0) -> Sequence[cuarenta_pb2.Move]:
        return tuple(self._unary(self._stub.ListMoves, cuarenta_pb2.ListMovesRequest(
            match=match, after=after)).moves)

    def watch(self, match: str, after: int = 0) -> Iterator[cuarenta_pb2.Move]:
        """The match's moves as they happen, after move number ``after``."""
        for answer in self._stream(self._stub.WatchMatch, cuarenta_pb2.WatchMatchRequest(
                match=match, after=after)):
            yield from answer.moves

    def reconciliation(self, table: str, gaming_day: str = "") -> cuarenta_pb2.Reconciliation:
        return self._unary(self._stub.GetReconciliation,
            cuarenta_pb2.GetReconciliationRequest(table=_table(table), gaming_day=gaming_day))

    def replay(self, match: str, differences_only: bool = False) -> Replay:
        """The regulator's replay of the match (``RegulatorService.ReplayMatch``)."""
        request = regulator_pb2.ReplayMatchRequest(name=match, differences_only=differences_only)
        return self._replay(self._stream(self._regulator.ReplayMatch, request))
