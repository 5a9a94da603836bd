"""The feed's change stamp: a digest of everything the subject's .ics is built from, without building it.

A calendar app polls the feed with If-None-Match; building the calendar to compare ETags costs the whole
feed. The stamp digests instead what the feed *reads*, straight from the database, so it changes whenever
the body could:

* the subject's row and its calendar's (zone, weekends, closing minute, holidays) and closed days;
* what every entries provider declares it reads (``entries.register(provider, inputs=…)``): for the clocks
  every item with its clock's columns, every timer of the items and the record's rows under their keys;
  for the services their subscriptions, minted jobs, timers and the Services' code;
* the domain's today in the calendar's zone (a status says "due today", "ahead", "open"): the live
  clock's date, or the test clock's frozen time read in the same statement;
* the code that renders the feed (the source of the feed's and each provider's module, icalendar's version).

It is derived from the rows themselves, not from a counter bumped by writes: the engine writes with raw
statements (timers/store.py) and so may anything else, and a digest of the rows cannot miss a write. A
provider that does not say what it reads makes the stamp ``None``: the feed then builds every time.

On PostgreSQL the whole stamp is one statement (each input a digest of its rows' text in a scalar subquery:
the count and the sum of each row's 64-bit hash, which needs no sort), so one snapshot; elsewhere each input's
rows are read and hashed here.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import re
import sys
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from functools import cache
from zoneinfo import ZoneInfo

import icalendar
import psycopg
from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.db.backends.utils import CursorDebugWrapper, CursorWrapper
from django.db.models import QuerySet

from timers.domains import domain_now
from timers.models import LIVE, TestClock

from . import entries
from .models import ClosedDay, FeedStamp, Subject

# Bump when what the stamp digests changes shape, so no old ETag matches a stamp of the new shape.
STAMP_VERSION = "feed-stamp 3"
# A newer stamp is seen at least this long after the one before: Last-Modified is whole seconds.
SEEN_STEP = timedelta(seconds=1)


@dataclass(frozen=True)
class Stamp:
    digest: str  # sha256 hex of every part
    today: date  # the domain's today in the calendar's zone, as the feed would see it

    @property
    def etag(self) -> str:
        return f'"{self.digest}"'


@cache
def code_fingerprint() -> str:
    """The source of every module that renders the feed or lists its entries, and icalendar's version: a
    deploy that changes how the feed reads changes every stamp."""
    modules = {"calendars.feed", "calendars.entries", "calendars.feed_stamp"}
    modules |= {p.__module__ for p in entries.providers()}
    h = hashlib.sha256(f"{STAMP_VERSION} icalendar {icalendar.__version__}".encode())
    for name in sorted(modules):
        module = sys.modules.get(name)
        try:
            source = inspect.getsource(module) if module is not None else name
        except (OSError, TypeError):
            source = name  # no source to read (a frozen module): its name only
        h.update(name.encode() + b"\0" + source.encode() + b"\0")
    return h.hexdigest()


def _row_parts(subject: Subject) -> list[str]:
    """The subject's and its calendar's columns: already in memory (the feed's token lookup read them)."""
    s = subject
    cal = s.calendar if s.calendar_id else None
    return _row_texts((s.id, s.domain, s.kind, s.key_name, s.key, s.name, s.created_at, s.calendar_id),
                      None if cal is None else (cal.zone, cal.weekends, cal.closes, cal.holiday_country,
                                                cal.holiday_subdiv))


def _row_texts(subject: tuple, calendar: tuple | None) -> list[str]:
    """The texts of the subject's row (id, domain, kind, key_name, key, name, created_at, calendar_id) and
    its calendar's (zone, weekends, closes, holiday_country, holiday_subdiv): one function for a loaded
    subject and for the probe's bare columns, so both give the same stamp."""
    sid, domain, kind, key_name, key, name, created_at, calendar_id = subject
    parts = [f"subject {sid} {domain} {kind} {key_name} {key} {name!r} {created_at.isoformat()}"]
    if calendar is None:
        parts.append("calendar none")
    else:
        zone, weekends, closes, country, subdiv = calendar
        parts.append(f"calendar {calendar_id} {zone} {list(weekends)} {closes.isoformat()} {country} {subdiv}")
    return parts


def _zone(subject: Subject) -> ZoneInfo:
    return ZoneInfo(subject.calendar.zone if subject.calendar_id else "UTC")


def _inputs(subject: Subject, domain: str) -> tuple[list[str], list[QuerySet]] | None:
    """What the feed reads, past the subject's own row: plain texts and querysets (the test clock's frozen
    time is not among them: the stamp takes the clock's today, not its instant)."""
    inputs = entries.provider_inputs(subject, domain)
    if inputs is None:
        return None
    texts: list[str] = []
    queries: list[QuerySet] = []
    if subject.calendar_id:
        queries.append(ClosedDay.objects.filter(calendar_id=subject.calendar_id).order_by().values_list("date", "why"))
    for part in inputs:
        if isinstance(part, QuerySet):
            queries.append(part)
        else:
            texts.append(str(part))
    return texts, queries


def feed_stamp(subject: Subject, *, domain: str | None = None) -> Stamp | None:
    """The stamp of the subject's feed on its domain, or None when a provider does not say what it reads."""
    domain = domain or subject.domain or LIVE
    if connection.vendor == "postgresql":
        found = _postgresql(subject, domain)
        if found is None:
            return None
        texts, digests, frozen = found
    else:
        parts = _inputs(subject, domain)
        if parts is None:
            return None
        texts, queries = parts
        digests = [_digest_rows(q) for q in queries]
        row = None if domain == LIVE else TestClock.objects.filter(pk=domain).values_list("frozen_time").first()
        frozen = row[0] if row else None
    return _stamp(_row_parts(subject), _zone(subject), domain, texts, digests, frozen)


def _stamp(rows: list[str], zone: ZoneInfo, domain: str, texts: list[str], digests: list[str],
           frozen: datetime | None) -> Stamp:
    if domain == LIVE or frozen is None:
        now = domain_now(domain=domain)  # the wall's; or no such clock: as the feed would fail, so does this
    else:
        now = frozen
    today = now.astimezone(zone).date()
    h = hashlib.sha256()
    for text in (code_fingerprint(), *rows, *texts, f"domain {domain}", f"today {today.isoformat()}", *digests):
        h.update(text.encode() + b"\n")
    return Stamp(digest=h.hexdigest(), today=today)


def _digest_rows(queryset: QuerySet) -> str:
    """The rows' digest, read here: each row's repr, sorted (a set of rows, whatever order they come in)."""
    rows = sorted(repr(tuple(row) if isinstance(row, tuple | list) else row) for row in queryset)
    return hashlib.sha256("\n".join(rows).encode()).hexdigest()


# -- PostgreSQL: one statement, compiled once per shape -------------------------------------------------------
# An input's rows as one value: how many, and the sum of each row's 64-bit hash (a multiset's digest, so the
# rows need no sort: sorting them cost as much as the rest of the statement). Two different sets of rows give
# the same value only if their hashes' sums collide (about 2^-64 for a change), and the count must agree too.
# A row is hashed by its columns' own hash functions (hash_record_extended) when every column's type hashes
# its whole value, i.e. two values hash alike only if their text is alike: spelling each row out as text first
# (timestamps formatted, the record quoted) was a third of the probe's backend CPU. A type whose equality
# forgets what its text shows (a numeric's scale: 1.0 = 1.00; jsonb's numbers; an interval's 1 day = 24
# hours; -0.0 = 0.0; a collation that is not byte-wise) is hashed by the row's text, as before.
_ROWS_DIGEST = "count(*) || ' ' || coalesce(sum({}), 0)"
_BY_TEXT, _BY_COLUMNS = "hashtextextended(r::text, 0)", "hash_record_extended(r, 0)"
_WHOLE_HASH_TYPES = frozenset({"varchar", "character varying", "text", "smallint", "integer", "bigint", "boolean", "date",
                               "timestamp with time zone", "uuid"})


@dataclass(frozen=True)
class _Statement:
    sql: str
    params: tuple  # each a constant, or a _Slot naming the subject's value that goes there
    texts: tuple[str, ...]
    digests: int  # how many of the row's columns are digests (the frozen time follows on a test clock)


@dataclass(frozen=True)
class _Slot:
    name: str  # subject | domain | calendar


def _statement(subject: Subject, domain: str) -> tuple[str, list, list[str], int] | None:
    parts = _inputs(subject, domain)
    if parts is None:
        return None
    texts, queries = parts
    columns, params = [], []
    for q in queries:
        sql, p = _rows_digest(q)
        columns.append(sql)
        params.extend(p)
    if domain != LIVE:
        sql, p = TestClock.objects.filter(pk=domain).order_by().values_list("frozen_time").query.sql_with_params()
        columns.append(f"({sql})")
        params.extend(p)
    return "SELECT " + ", ".join(columns), params, texts, len(queries)


def _rows_digest(queryset: QuerySet) -> tuple[str, tuple]:
    """The queryset's rows' digest as a scalar subquery, and its parameters."""
    sql, params = queryset.query.sql_with_params()
    row_hash = _BY_COLUMNS if _hashes_whole(queryset) else _BY_TEXT
    return f"(SELECT {_ROWS_DIGEST.format(row_hash)} FROM ({sql}) r)", params


def _hashes_whole(queryset: QuerySet) -> bool:
    """Every column the queryset selects is of a type whose hash covers its whole text (_WHOLE_HASH_TYPES,
    in a byte-wise collation)."""
    compiler = queryset.query.get_compiler(connection=connection)
    compiler.setup_query()
    for expression, _, _ in compiler.select:
        field = expression.output_field
        field = getattr(field, "target_field", None) or field  # a foreign key's column is its target's
        db_type = (field.db_type(connection) or "").split("(")[0]
        if db_type not in _WHOLE_HASH_TYPES or getattr(field, "db_collation", None) not in (None, "C"):
            return False
    return True


def _stand_in(subject: Subject, domain: str, n: int) -> tuple[Subject, str, dict[str, str]]:
    """A subject that is not in the database, with values of its own in every column a provider could read."""
    slots = {"subject": f"sbj_ktstamp{n}", "calendar": f"cal_ktstamp{n}"}
    if domain != LIVE:
        slots["domain"] = f"tc_ktstamp{n}"
    stand_in = Subject(id=slots["subject"], brand_id=subject.brand_id, domain=slots.get("domain", LIVE),
                       kind=f"kind{n}", key_name=f"key{n}", key=f"key{n}", name=f"stand-in {n}",
                       calendar_id=slots["calendar"] if subject.calendar_id else None, keeps={"n": n},
                       input={"n": n}, created_at=subject.created_at)
    return stand_in, slots.get("domain", LIVE), slots


def _compile(subject: Subject, domain: str) -> _Statement | None:
    """The statement for every subject of this shape (on the live clock or a test clock, with a calendar or
    without), compiled for two stand-ins: it is reused only when the two differ in nothing but the slots,
    i.e. the providers read the subject by its id, its calendar's id and its domain alone."""
    (a, da, sa), (b, db, sb) = _stand_in(subject, domain, 1), _stand_in(subject, domain, 2)
    one, two = _statement(a, da), _statement(b, db)
    if one is None or two is None:
        return None
    if one[0] != two[0] or one[2] != two[2] or len(one[1]) != len(two[1]):
        return None
    by_value = {(sa[k], sb[k]): _Slot(k) for k in sa}
    params = []
    for x, y in zip(one[1], two[1], strict=True):
        if x == y:
            params.append(x)
        elif (x, y) in by_value:
            params.append(by_value[(x, y)])
        else:
            return None  # a provider reads more of the subject than its ids: compile per request
    return _Statement(sql=one[0], params=tuple(params), texts=tuple(one[2]), digests=one[3])


_NOT_COMPILED = object()
_statements: dict[tuple, _Statement | None | object] = {}


def _postgresql(subject: Subject, domain: str) -> tuple[list[str], list[str], datetime | None] | None:
    """Every input's digest and the test clock's frozen time in one statement (one snapshot): each input's
    rows as text, counted and hashed (_ROWS_DIGEST) next to the rows, so only a few short strings travel.
    Building the querysets costs more than running them, so the statement is compiled once per shape."""
    shape = (entries.providers(), domain == LIVE, bool(subject.calendar_id))
    statement = _statements.get(shape, _NOT_COMPILED)
    if statement is _NOT_COMPILED:
        statement = _statements[shape] = _compile(subject, domain)
    if statement is not None:
        _learn_shape(subject.pk, shape)
        values = {"subject": subject.pk, "domain": domain, "calendar": subject.calendar_id}
        sql = statement.sql
        params = [values[p.name] if isinstance(p, _Slot) else p for p in statement.params]
        texts, n = list(statement.texts), statement.digests
    else:
        found = _statement(subject, domain)
        if found is None:
            return None
        sql, params, texts, n = found
    row = _fetch_one(sql, params, prepared=statement is not None)
    return texts, list(row[:n]), (row[n] if domain != LIVE else None)


class _PreparedCursor(psycopg.RawCursor):
    """Server-side binding, and every statement prepared (psycopg keeps them per connection). A raw cursor
    takes PostgreSQL's own $1, $2… placeholders and sends the text as it is: psycopg's cursor would parse
    the stamp's statement for its %s on every execute (it caches that only for statements under 4 kB)."""

    def execute(self, query, params=None, **kwargs):
        return super().execute(query, params, prepare=True, **kwargs)


# Never reached: with it set, psycopg prepares what a cursor asks it to (Django leaves prepare_threshold
# None, which turns preparing off); Django's own cursors bind on the client and never prepare.
_ONLY_WHEN_ASKED = 2**31 - 1
_numbered_sql: dict[str, str] = {}


def _numbered(sql: str) -> str:
    """A statement's %s placeholders as $1, $2… (and %% as %), for the raw cursor; kept per statement."""
    found = _numbered_sql.get(sql)
    if found is None:
        count = iter(range(1, 1 << 31))
        found = _numbered_sql[sql] = _PLACEHOLDER.sub(lambda m: "%" if m[0] == "%%" else f"${next(count)}", sql)
    return found


def _fetch_one(sql: str, params: list, *, prepared: bool) -> tuple | None:
    """The statement's one row. A compiled statement (``prepared``) is prepared once per connection:
    planning it costs about as much as running it. KEEPING_TIME["FEED_PREPARE"] off (a pooler in transaction
    mode, which cannot keep a session's prepared statements) runs it unprepared, as a statement compiled per
    request is. Wrapped as Django wraps its own cursors, so the statement is logged and counted like any
    other."""
    if not prepared or not (getattr(settings, "KEEPING_TIME", {}) or {}).get("FEED_PREPARE", True):
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            return cursor.fetchone()
    connection.ensure_connection()
    raw = connection.connection
    if raw.prepare_threshold is None:
        raw.prepare_threshold = _ONLY_WHEN_ASKED
    wrapper = CursorDebugWrapper if connection.queries_logged else CursorWrapper
    with wrapper(_PreparedCursor(raw), connection) as cursor:
        cursor.execute(_numbered(sql), params)
        return cursor.fetchone()


# -- the probe: a conditional request in one statement, before any subject is loaded -----------------------
# A calendar app polls every few minutes and almost always holds the current ETag: its answer should cost one
# round trip. The probe is the token's lookup and the stamp's statement as one: the stamp's slots read the
# subject's own columns (correlated), so nothing is loaded first. A statement is per shape (a live clock or
# a test clock, a calendar or none), which is not known before the row is read: the probe guesses the shape
# this process last saw for the subject (else the last it saw at all) and guards it in the WHERE clause; a
# wrong guess finds no row and the request takes the ordinary path, which learns the shape.
_SLOT_SQL = {"subject": 's."id"', "domain": 's."domain"', "calendar": 's."calendar_id"'}
_PLACEHOLDER = re.compile(r"(%%|%s)")
_SHAPES_KEPT = 100_000  # subjects whose shape a process remembers; past it, it starts again
_shapes: dict[str, tuple] = {}
_last_shape: list[tuple] = []
_probes: dict[tuple, tuple[str, tuple] | None] = {}


@dataclass(frozen=True)
class Probe:
    stamp: Stamp
    seen_at: datetime | None  # when the feed first served this stamp; None when the stored stamp is another


def _learn_shape(subject_id: str, shape: tuple) -> None:
    if len(_shapes) >= _SHAPES_KEPT:
        _shapes.clear()
    _shapes[subject_id] = shape
    _last_shape[:] = [shape]


def _probe_statement(shape: tuple) -> tuple[str, tuple] | None:
    """The probe's SQL and constant parameters for a shape whose stamp statement is compiled."""
    statement = _statements.get(shape)
    if not isinstance(statement, _Statement):
        return None
    pieces, params, slots = [], [], iter(statement.params)
    for piece in _PLACEHOLDER.split(statement.sql):
        if piece == "%s":
            p = next(slots)
            if isinstance(p, _Slot):
                piece = _SLOT_SQL[p.name]
            else:
                params.append(p)
        pieces.append(piece)
    _, live, has_calendar = shape
    guard = ["""s."domain" = 'live'""" if live else """s."domain" NOT IN ('live', '')""",
             f's."calendar_id" IS {"NOT " if has_calendar else ""}NULL']
    sql = ('SELECT s."id", s."domain", s."kind", s."key_name", s."key", s."name", s."created_at", s."calendar_id", '
           'c."zone", c."weekends"::text, c."closes", c."holiday_country", c."holiday_subdiv", f."stamp", '
           'f."seen_at", ' + "".join(pieces).removeprefix("SELECT ") +
           " FROM calendars_subject s LEFT JOIN calendars_calendar c ON c.id = s.calendar_id"
           " LEFT JOIN calendars_feedstamp f ON f.subject_id = s.id"
           ' WHERE s."id" = %s AND s."feed_digest" = %s AND ' + " AND ".join(guard))
    return sql, tuple(params)


def probe(*, subject_id: str, digest: str) -> Probe | None:
    """The feed's stamp and since when it was served, for the subject this token digest opens, in one
    statement on PostgreSQL; None when it cannot say (another database, a shape not yet seen, a provider
    compiled per request, no such subject or token): then the ordinary path answers."""
    if connection.vendor != "postgresql":
        return None
    shape = _shapes.get(subject_id) or (_last_shape[0] if _last_shape else None)
    if shape is None or shape[0] != entries.providers():
        return None
    found = _probes.get(shape, _NOT_COMPILED)
    if found is _NOT_COMPILED:
        found = _probes[shape] = _probe_statement(shape)
    if found is None:
        return None
    sql, params = found
    statement = _statements[shape]
    row = _fetch_one(sql, [*params, subject_id, digest], prepared=True)
    if row is None:
        return None
    subject, calendar, stored, seen_at = row[:8], row[8:13], row[13], row[14]
    zone, weekends, closes, country, subdiv = calendar
    rows = _row_texts(subject, (zone, json.loads(weekends), closes, country, subdiv) if subject[7] else None)
    domain = subject[1] or LIVE
    n = statement.digests
    digests = list(row[15:15 + n])
    frozen = row[15 + n] if not shape[1] else None
    stamp = _stamp(rows, ZoneInfo(zone if subject[7] else "UTC"), domain, list(statement.texts), digests, frozen)
    return Probe(stamp=stamp, seen_at=seen_at if stored == stamp.digest else None)


# -- Last-Modified: when the feed first served its stamp ------------------------------------------------------
def stamp_seen(*, subject: Subject, stamp: Stamp, now: datetime) -> datetime:
    """Since when (wall time) the feed has been at ``stamp``: the stored time if it is the stamp stored,
    else ``now`` (at least SEEN_STEP after the stored time, so a newer stamp's Last-Modified is a later
    second than any a client holds), stored. Only a changed stamp writes."""
    try:
        row = subject.feed_stamp  # read with the subject (subject_by_feed_token)
    except FeedStamp.DoesNotExist:
        row = None
    if row is not None and row.stamp == stamp.digest:
        return row.seen_at
    for _ in range(2):  # a second try only when another request made the row between our read and insert
        try:
            with transaction.atomic():
                row = FeedStamp.objects.select_for_update().filter(subject=subject).first()
                if row is None:
                    row = FeedStamp.objects.create(subject=subject, stamp=stamp.digest, seen_at=now)
                elif row.stamp != stamp.digest:
                    row.stamp, row.seen_at = stamp.digest, max(now, row.seen_at + SEEN_STEP)
                    row.save(update_fields=["stamp", "seen_at"])
            break
        except IntegrityError:
            continue
    subject.feed_stamp = row
    return row.seen_at
