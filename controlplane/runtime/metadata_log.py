"""The one commit path: append records to the metadata log, then project them into the tables.

A commit is two transactions under the cluster row lock, in order. The log's: the records (and
their Kafka batches), the writes' request ids and audit rows, the log's end and the renewed lease;
once it commits, the brokers following the log are woken. The tables': every projection's
statements for the same records and the tables' own offset (`projected_offset`). The log is the
truth and the tables are what it describes, so a controller that dies between the two, or whose
second transaction fails, loses nothing: the next controller to take over loads the tables at
their offset and replays the log after it into them (`projections_catch_up`) before it commits
anything. Each is refused (NOT_CONTROLLER) when the committing controller's epoch is not the
current one; the log's also when the lease lapsed, the log moved under it, or the tables trail
it. Records get gap-free offsets from the row's `last_offset`.
"""

from __future__ import annotations

import collections
import contextvars
import dataclasses
import json
import logging
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, Protocol

from django.db import IntegrityError, connection, transaction

from controlplane.controller.errors import ApiError, Errors
from controlplane.controller.image import MetadataDelta, MetadataImage
from controlplane.controller.kraft import KafkaLogEncoder
from controlplane.controller.records import Record, record_from_data
from controlplane.runtime.bulk import Column, Write, prepared_upsert
from controlplane.runtime.conversation import (
    AppliedWrite,
    ControllerAnswer,
    RequestContext,
    RequestKey,
    request_fingerprint,
)
from controlplane.runtime.lease import Lease, now_ms
from controlplane.runtime.log_fence import LEASE_RENEWAL_SLACK_MS, advance_log, advance_tables
from controlplane.runtime.log_rows import log_rows
from controlplane.runtime.notifier import notifier
from controlplane.runtime.plugins import add_once
from controlplane.runtime.projections import prepare_delta
from controlplane.runtime.single_writer import commit_scope
from controlplane.runtime.write_behind import WriteBehind

logger = logging.getLogger(__name__)

# When the last commit's transaction began (after its records were encoded), for the timings
# the controller logs of large commits.
commit_started: contextvars.ContextVar[float] = contextvars.ContextVar(
    "commit_started", default=0.0
)


# When the last commit's log transaction committed (the brokers were woken then), for the same
# timings: the tables' transaction ran after it.
log_committed: contextvars.ContextVar[float] = contextvars.ContextVar("log_committed", default=0.0)


# How long the last commit's thread took to build the projections' statements inside the
# tables' transaction (the writer thread ran the ones built before meanwhile), for the same
# timings.
projections_built: contextvars.ContextVar[float] = contextvars.ContextVar(
    "projections_built", default=0.0
)


# How many of the last commit's tables' statements were built during the log's transaction
# (`more_follows`), for the same timings.
built_ahead: contextvars.ContextVar[int] = contextvars.ContextVar("built_ahead", default=0)


class CommitAuditTrail(Protocol):
    """Writes the audit rows of a commit's requests in the commit's own transaction."""

    def prepared(self, writes: Sequence[AppliedWrite], timestamp: int) -> Write:
        """The statement inserting the rows of `writes` that carry an audit envelope."""


# The audit trail registers itself here (audit.apps): the runtime does not import apps. With
# none registered, the node that sent a request audits it after the answer.
COMMIT_AUDIT: list[CommitAuditTrail] = []


def register_commit_audit(trail: CommitAuditTrail) -> None:
    add_once(COMMIT_AUDIT, trail)


class CommitOutcomeUnknown(ApiError):
    """The commit failed at or after its COMMIT reached the server (the connection dropped,
    the server went away): the records may be in the log or not. Nobody may be told "not
    applied": the answer is REQUEST_TIMED_OUT (outcome unknown, as Kafka's controller answers
    a write it cannot confirm), the sender's retry with the same request id finds out, and the
    controller drops its image (it cannot know which state it is in)."""

    def __init__(self, cause: BaseException) -> None:
        super().__init__(
            Errors.REQUEST_TIMED_OUT,
            "The controller lost the metadata store while committing this request: it may "
            f"have been applied ({type(cause).__name__}); retry with the same request id.",
        )


