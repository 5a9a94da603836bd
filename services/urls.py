"""The domain's routes: subscriptions, jobs and clocks (a brand's key), at the root without trailing slashes."""

from django.urls import path

from . import api, members_api, people_api

urlpatterns = [
    path("subscriptions", api.SubscriptionListView.as_view(), name="subscription-list"),
    path("subscriptions/<str:subscription_id>", api.SubscriptionDetailView.as_view(), name="subscription-detail"),
    path("subscriptions/<str:subscription_id>/cancel", api.SubscriptionCancelView.as_view(),
         name="subscription-cancel"),
    path("subscriptions/<str:subscription_id>/update", api.SubscriptionUpdateView.as_view(),
         name="subscription-update"),
    path("subscriptions/<str:subscription_id>/pause", api.SubscriptionPauseView.as_view(), name="subscription-pause"),
    path("subscriptions/<str:subscription_id>/resume", api.SubscriptionResumeView.as_view(),
         name="subscription-resume"),
    path("subjects/<str:subject_id>/events", api.SubjectEventView.as_view(), name="subject-events"),
    path("jobs", api.JobListView.as_view(), name="job-list"),
    path("jobs/<str:job_id>", api.JobDetailView.as_view(), name="job-detail"),
    path("jobs/<str:job_id>/deliver", api.JobDeliverView.as_view(), name="job-deliver"),
    path("jobs/<str:job_id>/cancel", api.JobCancelView.as_view(), name="job-cancel"),
    path("jobs/<str:job_id>/activity", api.JobActivityView.as_view(), name="job-activity"),
    path("jobs/<str:job_id>/wait", api.JobWaitView.as_view(), name="job-wait"),
    path("jobs/<str:job_id>/resume", api.JobResumeView.as_view(), name="job-resume"),
    path("jobs/<str:job_id>/steps/<str:step>/<str:act>", people_api.JobStepActView.as_view(), name="job-step-act"),
    path("jobs/<str:job_id>/grants", people_api.JobGrantView.as_view(), name="job-grants"),
    path("policies", people_api.PolicySetView.as_view(), name="policy-set"),
    path("windows", people_api.WindowOpenView.as_view(), name="window-open"),
    path("windows/<str:window_id>/close", people_api.WindowCloseView.as_view(), name="window-close"),
    path("clocks/<str:clock_id>/items/<str:item>/postpone", people_api.ClockPostponeView.as_view(),
         name="clock-item-postpone"),
    path("clocks/<str:clock_id>/inputs", people_api.ClockInputsView.as_view(), name="clock-inputs"),
    path("clocks/<str:clock_id>/penalties", api.ClockPenaltyView.as_view(), name="clock-penalties"),
    path("clocks/<str:clock_id>", api.ClockDetailView.as_view(), name="clock-detail"),
    path("versions", api.VersionListView.as_view(), name="version-list"),
    path("owner/jobs/<str:job_id>/repin", api.JobRepinView.as_view(), name="owner-job-repin"),
    path("clocks/<str:clock_id>/items/<str:item>/choose", api.ClockChooseView.as_view(), name="clock-item-choose"),
    path("clocks/<str:clock_id>/items/<str:item>/satisfy", api.ClockSatisfyView.as_view(),
         name="clock-item-satisfy"),
    # A brand's members and pools (services/members_api.py).
    path("members", members_api.MemberListView.as_view(), name="member-list"),
    path("members/<str:member_id>", members_api.MemberDetailView.as_view(), name="member-detail"),
    path("members/<str:member_id>/remove", members_api.MemberRemoveView.as_view(), name="member-remove"),
    path("pools", members_api.PoolListView.as_view(), name="pool-list"),
    path("pools/<str:pool>/members", members_api.PoolMemberAddView.as_view(), name="pool-member-add"),
    path("pools/<str:pool>/members/<str:member>", members_api.PoolMemberDeleteView.as_view(),
         name="pool-member-remove"),
]
