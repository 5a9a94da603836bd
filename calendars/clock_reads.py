"""The tick's reads of clocks, a set per batch: clock items with their clock, subject and calendar, an owner's
clocks and a subject's clocks, each read once for the batch's timers and kept current as clocks open.

Outside a batch (the API, the console) the clock functions read the database directly; inside one they ask
here, so a batch of a thousand rungs reads its items in a few queries, not one per fire.
"""

from __future__ import annotations

from collections.abc import Callable

from django.db.models import Q

from timers import batch as batches
from timers.engine import Firing
from timers.rows import read

from .clock_keys import DUE_HANDLER, RUNG_HANDLER
from .models import Clock, ClockItem, Subject

# The batch's clock items (timers/batch.py): each with its clock, subject and calendar, and the calendar that
# binds its date, by (clock id, item).
ITEMS = "calendars.items"
ITEM_TABLES = ("calendars_clockitem", "calendars_clock", "calendars_subject", "calendars_calendar")
SUBJECT_CLOCKS = "calendars.subject_clocks"  # a subject's clocks that live on it: (spec, version, owner_ref)
ITEM_NAMES = "calendars.item_names"  # a clock's items' names, by clock id
OWNER_CLOCKS = "calendars.owner_clocks"  # an owner's clocks (id, name, period), by owner_ref


def item_pks(item: ClockItem, table: str) -> tuple:
    if table == "calendars_clockitem":
        return (item.pk,)
    if table == "calendars_clock":
        return (item.clock_id,)
    clock = item.clock
    if table == "calendars_subject":
        return (clock.subject_id,)
    # The subject's calendar and the one that binds the item's date: an edit to either reads the item again.
    return tuple(dict.fromkeys(c for c in (clock.subject.calendar_id, item.calendar_id) if c is not None))


def load_items(wanted: set) -> dict:
    # The items asked for (a superset: the clocks' items of the names asked for); a clock asked for by the
    # item "" (no clock's item is named so but a single-item clock's) comes whole, with its items' names.
    clocks = {c for c, _ in wanted}
    whole = {c for c, i in wanted if i == ""}
    rows = ClockItem.objects.filter(clock_id__in=clocks)
    if len(whole) < len(clocks):
        rows = rows.filter(Q(clock_id__in=whole) | Q(item__in={i for _, i in wanted}))
    rows = read(rows.order_by("clock_id", "item"), related=("clock", "calendar"))
    # Each subject (with its calendar) once, shared by its clocks' items: a handler gets its own copy anyway.
    subjects = {s.pk: s for s in read(Subject.objects.filter(pk__in={r.clock.subject_id for r in rows}),
                                      related=("calendar",))}
    for r in rows:
        r.clock._state.fields_cache["subject"] = subjects[r.clock.subject_id]
    found = {(r.clock_id, r.item): r for r in rows}
    b = batches.current()
    if b is not None:
        # A clock's items are made all at once when it opens (clock_open) and never added to: their names, in
        # the database's order, hold for the batch whatever is written since.
        names = b.cache(ITEM_NAMES, tables=(), carry=True)
        for c in whole:
            names[c] = []
        for c, name in found:
            if c in whole:
                names[c].append(name)
    return found


def _item_of(timer) -> tuple[str, str]:
    return timer.data["clock"], timer.data.get("item", "")


def batch_item(f: Firing, key: tuple[str, str], *, read_ahead: bool = True) -> ClockItem | None:
    """The clock item (clock id, item) with its clock, subject and calendar, from the batch (read ahead for
    the batch's rungs and dues; a sibling of the firing's item, ``read_ahead=False``, is read alone)."""
    return batches.row(f, key, name=ITEMS, load=load_items, ahead=(RUNG_HANDLER, DUE_HANDLER), key_of=_item_of,
                       tables=ITEM_TABLES, pk=item_pks, read_ahead=read_ahead, carry=True)


def owner_clocks(f: Firing, owner_ref: str) -> list[tuple[str, str, str]]:
    """An owner's clocks (id, name, period) by name, from the batch. A job opens its clocks all at once
    (job_open) and none later, so the list holds for the batch whatever is written since."""
    b = batches.current()
    cache = b.cache(OWNER_CLOCKS, tables=(), carry=True)
    if owner_ref not in cache:
        refs = {owner_ref} | {r for t in f.holding((RUNG_HANDLER,)) if (r := (t.data or {}).get("of"))
                              and r not in cache}
        with b.quiet():
            rows = (Clock.objects.filter(domain=f.domain, owner_ref__in=refs).order_by("name")
                    .values_list("owner_ref", "id", "name", "period"))
            for r in refs:
                cache[r] = []
            for ref, *clock in rows:
                cache[ref].append(tuple(clock))
            # A move that keeps its siblings (a spec's kept_with) reads their items: those of these owners' clocks.
            items = b.cache(ITEMS, tables=ITEM_TABLES, pk=item_pks, carry=True)
            clocks = {(cid, "") for r in refs for cid, _, _ in cache[r]}
            items.fill(set(), lambda _: load_items(clocks) if clocks else {})
    return cache[owner_ref]


def subject_clocks(*, domain: str, subject_id: str, ahead: Callable[[], set[str]]) -> list[tuple] | None:
    """The clocks that live on a subject (spec, version, owner_ref), in a batch that keeps writes: read once
    for the subject and those ``ahead`` names, and kept current by clock_open; None outside one."""
    b = batches.current()
    if b is None or not b.keep_writes:
        return None
    cache = b.cache(SUBJECT_CLOCKS, tables=("calendars_clock",), carry=True)  # any other write to clocks drops it
    if subject_id not in cache:
        subjects = {subject_id} if cache.loaded else {subject_id} | ahead()
        cache.loaded = True
        with b.quiet():
            rows = Clock.objects.filter(domain=domain, lives_on=Clock.LivesOn.SUBJECT, subject_id__in=subjects)
            found = list(rows.values_list("subject_id", "spec", "version", "owner_ref"))
        for s in subjects:
            cache[s] = []
        for s, *clock in found:
            cache[s].append(tuple(clock))
    return cache[subject_id]


def opened_in_batch(clock: Clock, items: list[ClockItem]) -> None:
    # What a batch's later reads would ask the database for, they find: the new items, and the subject's clocks.
    b = batches.current()
    if b is None or not b.keep_writes:
        return
    cache = b.cache(ITEMS, tables=ITEM_TABLES, pk=item_pks, carry=True)
    for item in items:
        copy = cache[(clock.id, item.item)] = batches.clone(item)
        copy._state.adding = copy.clock._state.adding = False  # rows now (the clock's is kept): saved by update
    owners = b.caches.get(OWNER_CLOCKS)
    if owners is not None:
        owners.pop(clock.owner_ref, None)  # read again, with this clock, if asked
    lives = b.caches.get(SUBJECT_CLOCKS)
    if lives is not None and clock.lives_on == Clock.LivesOn.SUBJECT and clock.subject_id in lives:
        lives[clock.subject_id].append((clock.spec, clock.version, clock.owner_ref))