class ProjectionsBehind(Exception):
    """The log committed the records, the tables' transaction did not: the writes are applied
    (their answers stand) and the tables trail the log until a controller taking over catches
    them up (`projections_catch_up`); the committing controller drops its image."""

    def __init__(self, cause: BaseException) -> None:
        self.cause = cause
        super().__init__(f"the state tables could not follow the log: {cause!r}")


class DuplicateWrite(ApiError):
    """A commit would apply a second write of a principal's request id: refused whole, nothing
    written.

    The controller answers a principal's retried request id from its first write
    (`applied_responses`) and lets only the first copy of a (principal, id) in a batch run; this
    is the last line behind those checks, so that a duplicate is never written silently (the
    applied-request insert ignores no key conflict)."""

    def __init__(self, keys: Sequence[RequestKey], *, in_log: bool) -> None:
        self.keys = sorted(set(keys))
        # Ids only in the message: it is answered to each refused client, and the principal of
        # another's write is not theirs to learn.
        self.request_ids = sorted({request_id for _, request_id in self.keys})
        self.in_log = in_log  # applied by an earlier commit, else twice in this one
        super().__init__(
            Errors.UNKNOWN_SERVER_ERROR,
            f"A write with request id {', '.join(self.request_ids)} was already applied; "
            "this copy was refused and wrote nothing.",
        )


def log_commit(
    *,
    lease: Lease,
    delta: MetadataDelta,
    writes: Sequence[AppliedWrite],
    lease_ms: int = 0,
    kafka_encoder: KafkaLogEncoder | None = None,
    on_logged: Callable[[], None] | None = None,
    more_follows: bool = False,
    behind: TablesBehind | None = None,
    defer_tables: bool = False,
) -> Lease:
    """Commit `delta`'s records to the log, wake the brokers (and call `on_logged`: the
    writes answered once the log holds them), then write its projections;
    answers the lease as the commit left it. Raises ProjectionsBehind when the log committed
    and the tables did not.

    The log's transaction is what the brokers wait for: nothing else runs beside its
    statements unless `more_follows` (another slice of the same change waits for this commit
    to end, as a bounded change's next one does): then the tables' statements are built while
    the server runs the log's, which shortens the whole commit but not the log's (the
    statements' thread waits for the GIL while they are built: a 4,000-partition controlled
    shutdown woke the brokers about 20 ms later that way).

    With `lease_ms`, the commit also renews the lease (until `lease_ms` after its statements
    ran): it holds the cluster row's lock and has just checked the lease is its own, so a
    batch that takes long to encode (100,000 partition changes) never lets its lease lapse in
    the middle, as when the lease was renewed only between batches.

    With `kafka_encoder` (the state before `delta`), the records are also kept in Kafka's
    batch format (cp_kafka_batch), in the same transaction: what the brokers fetch.

    With `behind`, the tables' transactions this controller left for later are written before
    this commit's own; with `defer_tables` too, this commit's tables' statements join them
    instead (`TablesBehind`), and the commit ends with its log's transaction."""
    if behind is None:
        behind = TablesBehind()
    if not delta.replayed:
        return lease if defer_tables else behind.write(lease, lease_ms)
    remembered = [
        w
        for w in writes
        if w.remembered and w.context.request_id and w.last_offset >= w.first_offset
    ]
    _refuse_repeated_ids(remembered)
    timestamp = now_ms()
    # Encode the records before taking the lock. The projections' rows are built inside the
    # transaction, while the server appends the log (controlplane.runtime.write_behind).
    append = prepared_upsert(
        table="cp_metadata_record",
        columns=LOG_COLUMNS,
        rows=_log_rows(delta, writes, lease.epoch, timestamp),
    )
    remember = prepared_upsert(
        table="cp_applied_request",
        columns=APPLIED_COLUMNS,
        rows=[
            (
                w.context.request_id,
                w.context.principal,
                w.api,
                json.dumps(w.answer.storable_response(), separators=(",", ":")),
                w.first_offset,
                w.last_offset,
                timestamp,
                w.answer.audited,
                json.dumps(dict(w.answer.notes), separators=(",", ":")),
                request_fingerprint(w.api, w.payload),
            )
            for w in remembered
        ],
    )
    audit = [trail.prepared(writes, timestamp) for trail in COMMIT_AUDIT]

    def statements() -> Iterator[Write]:
        yield append
        yield prepared_upsert(  # encoded as the writer runs
            table="cp_kafka_batch",
            columns=KAFKA_BATCH_COLUMNS,
            rows=_kafka_batch_rows(kafka_encoder, delta, lease.epoch, timestamp),
        )
        yield remember
        yield from audit

    # The tables' statements, built one at a time: with `more_follows`, those built while the
    # server still runs the log's (an idle committing thread otherwise) wait for the tables'
    # transaction.
    tables = _Prebuilt(prepare_delta(delta, writes, timestamp))
    commit_started.set(time.perf_counter())
    meanwhile = tables.build_while if more_follows else _nothing_meanwhile
    try:
        renewed = _commit(
            lease, delta, (timestamp, lease_ms), statements, meanwhile, behind.tables_at
        )
    except IntegrityError:
        already = applied_responses([w.context.request_id for w in remembered])
        again = [w.context.key for w in remembered if w.context.key in already]
        if not again:
            raise
        raise DuplicateWrite(again, in_log=True) from None
    log_committed.set(time.perf_counter())
    notifier.bump()  # this process's caches and waiters: at worst a spurious wake-up
    if on_logged is not None:
        on_logged()
    if defer_tables:
        behind.keep(delta, list(tables))  # built now: the image moves on once this returns
        return renewed
    renewed = behind.write(renewed, lease_ms)
    try:
        renewed = _project(renewed, delta, tables, lease_ms)
    except Exception as error:
        raise ProjectionsBehind(error) from error
    _publish_tables(delta)
    return renewed


