"""RegulatorService: replays beside the recorded events, checkpoints, Merkle proofs, export.

Every call reads the store through its own connection (``services.regulator.source``), so what
is hashed and exported is what is really stored. The server's notary (``Follower``) is the only
writer of the Merkle tree: a replay first asks it to notarise what is stored, an export asks it
for a checkpoint of the whole log (the export's anchor). Replays use the operator's sealed seed
(the server's seal key); the regulator's escrow key never comes here.

``sabot.v1.RegulatorService`` is a frozen contract: its game-neutral RPCs are here (a shoe's
replay, checkpoints, proofs, export); a game's own (Trente et Quarante's ReplayCoup:
``services/trente_et_quarante/regulator.py``) are mixins its API port names
(``ApiGame.regulator_rpcs``), which ``servicer`` mixes into the service's one servicer as
``services.api.tables.servicer`` does for ``sabot.v1.TableService``. The replays of a shoe's
rounds are the games' (``RegulatorGame.replay``, handed in as ``replays``).
"""

from __future__ import annotations

import json
import queue
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from datetime import UTC, datetime
from typing import Any, Literal

import grpc

from domain.errors import RuleViolation
from services.api import errors, names
from services.api.base import Base, mixed
from services.api.game import ApiGame, Played
from services.api.gen.sabot.v1 import regulator_pb2, regulator_pb2_grpc
from services.api.hub import Hub
from services.api.roles import Principal
from services.ledger.remote import AnyLedger
from services.regulator.checkpoint import Checkpoint
from services.regulator.export import ExportError, write_export
from services.regulator.merkle import ProofError
from services.regulator.notary import Follower, Notary
from services.regulator.replay import RegulatorGame, Replayer, ReplayStep
from services.regulator.source import Database, EventTable

STEPS_PER_MESSAGE = 200
LINES_PER_MESSAGE = 200
NOTARY_WAIT = 10.0  # seconds a call waits for the notary to catch up


def _failed(field: str, reason: str, message: str) -> errors.ApiError:
    return errors.ApiError(grpc.StatusCode.FAILED_PRECONDITION, field, reason, message)


def _not_found(field: str, message: str) -> errors.ApiError:
    return errors.ApiError(grpc.StatusCode.NOT_FOUND, field, "NOT_FOUND", message)


