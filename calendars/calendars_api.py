"""A brand's calendars over HTTP: ``POST/GET /calendars``, ``GET/POST /calendars/<id>``.

Calendars are the brand's, in both modes: a live key and a test key read the same ones, as both read the same
Services. What a calendar changes reaches every subject on it, so a test key changes only a calendar no live
subject keeps its dates on (``403 live_mode_only``); a live key changes any.
"""

from __future__ import annotations

from drf_spectacular.extensions import OpenApiSerializerFieldExtension
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from timers.api.auth import livemode
from timers.api.inputs import (
    ListQuerySerializer,
    MetadataField,
    NameField,
    StrictBooleanField,
    StrictCharField,
    StrictRegexField,
    ZoneField,
)
from timers.api.openapi import ERRORS, NOT_FOUND, Choice, ChoiceSchema, const, error_response, list_serializer
from timers.api.views import BrandAPIView, SafeJSONParser
from timers.clock import wall_now
from timers.errors import KeepingTimeError, NotFound
from timers.ids import LIVE_PREFIX
from timers.selectors import page
from timers.timeutil import iso_z

from .brand_calendars import (
    DST_REPEATED,
    DST_SKIPPED,
    calendar_create,
    calendar_update,
    closed_days_json,
    supported_holidays,
)
from .models import Calendar, ClockItem, ClosedDay, Subject

CALENDAR_ORDER = ("name", "id")
CLOSES = r"^([01][0-9]|2[0-3]):[0-5][0-9]$"


def calendar_json(cal: Calendar, *, observed_years: tuple[int, ...] = ()) -> dict:
    own = [{"date": d.isoformat(), "why": why}
           for d, why in ClosedDay.objects.filter(calendar=cal).order_by("date").values_list("date", "why")]
    body = {
        "id": cal.id,
        "object": "calendar",
        "name": cal.name,
        "zone": cal.zone,
        "weekends": sorted(cal.weekends),
        "closes": cal.closes.strftime("%H:%M"),
        "dst_skipped": cal.dst_skipped,
        "dst_repeated": cal.dst_repeated,
        "holidays": "-".join(p for p in (cal.holiday_country, cal.holiday_subdiv) if p) or None,
        "closed_days": own,
        "default": cal.is_default,
        "metadata": cal.metadata or {},
        "created": iso_z(cal.created_at),
    }
    if observed_years:
        body["observed"] = {"years": list(observed_years), "days": closed_days_json(cal, observed_years)}
    return body


# -- what the API takes -----------------------------------------------------------------------------------------
class WeekdayField(serializers.IntegerField):
    """0 Monday … 6 Sunday, as a JSON number: never "5" (a string the schema does not allow)."""

    def __init__(self, **kwargs):
        super().__init__(min_value=0, max_value=6, **kwargs)

    def to_internal_value(self, data):
        if isinstance(data, bool) or not isinstance(data, int):
            self.fail("invalid")
        return super().to_internal_value(data)


def holiday_codes() -> list[str]:
    """Every country the holidays package knows, and each of its subdivisions as COUNTRY-SUBDIVISION."""
    codes = []
    for country, subdivisions in sorted(supported_holidays().items()):
        codes.append(country)
        codes.extend(f"{country}-{sub}" for sub in subdivisions)
    return codes


class HolidaysField(StrictCharField):
    """Public holidays from the holidays package: a country (US) or a country and subdivision (US-DC)."""


class HolidaysSchema(OpenApiSerializerFieldExtension):
    target_class = HolidaysField

    def map_serializer_field(self, auto_schema, direction):
        return {"type": "string", "enum": holiday_codes(), "example": "US-DC"}


class CivilDateField(serializers.DateField):
    """A civil date from 1900 to 9000, as the runtime's dates are (JSON text YYYY-MM-DD)."""

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("invalid", format="YYYY-MM-DD")
        return super().to_internal_value(data)


class CivilDateSchema(OpenApiSerializerFieldExtension):
    target_class = CivilDateField

    def map_serializer_field(self, auto_schema, direction):
        return {"type": "string", "format": "date", "pattern": r"^(?:19[0-9]{2}|[2-8][0-9]{3}|9000)-[0-9]{2}-[0-9]{2}$"}


class ClosedDaySerializer(serializers.Serializer):
    date = CivilDateField(help_text="YYYY-MM-DD")
    why = StrictCharField(max_length=200, allow_blank=True, trim_whitespace=False,
                          help_text="Why it is closed: an office closure, a disaster-relief day")


DST_SKIPPED_HELP = ("A local time the spring change skips: next_minute (it happens at the first minute after the "
                    "gap; the default) or skip (a schedule's fire there does not happen, recorded skipped)")
DST_REPEATED_HELP = "A local time the fall change repeats happens at its first occurrence (the default) or second"