class TablesBehind:
    """The tables' transactions a controller left for later, in order, each its commit's
    statements as built before the image moved on.

    A bounded change (a 100,000-partition report applied in slices of 5,000, a controlled
    shutdown's moves) commits slice after slice: were each slice's tables' transaction run
    before the next slice's log, the brokers would wait for every one of them, though they
    follow the log alone. So a slice that only the controller and the brokers wait for (its
    events answered from the log: `ControllerRuntime` decides) commits its log and keeps its
    tables' statements here. The controller's timer writes them, one tables' transaction per
    turn of the controller (heartbeats get in between), once no more slice is promised; a
    commit that is answered from the tables writes them all before its own. Meanwhile the
    tables trail the log by those commits: the
    log's fence expects them where this controller left them (`tables_at`), and a controller
    that dies with statements here loses nothing, as when it dies between a commit's two
    transactions: the next one catches the tables up from the log."""

    def __init__(self) -> None:
        self._pending: collections.deque[tuple[int, MetadataDelta, list[Write]]] = (
            collections.deque()
        )
        self.records = 0
        self._last_kept = 0.0
        # Another slice of the change is on its way (the controller notes it after each).
        self.slice_promised = False

    def __bool__(self) -> bool:
        return bool(self._pending)

    def __len__(self) -> int:
        return len(self._pending)

    @property
    def tables_at(self) -> int | None:
        """Where the tables stand while statements wait here (None: where the log ends)."""
        return self._pending[0][0] if self._pending else None

    def idle_ms(self) -> float:
        """How long ago the last commit was left here (0 when none is)."""
        return (time.monotonic() - self._last_kept) * 1000 if self._pending else 0.0

    def keep(self, delta: MetadataDelta, statements: list[Write]) -> None:
        self._last_kept = time.monotonic()
        base_offset = delta.replayed[0][0] - 1
        self._pending.append((base_offset, delta, statements))
        self.records += len(delta.replayed)

    def write(self, lease: Lease, lease_ms: int = 0, *, commits: int | None = None) -> Lease:
        """The kept commits' tables' transactions (all, or the oldest `commits`), in order;
        answers the lease as they left it. Raises ProjectionsBehind (and forgets them all) when
        one fails."""
        left = len(self._pending) if commits is None else commits
        while self._pending and left > 0:
            left -= 1
            base_offset, delta, statements = self._pending[0]
            try:
                lease = _project(lease, delta, statements, lease_ms, base_offset)
            except Exception as error:
                self.drop()
                raise ProjectionsBehind(error) from error
            self._pending.popleft()
            self.records -= len(delta.replayed)
            _publish_tables(delta)
        return lease

    def drop(self) -> None:
        """Forget them (the controller lost its lease: the next one catches the tables up)."""
        self._pending.clear()
        self.records = 0
        self.slice_promised = False


