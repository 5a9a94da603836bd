"""The delivery portal: a brand's members sign in with Django auth. "Your dates" lists each Task's due date
and hold beside the clocks the member answers for, late first, and their standby window. The acts: take a
Task, extend its hold once, release it, mark it done; acknowledge, mark done and choose on their own clocks;
withdraw from a subject naming a successor (the clocks they answered for move to the successor, on the
record). A member sees only their own Tasks, the open Tasks of their pools, and their own brands. An invited
member arrives by the invite's one-time link, chooses a password and is signed in (``Welcome``)."""

from __future__ import annotations

from datetime import timedelta
from zoneinfo import available_timezones

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.views import LoginView, LogoutView, PasswordResetConfirmView
from django.db.models import Exists, OuterRef
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse, reverse_lazy
from django.views.decorators.http import require_POST

from calendars import specs, words
from calendars.acts import clock_acknowledge, clock_reassign
from calendars.clocks import clock_choose, clock_satisfy
from calendars.models import ClockItem, Subject
from calendars.undo import acknowledged_of, clock_reopen, clock_unacknowledge, undo_closes, undoable
from services.acts import step_done
from services.costs import clock_costs
from services.members import member_says
from services.models import Job, PoolMember, Task, Window
from services.tasks import task_extend, task_release, task_take
from services.timeline import item_timeline, job_timeline
from services.windows import window_close, window_open
from timers.api.throttles import sign_in_limited
from timers.domains import domain_now
from timers.models import Membership, TestClock, Timer, brand_domain, is_live, live_domain

from ..acting import act
from ..history import history
from ..selectors import member_zone

LOGIN = reverse_lazy("delivery:login")


class SignIn(LoginView):
    template_name = "portals/delivery/login.html"
    redirect_authenticated_user = True

    def post(self, request, *args, **kwargs):
        # Each try counts against the client address's sign-in rate (KT_SIGN_IN_RATE_LIMIT): over it, a 429
        # page with Retry-After, and the password is not checked.
        return sign_in_limited(request) or super().post(request, *args, **kwargs)

    def get_success_url(self) -> str:
        return self.get_redirect_url() or reverse("delivery:home")


class SignOut(LogoutView):
    next_page = LOGIN


class Welcome(PasswordResetConfirmView):
    """The invite's one-time link (services.members.member_invite): the member chooses a password and is
    signed in. Django's own token: it dies once the password is set (it hashes the password) and after
    PASSWORD_RESET_TIMEOUT. The token leaves the address at once (the view moves it into the session and
    redirects to ``…/set-password``), so it is never in a referrer or the page's history."""

    template_name = "portals/delivery/welcome.html"
    reset_url_token = "set-password"
    post_reset_login = True
    post_reset_login_backend = "django.contrib.auth.backends.ModelBackend"
    success_url = reverse_lazy("delivery:home")

    def get_user(self, uidb64):
        user = super().get_user(uidb64)
        # Removed from every brand since the invite: the link opens nothing.
        if user is not None and not Membership.objects.filter(user=user).exists():
            return None
        return user

    def form_valid(self, form):
        response = super().form_valid(form)
        messages.success(self.request, "Your password is set, and you are signed in.")
        return response

    def get_context_data(self, **kwargs):
        ctx = super().get_context_data(**kwargs)
        user = getattr(self, "user", None)
        if ctx.get("validlink") and user is not None:
            places = Membership.objects.filter(user=user).select_related("brand").order_by("brand__name")
            ctx.update(username=user.get_username(), name=next((m.name for m in places if m.name), ""),
                       brands=[m.brand.name for m in places])
        return ctx


def _brands(user) -> list[str]:
    return list(Membership.objects.filter(user=user).values_list("brand_id", flat=True))