class RegulatorServicer(Base, regulator_pb2_grpc.RegulatorServiceServicer):
    def __init__(
        self,
        ledger: AnyLedger,
        tokens: Mapping[str, Principal],
        hub: Hub,
        games: Played | None = None,
        *,
        store: str,
        seal_key: bytes | None,
        follower: Follower | None,
        checkpoint_public_key: bytes | None,
        replays: Sequence[RegulatorGame] = (),
    ) -> None:
        """``replays``: the regulator's part of each game (its replay of a shoe's rounds)."""
        super().__init__(ledger, tokens, hub, games)
        self.replays = tuple(replays)
        self.store = store
        self.seal_key = seal_key
        self.follower = follower
        self.public_key = checkpoint_public_key
        self._local = threading.local()  # one connection per worker thread (SQLite needs it)
        self._connections: list[Database] = []

    # --- plumbing ---------------------------------------------------------------------------

    @contextmanager
    def _tree(self) -> Iterator[Notary]:
        """A reader of the store and its Merkle tree, on this thread's own connection (dropped
        when the store fails, so the next call reconnects)."""
        db: Database | None = getattr(self._local, "db", None)
        if db is None:
            db = Database(self.store)
            self._local.db = db
            with self._lock:
                self._connections.append(db)
        try:
            yield Notary(db, EventTable(db), None, create=False)
        except (errors.ApiError, RuleViolation, GeneratorExit):
            raise
        except Exception:
            self._local.db = None
            with self._lock:
                self._connections.remove(db)
            with suppress(Exception):
                db.close()
            raise

    def close(self) -> None:
        """Close the workers' connections (at server shutdown)."""
        with self._lock:
            connections, self._connections = self._connections, []
        for db in connections:
            with suppress(Exception):  # a SQLite connection may refuse another thread
                db.close()

    @staticmethod
    def _latest(notary: Notary) -> Checkpoint:
        latest = notary.latest_checkpoint()
        if latest is None:
            raise _failed("", "NO_CHECKPOINT", "no checkpoint is signed yet")
        return latest

    def _standing_by(self) -> None:
        """UNAVAILABLE at once when this server's notary stands by (another one writes the
        store), instead of waiting for it in vain."""
        if self.follower is not None and self.follower.standby.is_set():
            raise errors.ApiError(grpc.StatusCode.UNAVAILABLE, "", "NOTARY_STANDBY",
                                  "another notary writes this store; this server's stands by")

    def _catch_up(self) -> None:
        """Have the notary cover every event stored so far (a replay checks the leaves)."""
        self._standing_by()
        if self.follower is not None and not self.follower.sync_now(NOTARY_WAIT):
            raise errors.ApiError(grpc.StatusCode.UNAVAILABLE, "", "NOTARY_BEHIND",
                                  "the notary has not caught up; retry")

    # --- replays ----------------------------------------------------------------------------

    def ReplayShoe(
        self, request: regulator_pb2.ReplayShoeRequest, context: grpc.ServicerContext
    ) -> Iterator[regulator_pb2.ReplayResponse]:
        table_id, shoe_id = names.shoe_name("name", request.name)
        if self.shoe_table(shoe_id, "name") != table_id:
            raise _not_found("name", "no such shoe at this table")
        self._catch_up()
        with self._tree() as notary:
            replayer = self._replayer(notary)
            yield from replay_answers(replayer.shoe(shoe_id), request.differences_only,
                                      context)

    def _replayer(self, notary: Notary) -> Replayer:
        return Replayer(notary.events, notary if notary.present else None, games=self.replays,
                        seal_key=self.seal_key)

    # --- checkpoints and proofs -------------------------------------------------------------

    def GetLatestCheckpoint(
        self, request: regulator_pb2.GetLatestCheckpointRequest, context: grpc.ServicerContext
    ) -> regulator_pb2.Checkpoint:
        with self._tree() as notary:
            return _checkpoint(self._latest(notary))

    def GetInclusionProof(
        self, request: regulator_pb2.GetInclusionProofRequest, context: grpc.ServicerContext
    ) -> regulator_pb2.InclusionProof:
        if request.position <= 0:
            raise errors.invalid("position", "a log position (> 0)")
        if request.tree_size < 0:
            raise errors.invalid("tree_size", "must not be negative (0: the latest checkpoint)")
        with self._tree() as notary:
            size = request.tree_size or self._latest(notary).size
            if size > notary.size:
                raise errors.invalid("tree_size", f"beyond the {notary.size} leaves notarised")
            leaf = notary.leaf_at_position(request.position)
            if leaf is None:
                raise _not_found("position", f"no notarised event at position {request.position}")
            index, leaf_hash = leaf
            if index >= size:
                raise errors.invalid("tree_size", f"the event is leaf {index}, beyond a tree of "
                                                  f"{size}")
            try:
                path = notary.inclusion_proof(index, size)
            except ProofError as exc:
                raise errors.invalid("tree_size", str(exc)) from None
            return regulator_pb2.InclusionProof(
                position=request.position, leaf_index=index, leaf_hash=leaf_hash,
                tree_size=size, root_hash=notary.root(size), hashes=path,
            )

    def GetConsistencyProof(
        self, request: regulator_pb2.GetConsistencyProofRequest, context: grpc.ServicerContext
    ) -> regulator_pb2.ConsistencyProof:
        if request.first_size <= 0:
            raise errors.invalid("first_size", "a tree size (> 0)")
        if request.second_size < 0:
            raise errors.invalid("second_size", "must not be negative (0: the latest checkpoint)")
        with self._tree() as notary:
            second = request.second_size or self._latest(notary).size
            if second > notary.size:
                raise errors.invalid("second_size", f"beyond the {notary.size} leaves notarised")
            if request.first_size > second:
                raise errors.invalid("first_size", f"larger than the second size {second}")
            try:
                path = notary.consistency_proof(request.first_size, second)
            except ProofError as exc:
                raise errors.invalid("first_size", str(exc)) from None
            return regulator_pb2.ConsistencyProof(
                first_size=request.first_size, second_size=second,
                first_root_hash=notary.root(request.first_size),
                second_root_hash=notary.root(second), hashes=path,
            )

    # --- export -----------------------------------------------------------------------------

    def ExportEvents(
        self, request: regulator_pb2.ExportEventsRequest, context: grpc.ServicerContext
    ) -> Iterator[regulator_pb2.ExportEventsResponse]:
        shoes: list[str] = []
        for i, name in enumerate(request.shoes):
            field = f"shoes[{i}]"
            table_id, shoe_id = names.shoe_name(field, name)
            if self.shoe_table(shoe_id, field) != table_id:
                raise _not_found(field, "no such shoe at this table")
            shoes.append(shoe_id)
        since = _time(request, "start_time")
        until = _time(request, "end_time")
        if shoes and (since or until):
            raise errors.invalid("shoes", "give either shoes or a time range, not both")
        if since and until and since >= until:
            raise errors.invalid("end_time", "must be after start_time")
        if self.follower is None or self.public_key is None:
            raise _failed("", "NO_CHECKPOINT_KEY",
                          "the server has no checkpoint key (SABOT_CHECKPOINT_KEY)")
        self._standing_by()
        if self.follower.checkpoint_now(NOTARY_WAIT) is None:
            if not self.ledger.app.recorder.max_notification_id():
                return  # an empty store: an empty export (no line), not an error
            raise errors.ApiError(grpc.StatusCode.UNAVAILABLE, "", "NOTARY_BEHIND",
                                  "the notary could not sign a checkpoint; retry")
        lines = _Lines()
        public_key = self.public_key
        each = request.proof_in_each_event

        def work() -> None:
            db = Database(self.store)  # opened in the thread that uses it (SQLite)
            try:
                notary = Notary(db, EventTable(db), None, create=False)
                write_export(lines, notary.events, notary, public_key,
                             shoe_ids=shoes or None, since=since, until=until,
                             proofs="each" if each else "multi")
            finally:
                db.close()

        yield from lines.run(work, context)