def _publish_tables(delta: MetadataDelta) -> None:
    """The tables' notice of `delta`'s commit, after the ACLs' and the quotas' if it changed
    them."""
    notifier.publish_tables(
        delta.last_offset,
        acls_changed=bool(delta.changed_acls),
        quotas_changed=bool(delta.changed_client_quotas),
    )


def _nothing_meanwhile(_busy: Callable[[], bool]) -> None:
    built_ahead.set(0)


class _Prebuilt:
    """A commit's tables' statements: some built ahead (`build_while`), the rest as they come."""

    def __init__(self, statements: Iterator[Write]) -> None:
        self._statements = statements
        self._built: list[Write] = []

    def build_while(self, busy: Callable[[], bool]) -> None:
        while busy():
            write = next(self._statements, None)
            if write is None:
                break
            self._built.append(write)
        built_ahead.set(len(self._built))

    def __iter__(self) -> Iterator[Write]:
        built, self._built = self._built, []
        yield from built
        yield from self._statements


def projections_catch_up(
    lease: Lease, image: MetadataImage, up_to_offset: int, lease_ms: int = 0
) -> tuple[int, Lease]:
    """Bring the tables, which stand at `image`'s offset, up to the log's `up_to_offset`: the
    records after it replayed into one delta, its projections written as the commit writes
    them (with `lease_ms`, renewing the lease at the end of a long transaction, as a commit
    does), the delta applied to `image`. Answers how many records were replayed and the lease
    as it left it. The log's records carry no request: the timeline names the controller for
    what it catches up."""
    delta = MetadataDelta(image)
    rows = log_rows(
        ("offset", "record_type", "timestamp_ms", "data"),
        after=image.last_offset,
        through=up_to_offset,
    )
    timestamp = now_ms()
    for offset, record_type, timestamp_ms, data in rows:
        if offset != delta.next_offset:
            raise ApiError(
                Errors.UNKNOWN_SERVER_ERROR,
                f"The metadata log has a gap: expected offset {delta.next_offset}, found {offset}.",
            )
        delta.replay(record_from_data(record_type, data))
        timestamp = int(timestamp_ms)
    if delta.last_offset != up_to_offset:
        raise ApiError(
            Errors.UNKNOWN_SERVER_ERROR,
            f"The metadata log ends at {delta.last_offset}, short of {up_to_offset}.",
        )
    if delta.replayed:
        lease = _project(lease, delta, prepare_delta(delta, (), timestamp), lease_ms)
        _publish_tables(delta)
        image.apply(delta)
    return len(delta.replayed), lease


def _project(
    lease: Lease,
    delta: MetadataDelta,
    statements: Iterable[Write],
    lease_ms: int = 0,
    base_offset: int | None = None,
) -> Lease:
    """The tables' transaction: `delta`'s projections (`statements`, built as the writer runs
    the ones before), the tables' offset moved to its end; answers the lease as it left it.
    With `lease_ms`, a transaction that ran long renews the lease as its last statement, as
    the log's does."""
    with commit_scope(), transaction.atomic(), connection.cursor() as cursor:
        advance_tables(cursor, lease, delta, base_offset)
        built = time.perf_counter()
        with WriteBehind() as writer:
            for write in statements:
                writer.submit(write)
            projections_built.set(time.perf_counter() - built)
        expires = _renewed_at_the_end(cursor, lease.expires_ms, lease_ms)
    return dataclasses.replace(lease, expires_ms=expires)