def _my_tasks(user, brands: list[str]):
    """The member's taken Tasks, and the open Tasks of the pools they are in (PoolMember, the brand's data):
    one query each, whatever the number of Tasks."""
    mine = list(Task.objects.filter(brand_id__in=brands, member=user, status=Task.Status.TAKEN)
                .select_related("job__subject"))
    in_pool = PoolMember.objects.filter(brand_id=OuterRef("brand_id"), pool=OuterRef("pool"),
                                        membership__brand_id=OuterRef("brand_id"), membership__user=user)
    open_ = list(Task.objects.filter(Exists(in_pool), brand_id__in=brands, status=Task.Status.OPEN)
                 .select_related("job__subject"))
    return mine, open_


def _task_row(task: Task, now_of, zone) -> dict:
    now = now_of(task.domain)
    late = task.due_at is not None and task.due_at <= now
    return {"id": task.id, "step": task.step, "job": f"{task.job.service} {task.job.period}",
            "subject": task.job.subject.name, "status": task.status,
            "due_at": words.local(task.due_at, zone), "due_in": words.until(task.due_at, now),
            "hold_until": words.local(task.hold_until, zone), "hold_left": words.until(task.hold_until, now, left=True),
            "extended": task.extended,
            "may_extend": task.status == Task.Status.TAKEN and not (task.extended or task.extensions),
            # Why Extend is not offered on a held Task: said where the button would be.
            "no_extend": "" if task.status != Task.Status.TAKEN else
            "Extended once: a hold extends once per Task." if task.extended else
            "Extended when it was held before: a hold extends once per Task." if task.extensions else "",
            "late": late, "test_clock": None if is_live(task.domain) else task.domain,
            "sort": (not late, task.due_at or task.hold_until or now)}