class DstRuleField(Choice):
    """A DST rule: any other value (another word, a number, null) is 400 invalid_dst_rule with its param, as
    ``calendars create`` and calendar_create say it."""

    def fail(self, key, **kwargs):
        given = kwargs.get("input")
        said = "null" if given is None else repr(str(given)[:40])
        raise serializers.ValidationError(f"one of {', '.join(self.choices)}, not {said}", code="invalid_dst_rule")


class DstRuleSchema(ChoiceSchema):
    target_class = DstRuleField  # its named enum (DstSkipped, DstRepeated), as the answer's Choice has it


class CalendarCreateSerializer(serializers.Serializer):
    name = NameField(max_length=200, help_text="What the console calls it: apis.tax, New York office")
    zone = ZoneField(max_length=64, help_text="An IANA zone: America/New_York")
    weekends = serializers.ListField(child=WeekdayField(),
                                     required=False, max_length=6,
                                     help_text="The days nothing is due on, 0 Monday … 6 Sunday; default [5, 6]")
    closes = StrictRegexField(CLOSES, required=False, max_length=5, default="23:59",
                              help_text="The local minute a due date closes, HH:MM (default 23:59)")
    dst_skipped = DstRuleField(choices=DST_SKIPPED, component="DstSkipped", required=False, default="next_minute",
                               help_text=DST_SKIPPED_HELP)
    dst_repeated = DstRuleField(choices=DST_REPEATED, component="DstRepeated", required=False, default="first",
                                help_text=DST_REPEATED_HELP)
    holidays = HolidaysField(required=False, allow_null=True, max_length=24,
                             help_text="Public holidays: a country (US) or country-subdivision (US-DC)")
    closed_days = ClosedDaySerializer(many=True, required=False, help_text="The brand's own closed days")
    default = StrictBooleanField(required=False, default=False,
                                 help_text="The brand's default calendar (its first one is, until another is made it)")
    metadata = MetadataField(required=False)


class CalendarUpdateSerializer(serializers.Serializer):
    name = NameField(required=False, max_length=200)
    zone = ZoneField(required=False, max_length=64,
                     help_text="Only while no open date falls on the calendar (calendar_in_use)")
    weekends = serializers.ListField(child=WeekdayField(),
                                     required=False, max_length=6)
    closes = StrictRegexField(CLOSES, required=False, max_length=5,
                              help_text="HH:MM; only while no open date falls on it")
    dst_skipped = DstRuleField(choices=DST_SKIPPED, component="DstSkipped", required=False,
                               help_text=DST_SKIPPED_HELP + "; only while no open date falls on it")
    dst_repeated = DstRuleField(choices=DST_REPEATED, component="DstRepeated", required=False,
                                help_text=DST_REPEATED_HELP + "; only while no open date falls on it")
    holidays = HolidaysField(required=False, allow_null=True, max_length=24, help_text="US, US-DC …; null: none")
    closed_days = ClosedDaySerializer(many=True, required=False,
                                      help_text="Replaces the brand's own closed days; every open date re-rolls")
    default = StrictBooleanField(required=False, help_text="true makes it the brand's default")
    metadata = MetadataField(required=False)


# -- what the API answers ----------------------------------------------------------------------------------------
class ClosedDayOutSerializer(serializers.Serializer):
    date = serializers.DateField()
    why = serializers.CharField()


class ObservedSerializer(serializers.Serializer):
    years = serializers.ListField(child=serializers.IntegerField())
    days = ClosedDayOutSerializer(many=True, help_text="Every closed day of those years but weekends: holidays "
                                                       "and the brand's own, with why")


class CalendarSerializer(serializers.Serializer):
    id = serializers.CharField()
    object = const("calendar", "CalendarObject")
    name = serializers.CharField()
    zone = serializers.CharField()
    weekends = serializers.ListField(child=serializers.IntegerField())
    closes = serializers.CharField(help_text="HH:MM, local")
    dst_skipped = Choice(choices=DST_SKIPPED, component="DstSkipped", help_text=DST_SKIPPED_HELP)
    dst_repeated = Choice(choices=DST_REPEATED, component="DstRepeated", help_text=DST_REPEATED_HELP)
    holidays = serializers.CharField(allow_null=True, help_text="US, US-DC …: the public holidays it closes on")
    closed_days = ClosedDayOutSerializer(many=True, help_text="The brand's own closed days")
    default = serializers.BooleanField()
    metadata = serializers.DictField(child=serializers.CharField())
    created = serializers.CharField(allow_null=True)
    observed = ObservedSerializer(required=False, help_text="On a retrieve: this year's and next year's closed days")


