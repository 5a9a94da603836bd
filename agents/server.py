"""The MCP server ``python manage.py mcp`` runs on stdio: the agent tools of ``agents.tools``, under one key.

The key is read again on every call, so a key revoked while an agent is connected stops working at its next
call. A refusal comes back as a tool error whose text is the API's error body, {"error": {"type", "code",
"message"[, "param"]}}, with the code the API would answer.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Annotated, Any

from django.db import close_old_connections
from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field

from timers.api.errors import exception_handler

from . import tools

INSTRUCTIONS = (
    "Keeping Time keeps a services business's dates: every reminder, deadline and step is a timer on its record. "
    "Read with list_timers, get_timer, subject_calendar, subject_timeline, list_events, list_contacts, "
    "list_schedules and get_schedule; act with set_policy, advance_test_clock, acknowledge, unacknowledge and "
    "add_contact. Schedules (a cron or an interval in a zone, firing an HTTP endpoint or a Service's jobs): "
    "create_schedule, update_schedule (pass the revision you read), pause_schedule, resume_schedule, "
    "trigger_schedule, backfill_schedule and delete_schedule (nothing fires after it). A test key (sk_test_…) "
    "sees test clocks only: pass test_clock=tc_… to read one. Errors carry the API's code and param "
    "(resource_missing, invalid_request, live_mode_only, schedule_revision_conflict, invalid_skip …)."
)
READ = ToolAnnotations(readOnlyHint=True, idempotentHint=True, openWorldHint=False)
ACT = ToolAnnotations(readOnlyHint=False, destructiveHint=False, openWorldHint=False)
DESTROY = ToolAnnotations(readOnlyHint=False, destructiveHint=True, idempotentHint=False, openWorldHint=False)

TestClock = Annotated[str | None, Field(description="A test clock id, tc_…: its objects (a test key's). "
                                                    "Absent: the live clock's (a live key's).")]
# Plain types, no bounds or choices here: the API's serializers check values, so a bad one is refused with the
# API's code and param (invalid_request, param "status"), not the protocol's own validation text.
Limit = Annotated[int, Field(description="How many to answer, 1 to 100")]
After = Annotated[str | None, Field(description="An id from the last page: answer the ones after it")]
ScheduleId = Annotated[str, Field(description="sch_…")]
Instant = Annotated[str | None, Field(description="ISO 8601 with Z: 2027-01-04T09:00:00Z")]
Overlap = Annotated[str | None, Field(description="When a fire comes while the last Run is open: skip, "
                                                  "buffer_one, buffer_all, cancel_other, allow")]
Spec = Annotated[dict[str, Any] | None, Field(description='{"cron": "30 2 * * *"}, {"every": "30m", "phase": "5m"} '
                                                          'or {"each": "month", "at": "1mo after end", "time": "06:30"}')]
Target = Annotated[dict[str, Any] | None, Field(description='{"url": "https://…", "timeout": 10, "retries": 3} or '
                                                            '{"service": "…", "subject": "sbj_…", "input": {}}')]
Zone = Annotated[str | None, Field(description="An IANA zone the spec is read in: America/New_York")]
Window = Annotated[int | str | None, Field(description="Missed fires older than this are skipped: seconds, or a "
                                                       "span 10s to 365d (45m, 6h)")]
Skip = Annotated[list[str] | None, Field(description="Cron expressions ('0 9 25 12 *') or dates (2027-12-25) not "
                                                     "fired; [] clears the list")]


def api_error(exc: Exception) -> dict[str, Any] | None:
    """The API's error body for ``exc``, as its views answer it; None for a bug (the caller re-raises)."""
    response = exception_handler(exc, {"view": None})
    return None if response is None else dict(response.data)