@login_required(login_url=LOGIN)
def home(request: HttpRequest) -> HttpResponse:
    user = request.user
    brands = _brands(user)
    clocks_now: dict[str, object] = {}

    def now_of(domain: str):
        if domain not in clocks_now:
            clocks_now[domain] = domain_now(domain=domain)
        return clocks_now[domain]

    zone = member_zone(brands, user=user)
    mine, open_ = _my_tasks(user, brands)
    tasks = sorted((_task_row(t, now_of, zone) for t in mine), key=lambda r: r["sort"])
    pool = sorted((_task_row(t, now_of, zone) for t in open_), key=lambda r: r["sort"])
    items = list(ClockItem.objects.filter(clock__brand_id__in=brands, clock__member__user=user,
                                          status__in=[ClockItem.Status.OPEN, ClockItem.Status.DUE,
                                                      ClockItem.Status.PASSED])
                 .select_related("clock__subject").order_by("due_at", "id"))
    # The dates they marked done lately (the newest few), each with its undo while its date is ahead.
    done = [i for i in ClockItem.objects.filter(clock__brand_id__in=brands, clock__member__user=user,
                                                status=ClockItem.Status.SATISFIED)
            .select_related("clock__subject").order_by("-due_at", "-id")[:DONE_LISTED]
            if i.due_at >= now_of(i.clock.domain) - DONE_WINDOW]
    costs = clock_costs({i.clock for i in items + done})
    asking = set(Timer.objects.filter(owner__in=[i.owner_key for i in items], kind="rung", status="armed",
                                      key__contains=":ack ").values_list("owner", flat=True))
    acked = acknowledged_of([i for i in items if i.status == ClockItem.Status.OPEN and i.owner_key not in asking])
    clocks = []
    for item in items:
        clock = item.clock
        spec = specs.get(clock.spec)
        now = now_of(clock.domain)
        late = item.status in ("due", "passed") or item.due_at <= now
        clocks.append({"clock": clock.id, "item": item.item or "-", "subject": clock.subject.name,
                       "brand_id": clock.brand_id,
                       "subject_id": clock.subject_id,
                       "what": _item_what(item), "due": words.day(item.due_date),
                       "test_clock": None if is_live(clock.domain) else clock.domain,
                       "due_in": words.until(item.due_at, now), "status": item.status,
                       "status_text": words.status("due" if item.status == "open" and item.due_at <= now
                                                      else "ahead" if item.status == "open" else item.status),
                       "late": late, "hard": clock.hard, "cost": costs[clock.id].says,
                       "acks": item.owner_key in asking,
                       "unack": item.owner_key in acked and undoable(item, now=now),
                       "options": list(spec.options) if item.status in ("due", "passed") else [],
                       "sort": (not late, item.due_at)})
    clocks.sort(key=lambda r: r["sort"])
    for item in sorted(done, key=lambda i: i.due_at):
        now = now_of(item.clock.domain)
        clocks.append({"clock": item.clock_id, "item": item.item or "-", "subject": item.clock.subject.name,
                       "brand_id": item.clock.brand_id, "subject_id": item.clock.subject_id,
                       "what": _item_what(item), "due": words.day(item.due_date),
                       "due_in": words.until(item.due_at, now), "status": "satisfied", "status_text": "done",
                       "late": False, "hard": item.clock.hard, "cost": costs[item.clock_id].says,
                       "test_clock": None if is_live(item.clock.domain) else item.clock.domain,
                       "reopen": undoable(item, now=now), "why_not": "" if undoable(item, now=now)
                       else undo_closes(item), "options": []})
    # Who can take over a subject's dates: the subject's own brand's people (a successor of another brand
    # would be refused), named as the brand knows them.
    team: dict[str, list[tuple[str, str]]] = {}
    for brand_id, username, name in (Membership.objects.filter(brand_id__in=brands).exclude(user=user)
                                     .order_by("name", "user__username")
                                     .values_list("brand_id", "user__username", "name")):
        team.setdefault(brand_id, []).append((username, name or username))
    subjects = sorted({(c["subject_id"], c["subject"], c["brand_id"]) for c in clocks}, key=lambda s: s[1])
    subjects = [{"id": sid, "name": name, "successors": team.get(brand_id, [])} for sid, name, brand_id in subjects]
    windows = list(Window.objects.filter(member=user, status=Window.Status.OPEN))
    # Each test run the member's rows are on is named, whatever carries them: a Task, a date, a window.
    domains = sorted({t["test_clock"] for t in tasks + pool + clocks if t["test_clock"]} | {w.domain for w in windows})
    clock_names = dict(TestClock.objects.filter(pk__in=domains).values_list("id", "name"))
    return render(request, "portals/delivery/home.html", {
        "tasks": tasks, "pool": pool, "clocks": clocks, "subjects": subjects,
        "windows": [{"id": w.id, "closes_at": words.local(w.closes_at, zone), "closes_in":
                     words.until(w.closes_at, now_of(w.domain), left=True),
                     "test_clock": None if is_live(w.domain) else clock_names.get(w.domain) or "a test run"}
                    for w in windows],
        "zone": zone.key, "zones": ZONES,
        # The zone by its name: each row's time names its own offset (PDT in summer, PST in winter).
        "chosen_zone": Membership.objects.filter(user=user).exclude(zone="").values_list("zone", flat=True).first(),
        "domains": [{"id": d, "name": clock_names.get(d) or "a test run"} for d in domains if not is_live(d)],
    })


def _act(request: HttpRequest, brand_id: str, domain: str, fn, done: str) -> HttpResponse:
    act(request, brand_id=brand_id, domain=domain, fn=fn, done=done)
    return redirect(reverse("delivery:home"))


def _not_yours(request: HttpRequest) -> HttpResponse:
    return render(request, "portals/delivery/not_found.html", status=404)


