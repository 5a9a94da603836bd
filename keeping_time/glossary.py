"""The words people read: what the runtime calls a thing, said as its person would say it.

One module for every page, banner and feed line a customer, member or owner reads, so the same thing is
called the same everywhere, and one list of what must never reach them (``RUNTIME_WORDS``, ``ID_PATTERN``),
which the words check (tests/test_words_check.py) holds every page and the feed to. The API, the CLI and
the record keep the runtime's words: they are for developers. Pure: no database.
"""

from __future__ import annotations

import re

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


# Words of a Service's own that mean nothing to a customer, said plainly wherever a title shows them.
TERMS = {
    "carryforward": "carried-forward loss",
    "the brand minted": "started",
    "is minted": "starts",
    "minted": "started",
}
_TERMS_RE = re.compile(r"\b(" + "|".join(re.escape(t) for t in sorted(TERMS, key=len, reverse=True)) + r")\b")


def plain(text: str) -> str:
    """A title as a person reads it: the Service's jargon said plainly, ids cut out."""
    return ID_PATTERN.sub("", _TERMS_RE.sub(lambda m: TERMS[m.group(1)], text)).replace("  ", " ").strip()
