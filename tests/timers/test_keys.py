"""The key grammar and the pure time helpers: no database."""

import pytest

from tests.conftest import at
from timers.errors import InvalidKey, InvalidSpan
from timers.keys import PLACES, Key, format_key, parse
from timers.timeutil import parse_span, trace_z

GOOD = [
    "clk_8Tx1#US:rung:notice 90d:2027@0",
    "clk_8Tx1#US-NY:rung:notice 30d:2027@1",
    "clk_8Tx1#US:rung:run tentative 3d:2027",
    "job_4Tx9:deadline:at_risk:2027",
    "sbn_7Hq2:schedule:annual:2027",
    "sbn_7Hq2:cycle:renew:#3",
    "job_4Tx9:task:review:US-NY",
    "job_1:money:charge:#12@3",
]


@pytest.mark.parametrize("text", GOOD)
def test_round_trip(text):
    key = parse(text)
    assert str(key) == text
    assert format_key(key.owner, key.kind, key.name, key.occurrence, key.move) == text
    assert key.place == PLACES[key.kind]


def test_parts():
    key = parse("clk_8Tx1#US:rung:notice 90d:2027@0")
    assert (key.owner, key.kind, key.name, key.occurrence, key.move) == ("clk_8Tx1#US", "rung", "notice 90d", "2027", 0)
    assert str(key.moved()) == "clk_8Tx1#US:rung:notice 90d:2027@1"


def test_run_rung_has_no_move_to_bump():
    with pytest.raises(InvalidKey):
        parse("clk_8Tx1#US:rung:run tentative 3d:2027").moved()


BAD = [
    "",
    "job_1:deadline:at_risk",  # three parts
    "job_1:deadline:at_risk:2027:extra",
    "job_1:lunch:at_risk:2027",  # unknown kind
    "job_1:deadline::2027",  # empty name
    "job_1:deadline:at_risk:",  # empty occurrence
    "job_1:deadline:at_risk:2027@",  # empty move
    "job_1:deadline:at_risk:2027@-1",
    "job_1:deadline:at_risk:2027@01",
    "job_1:deadline:at_risk:2027@x",
    " job_1:deadline:at_risk:2027",
    "job 1:deadline:at_risk:2027",  # owner is an id
    "job_1:deadline: at_risk:2027",
    "job_1:deadline:at\nrisk:2027",
    "job_1:DEADLINE:at_risk:2027",
    "job_1:deadline:at_risk:" + "x" * 300,
]


@pytest.mark.parametrize("text", BAD)
def test_bad_keys_are_refused_with_invalid_key(text):
    with pytest.raises(InvalidKey) as err:
        parse(text)
    assert err.value.code == "invalid_key"
    assert err.value.message


def test_key_object_validates():
    with pytest.raises(InvalidKey):
        Key("job_1", "nope", "a", "b")


def test_keys_compare_byte_by_byte_not_by_locale():
    # Under en_US, "alpha" sorts before "Zeta" and "a-b" beside "ab"; byte order puts every capital first.
    keys = ["job_1:task:alpha:1", "job_1:task:Zeta:1", "job_1:task:a-b:1", "job_1:task:ab:1", "job_1:task:é:1"]
    assert sorted(keys, key=lambda k: k.encode()) == sorted(keys)
    assert sorted(keys)[0] == "job_1:task:Zeta:1"


@pytest.mark.parametrize(
    ("text", "start", "end"),
    [
        ("6h", "2027-01-20T14:00Z", "2027-01-20T20:00Z"),
        ("7d", "2027-01-20T14:00Z", "2027-01-27T14:00Z"),
        ("1mo", "2027-01-31T14:00Z", "2027-02-28T14:00Z"),
        ("1y", "2027-01-20T14:00Z", "2028-01-20T14:00Z"),
        ("1y", "2028-02-29T00:00Z", "2029-02-28T00:00Z"),
    ],
)
def test_spans(text, start, end):
    assert at(start) + parse_span(text) == at(end)


@pytest.mark.parametrize("text", ["", "1", "y", "1 year", "-1d", "0d", "1.5d"])
def test_bad_spans(text):
    with pytest.raises(InvalidSpan):
        parse_span(text)


def test_trace_times_print_utc_with_z():
    assert trace_z(at("2028-02-01T14:00Z")) == "2028-02-01 14:00Z"
    assert trace_z(at("2026-11-24T14:02:11Z")) == "2026-11-24 14:02:11Z"


def test_three_quarters_of_the_way_and_never_past_the_end():
    from datetime import UTC, datetime

    from timers.timeutil import three_quarters

    start, end = datetime(2027, 1, 1, tzinfo=UTC), datetime(2027, 1, 5, tzinfo=UTC)
    assert three_quarters(start, end) == datetime(2027, 1, 4, tzinfo=UTC)
    assert three_quarters(end, start) == start  # the end came first: at risk at the end, not after it
    assert three_quarters(start, start) == start
