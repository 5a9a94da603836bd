"""The seed's versions lines (issue 36, item 7), on the Acme example as `loadexample apis_tax` loads it.

`versions check --against live services/annual_return.py` takes the Service's file as the seed writes it, from
the checkout or from a KT_SERVICES package; `versions list` says `retired 2027-01 on 2028-02-01` once the 2027-01
version's last timer closes (Acme's 2027 return joined its subject and its last clocks repinned), calls an older
version that still runs timers pinned, and never calls one that never ran retired.
"""

from __future__ import annotations

from datetime import UTC, datetime
from io import StringIO

import pytest
from django.core.management import call_command
from django.test import override_settings

from services import registry
from tests.support.cli import one_line, run
from timers import transports
from timers.advance import advance
from timers.models import Timer, Version

pytestmark = pytest.mark.django_db

JUNE = "services.examples.apis_tax.annual_return_2027_06"


@pytest.fixture
def acme() -> str:
    transports.register("notices", transports.RecordingTransport())
    out = StringIO()
    call_command("loadexample", "apis_tax", stdout=out)
    return out.getvalue().split("test clock ")[1].split()[0]


def _line(lines: list[str], label: str) -> str:
    return next(x for x in lines if f" {label} " in f" {x} ")


def test_versions_list_says_retired_2027_01_on_2028_02_01_when_its_last_timer_closes(acme):
    old = Version.objects.get(name="2027-01")
    advance(acme, datetime(2027, 12, 1, tzinfo=UTC))
    # Superseded by the June deploy, but its 2026 return's clocks still run on it: pinned, not retired.
    assert Timer.objects.filter(domain=acme, version=old.digest, status__in=["armed", "held"]).exists()
    lines = run("versions", "list", "--test-clock", acme).splitlines()
    assert _line(lines, "2027-01").startswith("2027-01    sha256:") and " pinned · annual-return" in _line(lines,
                                                                                                         "2027-01")
    assert not any("retired" in x for x in lines), lines

    advance(acme, datetime(2028, 2, 2, tzinfo=UTC))
    assert not Timer.objects.filter(domain=acme, version=old.digest, status__in=["armed", "held"]).exists()
    lines = run("versions", "list", "--test-clock", acme).splitlines()
    assert f"retired 2027-01 on 2028-02-01 · {old.digest[:15]}… · annual-return" in lines, lines
    assert " live · annual-return" in _line(lines, "2027-06")

    # The live clock never ran 2027-06 (it was deployed on the test clock only): never live, not retired.
    lines = run("versions", "list").splitlines()
    assert " never live · annual-return" in _line(lines, "2027-06") and not any("retired" in x for x in lines)


def test_versions_check_takes_the_service_file_as_the_seed_writes_it(acme):
    advance(acme, datetime(2027, 3, 1, 14, tzinfo=UTC))
    by_module = run("versions", "check", JUNE, "--test-clock", acme)
    assert by_module.startswith("services/examples/apis_tax/annual_return_2027_06.py · against live 2027-01 · ")
    # The file from the checkout, and from the package KT_SERVICES' modules live in, against the test clock.
    assert run("versions", "check", "--against", acme, "services/examples/apis_tax/annual_return_2027_06.py") \
        == by_module
    assert run("versions", "check", "--against", acme, "annual_return_2027_06.py") == by_module
    # --against live is the live clock's, as without it.
    assert run("versions", "check", "--against", "live", "services/examples/apis_tax/annual_return_2027_06.py") \
        == run("versions", "check", JUNE)
    one_line(["versions", "check", "--against", "live", "services/annual_return.py"], "invalid_version")
    one_line(["versions", "check", "--against", "tc_nope", JUNE], "resource_missing")


def test_a_brands_own_package_resolves_the_seeds_path_to_its_module(tmp_path, monkeypatch):
    pkg = tmp_path / "seed_brand" / "services"
    pkg.mkdir(parents=True)
    (tmp_path / "seed_brand" / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "annual_return.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    with override_settings(KEEPING_TIME_SERVICES=["seed_brand.services.annual_return"]):
        assert registry.module_for("services/annual_return.py") == "seed_brand.services.annual_return"
        assert registry.module_for("seed_brand/services/annual_return.py") == "seed_brand.services.annual_return"
        assert registry.module_for(str(pkg / "annual_return.py")) == "seed_brand.services.annual_return"
        assert registry.module_for("seed_brand.services.annual_return") == "seed_brand.services.annual_return"
