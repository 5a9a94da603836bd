"""The Keeping Time API, one method per operation: generated from /openapi.json (Keeping Time API 1.0.0).

Do not edit: change the API, then run `python -m keeping_time_client.generate` (scripts/gen_client).
"""

# ruff: noqa: E501
from __future__ import annotations

import builtins
from datetime import date, datetime
from decimal import Decimal
from typing import Any, Literal, NotRequired, TypedDict, cast
from urllib.parse import quote

from ._base import OMIT, KeepingTimeBase, Omit, Resource

__all__ = ["KeepingTime", "OPERATIONS"]


def _seg(value: str) -> str:
    # An id goes into the path as one segment, whatever it holds ('/', '#', '?').
    return quote(str(value), safe="")


_ = (builtins, date, datetime, Decimal, NotRequired)  # used by some generated signatures only


# -- the API's objects --------------------------------------------------------------------------------
BalanceObject = Literal['balance']
CalendarObject = Literal['calendar']
ClockItemStatus = Literal['open', 'satisfied', 'due', 'passed', 'voided']
ClockLivesOn = Literal['job', 'subject']
ClockObject = Literal['clock']
CommitOutcome = Literal['committed', 'refused']
ContactObject = Literal['contact']
CurrencyEnum = Literal['usd']
DeadLetterObject = Literal['dead_letter']
DeletedContactObject = Literal['contact']
DstRepeated = Literal['first', 'second']
DstSkipped = Literal['next_minute', 'skip']
EarningsObject = Literal['earnings']
ErrorType = Literal['invalid_request_error', 'api_error']
EventObject = Literal['event']
HandlerEnum = Literal['calendars.due', 'calendars.rung', 'noop', 'repeat', 'services.act', 'services.ask', 'services.cycle', 'services.deadline', 'services.money', 'services.schedule', 'services.signal', 'services.step_deadline', 'services.subject_event', 'services.task', 'services.update', 'services.window', 'timers.schedule.fire', 'timers.schedule.start']
HolidaysEnum = str
JobObject = Literal['job']
JobStatus = Literal['open', 'delivered', 'lapsed', 'canceled', 'voided']
KindEnum = Literal['account', 'taxpayer']
ListObject = Literal['list']
MemberObject = Literal['member']
MemberRole = Literal['owner', 'member']
MemberStatus = Literal['invited', 'active']
PenaltyObject = Literal['penalty']
PoolObject = Literal['pool']
PrimaryEnum = Literal[True]
RepinAction = Literal['arm', 'supersede', 'keep']
RepinObject = Literal['repin']
ScheduleBackfillObject = Literal['schedule_backfill']
ScheduleClosedDays = Literal['skip', 'next_open', 'previous_open']
ScheduleObject = Literal['schedule']
ScheduleOverlap = Literal['skip', 'buffer_one', 'buffer_all', 'cancel_other', 'allow']
ScheduleRunObject = Literal['schedule_run']
ScheduleRunState = Literal['buffered', 'open', 'closed']
ScheduleTickObject = Literal['schedule_tick']
ScheduleTickState = Literal['open', 'succeeded', 'dead_lettered']
StateEnum = Literal['queued', 'waiting', 'committed', 'refused']
StatementObject = Literal['statement']
SubjectFeedStatus = Literal['active', 'none']
SubjectObject = Literal['subject']
SubscriptionObject = Literal['subscription']
SubscriptionStatus = Literal['active', 'ended', 'voided']
TestClockObject = Literal['test_clock']
TestClockStatus = Literal['ready', 'advancing', 'internal_failure', 'deleting', 'deleted']
TimelineEntryKind = Literal['fired', 'moved', 'reminded', 'acted', 'sent', 'armed']
TimelineEntryObject = Literal['timeline_entry']
TimelineSendStatus = Literal['waiting', 'sending', 'sent', 'answered', 'in_doubt', 'failed', 'dead_lettered', 'voided']
TimerKind = Literal['cycle', 'schedule', 'ask', 'task', 'deadline', 'rung', 'due', 'window', 'money']
TimerObject = Literal['timer']
TimerStatus = Literal['armed', 'fired', 'superseded', 'held']
VersionObject = Literal['version']
WebhookEndpointObject = Literal['webhook_endpoint']
WebhookEndpointStatus = Literal['enabled', 'disabled']
ZoneEnum = str


class Advancing(TypedDict):
    target_frozen_time: str
    redeliver: bool


class Allowance(TypedDict):
    used: int
    of: int


class Calendar(TypedDict):
    id: str
    object: CalendarObject
    name: str
    zone: str
    weekends: list[int]
    closes: str
    dst_skipped: DstSkipped
    dst_repeated: DstRepeated
    holidays: str | None
    closed_days: list[ClosedDayOut]
    default: bool
    metadata: dict[str, str]
    created: str | None
    observed: NotRequired[Observed]


class CalendarCreate(TypedDict):
    name: str
    zone: ZoneEnum
    weekends: NotRequired[list[int]]
    closes: NotRequired[str]
    dst_skipped: NotRequired[DstSkipped]
    dst_repeated: NotRequired[DstRepeated]
    holidays: NotRequired[HolidaysEnum | None]
    closed_days: NotRequired[list[ClosedDay]]
    default: NotRequired[bool]
    metadata: NotRequired[dict[str, str]]


class CalendarEntry(TypedDict):
    date: str
    what: str
    kind: str
    answers_for: str
    status: str
    at: str
    local: str
    uid: str
    sequence: int
    on: str | None
    rungs: list[CalendarRung]


class CalendarList(TypedDict):
    object: ListObject
    data: list[Calendar]
    has_more: bool
    url: str
    note: NotRequired[str]


class CalendarRung(TypedDict):
    date: str
    what: str
    kind: str
    answers_for: str
    status: str
    at: str
    local: str
    uid: str
    sequence: int
    on: str | None
    step: str
    current: bool


class CalendarUpdate(TypedDict):
    name: NotRequired[str]
    zone: NotRequired[ZoneEnum]
    weekends: NotRequired[list[int]]
    closes: NotRequired[str]
    dst_skipped: NotRequired[DstSkipped]
    dst_repeated: NotRequired[DstRepeated]
    holidays: NotRequired[HolidaysEnum | None]
    closed_days: NotRequired[list[ClosedDay]]
    default: NotRequired[bool]
    metadata: NotRequired[dict[str, str]]


class Clock(TypedDict):
    id: str
    object: ClockObject
    name: str
    title: str
    spec: str
    subject: str
    period: str
    hard: bool
    lives_on: ClockLivesOn
    owner_ref: str
    answers_for: str | None
    version: str | None
    opened_at: str
    zone: str
    test_clock: str | None
    items: list[ClockItem]
    next_timer: TimerSummary | None


class ClockChoose(TypedDict):
    option: str
    by: NotRequired[str]


class ClockInputs(TypedDict):
    inputs: dict[str, Any]


class ClockItem(TypedDict):
    item: str | None
    civil: str
    due_date: str
    due_at: str
    local: str
    rolled_why: str | None
    moves: int
    status: ClockItemStatus
    satisfied_at: str | None
    next_timer: TimerSummary | None


class ClockPenalty(TypedDict):
    notice: str
    amount: int
    currency: NotRequired[CurrencyEnum]


class ClockSatisfy(TypedDict):
    by: NotRequired[str]


class ClosedDay(TypedDict):
    date: str
    why: str


class ClosedDayOut(TypedDict):
    date: str
    why: str


class Commit(TypedDict):
    id: str
    outcome: CommitOutcome
    code: str | None
    at: str
    events: list[str]


class Contact(TypedDict):
    id: str
    object: ContactObject
    subject: str
    name: str
    email: str
    phone: str
    zone: str | None
    role: str
    primary: bool
    created: str


class ContactCreate(TypedDict):
    name: str
    email: str
    phone: NotRequired[str]
    zone: NotRequired[ZoneEnum]
    role: NotRequired[str]
    primary: NotRequired[bool]


class ContactFields(TypedDict):
    name: NotRequired[str]
    email: NotRequired[str]
    phone: NotRequired[str]
    zone: NotRequired[ZoneEnum]
    role: NotRequired[str]
    primary: NotRequired[PrimaryEnum]


class ContactList(TypedDict):
    object: ListObject
    data: list[Contact]
    has_more: bool
    url: str
    note: NotRequired[str]


class DeadLetter(TypedDict):
    id: str
    object: DeadLetterObject
    tick: str
    at: str
    status: int | None
    error: str
    payload: dict[str, Any]


class DeletedContact(TypedDict):
    id: str
    object: DeletedContactObject
    deleted: bool


class DeletedMember(TypedDict):
    id: str
    object: MemberObject
    deleted: bool
    handed_over: Handover


class DeletedTestClock(TypedDict):
    id: str
    object: TestClockObject
    deleted: bool


class DeletedWebhookEndpoint(TypedDict):
    id: str
    object: WebhookEndpointObject
    deleted: bool


class EarnedAct(TypedDict):
    job: str
    service: str
    subject: str
    step: str
    amount: int
    status: str
    at: str


class Earnings(TypedDict):
    object: EarningsObject
    member: str
    name: str
    since: str | None
    until: str | None
    currency: str
    earned: int
    paid: int
    acts: list[EarnedAct]


class Error(TypedDict):
    error: ErrorDetail