@require_POST
@login_required(login_url=LOGIN)
def task_act(request: HttpRequest, task_id: str, act: str) -> HttpResponse:
    user = request.user
    mine, open_ = _my_tasks(user, _brands(user))
    task = next((t for t in mine + open_ if t.id == task_id), None)
    # Another member's Task, another brand's, or an act that is not one: the same 404, nothing said.
    if task is None or act not in ("take", "extend", "release", "done") or (act != "take" and task not in mine):
        return _not_yours(request)
    name = user.get_username()
    zone = member_zone(_brands(user), user=user)
    what = f"{task.step} · {task.job.service} {task.job.period} for {task.job.subject.name}"
    due = f", due {words.local(task.due_at, zone)}" if task.due_at else ""
    if act == "done":
        return _act(request, task.brand_id, task.domain,
                    lambda a: step_done(armer=a, job=task.job, step=task.step, member=name, by=name),
                    f"Done: {what}{due}")
    fn = {"take": task_take, "extend": task_extend, "release": task_release}[act]
    said = {"take": f"You hold it now: {what}{due}", "extend": f"Your hold is extended (once): {what}{due}",
            "release": f"Back with the pool: {what}{due}"}[act]
    return _act(request, task.brand_id, task.domain, lambda a: fn(armer=a, task=task, member=name), said)


DONE_LISTED = 20  # the newest dates marked done a member sees (with their undo)
DONE_WINDOW = timedelta(days=30)  # …while their date is this recent


def _own_item(user, clock_id: str, item: str) -> ClockItem | None:
    found = (ClockItem.objects.select_related("clock__subject__calendar")
             .filter(clock_id=clock_id, item="" if item == "-" else item, clock__brand_id__in=_brands(user)).first())
    if found is None or found.clock.member is None or found.clock.member.user_id != user.pk:
        return None
    return found


@require_POST
@login_required(login_url=LOGIN)
def clock_act(request: HttpRequest, clock_id: str, item: str, act: str) -> HttpResponse:
    it = _own_item(request.user, clock_id, item)
    if it is None or act not in ("acknowledge", "done", "choose", "reopen", "unacknowledge"):
        return _not_yours(request)
    who, clock = request.user.get_username(), it.clock
    what = f"{_item_what(it)} for {clock.subject.name}"
    if act == "acknowledge":
        fn, said = (lambda a: clock_acknowledge(armer=a, item=it, by=who)), "Acknowledged"
    elif act == "done":
        me = Membership.objects.filter(user=request.user, brand_id=clock.brand_id).select_related("user").first()
        person = member_says(me) if me is not None else who  # their membership's name, never the username
        fn, said = (lambda a: clock_satisfy(armer=a, item=it, by=who, who=person)), "Marked done"
    elif act == "reopen":
        fn, said = (lambda a: clock_reopen(armer=a, item=it, by=who)), "Open again"
    elif act == "unacknowledge":
        fn, said = (lambda a: clock_unacknowledge(armer=a, item=it, by=who)), "Asking again"
    else:
        option = request.POST.get("option", "")
        fn, said = (lambda a: clock_choose(armer=a, item=it, option=option, by=who)), f"Chose {option}"
    return _act(request, clock.brand_id, clock.domain, fn, words.acted(said, what, it.due_date))


@login_required(login_url=LOGIN)
def date_history(request: HttpRequest, clock_id: str, item: str) -> HttpResponse:
    """A date the member answers for: what happened to it and what happens next, in their zone, read from the
    record (services.timeline)."""
    it = _own_item(request.user, clock_id, item)
    if it is None:
        return _not_yours(request)
    zone = member_zone(_brands(request.user), user=request.user)
    shown = history(item_timeline(item=it, zone=zone), now=domain_now(domain=it.clock.domain))
    return render(request, "portals/delivery/history.html", {
        "history": shown, "what": _item_what(it), "whose": it.clock.subject.name, "due": words.day(it.due_date)})


