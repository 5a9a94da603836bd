"""The words people read: what the runtime calls a thing, said as its person would say it, and when.

One module for every page, banner and feed line a customer, member or owner reads, so the same thing is
called the same everywhere: a date's kind and status, who answers for it, a refusal as a sentence, and a time
in the reader's zone ('Fri 22 Oct 2027, 07:30 PDT', 'in 2 days'). Instants are UTC in the database and the
API; a page says them in its reader's zone (a member: their own or the brand's calendar's, read by
``portals.selectors.member_zone``; a customer: their calendar's). It also holds the one list of what must
never reach a reader (``RUNTIME_WORDS``, ``ID_PATTERN``), which the words check (tests/calendars/test_words_check.py)
holds every page and the feed to. The API, the CLI and the record keep the runtime's words: they are for
developers. Pure: no database, nothing of the apps but ``timers.timeutil``. It lives in calendars, the lowest
floor whose pages and feed people read, so the subject calendar, the domain and the portals all import it
downward.
"""

from __future__ import annotations

import re
from datetime import date, datetime
from zoneinfo import ZoneInfo

from timers.timeutil import day_text, local_text

# What a person must never read: an object id, or a word of the runtime's.
ID_PATTERN = re.compile(r"\b(tc|sbj|sbn|job|clk|tmr|tsk|ask|grt|win)_[A-Za-z0-9]{6,}", re.IGNORECASE)
RUNTIME_WORDS = ("minted", "gate", "domain", "timer", "rung", "unsatisfied", "superseded", "steward")
_RUNTIME_RE = re.compile(r"\b(" + "|".join(RUNTIME_WORDS) + r")s?\b", re.IGNORECASE)


def runtime_words(text: str) -> list[str]:
    """Every id and runtime word in ``text``, as found (empty: the text speaks its person's words)."""
    return [m.group(0) for m in ID_PATTERN.finditer(text)] + [m.group(0) for m in _RUNTIME_RE.finditer(text)]


# A date's kind, as its row says it.
KIND = {
    "hard": "fixed date: can't be extended",
    "clock": "due date",
    "schedule": "work starts",
    "cycle": "renewal",
    "link": "link expires",
    "grant": "access ends",
    "task": "work due",
    "deadline": "delivery due",
    "hold": "hold ends",
    "at_risk": "at risk",
}

# A date's status (calendars.entries / ClockItem.Status), as the customer reads it.
STATUS = {
    "ahead": "coming up",
    "due today": "due today",
    "open": "due now",
    "due": "missed",
    "came unsatisfied": "missed",
    "passed": "missed",
    "passed unsatisfied": "missed",
    "kept": "done",
    "satisfied": "done",
    "voided": "no longer needed",
    "ends": "ends instead (canceled)",
    "active": "open",
    "armed": "coming up",
    "sent": "sent",
    "asked": "asked you",
}


def kind(word: str) -> str:
    return KIND.get(word, word)


def status(word: str) -> str:
    """A status as people say it; a longer one ("kept 2027-04-12, rolled from …") keeps its detail."""
    if word in STATUS:
        return STATUS[word]
    head, sep, rest = word.partition(",")
    for key in sorted(STATUS, key=len, reverse=True):
        if head == key or head.startswith(key + " "):
            return plain(STATUS[key] + head[len(key):] + sep + rest)
    return plain(word)


def miss(kind: str, *, brand: str, last_chance: bool = False, held: str = "", late: str = "",
         included: bool = False, price: str = "", ends: bool = False) -> str:
    """What missing a date that is not a clock's costs, as its customer reads it (a clock's date says its own:
    the price off, the penalty the brand pays, a fixed date). ``held``, ``late``, ``price``: amounts as said."""
    if kind == "link":
        if last_chance:
            return "the work ends" + (f", and you get back what is left of the {held} held" if held else "")
        return "the link is sent once more; if that one expires too, the work ends"
    if kind == "grant":
        return "a step that needs it waits until you grant it again"
    if kind == "deadline":
        if late:
            return f"you pay {late} less if it's late"
        return "included in your plan" if included else f"{brand} answers for it"
    if kind in ("task", "hold"):
        return f"{brand}'s own work: nothing for you to do"
    if kind == "schedule":
        return f"nothing: {brand} starts the work"
    if kind == "cycle":
        if ends:
            return "it ends then: nothing more is charged"
        return f"it renews at {price}; cancel before then if you don't want it" if price else "it renews"
    return "a reminder only"


def steward(brand: str) -> str:
    """What keeping a date with the brand's steward is, in the brand's name: 'let apis.tax handle this'."""
    return f"let {brand} handle this"


def who(answers_for: str, *, you: set[str] | frozenset[str] = frozenset(), brand: str = "") -> str:
    """Who answers for a date, from the reader's side: "you" where it is theirs; the brand by name for its
    steward or nobody; else the person's name."""
    if not answers_for or answers_for in ("steward", "the brand"):
        return brand or "the brand"
    if answers_for in you:
        return "you"
    return answers_for