class ErrorDetail(TypedDict):
    type: ErrorType
    code: str
    message: str
    param: NotRequired[str]


class Event(TypedDict):
    id: str
    object: EventObject
    type: str
    subject: str
    owed_at: str | None
    fired_at: str | None
    late_by: str | None
    key: str | None
    data: dict[str, Any]
    test_clock: str | None


class EventList(TypedDict):
    object: ListObject
    data: list[Event]
    has_more: bool
    url: str
    note: NotRequired[str]


class Grant(TypedDict):
    scope: str


class Handover(TypedDict):
    successor: str | None
    clocks: list[str]
    tasks: list[str]
    reopened: list[str]
    windows: list[str]


class Invite(TypedDict):
    email: str
    name: NotRequired[str]
    role: NotRequired[MemberRole]


class Job(TypedDict):
    id: str
    object: JobObject
    service: str
    period: str
    subject: str
    subscription: str | None
    schedule: str | None
    status: JobStatus
    late: bool
    late_at: str | None
    waiting_on: str | None
    step: str | None
    opened_at: str
    closed_at: str | None
    price: Price
    version: str | None
    test_clock: str | None
    metadata: dict[str, str]
    clocks: list[str]
    next_timer: TimerSummary | None


class JobActivity(TypedDict):
    what: NotRequired[str]


class JobCancel(TypedDict):
    reason: NotRequired[str]


class JobCreate(TypedDict):
    subject: str
    service: str
    input: NotRequired[dict[str, Any]]
    period: NotRequired[str]
    metadata: NotRequired[dict[str, str]]


class JobDeliver(TypedDict):
    keeps: NotRequired[dict[str, Any]]


class JobList(TypedDict):
    object: ListObject
    data: list[Job]
    has_more: bool
    url: str
    note: NotRequired[str]


class JobRepin(TypedDict):
    to: str
    dry_run: NotRequired[bool]


class JobRepinResult(TypedDict):
    object: RepinObject
    job: str
    to: str
    label: str
    dry_run: bool
    changes: list[RepinChange]


class JobWait(TypedDict):
    on: str


class LedgerBalance(TypedDict):
    object: BalanceObject
    currency: str
    charged: int
    credited: int
    refunded: int
    pay: int
    net: int
    held: int
    owed: int
    lines: int
    balanced: bool
    unbalanced_jobs: list[str]


class Member(TypedDict):
    id: str
    object: MemberObject
    name: str
    username: str
    email: str | None
    role: MemberRole
    status: MemberStatus
    pools: list[str]


class MemberList(TypedDict):
    object: ListObject
    data: list[Member]
    has_more: bool
    url: str
    note: NotRequired[str]


class MemberRef(TypedDict):
    id: str
    name: str
    username: str


class MemberUpdate(TypedDict):
    name: NotRequired[str]
    role: NotRequired[MemberRole]


class MintedJobList(TypedDict):
    object: ListObject
    data: list[Job]
    has_more: bool
    url: str
    note: NotRequired[str]


class Observed(TypedDict):
    years: list[int]
    days: list[ClosedDayOut]


class Penalty(TypedDict):
    object: PenaltyObject
    clock: str
    period: str
    notice: str
    amount: int
    currency: str
    amount_cents: int
    guarantee_cap_cents: int
    credited_cents: int
    money_line: str | None


class Policy(TypedDict):
    service: str
    name: str
    value: int
    test_clock: NotRequired[str]


class Pool(TypedDict):
    object: PoolObject
    name: str
    hold: str
    services: list[PoolService]
    members: list[MemberRef]


class PoolList(TypedDict):
    object: ListObject
    data: list[Pool]
    has_more: bool
    url: str
    note: NotRequired[str]


class PoolMember(TypedDict):
    member: str


class PoolService(TypedDict):
    service: str
    hold: str


class PortalSession(TypedDict):
    subject: str
    contact: NotRequired[str]


class Postpone(TypedDict):
    to: str
    notice: str


class Price(TypedDict):
    cents: int
    currency: str
    display: str
    every: str | None


class Proposal(TypedDict):
    id: str
    object: str
    clock: str
    item: str
    step: str
    waits_on: str
    state: StateEnum
    proposed_at: str
    committed_at: str | None
    judged_at: str | None
    on_time: bool | None
    outcome: str


class ProposalCreate(TypedDict):
    step: str
    waits_on: NotRequired[str]


class Remove(TypedDict):
    successor: NotRequired[str]


class RepinChange(TypedDict):
    action: RepinAction
    key: str
    owed_at: str | None


class Schedule(TypedDict):
    id: str
    object: ScheduleObject
    name: str
    spec: dict[str, Any]
    zone: str
    target: dict[str, Any]
    overlap: ScheduleOverlap
    buffer_limit: int
    catchup_window: int
    paused: bool
    pause_note: str | None
    paused_at: str | None
    revision: int
    test_clock: str | None
    start_at: str | None
    end_at: str | None
    remaining_actions: int | None
    skip: list[str]
    jitter: int
    calendar: str | None
    closed_days: ScheduleClosedDays | None
    deleted: bool
    deleted_at: str | None
    ended: str | None
    next_fire_times: list[str]
    last_tick: ScheduleTick | None
    recent_ticks: list[ScheduleTick]
    dead_letters: list[DeadLetter]
    buffered: list[str]
    counters: ScheduleCounters
    created: str
    secret: NotRequired[str]
    shown_once: NotRequired[list[str]]


class ScheduleBackfill(TypedDict):
    start: str | int
    end: str | int
    overlap: NotRequired[ScheduleOverlap]


class ScheduleBackfillResult(TypedDict):
    object: ScheduleBackfillObject
    schedule: str
    start: str
    end: str
    overlap: ScheduleOverlap
    fires: list[str]
    already_run: list[str]
    skipped: list[str]
    has_more: bool
    next_start: str | None


class ScheduleCounters(TypedDict):
    fired: int
    skipped: int
    dropped: int
    missed: int
    dead_lettered: int
    open_runs: int


class ScheduleCreate(TypedDict):
    start_at: NotRequired[str | int | None]
    end_at: NotRequired[str | int | None]
    remaining_actions: NotRequired[int | None]
    calendar: NotRequired[str | None]
    closed_days: NotRequired[ScheduleClosedDays]
    jitter: NotRequired[str]
    skip: NotRequired[list[str]]
    test_clock: NotRequired[str | None]
    name: NotRequired[str]
    spec: dict[str, Any]
    zone: NotRequired[ZoneEnum]
    target: dict[str, Any]
    overlap: NotRequired[ScheduleOverlap]
    buffer_limit: NotRequired[int]
    catchup_window: NotRequired[int | str]
    paused: NotRequired[bool]
    pause_note: NotRequired[str]


class ScheduleList(TypedDict):
    object: ListObject
    data: list[Schedule]
    has_more: bool
    url: str
    note: NotRequired[str]


class SchedulePause(TypedDict):
    pause_note: NotRequired[str]


class ScheduleRun(TypedDict):
    id: str
    object: ScheduleRunObject
    state: ScheduleRunState
    scheduled_at: str
    started_at: str | None
    closed_at: str | None
    ref: str | None
    outcome: str | None


class ScheduleTick(TypedDict):
    id: str
    object: ScheduleTickObject
    state: ScheduleTickState
    scheduled_at: str
    fired_at: str
    settled_at: str | None
    run: ScheduleRun


class ScheduleUpdate(TypedDict):
    start_at: NotRequired[str | int | None]
    end_at: NotRequired[str | int | None]
    remaining_actions: NotRequired[int | None]
    calendar: NotRequired[str | None]
    closed_days: NotRequired[ScheduleClosedDays]
    jitter: NotRequired[str]
    skip: NotRequired[list[str]]
    revision: NotRequired[int]
    name: NotRequired[str]
    spec: NotRequired[dict[str, Any]]
    zone: NotRequired[ZoneEnum]
    target: NotRequired[dict[str, Any]]
    overlap: NotRequired[ScheduleOverlap]
    buffer_limit: NotRequired[int]
    catchup_window: NotRequired[int | str]
    paused: NotRequired[bool]
    pause_note: NotRequired[str]


class Statement(TypedDict):
    object: StatementObject
    subscription: str | None
    service: str
    cycle: int | None
    starts: str
    ends: str | None
    included: dict[str, int]
    currency: str
    charged: int
    credited: int
    refunded: int
    held: int
    total: int


class StatementList(TypedDict):
    object: ListObject
    data: list[Statement]
    has_more: bool
    url: str
    note: NotRequired[str]


class StatusDetails(TypedDict):
    advancing: NotRequired[Advancing]


class StepAct(TypedDict):
    member: NotRequired[str]
    party: NotRequired[str]


class Subject(TypedDict):
    id: str
    object: SubjectObject
    kind: str
    key_name: str
    key: str
    name: str
    calendar: str | None
    zone: str
    contacts: list[Contact]
    metadata: dict[str, str]
    livemode: bool
    test_clock: str | None
    created: str | None


SubjectCalendar = TypedDict('SubjectCalendar', {
    'object': str,
    'subject': str,
    'kind': str,
    'key_name': str,
    'key': str,
    'name': str,
    'zone': str,
    'today': str,
    'count': int,
    'webcal': str,
    'feed': SubjectFeedStatus,
    'test_clock': str | None,
    'data': list[CalendarEntry],
    'from': str | None,
})


