"""On PostgreSQL: the views followed live by the ``eventsourcing`` projection runner.

The runner's subscription (LISTEN/NOTIFY) feeds :class:`ReadModelProjection`, which buffers events
and writes each buffer, with the tracking positions in ``rm_tracking``, in one transaction through
the same view code as the poller. A buffer is written when it is full or when the last event
received is the head of the log, so a quiet log is never left behind. The runner stops on
connection errors: supervise it (``run_forever`` re-raises) and start a new one.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

from eventsourcing.persistence import Tracking
from eventsourcing.postgres import PostgresTrackingRecorder
from eventsourcing.projection import Projection, ProjectionRunner

from services.ledger.config import libpq_params
from services.projections import tracking
from services.projections.decode import envelope
from services.projections.projector import apply_batch, prepare
from services.projections.store import ReadStore
from services.projections.tracking import PositionConflict
from services.projections.view import Envelope, View

PROJECTION_NAME = "rm"  # the runner's environment prefix: RM_POSTGRES_... may override


class ReadModelRecorder(PostgresTrackingRecorder):
    """The runner's tracking recorder: positions are the views' rows in ``rm_tracking``."""

    bound_views: ClassVar[tuple[View, ...]] = ()
    libpq: ClassVar[dict[str, str]] = {}  # the store URL's other libpq parameters (LIBPQ)

    def __init__(self, datastore: Any, **kwargs: Any) -> None:
        # The library's pool has no setting for them: added before it opens (on first use).
        datastore.pool.kwargs.update(self.libpq)
        super().__init__(datastore, **kwargs)
        self.store = ReadStore(datastore, "postgres", datastore.schema)
        self.positions: dict[str, int] = {}

    def create_table(self) -> None:
        with self.store.transaction() as tx:
            prepare(tx, self.bound_views)
        self.reload()

    def reload(self) -> None:
        with self.store.read() as tx:
            found = tracking.read(tx, [v.name for v in self.bound_views])
        self.positions = {k: p.position for k, p in found.items()}

    def max_tracking_id(self, application_name: str) -> int | None:
        """The lowest view position: every view has applied everything up to it."""
        with self.store.read() as tx:
            found = tracking.read(tx, [v.name for v in self.bound_views])
        low = min((p.position for p in found.values()), default=0)
        return low or None

    def insert_tracking(self, tracking: Tracking) -> None:  # pragma: no cover - not used
        raise NotImplementedError("positions move with the views' rows (rm_tracking)")


class ReadModelProjection(Projection[ReadModelRecorder]):
    """Buffers events and applies them to the bound views, exactly once."""

    name = PROJECTION_NAME
    events_table: ClassVar[str] = "sabot_events"
    batch_size: ClassVar[int] = 500

    def __init__(self, view: ReadModelRecorder) -> None:
        super().__init__(view)
        self.buffer: list[Envelope] = []
        self.known_head = 0

    def process_event(self, domain_event: Any, tracking: Tracking) -> None:
        self.buffer.append(envelope(tracking.notification_id, domain_event))
        at = tracking.notification_id
        if len(self.buffer) >= self.batch_size or at >= self.known_head:
            if len(self.buffer) < self.batch_size:
                self.known_head = self._head()
            if len(self.buffer) >= self.batch_size or at >= self.known_head:
                self.flush()

    def flush(self) -> None:
        if not self.buffer:
            return
        rec = self.view
        views = rec.bound_views
        if not rec.positions:
            rec.reload()
        batch = self.buffer
        self.buffer = []
        try:
            rec.positions = apply_batch(rec.store, views, rec.positions, batch)
        except PositionConflict:
            # Another projector got there first: what it wrote is exactly what we would have.
            rec.reload()
            rest = [e for e in batch if e.position > min(rec.positions.values(), default=0)]
            rec.positions = apply_batch(rec.store, views, rec.positions, rest)

    def _head(self) -> int:
        store = self.view.store
        with store.read() as tx:
            row = tx.one(f"SELECT max(notification_id) FROM {{s}}{self.events_table}")
        return int(row[0]) if row and row[0] is not None else 0


def make_runner(
    application_class: type[Any],
    views: Sequence[View],
    env: Mapping[str, str],
    batch_size: int = 500,
) -> ProjectionRunner[Any, Any]:
    """Start following ``application_class``'s log (PostgreSQL only) into ``views``."""
    bound = tuple(views)
    app_name = getattr(application_class, "name", "") or application_class.__name__

    class _Recorder(ReadModelRecorder):
        bound_views = bound
        libpq = libpq_params(env)

    class _Projection(ReadModelProjection):
        name = PROJECTION_NAME
        events_table = f"{app_name.lower()}_events"

    _Projection.batch_size = batch_size
    return ProjectionRunner(
        application_class=application_class,
        projection_class=_Projection,
        view_class=_Recorder,
        env=dict(env),
    )


def supervise(
    application_class: type[Any],
    views: Sequence[View],
    env: Mapping[str, str],
    stop: threading.Event,
    batch_size: int = 500,
    backoff: float = 1.0,
    on_error: Callable[[BaseException], None] | None = None,
) -> int:
    """Run the projection runner until ``stop`` is set, starting a new one whenever it fails
    (a lost connection stops a runner). Returns the number of restarts."""
    restarts = 0
    while not stop.is_set():
        try:
            with make_runner(application_class, views, env, batch_size) as runner:
                while not stop.is_set():
                    runner.run_forever(timeout=0.5)
                    if runner.is_interrupted.is_set():
                        break
        except Exception as exc:  # supervise: report, wait, start again
            if on_error is not None:
                on_error(exc)
            restarts += 1
            stop.wait(backoff)
    return restarts
