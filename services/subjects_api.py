"""A brand's customers over HTTP: ``POST/GET /subjects``, ``GET/POST /subjects/<id>``; and the two ways to
put one to work: ``POST /subscriptions`` (a plan) and ``POST /jobs`` (a one-off order).

Subjects are mode-scoped as every object on a clock is: a live key's live on the live clock, a test key's on
the test clock it names (``test_clock``, required: Stripe's test objects are never live ones). A subscription
and a job live on their subject's clock, at its time.
"""

from __future__ import annotations

from drf_spectacular.extensions import OpenApiSerializerFieldExtension
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from calendars.contacts import contact_json
from calendars.models import Contact, Subject
from timers.api.inputs import (
    ListQuerySerializer,
    MetadataField,
    NameField,
    StrictCharField,
    plain_json,
    query_field,
)
from timers.api.openapi import ERRORS, NOT_FOUND, WRONG_MODE, const, error_response, list_serializer
from timers.api.views import BrandAPIView, SafeJSONParser
from timers.domains import domain_now
from timers.errors import NotFound
from timers.ids import is_live
from timers.models import Brand
from timers.selectors import arm_domain_of, domain_of, get_owned, owned, page
from timers.timeutil import iso_z

from .api_json import jobs_json, subscriptions_json
from .api_schemas import ContactSerializer, DeclaredInputField, JobSerializer, SubscriptionSerializer
from .contact_inputs import ContactsField
from .jobs_api import JobListView
from .orders import job_order, subscription_start
from .subjects import get_calendar, subject_create, subject_kinds, subject_update
from .subscriptions_api import SubscriptionListView

SUBJECT_ORDER = ("created_at", "id")


def subject_json(s: Subject, contacts: list[Contact] | None = None) -> dict:
    cal = s.calendar
    if contacts is None:
        contacts = list(s.contacts.order_by(*Contact.ORDER))
    return {
        "id": s.id,
        "object": "subject",
        "kind": s.kind,
        "key_name": s.key_name,
        "key": s.key,
        "name": s.name,
        "calendar": cal.id if cal else None,
        "zone": cal.zone if cal else "UTC",
        "contacts": [contact_json(c) for c in contacts],
        "metadata": s.metadata or {},
        "livemode": is_live(s.domain),
        "test_clock": None if is_live(s.domain) else s.domain,
        "created": iso_z(s.created_at),
    }


def get_subject(brand: Brand, subject_id: str, *, param: str | None = None) -> Subject:
    try:
        return get_owned(brand, Subject.objects.select_related("calendar"), subject_id, "subject")
    except NotFound as exc:
        exc.param = param
        raise


# -- what the API takes ----------------------------------------------------------------------------------------
class KindField(StrictCharField):
    """A kind of subject a registered Service takes: the schema lists them."""


class SubjectKeyField(StrictCharField):
    """A subject's key: the schema's pattern is the kinds' grammars (any of them)."""


class KindSchema(OpenApiSerializerFieldExtension):
    target_class = KindField

    def map_serializer_field(self, auto_schema, direction):
        return {"type": "string", "enum": sorted(subject_kinds())}


class SubjectKeySchema(OpenApiSerializerFieldExtension):
    target_class = SubjectKeyField

    def map_serializer_field(self, auto_schema, direction):
        patterns = [spec.pattern for spec in subject_kinds().values()]
        schema = {"type": "string", "minLength": 1, "maxLength": 128}
        if patterns and None not in patterns:
            schema["pattern"] = "^(?:" + "|".join(f"(?:{p})" for p in patterns) + ")$"
        else:
            schema["pattern"] = r"^\S(?:[^\u0000]*\S)?$"
        return schema


class SubjectCreateSerializer(serializers.Serializer):
    kind = KindField(max_length=64, help_text="A kind a Service takes: taxpayer, account")
    key = SubjectKeyField(max_length=128, trim_whitespace=False,
                          help_text="Its key, in the grammar the kind's Service declares: an EIN is NN-NNNNNNN")
    name = NameField(max_length=200, help_text="Acme Robotics")
    calendar = StrictCharField(required=False, max_length=32,
                               help_text="cal_…: its own; else its Service's, else the brand's default")
    contacts = ContactsField(
        required=False, help_text="Their people: [{name, email, phone, zone, role, primary}]; the first is primary "
                                  "unless one says")
    metadata = MetadataField(required=False)
    test_clock = StrictCharField(required=False, allow_blank=True, max_length=64,
                                 help_text="tc_…: a test key's subject lives on a test clock")