class SubjectCreate(TypedDict):
    kind: KindEnum
    key: str
    name: str
    calendar: NotRequired[str]
    contacts: NotRequired[list[ContactCreate]]
    metadata: NotRequired[dict[str, str]]
    test_clock: NotRequired[str]


class SubjectEvent(TypedDict):
    type: str
    key: str
    data: NotRequired[dict[str, Any]]


class SubjectList(TypedDict):
    object: ListObject
    data: list[Subject]
    has_more: bool
    url: str
    note: NotRequired[str]


class SubjectUpdate(TypedDict):
    name: NotRequired[str]
    calendar: NotRequired[str]
    metadata: NotRequired[dict[str, str]]


class Subscription(TypedDict):
    id: str
    object: SubscriptionObject
    service: str
    subject: str
    status: SubscriptionStatus
    cancel_at_period_end: bool
    paused_at: str | None
    pause_note: str | None
    cycle: int
    cycle_started_at: str
    opened_at: str
    usage: dict[str, Allowance]
    price: Price | None
    input: dict[str, Any]
    version: str | None
    test_clock: str | None
    metadata: dict[str, str]
    next_timer: TimerSummary | None


class SubscriptionCreate(TypedDict):
    subject: str
    plan: str
    input: NotRequired[dict[str, Any]]
    metadata: NotRequired[dict[str, str]]


class SubscriptionList(TypedDict):
    object: ListObject
    data: list[Subscription]
    has_more: bool
    url: str
    note: NotRequired[str]


class SubscriptionPause(TypedDict):
    note: NotRequired[str]


class SubscriptionUpdate(TypedDict):
    input: dict[str, Any]


class TestClock(TypedDict):
    id: str
    object: TestClockObject
    name: str
    seed: str
    frozen_time: str
    status: TestClockStatus
    status_details: StatusDetails
    created: str


class TestClockAdvance(TypedDict):
    to: NotRequired[str | int]
    span: NotRequired[str]
    redeliver: NotRequired[bool]


class TestClockCreate(TypedDict):
    frozen_time: str | int
    name: NotRequired[str | None]
    seed: NotRequired[str | None]


class TestClockList(TypedDict):
    object: ListObject
    data: list[TestClock]
    has_more: bool
    url: str
    note: NotRequired[str]


class TimelineEntry(TypedDict):
    id: str
    object: TimelineEntryObject
    kind: TimelineEntryKind
    type: str
    at: str | None
    when: str
    zone: str
    sentence: str
    status: TimelineSendStatus | None
    attempt: int | None


class TimelineEntryList(TypedDict):
    object: ListObject
    data: list[TimelineEntry]
    has_more: bool
    url: str
    note: NotRequired[str]


class Timer(TypedDict):
    id: str
    object: TimerObject
    key: str
    status: TimerStatus
    place: int
    kind: TimerKind
    on: str
    handler: str
    owed_at: str | None
    armed_at: str
    fired_at: str | None
    late_by: str | None
    attempt: int
    wakes: int
    version: str | None
    commit: Commit | None
    superseded_by: str | None
    by: str | None
    held_since: str | None
    held_by: str | None
    remaining: str | None
    opened_at: str
    armed_by: str | None
    test_clock: str | None
    data: dict[str, Any]


class TimerCreate(TypedDict):
    key: str
    owed_at: str | int
    handler: HandlerEnum
    data: NotRequired[dict[str, Any]]
    test_clock: NotRequired[str | None]


class TimerList(TypedDict):
    object: ListObject
    data: list[Timer]
    has_more: bool
    url: str
    note: NotRequired[str]


class TimerSummary(TypedDict):
    id: str
    key: str
    owed_at: str
    kind: TimerKind
    on: str


class Version(TypedDict):
    id: str
    object: VersionObject
    name: str | None
    label: str
    services: list[str]
    files: list[str]
    live: bool
    armed_timers: int
    subjects: int
    keeps_until: str | None
    summary: str
    created_at: str


class VersionList(TypedDict):
    object: ListObject
    data: list[Version]
    has_more: bool
    url: str
    note: NotRequired[str]


class Wake(TypedDict):
    replayed: bool
    status: TimerStatus
    commit: Commit | None


class WebhookEndpoint(TypedDict):
    id: str
    object: WebhookEndpointObject
    url: str
    enabled_events: list[str]
    status: WebhookEndpointStatus
    description: str | None
    metadata: dict[str, str]
    livemode: bool
    created: str
    secret: NotRequired[str]
    shown_once: NotRequired[list[str]]


class WebhookEndpointCreate(TypedDict):
    url: str
    enabled_events: list[str]
    description: NotRequired[str]
    metadata: NotRequired[dict[str, str]]


class WebhookEndpointList(TypedDict):
    object: ListObject
    data: list[WebhookEndpoint]
    has_more: bool
    url: str
    note: NotRequired[str]


class WebhookEndpointUpdate(TypedDict):
    url: NotRequired[str]
    enabled_events: NotRequired[list[str]]
    description: NotRequired[str]
    metadata: NotRequired[dict[str, str]]
    disabled: NotRequired[bool]


class Window(TypedDict):
    member: str
    hours: int
    test_clock: NotRequired[str]


# -- operations ---------------------------------------------------------------------------------------
class Balance(Resource):
    """balance: /balance…"""

    def retrieve(self, *, test_clock: str | Omit = OMIT) -> LedgerBalance:
        """Retrieve the brand's balance. GET /balance"""
        return cast('LedgerBalance', self._client.request('GET', '/balance', params={'test_clock': test_clock}))


class Calendars(Resource):
    """calendars: /calendars…"""

    def create(
        self,
        *,
        name: str,
        zone: ZoneEnum,
        weekends: builtins.list[int] | Omit = OMIT,
        closes: str | Omit = OMIT,
        dst_skipped: DstSkipped | Omit = OMIT,
        dst_repeated: DstRepeated | Omit = OMIT,
        holidays: HolidaysEnum | None | Omit = OMIT,
        closed_days: builtins.list[ClosedDay] | Omit = OMIT,
        default: bool | Omit = OMIT,
        metadata: dict[str, str] | Omit = OMIT,
        idempotency_key: str | Omit = OMIT,
    ) -> Calendar:
        """Create a calendar. POST /calendars"""
        return cast('Calendar', self._client.request('POST', '/calendars', json={'name': name, 'zone': zone, 'weekends': weekends, 'closes': closes, 'dst_skipped': dst_skipped, 'dst_repeated': dst_repeated, 'holidays': holidays, 'closed_days': closed_days, 'default': default, 'metadata': metadata}, idempotency_key=idempotency_key))

    def list(self, *, limit: int | Omit = OMIT, starting_after: str | Omit = OMIT) -> CalendarList:
        """List calendars. GET /calendars"""
        return cast('CalendarList', self._client.request('GET', '/calendars', params={'limit': limit, 'starting_after': starting_after}))

    def retrieve(self, calendar_id: str) -> Calendar:
        """Retrieve a calendar. GET /calendars/{calendar_id}"""
        return cast('Calendar', self._client.request('GET', f"/calendars/{_seg(calendar_id)}"))

    def update(
        self,
        calendar_id: str,
        *,
        name: str | Omit = OMIT,
        zone: ZoneEnum | Omit = OMIT,
        weekends: builtins.list[int] | Omit = OMIT,
        closes: str | Omit = OMIT,
        dst_skipped: DstSkipped | Omit = OMIT,
        dst_repeated: DstRepeated | Omit = OMIT,
        holidays: HolidaysEnum | None | Omit = OMIT,
        closed_days: builtins.list[ClosedDay] | Omit = OMIT,
        default: bool | Omit = OMIT,
        metadata: dict[str, str] | Omit = OMIT,
        idempotency_key: str | Omit = OMIT,
    ) -> Calendar:
        """Update a calendar. POST /calendars/{calendar_id}"""
        return cast('Calendar', self._client.request('POST', f"/calendars/{_seg(calendar_id)}", json={'name': name, 'zone': zone, 'weekends': weekends, 'closes': closes, 'dst_skipped': dst_skipped, 'dst_repeated': dst_repeated, 'holidays': holidays, 'closed_days': closed_days, 'default': default, 'metadata': metadata}, idempotency_key=idempotency_key))