def _renewed_at_the_end(cursor: Any, expires: int, lease_ms: int) -> int:
    """A transaction that holds the cluster row (so no standby can take the lease meanwhile)
    and ran for long leaves its controller a whole lease, not what the transaction spent of it:
    renewed as its last statement. Answers the lease's expiry."""
    renewal = now_ms() + lease_ms
    if lease_ms and renewal - expires > LEASE_RENEWAL_SLACK_MS:
        cursor.execute("UPDATE cp_cluster SET lease_expires_ms = %s WHERE id = 1", [renewal])
        return renewal
    return expires


def _refuse_repeated_ids(writes: Sequence[AppliedWrite]) -> None:
    counts = collections.Counter(w.context.key for w in writes)
    repeated = [key for key, count in counts.items() if count > 1]
    if repeated:
        raise DuplicateWrite(repeated, in_log=False)


def _commit(
    lease: Lease,
    delta: MetadataDelta,
    times: tuple[int, int],
    statements: Callable[[], Iterator[Write]],
    meanwhile: Callable[[Callable[[], bool]], None] = lambda busy: None,
    tables_at: int | None = None,
) -> Lease:
    committing = False  # set once every statement ran: what fails after is the COMMIT itself
    try:
        with commit_scope(), transaction.atomic(), connection.cursor() as cursor:
            expires = _commit_statements(
                cursor, lease, delta, times, statements, meanwhile, tables_at
            )
            committing = True
    except Exception as error:
        if committing:
            raise CommitOutcomeUnknown(error) from error
        raise
    return dataclasses.replace(lease, expires_ms=expires)


def _commit_statements(
    cursor: Any,
    lease: Lease,
    delta: MetadataDelta,
    times: tuple[int, int],
    statements: Callable[[], Iterator[Write]],
    meanwhile: Callable[[Callable[[], bool]], None],
    tables_at: int | None = None,
) -> int:
    """The log's statements, in its transaction; answers the lease's new expiry. Once they are
    all handed to the writer, `meanwhile` may work until the writer is done."""
    timestamp, lease_ms = times
    # The fence, the log's new end and the renewed lease in one statement, which locks the row
    # (as SELECT ... FOR UPDATE would) until the transaction ends: the lease held when the
    # batch was encoded, and nobody took it over since (the epoch and holder are ours), the
    # log and the tables where the batch was built on. Nothing of the transaction commits
    # unless it held.
    expires = advance_log(cursor, lease, delta, (timestamp, now_ms() + lease_ms), tables_at)
    with WriteBehind() as writer:
        for write in statements():
            writer.submit(write)
        meanwhile(writer.busy)
    # A commit of 100,000 partitions on a loaded machine runs for seconds.
    expires = _renewed_at_the_end(cursor, expires, lease_ms)
    # Robust: a notice that cannot be sent must not turn a committed write into a failure.
    transaction.on_commit(lambda: notifier.publish(delta.last_offset), robust=True)
    return expires


APPLIED_COLUMNS = [
    Column("request_id", "text"),
    Column("principal", "text"),
    Column("api", "text"),
    Column("response", "json"),  # the text as written (controlplane.models.JsonAsWritten)
    Column("first_offset", "bigint"),
    Column("last_offset", "bigint"),
    Column("created_ms", "bigint"),
    Column("audited", "boolean"),
    Column("notes", "json"),
    Column("fingerprint", "text"),
]


