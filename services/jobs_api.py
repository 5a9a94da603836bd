"""Jobs over HTTP: list, retrieve, deliver, cancel, record activity, wait on a party and resume, and the
owner's repin onto another version.

Each view parses, calls the service function with a DirectArmer on the object's own clock domain inside
``through_the_gate`` (a refusal is a 409 with its code, and nothing is kept), and renders.
"""

from __future__ import annotations

from drf_spectacular.extensions import OpenApiSerializerFieldExtension
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from timers.api.inputs import (
    ListQuerySerializer,
    StrictBooleanField,
    StrictCharField,
    StrictRegexField,
    TextField,
    plain_json,
    query_field,
)
from timers.api.openapi import ERRORS, NOT_FOUND, Choice, const, list_serializer
from timers.api.views import BrandAPIView, SafeJSONParser
from timers.armer import DirectArmer
from timers.errors import KeepingTimeError, NotFound
from timers.selectors import domain_of, owned, page
from timers.timeutil import iso_z

from . import registry
from .api_json import jobs_json, render_job
from .api_schemas import CONFLICT, JobSerializer
from .declare import ServiceError
from .jobs import job_activity, job_deliver, job_end, job_resume_work, job_wait
from .models import Job
from .outside_writes import through_the_gate
from .repin import job_repin
from .selectors import get_job


class JobListQuerySerializer(ListQuerySerializer):
    subject = query_field("Only this subject's (sbj_…)")
    subscription = query_field("Only the jobs this subscription minted (sbn_…)")
    status = Choice(required=False, choices=Job.Status.choices, component="JobStatus")
    test_clock = query_field("The test clock's jobs; the live clock's when absent")


class KeepsField(serializers.DictField):
    """What a delivered job's subject keeps: only the names its Services declare (subject.keeps)."""


class KeepsSchema(OpenApiSerializerFieldExtension):
    target_class = KeepsField

    def map_serializer_field(self, auto_schema, direction):
        names = sorted({k for svc in registry.all_services().values() for k in svc.subject.keeps})
        return {"type": "object", "properties": {name: {} for name in names}, "additionalProperties": False}


class JobDeliverSerializer(serializers.Serializer):
    keeps = KeepsField(required=False, default=dict,
                                  help_text="What the subject keeps, carried to the next job (the Service's "
                                            "subject.keeps names only)")

    def validate_keeps(self, value):
        plain_json(value)
        return value


class JobCancelSerializer(serializers.Serializer):
    reason = TextField(required=False, allow_blank=True, max_length=200, default="")


class JobActivitySerializer(serializers.Serializer):
    what = TextField(required=False, allow_blank=True, max_length=200, default="",
                           help_text="What happened: the account replied …")


JOB_ORDER = ("opened_at", "id")


class JobListView(BrandAPIView):
    @extend_schema(
        operation_id="jobs_list", tags=["jobs"], parameters=[JobListQuerySerializer], summary="List jobs",
        description="The live clock's jobs, or a test clock's, in the order they opened; each with its clocks and "
                    "the earliest armed timer of the job or its clocks.",
        responses={200: list_serializer("JobList", JobSerializer), **ERRORS, **NOT_FOUND},
    )
    def get(self, request):
        params = self.query(JobListQuerySerializer)
        scope = owned(Job.objects.all(), self.brand)
        qs = scope.filter(domain=domain_of(self.brand, params.get("test_clock")))
        for field in ("subject", "subscription"):
            if params.get(field):
                qs = qs.filter(**{f"{field}_id": params[field]})
        if params.get("status"):
            qs = qs.filter(status=params["status"])
        return Response(page(qs, scope=scope, order=JOB_ORDER, lookup="pk", params=params, url="/jobs",
                             render=jobs_json, what="job"))


class JobDetailView(BrandAPIView):
    @extend_schema(operation_id="jobs_retrieve", tags=["jobs"], summary="Retrieve a job",
                   responses={200: JobSerializer, 401: ERRORS[401], **NOT_FOUND})
    def get(self, request, job_id: str):
        return Response(render_job(get_job(self.brand, job_id)))


class JobDeliverView(BrandAPIView):
    parser_classes = [SafeJSONParser]  # its body carries an object, which a form's flat fields cannot
    @extend_schema(
        operation_id="jobs_deliver", tags=["jobs"], request=JobDeliverSerializer, summary="Deliver a job",
        description="Its deadline and signals stop; what the subject keeps is carried to the next job. "
                    "Errors: job_not_open (409), unknown_keeps.",
        responses={200: JobSerializer, **ERRORS, **NOT_FOUND, **CONFLICT},
    )
    def post(self, request, job_id: str):
        job = get_job(self.brand, job_id)
        body = self.body(JobDeliverSerializer)
        with through_the_gate():
            job_deliver(armer=DirectArmer(brand=self.brand, domain=job.domain), job=job, keeps=body["keeps"])
        return Response(render_job(job))