class Clocks(Resource):
    """clocks: /clocks…"""

    def inputs(
        self,
        clock_id: str,
        *,
        inputs: dict[str, Any],
        idempotency_key: str | Omit = OMIT,
    ) -> dict[str, Any]:
        """A commit changed what a due reads. POST /clocks/{clock_id}/inputs"""
        return cast('dict[str, Any]', self._client.request('POST', f"/clocks/{_seg(clock_id)}/inputs", json={'inputs': inputs}, idempotency_key=idempotency_key))

    def item_timeline(
        self,
        clock_id: str,
        item: str,
        *,
        limit: int | Omit = OMIT,
        starting_after: str | Omit = OMIT,
        zone: str | Omit = OMIT,
    ) -> TimelineEntryList:
        """A date's timeline. GET /clocks/{clock_id}/items/{item}/timeline"""
        return cast('TimelineEntryList', self._client.request('GET', f"/clocks/{_seg(clock_id)}/items/{_seg(item)}/timeline", params={'limit': limit, 'starting_after': starting_after, 'zone': zone}))

    def items_choose(
        self,
        clock_id: str,
        item: str,
        *,
        option: str,
        by: str | Omit = OMIT,
        idempotency_key: str | Omit = OMIT,
    ) -> Clock:
        """Choose on a date that came unsatisfied. POST /clocks/{clock_id}/items/{item}/choose"""
        return cast('Clock', self._client.request('POST', f"/clocks/{_seg(clock_id)}/items/{_seg(item)}/choose", json={'option': option, 'by': by}, idempotency_key=idempotency_key))

    def items_postpone(
        self,
        clock_id: str,
        item: str,
        *,
        to: str | date,
        notice: str,
        idempotency_key: str | Omit = OMIT,
    ) -> dict[str, Any]:
        """Postpone a date (calendar.postpone). POST /clocks/{clock_id}/items/{item}/postpone"""
        return cast('dict[str, Any]', self._client.request('POST', f"/clocks/{_seg(clock_id)}/items/{_seg(item)}/postpone", json={'to': to, 'notice': notice}, idempotency_key=idempotency_key))

    def items_propose(
        self,
        clock_id: str,
        item: str,
        *,
        step: str,
        waits_on: str | Omit = OMIT,
        idempotency_key: str | Omit = OMIT,
    ) -> Proposal:
        """Propose a step on a date. POST /clocks/{clock_id}/items/{item}/proposals"""
        return cast('Proposal', self._client.request('POST', f"/clocks/{_seg(clock_id)}/items/{_seg(item)}/proposals", json={'step': step, 'waits_on': waits_on}, idempotency_key=idempotency_key))

    def items_reopen(
        self,
        clock_id: str,
        item: str,
        *,
        by: str | Omit = OMIT,
        idempotency_key: str | Omit = OMIT,
    ) -> Clock:
        """Take back a date marked done. POST /clocks/{clock_id}/items/{item}/reopen"""
        return cast('Clock', self._client.request('POST', f"/clocks/{_seg(clock_id)}/items/{_seg(item)}/reopen", json={'by': by}, idempotency_key=idempotency_key))

    def items_satisfy(
        self,
        clock_id: str,
        item: str,
        *,
        by: str | Omit = OMIT,
        idempotency_key: str | Omit = OMIT,
    ) -> Clock:
        """Mark a date kept. POST /clocks/{clock_id}/items/{item}/satisfy"""
        return cast('Clock', self._client.request('POST', f"/clocks/{_seg(clock_id)}/items/{_seg(item)}/satisfy", json={'by': by}, idempotency_key=idempotency_key))

    def penalties_create(
        self,
        clock_id: str,
        *,
        notice: str,
        amount: int,
        currency: CurrencyEnum | Omit = OMIT,
        idempotency_key: str | Omit = OMIT,
    ) -> Penalty:
        """Record a penalty notice for the clock's period. POST /clocks/{clock_id}/penalties"""
        return cast('Penalty', self._client.request('POST', f"/clocks/{_seg(clock_id)}/penalties", json={'notice': notice, 'amount': amount, 'currency': currency}, idempotency_key=idempotency_key))

    def retrieve(self, clock_id: str) -> Clock:
        """Retrieve a clock. GET /clocks/{clock_id}"""
        return cast('Clock', self._client.request('GET', f"/clocks/{_seg(clock_id)}"))


class Events(Resource):
    """events: /events…"""

    def list(
        self,
        *,
        limit: int | Omit = OMIT,
        starting_after: str | Omit = OMIT,
        test_clock: str | Omit = OMIT,
        type: str | Omit = OMIT,
    ) -> EventList:
        """List events. GET /events"""
        return cast('EventList', self._client.request('GET', '/events', params={'limit': limit, 'starting_after': starting_after, 'test_clock': test_clock, 'type': type}))

    def retrieve(self, event_id: str) -> Event:
        """Retrieve an event. GET /events/{event_id}"""
        return cast('Event', self._client.request('GET', f"/events/{_seg(event_id)}"))


class Jobs(Resource):
    """jobs: /jobs…"""

    def activity(self, job_id: str, *, what: str | Omit = OMIT, idempotency_key: str | Omit = OMIT) -> Job:
        """Record activity. POST /jobs/{job_id}/activity"""
        return cast('Job', self._client.request('POST', f"/jobs/{_seg(job_id)}/activity", json={'what': what}, idempotency_key=idempotency_key))

    def cancel(self, job_id: str, *, reason: str | Omit = OMIT, idempotency_key: str | Omit = OMIT) -> Job:
        """Cancel a job. POST /jobs/{job_id}/cancel"""
        return cast('Job', self._client.request('POST', f"/jobs/{_seg(job_id)}/cancel", json={'reason': reason}, idempotency_key=idempotency_key))

    def create(
        self,
        *,
        subject: str,
        service: str,
        input: dict[str, Any] | Omit = OMIT,
        period: str | Omit = OMIT,
        metadata: dict[str, str] | Omit = OMIT,
        idempotency_key: str | Omit = OMIT,
    ) -> Job:
        """Order a job. POST /jobs"""
        return cast('Job', self._client.request('POST', '/jobs', json={'subject': subject, 'service': service, 'input': input, 'period': period, 'metadata': metadata}, idempotency_key=idempotency_key))

    def deliver(
        self,
        job_id: str,
        *,
        keeps: dict[str, Any] | Omit = OMIT,
        idempotency_key: str | Omit = OMIT,
    ) -> Job:
        """Deliver a job. POST /jobs/{job_id}/deliver"""
        return cast('Job', self._client.request('POST', f"/jobs/{_seg(job_id)}/deliver", json={'keeps': keeps}, idempotency_key=idempotency_key))

    def grants_create(self, job_id: str, *, scope: str, idempotency_key: str | Omit = OMIT) -> dict[str, Any]:
        """Grant a scope. POST /jobs/{job_id}/grants"""
        return cast('dict[str, Any]', self._client.request('POST', f"/jobs/{_seg(job_id)}/grants", json={'scope': scope}, idempotency_key=idempotency_key))

    def list(
        self,
        *,
        limit: int | Omit = OMIT,
        starting_after: str | Omit = OMIT,
        status: JobStatus | Omit = OMIT,
        subject: str | Omit = OMIT,
        subscription: str | Omit = OMIT,
        test_clock: str | Omit = OMIT,
    ) -> JobList:
        """List jobs. GET /jobs"""
        return cast('JobList', self._client.request('GET', '/jobs', params={'limit': limit, 'starting_after': starting_after, 'status': status, 'subject': subject, 'subscription': subscription, 'test_clock': test_clock}))

    def resume_work(self, job_id: str, *, idempotency_key: str | Omit = OMIT) -> Job:
        """The party answered. POST /jobs/{job_id}/resume"""
        return cast('Job', self._client.request('POST', f"/jobs/{_seg(job_id)}/resume", idempotency_key=idempotency_key))

    def retrieve(self, job_id: str) -> Job:
        """Retrieve a job. GET /jobs/{job_id}"""
        return cast('Job', self._client.request('GET', f"/jobs/{_seg(job_id)}"))

    def steps_act(
        self,
        act: str,
        job_id: str,
        step: str,
        *,
        member: str | Omit = OMIT,
        party: str | Omit = OMIT,
        idempotency_key: str | Omit = OMIT,
    ) -> dict[str, Any]:
        """Act on a job's step. POST /jobs/{job_id}/steps/{step}/{act}"""
        return cast('dict[str, Any]', self._client.request('POST', f"/jobs/{_seg(job_id)}/steps/{_seg(step)}/{_seg(act)}", json={'member': member, 'party': party}, idempotency_key=idempotency_key))

    def timeline(
        self,
        job_id: str,
        *,
        limit: int | Omit = OMIT,
        starting_after: str | Omit = OMIT,
        zone: str | Omit = OMIT,
    ) -> TimelineEntryList:
        """A job's timeline. GET /jobs/{job_id}/timeline"""
        return cast('TimelineEntryList', self._client.request('GET', f"/jobs/{_seg(job_id)}/timeline", params={'limit': limit, 'starting_after': starting_after, 'zone': zone}))

    def wait(self, job_id: str, *, on: str, idempotency_key: str | Omit = OMIT) -> Job:
        """Wait on a party. POST /jobs/{job_id}/wait"""
        return cast('Job', self._client.request('POST', f"/jobs/{_seg(job_id)}/wait", json={'on': on}, idempotency_key=idempotency_key))