def servicer_class(mixins: tuple[type, ...]) -> type[RegulatorServicer]:
    """The servicer of ``sabot.v1.RegulatorService``: ``RegulatorServicer`` with the games'
    ``mixins`` (their own RPCs of the service) before it; ValueError if two of them define one
    RPC."""
    return mixed(RegulatorServicer, mixins, "sabot.v1.RegulatorService")


def servicer(ledger: AnyLedger, tokens: Mapping[str, Principal], hub: Hub, *, games: Played,
             **options: Any) -> RegulatorServicer:
    """The one servicer of ``sabot.v1.RegulatorService`` (``options``: ``RegulatorServicer``'s):
    the game-neutral RPCs and those of each of ``games`` (``ApiGame.regulator_rpcs``: Trente et
    Quarante's ReplayCoup)."""
    return servicer_class(games.mixins(_regulator_rpcs))(ledger, tokens, hub, games, **options)


def _regulator_rpcs(game: ApiGame) -> Any:
    return game.regulator_rpcs


class _Lines:
    """A text sink for ``write_export`` that hands batches of lines to the RPC's thread."""

    def __init__(self) -> None:
        self._buffer = ""
        self._batch: list[str] = []
        self._queue: queue.Queue[list[str] | BaseException | None] = queue.Queue(maxsize=8)
        self._cancelled = threading.Event()

    def write(self, text: str) -> int:
        self._buffer += text
        *done, self._buffer = self._buffer.split("\n")
        self._batch.extend(done)
        if len(self._batch) >= LINES_PER_MESSAGE:
            self._put(self._batch)
            self._batch = []
        return len(text)

    def _put(self, item: list[str] | BaseException | None) -> None:
        while not self._cancelled.is_set():
            try:
                self._queue.put(item, timeout=0.5)
                return
            except queue.Full:
                continue
        raise _Cancelled

    def run(
        self, work: Any, context: grpc.ServicerContext
    ) -> Iterator[regulator_pb2.ExportEventsResponse]:
        def target() -> None:
            try:
                work()
                if self._batch:
                    self._put(self._batch)
                self._put(None)
            except _Cancelled:
                pass
            except BaseException as exc:  # handed to the RPC's thread, which raises it
                with suppress(_Cancelled):
                    self._put(exc)

        thread = threading.Thread(target=target, name="sabot-export", daemon=True)
        thread.start()
        try:
            while True:
                item = self._queue.get()
                if item is None:
                    return
                if isinstance(item, BaseException):
                    raise _export_error(item)
                yield regulator_pb2.ExportEventsResponse(lines=item)
        finally:
            self._cancelled.set()
            thread.join(5)