class SubjectUpdateSerializer(serializers.Serializer):
    name = NameField(required=False, max_length=200)
    calendar = StrictCharField(required=False, max_length=32, help_text="Only while it has no open date")
    metadata = MetadataField(required=False, help_text='Merged; a key set to "" is removed')


class SubjectListQuerySerializer(ListQuerySerializer):
    kind = query_field("Only subjects of this kind")
    key = query_field("Only the subject with this key (with kind)", max_length=128)
    test_clock = query_field("The test clock's subjects; the live clock's when absent")


class SubjectSerializer(serializers.Serializer):
    id = serializers.CharField()
    object = const("subject", "SubjectObject")
    kind = serializers.CharField()
    key_name = serializers.CharField(help_text="ein, domain …")
    key = serializers.CharField()
    name = serializers.CharField()
    calendar = serializers.CharField(allow_null=True, help_text="cal_…: where its dates fall")
    zone = serializers.CharField()
    contacts = ContactSerializer(many=True)
    metadata = serializers.DictField(child=serializers.CharField())
    livemode = serializers.BooleanField()
    test_clock = serializers.CharField(allow_null=True)
    created = serializers.CharField(allow_null=True)


class SubscriptionCreateSerializer(serializers.Serializer):
    subject = StrictCharField(max_length=32, help_text="sbj_…")
    plan = StrictCharField(max_length=64, help_text="A Service that renews or mints: tax-plan")
    input = DeclaredInputField(required=False, default=dict,
                               help_text="The plan's declared input; invalid_input names the first field refused")
    metadata = MetadataField(required=False)

    def validate_input(self, value):
        plain_json(value)
        return value


class JobCreateSerializer(serializers.Serializer):
    subject = StrictCharField(max_length=32, help_text="sbj_…")
    service = StrictCharField(max_length=64, help_text="The Service to open a job of: annual-return")
    input = serializers.DictField(required=False, default=dict, help_text="The Service's declared input")
    period = StrictCharField(required=False, max_length=32,
                             help_text="Its period in the Service's kind (2027, 2027-Q2, 2027-05); default: today's")
    metadata = MetadataField(required=False)

    def validate_input(self, value):
        plain_json(value)
        return value


# -- views -----------------------------------------------------------------------------------------------------
class SubjectListView(BrandAPIView):
    parser_classes = [SafeJSONParser]  # metadata is an object, which a form's flat fields cannot carry

    @extend_schema(operation_id="subjects_list", tags=["subjects"], parameters=[SubjectListQuerySerializer],
                   summary="List subjects",
                   description="The live clock's subjects, or a test clock's, oldest first; `kind` and `key` find one.",
                   responses={200: list_serializer("SubjectList", SubjectSerializer), **ERRORS, **NOT_FOUND})
    def get(self, request):
        params = self.query(SubjectListQuerySerializer)
        scope = owned(Subject.objects.select_related("calendar"), self.brand)
        qs = scope.filter(domain=domain_of(self.brand, params.get("test_clock")))
        if params.get("kind"):
            qs = qs.filter(kind=params["kind"])
        if params.get("key"):
            qs = qs.filter(key=params["key"])
        return Response(page(qs, scope=scope, order=SUBJECT_ORDER, lookup="pk", params=params, url="/subjects",
                             render=lambda rows: [subject_json(s) for s in rows], what="subject"))

    @extend_schema(
        operation_id="subjects_create", tags=["subjects"], request=SubjectCreateSerializer, summary="Create a subject",
        description=f"A customer: a kind a Service takes ({', '.join(subject_kinds()) or 'none yet'}) and its key "
                    "in the kind's grammar. Its calendar: its own, else its Service's, else the brand's default; "
                    "a brand with none is refused (calendar_required). Its contacts (their people) may come with "
                    "it. Errors: invalid_kind, invalid_email, invalid_role (param contacts[i].…), "
                    "invalid_subject_key, calendar_required, subject_exists (409, naming the subject), "
                    "live_mode_only (403: a test key names its test_clock).",
        responses={201: SubjectSerializer, **ERRORS, **NOT_FOUND, **WRONG_MODE, 409: error_response("subject_exists")},
    )
    def post(self, request):
        body = self.body(SubjectCreateSerializer)
        domain = arm_domain_of(self.brand, body.get("test_clock"))
        cal = get_calendar(brand=self.brand, calendar_id=body["calendar"]) if body.get("calendar") else None
        subject = subject_create(brand=self.brand, domain=domain, kind=body["kind"], key=body["key"],
                                 name=body["name"], calendar=cal, metadata=body.get("metadata"),
                                 contacts=body.get("contacts"), now=domain_now(domain=domain))
        return Response(subject_json(subject), status=201)