# A refusal (its code), said as a sentence to the person who pressed the button.
REFUSAL = {
    "date_passed": "That date has passed, so this can no longer be done for it.",
    "clock_not_open": "That date is already settled.",
    "clock_not_due": "That date hasn't come yet: there is nothing to choose until it does.",
    "clock_satisfied": "That date is already done.",
    "undo_too_late": "That date has passed, so this can no longer be undone.",
    "clock_not_done": "That date isn't marked done.",
    "not_acknowledged": "That date isn't acknowledged.",
    "not_with_brand": "The brand isn't handling that date.",
    "clock_item_voided": "That date is no longer needed.",
    "no_ack_rung": "That date doesn't ask for an acknowledgement.",
    "unknown_option": "That choice isn't one this date offers.",
    "hold_extended": "You have already extended this hold once; it can be extended only once.",
    "task_not_yours": "Someone else holds this work now.",
    "task_not_taken": "Nobody holds this work right now.",
    "task_not_open": "This work has been taken or is finished.",
    "not_in_pool": "This work is for another team.",
    "job_not_open": "This work is already finished or closed.",
    "step_not_current": "This step isn't the one the work is waiting on.",
    "successor_required": "Name who takes over your dates.",
    "successor_not_member": "Who takes over must be someone on your team.",
    "successor_is_leaver": "Name someone else to take over your dates.",
    "subscription_not_active": "This subscription isn't active.",
    "subscription_not_canceling": "This subscription isn't set to end.",
    "window_open": "You already have a standby window open.",
    "window_closed": "That standby window has closed.",
    "invalid_input": "That isn't something this can take.",
    "test_clock_deleted": "That test run was deleted: nothing on it changes any more.",
}


def refusal(code: str, message: str = "") -> str:
    """A refusal as a sentence: the code's own, else the message with any id cut out."""
    if code in REFUSAL:
        return REFUSAL[code]
    text = ID_PATTERN.sub("it", message).strip() if message else ""
    return f"That couldn't be done: {text}." if text and not runtime_words(text) else "That couldn't be done."


def failure(error: str) -> str:
    """What went wrong, as a sentence: "ZeroDivisionError: division by zero" is "It stopped with an error:
    division by zero (ZeroDivisionError)." Ids are cut out, and the runtime's words said plainly."""
    name, _, text = (error or "").partition(": ")
    if not text or " " in name:
        name, text = "", error or ""
    text = ID_PATTERN.sub("it", text).strip().rstrip(".") or "no message"
    text = _RUNTIME_RE.sub(lambda m: "step" if m.group(1).lower() in ("timer", "rung") else "", text)
    text = re.sub(r"\s{2,}", " ", text).strip()
    return f"It stopped with an error: {text}{f' ({name})' if name else ''}."


# Words of a Service's own that mean nothing to a customer, said plainly wherever a title shows them.
TERMS = {
    "carryforward": "carried-forward loss",
    "the brand minted": "started",
    "is minted": "starts",
    "minted": "started",
}
_TERMS_RE = re.compile(r"\b(" + "|".join(re.escape(t) for t in sorted(TERMS, key=len, reverse=True)) + r")\b")


def capitalized(text: str) -> str:
    """The text with its first letter upper-case and the rest as written (str.capitalize lowers the rest)."""
    return text[:1].upper() + text[1:]


def plain(text: str) -> str:
    """A title as a person reads it: the Service's jargon said plainly, ids cut out."""
    return ID_PATTERN.sub("", _TERMS_RE.sub(lambda m: TERMS[m.group(1)], text)).replace("  ", " ").strip()


# -- when: a time in the reader's zone, and how far it is ------------------------------------------------------
UTC_ZONE = ZoneInfo("UTC")


def local(when: datetime | None, zone: ZoneInfo) -> str:
    """'Fri 22 Oct 2027, 07:30 PDT': the instant in ``zone``, its abbreviation named (as notices say it)."""
    return local_text(when, zone)


def day(d: date | None) -> str:
    """'Tue 18 Apr 2028': a civil date (a due date is its calendar's day, wherever the reader is)."""
    return day_text(d)


def acted(done: str, what: str, due: date | None) -> str:
    """An act's confirmation naming the date it acted on: 'Marked done: file · the 2027 return · US, due Tue 18
    Apr 2028' (``done`` says the act, ``what`` the date as the reader's page names it)."""
    return f"{done}: {what}, due {day(due)}" if due else f"{done}: {what}"


def _span(seconds: float) -> str:
    minutes = int(abs(seconds) // 60)
    if minutes < 60:
        n, unit = max(minutes, 1), "min"
        return f"{n} {unit}"
    hours = minutes // 60
    if hours < 48:
        return f"{hours} h"
    days = hours // 24
    if days < 61:
        return f"{days} days"
    if days < 730:
        return f"{round(days / 30.44)} months"
    return f"{round(days / 365.25)} years"


def until(when: datetime | None, now: datetime, *, left: bool = False) -> str:
    """How far ``when`` is from ``now``: 'in 2 days' (or '2 days left' with ``left``), '3 h ago'."""
    if when is None:
        return ""
    seconds = (when - now).total_seconds()
    if abs(seconds) < 60:
        return "now"
    if seconds > 0:
        return f"{_span(seconds)} left" if left else f"in {_span(seconds)}"
    return f"{_span(seconds)} ago"