@login_required(login_url=LOGIN)
def task_history(request: HttpRequest, task_id: str) -> HttpResponse:
    """A Task the member holds, or one of their pools': its job's history (taken, extended once, released,
    each step done) and what happens next, in their zone."""
    mine, open_ = _my_tasks(request.user, _brands(request.user))
    task = next((t for t in mine + open_ if t.id == task_id), None)
    if task is None:
        return _not_yours(request)
    job = Job.objects.select_related("subject__calendar").get(pk=task.job_id)
    zone = member_zone(_brands(request.user), user=request.user)
    shown = history(job_timeline(job=job, zone=zone), now=domain_now(domain=task.domain))
    return render(request, "portals/delivery/history.html", {
        "history": shown, "what": f"{task.step} · {task.job.service} {task.job.period}",
        "whose": task.job.subject.name, "due": words.local(task.due_at, zone) if task.due_at else ""})


def _item_what(item: ClockItem) -> str:
    """A date as the member's list names it: 'file · the 2027 return · US'."""
    clock = item.clock
    return (clock.title or clock.name).replace("{period}", clock.period) + (f" · {item.item}" if item.item else "")


@require_POST
@login_required(login_url=LOGIN)
def withdraw(request: HttpRequest, subject_id: str) -> HttpResponse:
    """Withdraw from a subject: each clock of it the member answers for moves to the successor (a member of
    the same brand), on the record."""
    user = request.user
    brands = _brands(user)
    subject = Subject.objects.filter(pk=subject_id, brand_id__in=brands).first()
    successor = Membership.objects.filter(user__username=request.POST.get("successor", ""),
                                          brand_id=subject.brand_id if subject else None).exclude(user=user).first()
    clocks = list(subject.clocks.filter(member__user=user)) if subject else []
    if subject is None or not clocks:
        return _not_yours(request)
    if successor is None:
        messages.error(request, "Choose who takes over your dates: someone on your team.")
        return redirect(reverse("delivery:home"))
    done = f"{member_says(successor)} answers for {subject.name}'s dates now."

    def move(armer) -> None:  # the subject's clocks are on its own clock domain, the act's
        for clock in clocks:
            clock_reassign(armer=armer, clock=clock, to=successor, by=user.get_username(), why="withdrew")

    return _act(request, subject.brand_id, brand_domain(subject.domain, subject.brand_id), move, done)


ZONES = sorted(z for z in available_timezones() if "/" in z and not z.startswith(("Etc/", "SystemV/")))


@require_POST
@login_required(login_url=LOGIN)
def set_zone(request: HttpRequest) -> HttpResponse:
    """The member's own zone for this portal's times (blank: their brand calendar's)."""
    zone = request.POST.get("zone", "")
    if zone and zone not in ZONES:
        messages.error(request, "Choose a time zone from the list.")
    else:
        Membership.objects.filter(user=request.user).update(zone=zone)
        messages.success(request, f"Times show in {zone} now." if zone else "Times show in your team's zone now.")
    return redirect(reverse("delivery:home"))


@require_POST
@login_required(login_url=LOGIN)
def window_act(request: HttpRequest, act: str) -> HttpResponse:
    user = request.user
    brands = _brands(user)
    if act == "open":
        chosen = request.POST.get("test_clock")
        brand_id = Membership.objects.filter(user=user).values_list("brand_id", flat=True).first()
        try:
            hours = int(request.POST.get("hours", "8"))
        except ValueError:
            hours = 0
        if chosen and not TestClock.objects.filter(pk=chosen, brand_id=brand_id).exists():
            return _not_yours(request)
        domain = chosen or live_domain(brand_id or "")
        if brand_id is None or not 1 <= hours <= 24 * 14:
            messages.error(request, "A standby window lasts from 1 hour to 14 days.")
            return redirect(reverse("delivery:home"))
        return _act(request, brand_id, domain,
                    lambda a: window_open(armer=a, member=user.get_username(), span=timedelta(hours=hours),
                                          brand_id=brand_id), f"On standby for {hours} h.")
    win = Window.objects.filter(pk=request.POST.get("window", ""), member=user, brand_id__in=brands).first()
    if win is None or act != "close":
        return _not_yours(request)
    return _act(request, win.brand_id, win.domain, lambda a: window_close(armer=a, window=win), "Standby closed.")
