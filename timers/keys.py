"""The timer key grammar: ``<owner>:<kind>:<name>:<occurrence>[@<move>]``.

Pure: no database. The occurrence names the period or item, never its date, so a date that moves never
changes a key; ``@<move>`` counts the clock's moves on notice/escalate/ack/due timers.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .errors import InvalidKey

# The tick's places: a cycle renews before its schedule mints, and money moves last.
PLACES: dict[str, int] = {
    "cycle": 1,
    "schedule": 2,
    "ask": 3,
    "task": 4,
    "deadline": 5,
    "rung": 6,
    "due": 6,
    "window": 7,
    "money": 8,
}
KINDS = tuple(PLACES)
MAX_KEY_LENGTH = 255  # bytes: Timer.key's column
MAX_OWNER_LENGTH = 160  # characters: Timer.owner's column (the owner is stored on its own, to list by it)

_OWNER = r"[A-Za-z0-9_][A-Za-z0-9_.#\-]*"
_PART = r"[^:@\x00-\x1f\x7f]+"
_KEY_RE = re.compile(
    rf"^(?P<owner>{_OWNER}):(?P<kind>[a-z]+):(?P<name>{_PART}):(?P<occurrence>{_PART})(?:@(?P<move>0|[1-9][0-9]{{0,8}}))?$"
)

# The same grammar as one pattern for the API's schema (ECMA and Python regex alike): the owner's length,
# the kinds, and a name and occurrence without the spaces str.strip() takes off either end. The byte
# limit (MAX_KEY_LENGTH) is the schema's maxLength in characters; parse() still counts bytes.
_SPACE = r" \t\n\x0b\x0c\r\x1c-\x1f\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
_EDGE = rf"[^:@\x00-\x1f\x7f{_SPACE}]"
_SCHEMA_PART = rf"{_EDGE}(?:[^:@\x00-\x1f\x7f]*{_EDGE})?"


@dataclass(frozen=True, slots=True)
class Key:
    owner: str
    kind: str
    name: str
    occurrence: str
    move: int | None = None

    def __post_init__(self) -> None:
        # Validate by formatting and parsing: one grammar, one place.
        parse(format_key(self.owner, self.kind, self.name, self.occurrence, self.move))

    @property
    def place(self) -> int:
        return PLACES[self.kind]

    def __str__(self) -> str:
        return format_key(self.owner, self.kind, self.name, self.occurrence, self.move)

    def moved(self) -> Key:
        """The successor's key after the clock moves once more (``@n`` → ``@n+1``)."""
        if self.move is None:
            raise InvalidKey(f"key {self} has no @<move>: a run rung keeps its key when its clock moves")
        return Key(self.owner, self.kind, self.name, self.occurrence, self.move + 1)


def format_key(owner: str, kind: str, name: str, occurrence: str, move: int | None = None) -> str:
    text = f"{owner}:{kind}:{name}:{occurrence}"
    return text if move is None else f"{text}@{move}"


def parse(text: str) -> Key:
    """Parse a key, or raise InvalidKey saying which part is wrong."""
    if not isinstance(text, str) or not text:
        raise InvalidKey("a key is <owner>:<kind>:<name>:<occurrence>[@<move>]; got an empty key")
    try:
        size = len(text.encode())
    except UnicodeEncodeError:  # a lone surrogate (from JSON's \ud800 or a mis-decoded argv) is no text
        raise InvalidKey(f"key {text!r} is not valid Unicode: it has a lone surrogate") from None
    if size > MAX_KEY_LENGTH:
        raise InvalidKey(f"key is {size} bytes; at most {MAX_KEY_LENGTH}")
    if text != text.strip():
        raise InvalidKey(f"key {text!r} has leading or trailing spaces")
    m = _KEY_RE.match(text)
    if not m:
        parts = text.split(":")
        if len(parts) != 4:
            raise InvalidKey(
                f"key {text!r} has {len(parts)} parts; a key is <owner>:<kind>:<name>:<occurrence>[@<move>]"
            )
        if parts[1] not in PLACES:
            raise InvalidKey(f"key {text!r} has unknown kind {parts[1]!r}; kinds are {', '.join(KINDS)}")
        raise InvalidKey(
            f"key {text!r} is malformed: owner is an id, name and occurrence are non-empty without ':' or '@', "
            "and @<move> is a whole number"
        )
    if len(m["owner"]) > MAX_OWNER_LENGTH:
        raise InvalidKey(f"key {text[:40]!r}…: the owner is {len(m['owner'])} characters; at most {MAX_OWNER_LENGTH}")
    kind = m["kind"]
    if kind not in PLACES:
        raise InvalidKey(f"key {text!r} has unknown kind {kind!r}; kinds are {', '.join(KINDS)}")
    name, occurrence = m["name"], m["occurrence"]
    for label, part in (("name", name), ("occurrence", occurrence)):
        if part != part.strip():
            raise InvalidKey(f"key {text!r}: the {label} {part!r} has leading or trailing spaces")
    move = m["move"]
    return _key(m["owner"], kind, name, occurrence, None if move is None else int(move))


def _key(owner: str, kind: str, name: str, occurrence: str, move: int | None) -> Key:
    # Bypass __post_init__ re-validation: the regex has already accepted these parts.
    key = object.__new__(Key)
    object.__setattr__(key, "owner", owner)
    object.__setattr__(key, "kind", kind)
    object.__setattr__(key, "name", name)
    object.__setattr__(key, "occurrence", occurrence)
    object.__setattr__(key, "move", move)
    return key



KEY_PATTERN = (
    rf"^[A-Za-z0-9_][A-Za-z0-9_.#\-]{{0,{MAX_OWNER_LENGTH - 1}}}:(?:{'|'.join(KINDS)}):{_SCHEMA_PART}:{_SCHEMA_PART}"
    r"(?:@(?:0|[1-9][0-9]{0,8}))?$"
)