class JobCancelView(BrandAPIView):
    @extend_schema(
        operation_id="jobs_cancel", tags=["jobs"], request=JobCancelSerializer, summary="Cancel a job",
        description="Before delivery: its timers and its clocks' stop, open dates are voided, the hold returns.",
        responses={200: JobSerializer, **ERRORS, **NOT_FOUND, **CONFLICT},
    )
    def post(self, request, job_id: str):
        job = get_job(self.brand, job_id)
        body = self.body(JobCancelSerializer)
        with through_the_gate():
            job_end(armer=DirectArmer(brand=self.brand, domain=job.domain), job=job, status=Job.Status.CANCELED,
                    reason=body["reason"])
        return Response(render_job(job))


class JobActivityView(BrandAPIView):
    @extend_schema(
        operation_id="jobs_activity", tags=["jobs"], request=JobActivitySerializer, summary="Record activity",
        description="Something happened on the job: recorded (job.activity) and kept as its last activity. "
                    "No timer moves: a silent signal reads the last activity when it fires.",
        responses={200: JobSerializer, **ERRORS, **NOT_FOUND, **CONFLICT},
    )
    def post(self, request, job_id: str):
        job = get_job(self.brand, job_id)
        body = self.body(JobActivitySerializer)
        if job.status != Job.Status.OPEN:
            raise KeepingTimeError(f"{job.id} is {job.status}; activity is recorded on an open job",
                                   code="job_not_open", status=409)
        with through_the_gate():
            job_activity(armer=DirectArmer(brand=self.brand, domain=job.domain), job=job, what=body["what"])
        return Response(render_job(job))


class JobWaitSerializer(serializers.Serializer):
    on = StrictCharField(max_length=200, help_text="The party the work waits on: the organizer, the buyer …")


class JobWaitView(BrandAPIView):
    parser_classes = [SafeJSONParser]

    @extend_schema(
        operation_id="jobs_wait", tags=["jobs"], request=JobWaitSerializer, summary="Wait on a party",
        description="The work is the party's now: the deadline's at-risk timer is held (late_at never moves). "
                    "Errors: job_not_open, job_waiting (409).",
        responses={200: JobSerializer, **ERRORS, **NOT_FOUND, **CONFLICT},
    )
    def post(self, request, job_id: str):
        job = get_job(self.brand, job_id)
        body = self.body(JobWaitSerializer)
        with through_the_gate():
            job_wait(armer=DirectArmer(brand=self.brand, domain=job.domain), job=job, on=body["on"])
        return Response(render_job(job))


class JobResumeView(BrandAPIView):
    @extend_schema(
        operation_id="jobs_resume_work", tags=["jobs"], request=None, summary="The party answered",
        description="The held at-risk timer re-arms at min(now + remaining, late_at); one whose time passed "
                    "while held fires at once. Errors: job_not_waiting (409).",
        responses={200: JobSerializer, **ERRORS, **NOT_FOUND, **CONFLICT},
    )
    def post(self, request, job_id: str):
        job = get_job(self.brand, job_id)
        with through_the_gate():
            job_resume_work(armer=DirectArmer(brand=self.brand, domain=job.domain), job=job)
        return Response(render_job(job))


class JobRepinSerializer(serializers.Serializer):
    to = StrictRegexField(r"^(sha256:[0-9a-f]{8,64}|[A-Za-z0-9][A-Za-z0-9._-]{0,63})$", max_length=71,
                          help_text="A version's name (2027-06) or a sha256 prefix")
    dry_run = StrictBooleanField(required=False, default=False, help_text="Print the diff, change nothing")


class RepinChangeSerializer(serializers.Serializer):
    action = Choice(choices=[("arm", "arm"), ("supersede", "supersede"), ("keep", "keep")],
                    component="RepinAction")
    key = serializers.CharField()
    owed_at = serializers.DateTimeField(allow_null=True)


class JobRepinResultSerializer(serializers.Serializer):
    object = const("repin", "RepinObject")
    job = serializers.CharField()
    to = serializers.CharField(help_text="The version's digest")
    label = serializers.CharField()
    dry_run = serializers.BooleanField()
    changes = RepinChangeSerializer(many=True)


class JobRepinView(BrandAPIView):
    parser_classes = [SafeJSONParser]

    @extend_schema(
        operation_id="owner_jobs_repin", tags=["versions"], request=JobRepinSerializer, summary="Repin a job",
        description="Move an open job to another version: the diff timer by timer (arm, supersede, keep, with "
                    "owed times); without dry_run each changed timer is superseded by: 'repin' and the new ones "
                    "armed. Errors: job_not_open (409), version_mismatch; a version that does not exist is a 404 on to.",
        responses={200: JobRepinResultSerializer, **ERRORS, **NOT_FOUND, **CONFLICT},
    )
    def post(self, request, job_id: str):
        job = get_job(self.brand, job_id)
        body = self.body(JobRepinSerializer)
        try:
            to = registry.version_named(body["to"])
        except ServiceError as exc:  # a well-formed name that names nothing: 404, as for any id
            err = NotFound(str(exc))
            err.param = "to"
            raise err from None
        with through_the_gate():
            changes = job_repin(armer=DirectArmer(brand=self.brand, domain=job.domain), job=job, to=to,
                                dry_run=body["dry_run"])
        return Response({"object": "repin", "job": job.id, "to": to.digest, "label": to.label,
                         "dry_run": body["dry_run"], "changes": [
                             {"action": c.action, "key": c.key, "owed_at": iso_z(c.owed_at) if c.owed_at else None}
                             for c in changes]})
