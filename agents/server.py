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
    "Read with list_timers, get_timer, subject_calendar, subject_timeline, list_events and list_contacts; act with set_policy, "
    "advance_test_clock, acknowledge and add_contact. A test key (sk_test_…) sees test clocks only: pass test_clock=tc_… to read one. Errors carry "
    "the API's code (resource_missing, invalid_request, live_mode_only …)."
)
READ = ToolAnnotations(readOnlyHint=True, idempotentHint=True, openWorldHint=False)
ACT = ToolAnnotations(readOnlyHint=False, destructiveHint=False, openWorldHint=False)

TestClock = Annotated[str | None, Field(description="A test clock id, tc_…: its objects (a test key's). "
                                                    "Absent: the live clock's (a live key's).")]
# Plain types, no bounds or choices here: the API's serializers check values, so a bad one is refused with the
# API's code and param (invalid_request, param "status"), not the protocol's own validation text.
Limit = Annotated[int, Field(description="How many to answer, 1 to 100")]
After = Annotated[str | None, Field(description="An id from the last page: answer the ones after it")]


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

    return server