class Members(Resource):
    """members: /members…"""

    def delete(self, member_id: str, *, successor: str | Omit = OMIT) -> DeletedMember:
        """Remove a member, handing over to a successor. DELETE /members/{member_id}"""
        return cast('DeletedMember', self._client.request('DELETE', f"/members/{_seg(member_id)}", params={'successor': successor}))

    def earnings_retrieve(
        self,
        member_id: str,
        *,
        since: str | datetime | int | Omit = OMIT,
        test_clock: str | Omit = OMIT,
        until: str | datetime | int | Omit = OMIT,
    ) -> Earnings:
        """What a member earned in a period. GET /members/{member_id}/earnings"""
        return cast('Earnings', self._client.request('GET', f"/members/{_seg(member_id)}/earnings", params={'since': since, 'test_clock': test_clock, 'until': until}))

    def invite(
        self,
        *,
        email: str,
        name: str | Omit = OMIT,
        role: MemberRole | Omit = OMIT,
        idempotency_key: str | Omit = OMIT,
    ) -> Member:
        """Invite a member. POST /members"""
        return cast('Member', self._client.request('POST', '/members', json={'email': email, 'name': name, 'role': role}, idempotency_key=idempotency_key))

    def list(self, *, limit: int | Omit = OMIT, starting_after: str | Omit = OMIT) -> MemberList:
        """List the brand's members. GET /members"""
        return cast('MemberList', self._client.request('GET', '/members', params={'limit': limit, 'starting_after': starting_after}))

    def remove(
        self,
        member_id: str,
        *,
        successor: str | Omit = OMIT,
        idempotency_key: str | Omit = OMIT,
    ) -> DeletedMember:
        """Remove a member, handing over to a successor. POST /members/{member_id}/remove"""
        return cast('DeletedMember', self._client.request('POST', f"/members/{_seg(member_id)}/remove", json={'successor': successor}, idempotency_key=idempotency_key))

    def retrieve(self, member_id: str) -> Member:
        """Retrieve a member. GET /members/{member_id}"""
        return cast('Member', self._client.request('GET', f"/members/{_seg(member_id)}"))

    def update(
        self,
        member_id: str,
        *,
        name: str | Omit = OMIT,
        role: MemberRole | Omit = OMIT,
        idempotency_key: str | Omit = OMIT,
    ) -> Member:
        """Change a member's name or role. POST /members/{member_id}"""
        return cast('Member', self._client.request('POST', f"/members/{_seg(member_id)}", json={'name': name, 'role': role}, idempotency_key=idempotency_key))


class Owner(Resource):
    """owner: /owner…"""

    def jobs_repin(
        self,
        job_id: str,
        *,
        to: str,
        dry_run: bool | Omit = OMIT,
        idempotency_key: str | Omit = OMIT,
    ) -> JobRepinResult:
        """Repin a job. POST /owner/jobs/{job_id}/repin"""
        return cast('JobRepinResult', self._client.request('POST', f"/owner/jobs/{_seg(job_id)}/repin", json={'to': to, 'dry_run': dry_run}, idempotency_key=idempotency_key))


class Policies(Resource):
    """policies: /policies…"""

    def set(
        self,
        *,
        service: str,
        name: str,
        value: int,
        test_clock: str | Omit = OMIT,
        idempotency_key: str | Omit = OMIT,
    ) -> dict[str, Any]:
        """Set a policy value. POST /policies"""
        return cast('dict[str, Any]', self._client.request('POST', '/policies', json={'service': service, 'name': name, 'value': value, 'test_clock': test_clock}, idempotency_key=idempotency_key))


class Pools(Resource):
    """pools: /pools…"""

    def list(self) -> PoolList:
        """List the pools. GET /pools"""
        return cast('PoolList', self._client.request('GET', '/pools'))

    def members_add(self, pool: str, *, member: str, idempotency_key: str | Omit = OMIT) -> Pool:
        """Put a member in a pool. POST /pools/{pool}/members"""
        return cast('Pool', self._client.request('POST', f"/pools/{_seg(pool)}/members", json={'member': member}, idempotency_key=idempotency_key))

    def members_remove(self, member: str, pool: str) -> Pool:
        """Take a member out of a pool. DELETE /pools/{pool}/members/{member}"""
        return cast('Pool', self._client.request('DELETE', f"/pools/{_seg(pool)}/members/{_seg(member)}"))


class PortalSessions(Resource):
    """portal_sessions: /portal_sessions…"""

    def create(
        self,
        *,
        subject: str,
        contact: str | Omit = OMIT,
        idempotency_key: str | Omit = OMIT,
    ) -> dict[str, Any]:
        """Make a customer portal link. POST /portal_sessions"""
        return cast('dict[str, Any]', self._client.request('POST', '/portal_sessions', json={'subject': subject, 'contact': contact}, idempotency_key=idempotency_key))


class Proposals(Resource):
    """proposals: /proposals…"""

    def approve(self, proposal_id: str, *, idempotency_key: str | Omit = OMIT) -> Proposal:
        """Approve a proposal that waits on a person. POST /proposals/{proposal_id}/approve"""
        return cast('Proposal', self._client.request('POST', f"/proposals/{_seg(proposal_id)}/approve", idempotency_key=idempotency_key))

    def retrieve(self, proposal_id: str) -> Proposal:
        """Retrieve a proposal. GET /proposals/{proposal_id}"""
        return cast('Proposal', self._client.request('GET', f"/proposals/{_seg(proposal_id)}"))


class Schedules(Resource):
    """schedules: /schedules…"""

    def backfill(
        self,
        schedule_id: str,
        *,
        start: str | datetime | int,
        end: str | datetime | int,
        overlap: ScheduleOverlap | Omit = OMIT,
        idempotency_key: str | Omit = OMIT,
    ) -> ScheduleBackfillResult:
        """Backfill a schedule. POST /schedules/{schedule_id}/backfill"""
        return cast('ScheduleBackfillResult', self._client.request('POST', f"/schedules/{_seg(schedule_id)}/backfill", json={'start': start, 'end': end, 'overlap': overlap}, idempotency_key=idempotency_key))

    def create(
        self,
        *,
        spec: dict[str, Any],
        target: dict[str, Any],
        start_at: str | datetime | int | None | Omit = OMIT,
        end_at: str | datetime | int | None | Omit = OMIT,
        remaining_actions: int | None | Omit = OMIT,
        calendar: str | None | Omit = OMIT,
        closed_days: ScheduleClosedDays | Omit = OMIT,
        jitter: str | Omit = OMIT,
        skip: builtins.list[str | date] | Omit = OMIT,
        test_clock: str | None | Omit = OMIT,
        name: str | Omit = OMIT,
        zone: ZoneEnum | Omit = OMIT,
        overlap: ScheduleOverlap | Omit = OMIT,
        buffer_limit: int | Omit = OMIT,
        catchup_window: int | str | Omit = OMIT,
        paused: bool | Omit = OMIT,
        pause_note: str | Omit = OMIT,
        idempotency_key: str | Omit = OMIT,
    ) -> Schedule:
        """Create a schedule. POST /schedules"""
        return cast('Schedule', self._client.request('POST', '/schedules', json={'start_at': start_at, 'end_at': end_at, 'remaining_actions': remaining_actions, 'calendar': calendar, 'closed_days': closed_days, 'jitter': jitter, 'skip': skip, 'test_clock': test_clock, 'name': name, 'spec': spec, 'zone': zone, 'target': target, 'overlap': overlap, 'buffer_limit': buffer_limit, 'catchup_window': catchup_window, 'paused': paused, 'pause_note': pause_note}, idempotency_key=idempotency_key))

    def delete(self, schedule_id: str) -> Schedule:
        """Delete a schedule. DELETE /schedules/{schedule_id}"""
        return cast('Schedule', self._client.request('DELETE', f"/schedules/{_seg(schedule_id)}"))

    def list(
        self,
        *,
        limit: int | Omit = OMIT,
        starting_after: str | Omit = OMIT,
        test_clock: str | Omit = OMIT,
    ) -> ScheduleList:
        """List schedules. GET /schedules"""
        return cast('ScheduleList', self._client.request('GET', '/schedules', params={'limit': limit, 'starting_after': starting_after, 'test_clock': test_clock}))

    def pause(
        self,
        schedule_id: str,
        *,
        pause_note: str | Omit = OMIT,
        idempotency_key: str | Omit = OMIT,
    ) -> Schedule:
        """Pause a schedule. POST /schedules/{schedule_id}/pause"""
        return cast('Schedule', self._client.request('POST', f"/schedules/{_seg(schedule_id)}/pause", json={'pause_note': pause_note}, idempotency_key=idempotency_key))

    def resume(self, schedule_id: str, *, idempotency_key: str | Omit = OMIT) -> Schedule:
        """Resume a schedule. POST /schedules/{schedule_id}/resume"""
        return cast('Schedule', self._client.request('POST', f"/schedules/{_seg(schedule_id)}/resume", idempotency_key=idempotency_key))

    def retrieve(self, schedule_id: str) -> Schedule:
        """Retrieve a schedule. GET /schedules/{schedule_id}"""
        return cast('Schedule', self._client.request('GET', f"/schedules/{_seg(schedule_id)}"))

    def trigger(self, schedule_id: str, *, idempotency_key: str | Omit = OMIT) -> Schedule:
        """Fire a schedule now. POST /schedules/{schedule_id}/trigger"""
        return cast('Schedule', self._client.request('POST', f"/schedules/{_seg(schedule_id)}/trigger", idempotency_key=idempotency_key))

    def update(
        self,
        schedule_id: str,
        *,
        start_at: str | datetime | int | None | Omit = OMIT,
        end_at: str | datetime | int | None | Omit = OMIT,
        remaining_actions: int | None | Omit = OMIT,
        calendar: str | None | Omit = OMIT,
        closed_days: ScheduleClosedDays | Omit = OMIT,
        jitter: str | Omit = OMIT,
        skip: builtins.list[str | date] | Omit = OMIT,
        revision: int | Omit = OMIT,
        name: str | Omit = OMIT,
        spec: dict[str, Any] | Omit = OMIT,
        zone: ZoneEnum | Omit = OMIT,
        target: dict[str, Any] | Omit = OMIT,
        overlap: ScheduleOverlap | Omit = OMIT,
        buffer_limit: int | Omit = OMIT,
        catchup_window: int | str | Omit = OMIT,
        paused: bool | Omit = OMIT,
        pause_note: str | Omit = OMIT,
        idempotency_key: str | Omit = OMIT,
    ) -> Schedule:
        """Update a schedule. POST /schedules/{schedule_id}"""
        return cast('Schedule', self._client.request('POST', f"/schedules/{_seg(schedule_id)}", json={'start_at': start_at, 'end_at': end_at, 'remaining_actions': remaining_actions, 'calendar': calendar, 'closed_days': closed_days, 'jitter': jitter, 'skip': skip, 'revision': revision, 'name': name, 'spec': spec, 'zone': zone, 'target': target, 'overlap': overlap, 'buffer_limit': buffer_limit, 'catchup_window': catchup_window, 'paused': paused, 'pause_note': pause_note}, idempotency_key=idempotency_key))