class _Cancelled(Exception):
    """The RPC ended: the export stops writing."""


def _export_error(exc: BaseException) -> BaseException:
    if isinstance(exc, ExportError):
        if exc.field == "store":
            return _failed("", "NO_CHECKPOINT", str(exc))
        return _not_found("shoes", str(exc))
    return exc


def _time(
    request: regulator_pb2.ExportEventsRequest, field: Literal["start_time", "end_time"]
) -> datetime | None:
    if not request.HasField(field):
        return None
    stamp = getattr(request, field)
    if stamp.nanos < 0 or stamp.nanos >= 1_000_000_000:
        raise errors.invalid(field, "nanos out of range")
    try:
        when: datetime = stamp.ToDatetime(tzinfo=UTC)
    except (ValueError, OverflowError):
        raise errors.invalid(field, "not a valid time") from None
    return when


def _checkpoint(cp: Checkpoint) -> regulator_pb2.Checkpoint:
    out = regulator_pb2.Checkpoint(
        origin=cp.origin, tree_size=cp.size, root_hash=cp.root, coup_id=cp.coup or "",
        key_id=cp.key_id, signature=cp.signature,
    )
    if cp.position is not None:
        out.position = cp.position
    return out


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      default=str)


def _step(s: ReplayStep) -> regulator_pb2.ReplayStep:
    out = regulator_pb2.ReplayStep(what=s.what, recorded_json=_json(s.recorded),
                                   replayed_json=_json(s.replayed), same=s.same)
    if s.position is not None:
        out.position = s.position
    return out


def replay_answers(
    steps: Iterable[ReplayStep], differences_only: bool, context: grpc.ServicerContext
) -> Iterator[regulator_pb2.ReplayResponse]:
    """Steps in batches, then the verdict. The first step is computed before anything is sent,
    so an unknown coup or shoe is a plain NOT_FOUND; errors keep the request's field name."""
    it = iter(steps)
    try:
        first = next(it, None)
    except RuleViolation as exc:
        exc.field = "name"
        raise
    batch: list[regulator_pb2.ReplayStep] = []
    count = 0
    difference: ReplayStep | None = None
    pending = [first] if first is not None else []
    try:
        for s in _chain(pending, it):
            count += 1
            if difference is None and not s.same:
                difference = s
            if not differences_only or not s.same:
                batch.append(_step(s))
            if len(batch) >= STEPS_PER_MESSAGE:
                yield regulator_pb2.ReplayResponse(steps=batch)
                batch = []
                if not context.is_active():
                    return
    except RuleViolation as exc:
        exc.field = "name"
        raise
    verdict = regulator_pb2.ReplayVerdict(identical=difference is None, steps=count)
    if difference is not None:
        verdict.first_difference.CopyFrom(_step(difference))
    yield regulator_pb2.ReplayResponse(steps=batch, verdict=verdict)


def _chain(head: list[ReplayStep], rest: Iterator[ReplayStep]) -> Iterator[ReplayStep]:
    yield from head
    yield from rest
