"""People's time as the tick fires it: a Task's hold (its warning and its end), a party's link (its reminder
and expiry) and a grant's end, a step's deadline, a standby window's end, and the scripted acts of a test
clock. Registered in ServicesConfig.ready under their kinds' names (``kinds``).

The top floor of people's time: each handler calls the same service functions the API and the portals call.
"""

from __future__ import annotations

from datetime import timedelta

from django.db import IntegrityError, transaction

from calendars.answers import Person, party_person
from timers import handlers
from timers.armer import FiringArmer
from timers.engine import Firing
from timers.errors import KeepingTimeError, Refused
from timers.timeutil import iso_z

from . import registry
from .acts import ask_answer, grant_give, step_done
from .jobs import job_activity, job_end
from .kinds import ACT, ASK, STEP_DEADLINE, TASK, WINDOW
from .models import Ask, Grant, Job, Task, Window
from .notifications import notify, when
from .policies import policy_set
from .steps import send_link
from .tasks import arm_hold, task_extend, task_release, task_reopen, task_take
from .windows import window_close, window_open


def fire_task(f: Firing) -> None:
    task = Task.objects.select_related("job", "member").get(pk=f.timer.data["task"])
    point, take = f.timer.data["point"], int(f.timer.data["take"])
    if task.status != Task.Status.TAKEN or task.takes != take:
        f.what = f"skipped · {task.id} is {task.status}"
        return
    armer = FiringArmer(f)
    member = task.member.get_username()
    if task.hold_until > f.instant:
        # Extended since this timer was armed: the next end (and its warning) from the extension.
        if point == "hold":
            move = (f.key.move or 0) + 1
            arm_hold(armer, task, start=f.instant, move=move)
            f.what = f"{task.id} · hold extended to {iso_z(task.hold_until)}"
            return
        if f.key.move is None and task.extended:
            f.what = f"{task.id} · extended: warned at three quarters of the extension"
            return
    if point == "warn":
        f.record("task.hold_warning", subject=task.job_id, data={"task": task.id, "member": member,
                                                                  "hold_until": iso_z(task.hold_until)})
        notify(f, kind="task.hold_ending", subject=task.id,
               recipients=[Person(member, task.member.email, user_id=task.member.pk)],
               message=f"Your hold on {task.step} ({task.job.service} {task.job.period}) ends "
                       f"{when(task.hold_until, task.brand_id)}; extend it once, or it opens again for the pool")
        f.what = f"{task.id} · {member}'s hold ends {iso_z(task.hold_until)}"
        return
    task_reopen(armer, task, why="hold_ended")
    f.what = f"{task.id} · {member}'s hold ended · open again for {task.pool}"


def fire_ask(f: Firing) -> None:
    data = f.timer.data
    if data["point"] == "grant":
        return _grant_ended(f)
    ask = Ask.objects.select_related("job").get(pk=data["ask"])
    job, link = ask.job, int(data["link"])
    if ask.status != Ask.Status.OPEN or ask.link != link or job.status != Job.Status.OPEN:
        f.what = f"skipped · {ask.id} is {ask.status}"
        return
    what = ask.step or f"grant {ask.scope}"
    if data["point"] == "remind":
        f.record("ask.reminded", subject=job.id, data={"ask": ask.id, "party": ask.party, "link": link,
                                                      "expires": iso_z(ask.expires_at)})
        notify(f, kind="ask.expiring", subject=ask.id, recipients=[party_person(job.subject_id, ask.party)],
               message=f"The link for {what} ({job.service} {job.period}) expires "
                       f"{when(ask.expires_at, job.brand_id)}")
        f.what = f"{ask.id} · reminded {ask.party} · expires {iso_z(ask.expires_at)}"
        return
    armer = FiringArmer(f)
    if link == 1:
        svc = registry.get(job.service, job.version)
        send_link(armer, job, step=ask.step, scope=ask.scope, entry=ask.entry, party=ask.party,
                   span=svc.step_expires.get(ask.step), link=2, ask=ask)
        f.what = f"{ask.id} · expired · the link opens once more, to {iso_z(ask.expires_at)}"
        return
    Ask.objects.filter(pk=ask.pk).update(status=Ask.Status.EXPIRED)
    f.record("ask.expired", subject=job.id, data={"ask": ask.id, "party": ask.party, "link": link})
    job_end(armer=armer, job=job, status=Job.Status.LAPSED, reason=f"the link for {what} expired twice")
    notify(f, kind="job.lapsed", subject=job.id, recipients=[party_person(job.subject_id, ask.party), "owner"],
           message=f"{job.service} {job.period} ended: {ask.party}'s link for {what} expired twice; "
                   "the amount held is returned")
    f.what = f"{ask.id} · expired twice · {job.id} lapsed"