class Subjects(Resource):
    """subjects: /subjects…"""

    def calendar(
        self,
        subject_id: str,
        *,
        from_: str | date | Omit = OMIT,
        test_clock: str | Omit = OMIT,
    ) -> SubjectCalendar:
        """A subject's calendar. GET /subjects/{subject_id}/calendar"""
        return cast('SubjectCalendar', self._client.request('GET', f"/subjects/{_seg(subject_id)}/calendar", params={'from': from_, 'test_clock': test_clock}))

    def contacts_create(
        self,
        subject_id: str,
        *,
        name: str,
        email: str,
        phone: str | Omit = OMIT,
        zone: ZoneEnum | Omit = OMIT,
        role: str | Omit = OMIT,
        primary: bool | Omit = OMIT,
        idempotency_key: str | Omit = OMIT,
    ) -> Contact:
        """Add a contact to a customer. POST /subjects/{subject_id}/contacts"""
        return cast('Contact', self._client.request('POST', f"/subjects/{_seg(subject_id)}/contacts", json={'name': name, 'email': email, 'phone': phone, 'zone': zone, 'role': role, 'primary': primary}, idempotency_key=idempotency_key))

    def contacts_delete(self, contact_id: str, subject_id: str) -> DeletedContact:
        """Remove a contact. DELETE /subjects/{subject_id}/contacts/{contact_id}"""
        return cast('DeletedContact', self._client.request('DELETE', f"/subjects/{_seg(subject_id)}/contacts/{_seg(contact_id)}"))

    def contacts_list(
        self,
        subject_id: str,
        *,
        limit: int | Omit = OMIT,
        starting_after: str | Omit = OMIT,
    ) -> ContactList:
        """List a customer's contacts. GET /subjects/{subject_id}/contacts"""
        return cast('ContactList', self._client.request('GET', f"/subjects/{_seg(subject_id)}/contacts", params={'limit': limit, 'starting_after': starting_after}))

    def contacts_retrieve(self, contact_id: str, subject_id: str) -> Contact:
        """Retrieve a contact. GET /subjects/{subject_id}/contacts/{contact_id}"""
        return cast('Contact', self._client.request('GET', f"/subjects/{_seg(subject_id)}/contacts/{_seg(contact_id)}"))

    def contacts_update(
        self,
        contact_id: str,
        subject_id: str,
        *,
        name: str | Omit = OMIT,
        email: str | Omit = OMIT,
        phone: str | Omit = OMIT,
        zone: ZoneEnum | Omit = OMIT,
        role: str | Omit = OMIT,
        primary: PrimaryEnum | Omit = OMIT,
        idempotency_key: str | Omit = OMIT,
    ) -> Contact:
        """Change a contact. POST /subjects/{subject_id}/contacts/{contact_id}"""
        return cast('Contact', self._client.request('POST', f"/subjects/{_seg(subject_id)}/contacts/{_seg(contact_id)}", json={'name': name, 'email': email, 'phone': phone, 'zone': zone, 'role': role, 'primary': primary}, idempotency_key=idempotency_key))

    def create(
        self,
        *,
        kind: KindEnum,
        key: str,
        name: str,
        calendar: str | Omit = OMIT,
        contacts: builtins.list[ContactCreate] | Omit = OMIT,
        metadata: dict[str, str] | Omit = OMIT,
        test_clock: str | Omit = OMIT,
        idempotency_key: str | Omit = OMIT,
    ) -> Subject:
        """Create a subject. POST /subjects"""
        return cast('Subject', self._client.request('POST', '/subjects', json={'kind': kind, 'key': key, 'name': name, 'calendar': calendar, 'contacts': contacts, 'metadata': metadata, 'test_clock': test_clock}, idempotency_key=idempotency_key))

    def events_create(
        self,
        subject_id: str,
        *,
        type: str,
        key: str,
        data: dict[str, Any] | Omit = OMIT,
        idempotency_key: str | Omit = OMIT,
    ) -> MintedJobList:
        """Record an event on a subject. POST /subjects/{subject_id}/events"""
        return cast('MintedJobList', self._client.request('POST', f"/subjects/{_seg(subject_id)}/events", json={'type': type, 'key': key, 'data': data}, idempotency_key=idempotency_key))

    def list(
        self,
        *,
        key: str | Omit = OMIT,
        kind: str | Omit = OMIT,
        limit: int | Omit = OMIT,
        starting_after: str | Omit = OMIT,
        test_clock: str | Omit = OMIT,
    ) -> SubjectList:
        """List subjects. GET /subjects"""
        return cast('SubjectList', self._client.request('GET', '/subjects', params={'key': key, 'kind': kind, 'limit': limit, 'starting_after': starting_after, 'test_clock': test_clock}))

    def retrieve(self, subject_id: str) -> Subject:
        """Retrieve a subject. GET /subjects/{subject_id}"""
        return cast('Subject', self._client.request('GET', f"/subjects/{_seg(subject_id)}"))

    def statements_list(self, subject_id: str) -> StatementList:
        """List a subject's statements. GET /subjects/{subject_id}/statements"""
        return cast('StatementList', self._client.request('GET', f"/subjects/{_seg(subject_id)}/statements"))

    def timeline(
        self,
        subject_id: str,
        *,
        limit: int | Omit = OMIT,
        starting_after: str | Omit = OMIT,
        test_clock: str | Omit = OMIT,
        zone: str | Omit = OMIT,
    ) -> TimelineEntryList:
        """A customer's timeline. GET /subjects/{subject_id}/timeline"""
        return cast('TimelineEntryList', self._client.request('GET', f"/subjects/{_seg(subject_id)}/timeline", params={'limit': limit, 'starting_after': starting_after, 'test_clock': test_clock, 'zone': zone}))

    def update(
        self,
        subject_id: str,
        *,
        name: str | Omit = OMIT,
        calendar: str | Omit = OMIT,
        metadata: dict[str, str] | Omit = OMIT,
        idempotency_key: str | Omit = OMIT,
    ) -> Subject:
        """Update a subject. POST /subjects/{subject_id}"""
        return cast('Subject', self._client.request('POST', f"/subjects/{_seg(subject_id)}", json={'name': name, 'calendar': calendar, 'metadata': metadata}, idempotency_key=idempotency_key))


class Subscriptions(Resource):
    """subscriptions: /subscriptions…"""

    def cancel(self, subscription_id: str, *, idempotency_key: str | Omit = OMIT) -> Subscription:
        """Cancel a subscription at the cycle's end. POST /subscriptions/{subscription_id}/cancel"""
        return cast('Subscription', self._client.request('POST', f"/subscriptions/{_seg(subscription_id)}/cancel", idempotency_key=idempotency_key))

    def create(
        self,
        *,
        subject: str,
        plan: str,
        input: dict[str, Any] | Omit = OMIT,
        metadata: dict[str, str] | Omit = OMIT,
        idempotency_key: str | Omit = OMIT,
    ) -> Subscription:
        """Subscribe a subject to a plan. POST /subscriptions"""
        return cast('Subscription', self._client.request('POST', '/subscriptions', json={'subject': subject, 'plan': plan, 'input': input, 'metadata': metadata}, idempotency_key=idempotency_key))

    def list(
        self,
        *,
        limit: int | Omit = OMIT,
        starting_after: str | Omit = OMIT,
        subject: str | Omit = OMIT,
        test_clock: str | Omit = OMIT,
    ) -> SubscriptionList:
        """List subscriptions. GET /subscriptions"""
        return cast('SubscriptionList', self._client.request('GET', '/subscriptions', params={'limit': limit, 'starting_after': starting_after, 'subject': subject, 'test_clock': test_clock}))

    def pause(
        self,
        subscription_id: str,
        *,
        note: str | Omit = OMIT,
        idempotency_key: str | Omit = OMIT,
    ) -> Subscription:
        """Pause a subscription's schedules. POST /subscriptions/{subscription_id}/pause"""
        return cast('Subscription', self._client.request('POST', f"/subscriptions/{_seg(subscription_id)}/pause", json={'note': note}, idempotency_key=idempotency_key))

    def resume(self, subscription_id: str, *, idempotency_key: str | Omit = OMIT) -> Subscription:
        """Resume a subscription's schedules. POST /subscriptions/{subscription_id}/resume"""
        return cast('Subscription', self._client.request('POST', f"/subscriptions/{_seg(subscription_id)}/resume", idempotency_key=idempotency_key))

    def retrieve(self, subscription_id: str) -> Subscription:
        """Retrieve a subscription. GET /subscriptions/{subscription_id}"""
        return cast('Subscription', self._client.request('GET', f"/subscriptions/{_seg(subscription_id)}"))

    def update(
        self,
        subscription_id: str,
        *,
        input: dict[str, Any],
        idempotency_key: str | Omit = OMIT,
    ) -> Subscription:
        """Update a subscription's input. POST /subscriptions/{subscription_id}/update"""
        return cast('Subscription', self._client.request('POST', f"/subscriptions/{_seg(subscription_id)}/update", json={'input': input}, idempotency_key=idempotency_key))


