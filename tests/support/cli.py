"""The CLI as a person runs it: `run` prints what a command prints; `one_line` expects its one-line error."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError


def run(*args: str) -> str:
    out = StringIO()
    call_command(*args, stdout=out, stderr=StringIO())
    return out.getvalue()


def one_line(args: list[str], code: str) -> str:
    with pytest.raises(CommandError) as err:
        run(*args)
    text = str(err.value)
    assert text.startswith(f"{code}: ") and "\n" not in text, text
    return text