def _changes(body: dict) -> dict:
    changes = {k: v for k, v in body.items() if k not in ("holidays", "closed_days")}
    if "holidays" in body:
        changes["holiday_country"], _, changes["holiday_subdivision"] = (body["holidays"] or "").partition("-")
    if "closed_days" in body:
        changes["closed_days"] = [{"date": d["date"].isoformat(), "why": d["why"]} for d in body["closed_days"]]
    return changes


def get_calendar(brand, calendar_id: str) -> Calendar:
    found = Calendar.objects.filter(brand=brand, pk=calendar_id).first() if len(calendar_id) <= 32 else None
    if found is None:
        raise NotFound(f"no calendar {calendar_id!r}")
    return found


class CalendarListView(BrandAPIView):
    parser_classes = [SafeJSONParser]  # its body nests holidays and closed days, which form fields cannot

    @extend_schema(operation_id="calendars_list", tags=["calendars"], parameters=[ListQuerySerializer],
                   summary="List calendars", description="The brand's calendars, by name (both modes see them).",
                   responses={200: list_serializer("CalendarList", CalendarSerializer), **ERRORS, **NOT_FOUND})
    def get(self, request):
        params = self.query(ListQuerySerializer)
        scope = Calendar.objects.filter(brand=self.brand)
        return Response(page(scope, scope=scope, order=CALENDAR_ORDER, lookup="pk", params=params, url="/calendars",
                             render=lambda rows: [calendar_json(c) for c in rows], what="calendar"))

    @extend_schema(
        operation_id="calendars_create", tags=["calendars"], request=CalendarCreateSerializer,
        summary="Create a calendar",
        description="A zone, weekends, the minute a due closes, public holidays by country and subdivision, and "
                    "the brand's own closed days. The brand's first calendar is its default: a subject that "
                    "names none, of a Service that declares none, keeps its dates on it. Errors: "
                    "invalid_calendar (with param), calendar_exists (409).",
        responses={201: CalendarSerializer, **ERRORS, 409: error_response("calendar_exists")},
    )
    def post(self, request):
        body = self.body(CalendarCreateSerializer)
        country, _, subdivision = (body.get("holidays") or "").partition("-")
        cal = calendar_create(
            brand=self.brand, name=body["name"], zone=body["zone"], weekends=body.get("weekends"),
            closes=body["closes"], holiday_country=country, holiday_subdivision=subdivision,
            closed_days=[{"date": d["date"].isoformat(), "why": d["why"]} for d in body.get("closed_days", [])],
            default=body["default"], metadata={k: v for k, v in body.get("metadata", {}).items() if v != ""},
            dst_skipped=body["dst_skipped"], dst_repeated=body["dst_repeated"], now=wall_now(),
        )
        return Response(calendar_json(cal), status=201)


class CalendarDetailView(BrandAPIView):
    parser_classes = [SafeJSONParser]

    @extend_schema(operation_id="calendars_retrieve", tags=["calendars"], summary="Retrieve a calendar",
                   description="With `observed`: every closed day of this year and next but weekends.",
                   responses={200: CalendarSerializer, 401: ERRORS[401], **NOT_FOUND})
    def get(self, request, calendar_id: str):
        year = wall_now().year  # the reader's year to list: no domain time is decided here
        return Response(calendar_json(get_calendar(self.brand, calendar_id), observed_years=(year, year + 1)))

    @extend_schema(
        operation_id="calendars_update", tags=["calendars"], request=CalendarUpdateSerializer,
        summary="Update a calendar",
        description="Weekends, holidays and closed days re-roll every open date on it (recorded as clock.moved "
                    "by the calendar). The zone, the closing minute and the time rules (dst_skipped, "
                    "dst_repeated) change only while no open date falls on it "
                    "(calendar_in_use, 409). A test key changes only a calendar no live subject is on "
                    "(live_mode_only, 403).",
        responses={200: CalendarSerializer, **ERRORS, **NOT_FOUND,
                   403: error_response("live_mode_only: live subjects keep their dates on it"),
                   409: error_response("calendar_in_use, calendar_exists, calendar_default_required")},
    )
    def post(self, request, calendar_id: str):
        cal = get_calendar(self.brand, calendar_id)
        body = self.body(CalendarUpdateSerializer)
        if not livemode(self.brand) and _live_on(cal):
            raise KeepingTimeError(f"live dates fall on {cal.name}: change it with a live key (sk_live_…)",
                                   code="live_mode_only", status=403)
        cal, _moved = calendar_update(calendar=cal, changes=_changes(body))
        return Response(calendar_json(cal))


def _live_on(cal: Calendar) -> bool:
    """Live subjects keep their dates on it, or it binds a live date still open: a change would move them."""
    return (Subject.objects.filter(calendar=cal, domain__startswith=LIVE_PREFIX).exists()
            or ClockItem.objects.filter(calendar=cal, clock__domain__startswith=LIVE_PREFIX,
                                        status__in=[ClockItem.Status.OPEN, ClockItem.Status.DUE]).exists())