class TestClocks(Resource):
    """test_clocks: /test_clocks…"""

    def advance(
        self,
        clock_id: str,
        *,
        to: str | datetime | int | Omit = OMIT,
        span: str | Omit = OMIT,
        redeliver: bool | Omit = OMIT,
        idempotency_key: str | Omit = OMIT,
    ) -> TestClock:
        """Advance a test clock. POST /test_clocks/{clock_id}/advance"""
        return cast('TestClock', self._client.request('POST', f"/test_clocks/{_seg(clock_id)}/advance", json={'to': to, 'span': span, 'redeliver': redeliver}, idempotency_key=idempotency_key))

    def create(
        self,
        *,
        frozen_time: str | datetime | int,
        name: str | None | Omit = OMIT,
        seed: str | None | Omit = OMIT,
        idempotency_key: str | Omit = OMIT,
    ) -> TestClock:
        """Create a test clock. POST /test_clocks"""
        return cast('TestClock', self._client.request('POST', '/test_clocks', json={'frozen_time': frozen_time, 'name': name, 'seed': seed}, idempotency_key=idempotency_key))

    def delete(self, clock_id: str) -> DeletedTestClock:
        """Delete a test clock. DELETE /test_clocks/{clock_id}"""
        return cast('DeletedTestClock', self._client.request('DELETE', f"/test_clocks/{_seg(clock_id)}"))

    def list(self, *, limit: int | Omit = OMIT, starting_after: str | Omit = OMIT) -> TestClockList:
        """List test clocks. GET /test_clocks"""
        return cast('TestClockList', self._client.request('GET', '/test_clocks', params={'limit': limit, 'starting_after': starting_after}))

    def retrieve(self, clock_id: str) -> TestClock:
        """Retrieve a test clock. GET /test_clocks/{clock_id}"""
        return cast('TestClock', self._client.request('GET', f"/test_clocks/{_seg(clock_id)}"))


class Timers(Resource):
    """timers: /timers…"""

    def arm(
        self,
        *,
        key: str,
        owed_at: str | datetime | int,
        handler: HandlerEnum,
        data: dict[str, Any] | Omit = OMIT,
        test_clock: str | None | Omit = OMIT,
        idempotency_key: str | Omit = OMIT,
    ) -> Timer:
        """Arm a timer. POST /timers"""
        return cast('Timer', self._client.request('POST', '/timers', json={'key': key, 'owed_at': owed_at, 'handler': handler, 'data': data, 'test_clock': test_clock}, idempotency_key=idempotency_key))

    def list(
        self,
        *,
        limit: int | Omit = OMIT,
        on: str | Omit = OMIT,
        starting_after: str | Omit = OMIT,
        status: TimerStatus | Omit = OMIT,
        test_clock: str | Omit = OMIT,
    ) -> TimerList:
        """List timers. GET /timers"""
        return cast('TimerList', self._client.request('GET', '/timers', params={'limit': limit, 'on': on, 'starting_after': starting_after, 'status': status, 'test_clock': test_clock}))

    def retrieve(self, timer_id: str) -> Timer:
        """Retrieve a timer. GET /timers/{timer_id}"""
        return cast('Timer', self._client.request('GET', f"/timers/{_seg(timer_id)}"))

    def wake(self, timer_id: str, *, idempotency_key: str | Omit = OMIT) -> Wake:
        """Wake a timer. POST /timers/{timer_id}/wake"""
        return cast('Wake', self._client.request('POST', f"/timers/{_seg(timer_id)}/wake", idempotency_key=idempotency_key))


class Versions(Resource):
    """versions: /versions…"""

    def list(self, *, pinned: bool | Omit = OMIT, test_clock: str | Omit = OMIT) -> VersionList:
        """List versions. GET /versions"""
        return cast('VersionList', self._client.request('GET', '/versions', params={'pinned': pinned, 'test_clock': test_clock}))


class WebhookEndpoints(Resource):
    """webhook_endpoints: /webhook_endpoints…"""

    def create(
        self,
        *,
        url: str,
        enabled_events: builtins.list[str],
        description: str | Omit = OMIT,
        metadata: dict[str, str] | Omit = OMIT,
        idempotency_key: str | Omit = OMIT,
    ) -> WebhookEndpoint:
        """Create a webhook endpoint. POST /webhook_endpoints"""
        return cast('WebhookEndpoint', self._client.request('POST', '/webhook_endpoints', json={'url': url, 'enabled_events': enabled_events, 'description': description, 'metadata': metadata}, idempotency_key=idempotency_key))

    def delete(self, endpoint_id: str) -> DeletedWebhookEndpoint:
        """Delete a webhook endpoint. DELETE /webhook_endpoints/{endpoint_id}"""
        return cast('DeletedWebhookEndpoint', self._client.request('DELETE', f"/webhook_endpoints/{_seg(endpoint_id)}"))

    def list(self, *, limit: int | Omit = OMIT, starting_after: str | Omit = OMIT) -> WebhookEndpointList:
        """List webhook endpoints. GET /webhook_endpoints"""
        return cast('WebhookEndpointList', self._client.request('GET', '/webhook_endpoints', params={'limit': limit, 'starting_after': starting_after}))

    def retrieve(self, endpoint_id: str) -> WebhookEndpoint:
        """Retrieve a webhook endpoint. GET /webhook_endpoints/{endpoint_id}"""
        return cast('WebhookEndpoint', self._client.request('GET', f"/webhook_endpoints/{_seg(endpoint_id)}"))

    def update(
        self,
        endpoint_id: str,
        *,
        url: str | Omit = OMIT,
        enabled_events: builtins.list[str] | Omit = OMIT,
        description: str | Omit = OMIT,
        metadata: dict[str, str] | Omit = OMIT,
        disabled: bool | Omit = OMIT,
        idempotency_key: str | Omit = OMIT,
    ) -> WebhookEndpoint:
        """Update a webhook endpoint. POST /webhook_endpoints/{endpoint_id}"""
        return cast('WebhookEndpoint', self._client.request('POST', f"/webhook_endpoints/{_seg(endpoint_id)}", json={'url': url, 'enabled_events': enabled_events, 'description': description, 'metadata': metadata, 'disabled': disabled}, idempotency_key=idempotency_key))


class Windows(Resource):
    """windows: /windows…"""

    def close(self, window_id: str, *, idempotency_key: str | Omit = OMIT) -> dict[str, Any]:
        """Close a standby window. POST /windows/{window_id}/close"""
        return cast('dict[str, Any]', self._client.request('POST', f"/windows/{_seg(window_id)}/close", idempotency_key=idempotency_key))

    def open(
        self,
        *,
        member: str,
        hours: int,
        test_clock: str | Omit = OMIT,
        idempotency_key: str | Omit = OMIT,
    ) -> dict[str, Any]:
        """Open a member's standby window. POST /windows"""
        return cast('dict[str, Any]', self._client.request('POST', '/windows', json={'member': member, 'hours': hours, 'test_clock': test_clock}, idempotency_key=idempotency_key))


class KeepingTime(KeepingTimeBase):
    """The client: ``KeepingTime(api_key, base_url=…)``, one attribute per resource."""

    balance: Balance
    calendars: Calendars
    clocks: Clocks
    events: Events
    jobs: Jobs
    members: Members
    owner: Owner
    policies: Policies
    pools: Pools
    portal_sessions: PortalSessions
    proposals: Proposals
    schedules: Schedules
    subjects: Subjects
    subscriptions: Subscriptions
    test_clocks: TestClocks
    timers: Timers
    versions: Versions
    webhook_endpoints: WebhookEndpoints
    windows: Windows

    def __init__(self, api_key: str | None = None, **options: Any):
        super().__init__(api_key, **options)
        self.balance = Balance(self)
        self.calendars = Calendars(self)
        self.clocks = Clocks(self)
        self.events = Events(self)
        self.jobs = Jobs(self)
        self.members = Members(self)
        self.owner = Owner(self)
        self.policies = Policies(self)
        self.pools = Pools(self)
        self.portal_sessions = PortalSessions(self)
        self.proposals = Proposals(self)
        self.schedules = Schedules(self)
        self.subjects = Subjects(self)
        self.subscriptions = Subscriptions(self)
        self.test_clocks = TestClocks(self)
        self.timers = Timers(self)
        self.versions = Versions(self)
        self.webhook_endpoints = WebhookEndpoints(self)
        self.windows = Windows(self)


