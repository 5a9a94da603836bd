"""Who answers for a date, as a Service writes it: a role, never a person (pure; no database).

``"customer"`` is the customer's primary contact, ``"customer:<role>"`` their contact in that role (the brand's
word: officer, bookkeeper), ``"brand"`` the brand itself (its owners hear), ``"member:<role>"`` the member of
record in that role for the job or the subject (the preparer, or the pool whose Task they took). A name where a
role belongs ("Ada Lovelace") is refused when the Service loads, naming the file and the field.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

KINDS = ("customer", "brand", "member")
ROLE_NAME = re.compile(r"^[a-z][a-z0-9-]{0,31}$")  # a contact's role, a member role, a pool's name
STEWARD = "the brand"  # how the record and the pages name the brand as the one who answers


class RoleError(ValueError):
    pass


@dataclass(frozen=True)
class Role:
    kind: str  # customer, brand, member
    name: str = ""  # officer, preparer; "" for the customer's primary contact and for the brand

    def __str__(self) -> str:
        return f"{self.kind}:{self.name}" if self.name else self.kind

    @property
    def customers(self) -> bool:
        return self.kind == "customer"


def parse_role(text: object) -> Role:
    """``"customer:officer"`` → Role("customer", "officer"). Anything else is a RoleError saying what a role is."""
    if not isinstance(text, str):
        raise RoleError(f"a role (customer, customer:<role>, brand or member:<role>), not {text!r}")
    if text == STEWARD:  # "the brand", as the record and the pages say it
        return Role("brand")
    kind, sep, name = text.partition(":")
    if kind not in KINDS or (sep and not ROLE_NAME.match(name)) or (kind == "member" and not name) \
            or (kind == "brand" and sep):
        raise RoleError(f"a role (customer, customer:<role>, brand or member:<role>, a role being a lowercase word "
                        f"such as officer or preparer), not {text!r}: a Service names who answers by role, and "
                        "the brand's people and its customers' contacts are data")
    return Role(kind, name)


def check_role_name(text: object) -> str:
    """A contact's or a member's role: a lowercase word (officer, bookkeeper, preparer)."""
    if not isinstance(text, str) or not ROLE_NAME.match(text):
        raise RoleError(f"a role is a lowercase word of up to 32 letters, digits or hyphens (officer, bookkeeper), "
                        f"not {text!r}")
    return text