class SubjectDetailView(BrandAPIView):
    parser_classes = [SafeJSONParser]

    @extend_schema(operation_id="subjects_retrieve", tags=["subjects"], summary="Retrieve a subject",
                   responses={200: SubjectSerializer, 401: ERRORS[401], **NOT_FOUND})
    def get(self, request, subject_id: str):
        return Response(subject_json(get_subject(self.brand, subject_id)))

    @extend_schema(
        operation_id="subjects_update", tags=["subjects"], request=SubjectUpdateSerializer, summary="Update a subject",
        description="Its name, metadata (merged) and, while it has no open date, its calendar "
                    "(subject_has_open_dates, 409).",
        responses={200: SubjectSerializer, **ERRORS, **NOT_FOUND, 409: error_response("subject_has_open_dates")},
    )
    def post(self, request, subject_id: str):
        subject = get_subject(self.brand, subject_id)
        body = self.body(SubjectUpdateSerializer)
        subject = subject_update(subject=subject, changes=body, now=domain_now(domain=subject.domain))
        return Response(subject_json(subject))


def subscription_create_view(view: BrandAPIView) -> Response:
    body = view.body(SubscriptionCreateSerializer)
    subject = get_subject(view.brand, body["subject"], param="subject")
    sub = subscription_start(brand=view.brand, subject=subject, plan=body["plan"], input=body["input"],
                             metadata=body.get("metadata"))
    return Response(subscriptions_json([sub])[0], status=201)


def job_create_view(view: BrandAPIView) -> Response:
    body = view.body(JobCreateSerializer)
    subject = get_subject(view.brand, body["subject"], param="subject")
    job = job_order(brand=view.brand, subject=subject, service=body["service"], input=body["input"],
                    period=body.get("period"), metadata=body.get("metadata"))
    return Response(jobs_json([job])[0], status=201)


SUBSCRIPTION_CREATE = extend_schema(
    operation_id="subscriptions_create", tags=["subscriptions"], request=SubscriptionCreateSerializer,
    summary="Subscribe a subject to a plan",
    description="On the subject's clock, at its time (a test clock's subject starts at the clock's time): the plan's "
                "declared input is checked (invalid_input with param), the live tier too (plan_<tier>_required, "
                "403), and the first cycle and its schedules are armed, in one transaction. Errors: invalid_service, "
                "not_a_plan, subject_kind_mismatch, subscription_exists (409).",
    responses={201: SubscriptionSerializer, **ERRORS, **NOT_FOUND, 403: error_response("plan_launch_required, plan_team_required"),
               409: error_response("subscription_exists")},
)
JOB_CREATE = extend_schema(
    operation_id="jobs_create", tags=["jobs"], request=JobCreateSerializer, summary="Order a job",
    description="A one-off job for a subject, on its clock. Within the allowance of the subject's plan for the "
                "Service it is included (no charge) and counted; beyond it, or with no plan that includes it, it "
                "is priced as the Service says (held for a Service that holds, else charged). Errors: "
                "invalid_service, subject_kind_mismatch, invalid_input, plan_<tier>_required (403), "
                "job_exists (409: that period was ordered already).",
    responses={201: JobSerializer, **ERRORS, **NOT_FOUND, 403: error_response("plan_team_required …"),
               409: error_response("job_exists")},
)



class SubscriptionsView(SubscriptionListView):
    parser_classes = [SafeJSONParser]  # the plan's input is an object

    @SUBSCRIPTION_CREATE
    def post(self, request):
        return subscription_create_view(self)


class JobsView(JobListView):
    parser_classes = [SafeJSONParser]  # the job's input is an object

    @JOB_CREATE
    def post(self, request):
        return job_create_view(self)