# operationId: (method, path, resource, method name), for the test that compares it with /openapi.json.
OPERATIONS: dict[str, tuple[str, str, str, str]] = {
    'balance_retrieve': ('GET', '/balance', 'balance', 'retrieve'),
    'calendars_create': ('POST', '/calendars', 'calendars', 'create'),
    'calendars_list': ('GET', '/calendars', 'calendars', 'list'),
    'calendars_retrieve': ('GET', '/calendars/{calendar_id}', 'calendars', 'retrieve'),
    'calendars_update': ('POST', '/calendars/{calendar_id}', 'calendars', 'update'),
    'clocks_inputs': ('POST', '/clocks/{clock_id}/inputs', 'clocks', 'inputs'),
    'clocks_item_timeline': ('GET', '/clocks/{clock_id}/items/{item}/timeline', 'clocks', 'item_timeline'),
    'clocks_items_choose': ('POST', '/clocks/{clock_id}/items/{item}/choose', 'clocks', 'items_choose'),
    'clocks_items_postpone': ('POST', '/clocks/{clock_id}/items/{item}/postpone', 'clocks', 'items_postpone'),
    'clocks_items_propose': ('POST', '/clocks/{clock_id}/items/{item}/proposals', 'clocks', 'items_propose'),
    'clocks_items_reopen': ('POST', '/clocks/{clock_id}/items/{item}/reopen', 'clocks', 'items_reopen'),
    'clocks_items_satisfy': ('POST', '/clocks/{clock_id}/items/{item}/satisfy', 'clocks', 'items_satisfy'),
    'clocks_penalties_create': ('POST', '/clocks/{clock_id}/penalties', 'clocks', 'penalties_create'),
    'clocks_retrieve': ('GET', '/clocks/{clock_id}', 'clocks', 'retrieve'),
    'events_list': ('GET', '/events', 'events', 'list'),
    'events_retrieve': ('GET', '/events/{event_id}', 'events', 'retrieve'),
    'jobs_activity': ('POST', '/jobs/{job_id}/activity', 'jobs', 'activity'),
    'jobs_cancel': ('POST', '/jobs/{job_id}/cancel', 'jobs', 'cancel'),
    'jobs_create': ('POST', '/jobs', 'jobs', 'create'),
    'jobs_deliver': ('POST', '/jobs/{job_id}/deliver', 'jobs', 'deliver'),
    'jobs_grants_create': ('POST', '/jobs/{job_id}/grants', 'jobs', 'grants_create'),
    'jobs_list': ('GET', '/jobs', 'jobs', 'list'),
    'jobs_resume_work': ('POST', '/jobs/{job_id}/resume', 'jobs', 'resume_work'),
    'jobs_retrieve': ('GET', '/jobs/{job_id}', 'jobs', 'retrieve'),
    'jobs_steps_act': ('POST', '/jobs/{job_id}/steps/{step}/{act}', 'jobs', 'steps_act'),
    'jobs_timeline': ('GET', '/jobs/{job_id}/timeline', 'jobs', 'timeline'),
    'jobs_wait': ('POST', '/jobs/{job_id}/wait', 'jobs', 'wait'),
    'members_delete': ('DELETE', '/members/{member_id}', 'members', 'delete'),
    'members_earnings_retrieve': ('GET', '/members/{member_id}/earnings', 'members', 'earnings_retrieve'),
    'members_invite': ('POST', '/members', 'members', 'invite'),
    'members_list': ('GET', '/members', 'members', 'list'),
    'members_remove': ('POST', '/members/{member_id}/remove', 'members', 'remove'),
    'members_retrieve': ('GET', '/members/{member_id}', 'members', 'retrieve'),
    'members_update': ('POST', '/members/{member_id}', 'members', 'update'),
    'owner_jobs_repin': ('POST', '/owner/jobs/{job_id}/repin', 'owner', 'jobs_repin'),
    'policies_set': ('POST', '/policies', 'policies', 'set'),
    'pools_list': ('GET', '/pools', 'pools', 'list'),
    'pools_members_add': ('POST', '/pools/{pool}/members', 'pools', 'members_add'),
    'pools_members_remove': ('DELETE', '/pools/{pool}/members/{member}', 'pools', 'members_remove'),
    'portal_sessions_create': ('POST', '/portal_sessions', 'portal_sessions', 'create'),
    'proposals_approve': ('POST', '/proposals/{proposal_id}/approve', 'proposals', 'approve'),
    'proposals_retrieve': ('GET', '/proposals/{proposal_id}', 'proposals', 'retrieve'),
    'schedules_backfill': ('POST', '/schedules/{schedule_id}/backfill', 'schedules', 'backfill'),
    'schedules_create': ('POST', '/schedules', 'schedules', 'create'),
    'schedules_delete': ('DELETE', '/schedules/{schedule_id}', 'schedules', 'delete'),
    'schedules_list': ('GET', '/schedules', 'schedules', 'list'),
    'schedules_pause': ('POST', '/schedules/{schedule_id}/pause', 'schedules', 'pause'),
    'schedules_resume': ('POST', '/schedules/{schedule_id}/resume', 'schedules', 'resume'),
    'schedules_retrieve': ('GET', '/schedules/{schedule_id}', 'schedules', 'retrieve'),
    'schedules_trigger': ('POST', '/schedules/{schedule_id}/trigger', 'schedules', 'trigger'),
    'schedules_update': ('POST', '/schedules/{schedule_id}', 'schedules', 'update'),
    'subjects_calendar': ('GET', '/subjects/{subject_id}/calendar', 'subjects', 'calendar'),
    'subjects_contacts_create': ('POST', '/subjects/{subject_id}/contacts', 'subjects', 'contacts_create'),
    'subjects_contacts_delete': ('DELETE', '/subjects/{subject_id}/contacts/{contact_id}', 'subjects', 'contacts_delete'),
    'subjects_contacts_list': ('GET', '/subjects/{subject_id}/contacts', 'subjects', 'contacts_list'),
    'subjects_contacts_retrieve': ('GET', '/subjects/{subject_id}/contacts/{contact_id}', 'subjects', 'contacts_retrieve'),
    'subjects_contacts_update': ('POST', '/subjects/{subject_id}/contacts/{contact_id}', 'subjects', 'contacts_update'),
    'subjects_create': ('POST', '/subjects', 'subjects', 'create'),
    'subjects_events_create': ('POST', '/subjects/{subject_id}/events', 'subjects', 'events_create'),
    'subjects_list': ('GET', '/subjects', 'subjects', 'list'),
    'subjects_retrieve': ('GET', '/subjects/{subject_id}', 'subjects', 'retrieve'),
    'subjects_statements_list': ('GET', '/subjects/{subject_id}/statements', 'subjects', 'statements_list'),
    'subjects_timeline': ('GET', '/subjects/{subject_id}/timeline', 'subjects', 'timeline'),
    'subjects_update': ('POST', '/subjects/{subject_id}', 'subjects', 'update'),
    'subscriptions_cancel': ('POST', '/subscriptions/{subscription_id}/cancel', 'subscriptions', 'cancel'),
    'subscriptions_create': ('POST', '/subscriptions', 'subscriptions', 'create'),
    'subscriptions_list': ('GET', '/subscriptions', 'subscriptions', 'list'),
    'subscriptions_pause': ('POST', '/subscriptions/{subscription_id}/pause', 'subscriptions', 'pause'),
    'subscriptions_resume': ('POST', '/subscriptions/{subscription_id}/resume', 'subscriptions', 'resume'),
    'subscriptions_retrieve': ('GET', '/subscriptions/{subscription_id}', 'subscriptions', 'retrieve'),
    'subscriptions_update': ('POST', '/subscriptions/{subscription_id}/update', 'subscriptions', 'update'),
    'test_clocks_advance': ('POST', '/test_clocks/{clock_id}/advance', 'test_clocks', 'advance'),
    'test_clocks_create': ('POST', '/test_clocks', 'test_clocks', 'create'),
    'test_clocks_delete': ('DELETE', '/test_clocks/{clock_id}', 'test_clocks', 'delete'),
    'test_clocks_list': ('GET', '/test_clocks', 'test_clocks', 'list'),
    'test_clocks_retrieve': ('GET', '/test_clocks/{clock_id}', 'test_clocks', 'retrieve'),
    'timers_arm': ('POST', '/timers', 'timers', 'arm'),
    'timers_list': ('GET', '/timers', 'timers', 'list'),
    'timers_retrieve': ('GET', '/timers/{timer_id}', 'timers', 'retrieve'),
    'timers_wake': ('POST', '/timers/{timer_id}/wake', 'timers', 'wake'),
    'versions_list': ('GET', '/versions', 'versions', 'list'),
    'webhook_endpoints_create': ('POST', '/webhook_endpoints', 'webhook_endpoints', 'create'),
    'webhook_endpoints_delete': ('DELETE', '/webhook_endpoints/{endpoint_id}', 'webhook_endpoints', 'delete'),
    'webhook_endpoints_list': ('GET', '/webhook_endpoints', 'webhook_endpoints', 'list'),
    'webhook_endpoints_retrieve': ('GET', '/webhook_endpoints/{endpoint_id}', 'webhook_endpoints', 'retrieve'),
    'webhook_endpoints_update': ('POST', '/webhook_endpoints/{endpoint_id}', 'webhook_endpoints', 'update'),
    'windows_close': ('POST', '/windows/{window_id}/close', 'windows', 'close'),
    'windows_open': ('POST', '/windows', 'windows', 'open'),
}