def build(secret: str) -> MCPServer:
    """The server, its tools acting as the brand ``secret`` opens, in the key's mode."""
    server = MCPServer("keeping-time", instructions=INSTRUCTIONS)

    def call(fn: Callable[..., dict[str, Any]], **kwargs: Any) -> Any:
        # Tools run in worker threads: each call takes a fresh connection if the old one went stale.
        close_old_connections()
        try:
            return fn(tools.keyed_brand(secret), **kwargs)
        except Exception as exc:
            body = api_error(exc)
            if body is None:
                raise
            # The API's error body itself, as text and as structure: a ToolError would prefix its text with
            # "Error executing tool …", and an agent could no longer read it as JSON.
            return CallToolResult(content=[TextContent(type="text", text=json.dumps(body))], structured_content=body,
                                  is_error=True)
        finally:
            close_old_connections()

    @server.tool(annotations=READ)
    def list_timers(
        on: Annotated[str | None, Field(description="The owner: job_…, sbn_…, clk_…#US, or clk_… for each of "
                                                    "its occurrences")] = None,
        status: Annotated[str | None, Field(description="armed, fired, superseded or held")] = None,
        test_clock: TestClock = None, limit: Limit = 10, starting_after: After = None,
    ) -> dict[str, Any]:
        """The timers an owner holds (what is owed, and whether it ran), oldest armed first; as GET /timers."""
        return call(tools.list_timers, on=on, status=status, test_clock=test_clock, limit=limit,
                    starting_after=starting_after)

    @server.tool(annotations=READ)
    def get_timer(timer_id: Annotated[str, Field(description="tmr_…")]) -> dict[str, Any]:
        """One timer, whole: its key, status, owed and fired times, wakes and commit; as GET /timers/<id>."""
        return call(tools.get_timer_json, timer_id=timer_id)

    @server.tool(annotations=READ)
    def subject_calendar(
        subject_id: Annotated[str, Field(description="sbj_…: a customer, an account, a property")],
        from_date: Annotated[str | None, Field(description="YYYY-MM-DD in the calendar's zone; default today")] = None,
        test_clock: TestClock = None,
    ) -> dict[str, Any]:
        """Every date a subject keeps from a day on, each with its reminders and steps, local to its calendar's
        zone; as GET /subjects/<id>/calendar."""
        return call(tools.subject_calendar, subject_id=subject_id, from_date=from_date, test_clock=test_clock)

    @server.tool(annotations=READ)
    def subject_timeline(
        subject_id: Annotated[str, Field(description="sbj_…: a customer, an account, a property")],
        test_clock: TestClock = None,
        zone: Annotated[str | None, Field(description="The IANA zone times are said in; default the customer's "
                                                      "calendar's")] = None,
        limit: Limit = 10, starting_after: After = None,
    ) -> dict[str, Any]:
        """What happened to a customer, read from the record, oldest first: each event (fired, moved and why,
        reminded whom and how, acted on by whom), each outside call with its status and attempt, then what is
        armed ahead; each a sentence with its time in the zone named; as GET /subjects/<id>/timeline."""
        return call(tools.subject_timeline, subject_id=subject_id, test_clock=test_clock, zone=zone, limit=limit,
                    starting_after=starting_after)

    @server.tool(annotations=READ)
    def list_events(
        type: Annotated[str | None, Field(description="An event type (timer.fired), or a prefix ending in * "
                                                      "(signal.*)")] = None,
        test_clock: TestClock = None, limit: Limit = 10, starting_after: After = None,
    ) -> dict[str, Any]:
        """The brand's record, oldest first: what fired, what it committed, what moved; as GET /events."""
        return call(tools.list_events, type=type, test_clock=test_clock, limit=limit, starting_after=starting_after)

    @server.tool(annotations=ACT)
    def set_policy(
        service: Annotated[str, Field(description="The Service whose value it is: deal")],
        name: Annotated[str, Field(description="A policy value the Service declares: stall_days")],
        value: Annotated[int, Field(description="Days, 1 to 3650")],
        test_clock: TestClock = None,
    ) -> dict[str, Any]:
        """Set a policy value (stall_days 14 -> 7): each open job's silent timer that reads it re-arms from the
        job's last activity with the new span; as POST /policies."""
        return call(tools.set_policy, service=service, name=name, value=value, test_clock=test_clock)

    @server.tool(annotations=ACT)
    def advance_test_clock(
        test_clock: Annotated[str, Field(description="tc_…, or default for the brand's default test clock")],
        to: Annotated[str | None, Field(description="The new frozen time, ISO 8601 with Z: 2027-11-10T10:00:00Z; "
                                                    "never before the current one")] = None,
        span: Annotated[str | None, Field(description="Or how far to move, as `tick 1y`: 7d, 2w, 1mo, 1y "
                                                      "(to or span, not both)")] = None,
        redeliver: bool = False,
    ) -> dict[str, Any]:
        """Move a test clock forward: it answers advancing, and the worker fires every timer owed by then, then
        records test_clock.ready; as POST /test_clocks/<id>/advance."""
        return call(tools.advance_test_clock, test_clock=test_clock, to=to, span=span, redeliver=redeliver)

    @server.tool(annotations=ACT)
    def acknowledge(
        clock_id: Annotated[str, Field(description="clk_…")],
        item: Annotated[str, Field(description="The date's item (US-NY …), or - for a clock's single date")] = "-",
        by: Annotated[str, Field(description="Who acknowledges; default whoever answers for the clock")] = "",
    ) -> dict[str, Any]:
        """Acknowledge a date that asks daily (ack daily 7d): the asking stops, and clock.acknowledged is
        recorded."""
        return call(tools.acknowledge, clock_id=clock_id, item=item, by=by)

    @server.tool(annotations=ACT)
    def unacknowledge(
        clock_id: Annotated[str, Field(description="clk_…")],
        item: Annotated[str, Field(description="The date's item (US-NY …), or - for a clock's single date")] = "-",
        by: Annotated[str, Field(description="Who takes it back; default whoever answers for the clock")] = "",
    ) -> dict[str, Any]:
        """Take back an acknowledgement while the date is ahead: the date asks daily again from its next day,
        and clock.unacknowledged is recorded after the clock.acknowledged."""
        return call(tools.unacknowledge, clock_id=clock_id, item=item, by=by)

    @server.tool(annotations=READ)
    def list_contacts(subject_id: Annotated[str, Field(description="sbj_…")]) -> dict[str, Any]:
        """A customer's people (name, email, role, primary): who their dates go to; as GET
        /subjects/<id>/contacts."""
        return call(tools.list_contacts, subject_id=subject_id)

    @server.tool(annotations=ACT)
    def add_contact(
        subject_id: Annotated[str, Field(description="sbj_…")],
        name: Annotated[str, Field(description="Their name: Ada Lovelace")],
        email: Annotated[str, Field(description="Where their dates' emails go")],
        role: Annotated[str | None, Field(description="The brand's word for them: officer, bookkeeper")] = None,
        phone: Annotated[str | None, Field(description="+1 212 555 0100")] = None,
        zone: Annotated[str | None, Field(description="An IANA zone their times are said in")] = None,
        primary: Annotated[bool | None, Field(description="The one a customer's date goes to first")] = None,
    ) -> dict[str, Any]:
        """Add a contact to a customer; the dates their role names move to them, on the record; as POST
        /subjects/<id>/contacts."""
        return call(tools.add_contact, subject_id=subject_id, name=name, email=email, role=role, phone=phone,
                    zone=zone, primary=primary)

    @server.tool(annotations=READ)
    def list_schedules(test_clock: TestClock = None, limit: Limit = 10, starting_after: After = None
                       ) -> dict[str, Any]:
        """A clock's schedules (not deleted), in the order they were made, each with its next fire times and last
        tick; as GET /schedules."""
        return call(tools.list_schedules, test_clock=test_clock, limit=limit, starting_after=starting_after)

    @server.tool(annotations=READ)
    def get_schedule(schedule_id: ScheduleId) -> dict[str, Any]:
        """One schedule, whole: spec, zone, target, revision, next fire times, counters, recent ticks with their
        Runs, dead letters; a deleted one too (deleted: true); as GET /schedules/<id>."""
        return call(tools.get_schedule_json, schedule_id=schedule_id)

    @server.tool(annotations=ACT)
    def create_schedule(
        spec: Annotated[dict[str, Any], Field(description='{"cron": "30 2 * * *"}, {"every": "30m"} or {"each": '
                                                          '"month", "at": "1mo after end", "time": "06:30"}')],
        target: Annotated[dict[str, Any], Field(description='{"url": "https://…", "timeout": 10, "retries": 3} or '
                                                            '{"service": "…", "subject": "sbj_…", "input": {}}')],
        test_clock: TestClock = None,
        name: Annotated[str | None, Field(description="nightly-report: one schedule per name on a clock")] = None,
        zone: Zone = None, overlap: Overlap = None,
        buffer_limit: Annotated[int | None, Field(description="Fires a buffer keeps, 1 to 1000")] = None,
        catchup_window: Window = None, paused: bool | None = None, pause_note: str | None = None,
        start_at: Instant = None, end_at: Instant = None,
        remaining_actions: Annotated[int | None, Field(description="Runs it may still start")] = None,
        calendar: Annotated[str | None, Field(description="cal_…: whose closed days it skips or rolls")] = None,
        closed_days: Annotated[str | None, Field(description="skip, next_open or previous_open")] = None,
        jitter: Annotated[str | None, Field(description="Each fire starts up to this after its time: 30s, 5m")] = None,
        skip: Skip = None,
    ) -> dict[str, Any]:
        """Make a schedule: it fires on its spec in its zone; an HTTP target's signing secret (whsec_…) is in
        this answer only; as POST /schedules."""
        return call(tools.create_schedule, spec=spec, target=target, test_clock=test_clock, name=name, zone=zone,
                    overlap=overlap, buffer_limit=buffer_limit, catchup_window=catchup_window, paused=paused,
                    pause_note=pause_note, start_at=start_at, end_at=end_at, remaining_actions=remaining_actions,
                    calendar=calendar, closed_days=closed_days, jitter=jitter, skip=skip)

    @server.tool(annotations=ACT)
    def update_schedule(
        schedule_id: ScheduleId,
        revision: Annotated[int | None, Field(description="The revision you read: another is "
                                                          "schedule_revision_conflict")] = None,
        name: Annotated[str | None, Field(description="A new name; empty for none")] = None,
        spec: Spec = None, zone: Zone = None,
        target: Annotated[dict[str, Any] | None, Field(description="The same kind of target (http or service), "
                                                                   "with new fields")] = None,
        overlap: Overlap = None,
        buffer_limit: Annotated[int | None, Field(description="1 to 1000")] = None,
        catchup_window: Window = None,
        paused: Annotated[bool | None, Field(description="true pauses, false resumes")] = None,
        pause_note: str | None = None, start_at: Instant = None, end_at: Instant = None,
        remaining_actions: Annotated[int | None, Field(description="Runs it may still start")] = None,
        calendar: Annotated[str | None, Field(description="cal_…; empty for none")] = None,
        closed_days: Annotated[str | None, Field(description="skip, next_open or previous_open")] = None,
        jitter: Annotated[str | None, Field(description="30s, 5m")] = None,
        skip: Skip = None,
        clear: Annotated[list[str] | None, Field(description="Fields to set to null, as the API's null: start_at, "
                                                             "end_at (no bound), remaining_actions (no limit), "
                                                             "calendar (none)")] = None,
    ) -> dict[str, Any]:
        """Change what is given: a new revision (schedule.updated with what changed); a new spec, zone or bound
        re-arms the next fire only, Runs already started keep theirs; as POST /schedules/<id>."""
        return call(tools.update_schedule, schedule_id=schedule_id, clear=clear, revision=revision, name=name,
                    spec=spec, zone=zone, target=target, overlap=overlap, buffer_limit=buffer_limit,
                    catchup_window=catchup_window, paused=paused, pause_note=pause_note, start_at=start_at,
                    end_at=end_at, remaining_actions=remaining_actions, calendar=calendar, closed_days=closed_days,
                    jitter=jitter, skip=skip)

    @server.tool(annotations=ACT)
    def pause_schedule(
        schedule_id: ScheduleId,
        pause_note: Annotated[str | None, Field(description="Why it is paused, up to 200 characters")] = None,
    ) -> dict[str, Any]:
        """Pause: nothing starts until it resumes; its spec and revision stay; as POST /schedules/<id>/pause."""
        return call(tools.pause_schedule, schedule_id=schedule_id, pause_note=pause_note)

    @server.tool(annotations=ACT)
    def resume_schedule(schedule_id: ScheduleId) -> dict[str, Any]:
        """Resume: the fires missed while paused start only inside the catch-up window, older ones are counted
        missed; as POST /schedules/<id>/resume."""
        return call(tools.resume_schedule, schedule_id=schedule_id)

    @server.tool(annotations=ACT)
    def trigger_schedule(schedule_id: ScheduleId) -> dict[str, Any]:
        """Fire now, under the schedule's overlap policy: the live worker starts it at once, a test clock at its
        next advance; as POST /schedules/<id>/trigger."""
        return call(tools.trigger_schedule, schedule_id=schedule_id)

    @server.tool(annotations=ACT)
    def backfill_schedule(
        schedule_id: ScheduleId,
        start: Annotated[str, Field(description="The span's first instant (inclusive), ISO 8601 with Z")],
        end: Annotated[str, Field(description="The span's last instant (inclusive); it ends at now at the latest")],
        overlap: Annotated[str | None, Field(description="The backfill's own policy (allow for all at once); the "
                                                         "schedule's when absent")] = None,
    ) -> dict[str, Any]:
        """Start each intended time of the spec in [start, end] that has no Run yet, in order (already_run says
        which ran, 1000 a call: has_more, next_start); as POST /schedules/<id>/backfill."""
        return call(tools.backfill_schedule, schedule_id=schedule_id, start=start, end=end, overlap=overlap)

    @server.tool(annotations=DESTROY)
    def delete_schedule(schedule_id: ScheduleId) -> dict[str, Any]:
        """Delete: nothing fires after it (an open Run settles); it stays readable (deleted: true) and its name is
        free again; as DELETE /schedules/<id>."""
        return call(tools.delete_schedule, schedule_id=schedule_id)

    return server