def applied_responses(request_ids: Sequence[str]) -> dict[RequestKey, ControllerAnswer]:
    """The stored answers of the writes already applied with these request ids, whoever sent
    them, by (principal, request id) (one query). A retry answers only its own principal's;
    the others tell the controller who used the id before (a collision, to audit)."""
    if not request_ids:
        return {}
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                f"SELECT {STORED_ANSWER} FROM cp_applied_request WHERE request_id = ANY(%s)",
                [list(set(request_ids))],
            )
        else:
            unique = list(set(request_ids))
            marks = ", ".join("%s" for _ in unique)
            cursor.execute(
                f"SELECT {STORED_ANSWER} FROM cp_applied_request WHERE request_id IN ({marks})",
                unique,
            )
        rows = cursor.fetchall()
    return {
        (principal, request_id): _stored_answer(*answer) for principal, request_id, *answer in rows
    }


STORED_ANSWER = (
    "principal, request_id, response, first_offset, last_offset, audited, notes, fingerprint"
)


def _stored_answer(
    response: Any,
    first_offset: int,
    last_offset: int,
    audited: Any,
    notes: Any,
    fingerprint: str | None = None,
) -> ControllerAnswer:
    """A stored write's answer, as a retry gets it again. A response stored before answers
    were typed holds its notes in `_` fields (`_offsets`, `_audited`, `_token_id`): they are
    set apart, never answered."""
    stored = _json(response)
    legacy = {k[1:]: v for k, v in stored.items() if k.startswith("_")}
    return ControllerAnswer(
        {k: v for k, v in stored.items() if not k.startswith("_")},
        offsets=(int(first_offset), int(last_offset)),
        audited=bool(audited) or bool(legacy.pop("audited", False)),
        notes={
            **{k: v for k, v in legacy.items() if k not in ("offsets", "handled_ms")},
            **_json(notes),
        },
        fingerprint=fingerprint,
    )


def _json(value: Any) -> dict[str, Any]:
    decoded = json.loads(value) if isinstance(value, str | bytes) else value
    return decoded if isinstance(decoded, dict) else {}


LOG_COLUMNS = [
    Column("offset", "bigint"),
    Column("record_type", "text"),
    Column("controller_epoch", "int"),
    Column("timestamp_ms", "bigint"),
    Column("principal", "text"),
    Column("client_id", "text"),
    Column("client_host", "text"),
    Column("request_id", "text"),
    Column("broker_id", "int"),
    Column("data", "json"),  # the text as written (controlplane.models.JsonAsWritten)
]


def _log_rows(
    delta: MetadataDelta, writes: Sequence[AppliedWrite], epoch: int, timestamp: int
) -> list[tuple[object, ...]]:
    contexts = {
        offset: write.context
        for write in writes
        for offset in range(write.first_offset, write.last_offset + 1)
    }
    rows: list[tuple[object, ...]] = []
    controller = RequestContext()  # events the controller makes itself (its timer)
    for offset, record in delta.replayed:
        context = contexts.get(offset, controller)
        rows.append(
            (
                offset,
                record.TYPE,
                epoch,
                timestamp,
                context.principal,
                context.client_id,
                context.client_host,
                context.request_id,
                _broker_id(record),
                record.to_json(),
            )
        )
    return rows


KAFKA_BATCH_COLUMNS = [
    Column("base_offset", "bigint"),
    Column("last_offset", "bigint"),
    Column("epoch", "int"),
    Column("data", "bytea"),
]


def _kafka_batch_rows(
    encoder: KafkaLogEncoder | None, delta: MetadataDelta, epoch: int, timestamp: int
) -> list[tuple[object, ...]]:
    """The commit's records as Kafka batches (the brokers' fetch serves them), or none: a
    commit whose records cannot be encoded is still committed, and the Kafka protocol listener
    encodes that range from the rows, as for a log written before batches were kept."""
    if encoder is None:
        return []
    batches = encoder.commit_batches(delta.replayed, epoch, timestamp)
    try:
        return [(b.base_offset, b.last_offset, b.epoch, b.data) for b in batches]
    except Exception:
        logger.exception("the commit's records are kept without their Kafka batches")
        return []


def _broker_id(record: Record) -> int | None:
    value = getattr(record, "broker_id", None)
    return value if isinstance(value, int) else None