def _grant_ended(f: Firing) -> None:
    grant = Grant.objects.select_related("job").get(pk=f.timer.data["grant"])
    job = grant.job
    if grant.status != Grant.Status.ACTIVE:
        f.what = f"skipped · {grant.id} {grant.status}"
        return
    Grant.objects.filter(pk=grant.pk).update(status=Grant.Status.ENDED)
    f.record("grant.ended", subject=job.id, data={"grant": grant.id, "scope": grant.scope, "party": grant.party})
    if job.status != Job.Status.OPEN:
        f.what = f"{grant.id} · {grant.scope} ended"
        return
    # The party is asked again (no expiry: a step that needs it waits, refused needs_grant, until it comes).
    try:
        with transaction.atomic():
            send_link(FiringArmer(f), job, step="", scope=grant.scope, entry=grant.number, party=grant.party,
                       span=None, link=1)
    except IntegrityError:
        pass
    notify(f, kind="grant.ended", subject=job.id, recipients=[party_person(job.subject_id, grant.party)],
           message=f"Your {grant.scope} grant for {job.service} {job.period} ended; grant it again to go on")
    f.what = f"{grant.id} · {grant.scope} ended · {grant.party} asked again"


def fire_step_deadline(f: Firing) -> None:
    data = f.timer.data
    job = Job.objects.get(pk=data["job"])
    if job.status != Job.Status.OPEN or job.step_entry != int(data["entry"]):
        f.what = f"skipped · {job.id} left {data['step']}"
        return
    f.record(f"step.{data['point']}", subject=job.id, data={"step": data["step"], "entry": data["entry"],
                                                            "due": data["due"]})
    f.what = f"{job.id} · {data['step']} {data['point'].replace('_', ' ')} · due {data['due']}"


def fire_window(f: Firing) -> None:
    win = Window.objects.select_related("member").get(pk=f.timer.data["window"])
    if win.status != Window.Status.OPEN:
        f.what = f"skipped · {win.id} closed"
        return
    window_close(armer=FiringArmer(f), window=win, why="ended")
    f.what = f"{win.id} · {win.member.get_username()}'s standby ended"


# What people do on a test clock (the example's "grace takes the appraisal"), so every way of a compare replays it.
ACTS = ("take", "extend", "release", "done", "answer", "grant", "activity", "policy", "window")


def fire_act(f: Firing) -> None:
    """A person's act scheduled on a test clock (the example's "grace takes the appraisal"). It runs the
    same service function the API and the portals call. A refusal the gate makes (needs_grant) is the
    gate's; one the act's own rules make (hold_extended) is recorded as act.refused, and nothing changes."""
    d = f.timer.data
    act, armer = d["act"], FiringArmer(f)
    try:
        if act == "policy":
            armed = policy_set(armer=armer, service=d["service"], name=d["name"], value=int(d["value"]))
            f.what = f"policy.set {d['service']}.{d['name']} = {d['value']} · {len(armed)} re-armed"
            return
        if act == "window":
            win = window_open(armer=armer, member=d["member"], span=timedelta(hours=int(d["hours"])),
                              brand_id=f.timer.brand_id)
            f.what = f"{d['member']} on standby until {iso_z(win.closes_at)}"
            return
        job = Job.objects.get(domain=f.domain, subject_id=d["subject"], period=d["period"], service=d["service"])
        if act in ("take", "extend", "release"):
            task = Task.objects.select_related("job", "member").filter(job=job, entry=job.step_entry).first()
            if task is None:
                raise KeepingTimeError(f"{job.id} has no Task at {job.step or 'no step'}", code="no_task", status=409)
            {"take": task_take, "extend": task_extend, "release": task_release}[act](
                armer=armer, task=task, member=d["member"])
        elif act == "done":
            step_done(armer=armer, job=job, step=d["step"], member=d.get("member", ""))
        elif act == "answer":
            ask_answer(armer=armer, job=job, step=d["step"])
        elif act == "grant":
            grant_give(armer=armer, job=job, scope=d["scope"])
        elif act == "activity":
            job_activity(armer=armer, job=job, what=d.get("what", ""))
        f.what = f"{act} · {job.id}" + (f" · {d['member']}" if d.get("member") else "")
    except Refused:
        raise
    except KeepingTimeError as exc:
        f.record("act.refused", data={"act": act, "code": exc.code, "message": str(exc)})
        f.what = f"{act} refused {exc.code}"


def register() -> None:
    for name, fn in ((TASK, fire_task), (ASK, fire_ask), (WINDOW, fire_window), (STEP_DEADLINE, fire_step_deadline),
                     (ACT, fire_act)):
        handlers.register(name, fn, atomic=True, replace=True)
