"""The signature every outside call carries (timers/signing.py): a ``t`` outside the tolerance is refused,
earlier or later, and a secret being rotated verifies under the old and the new secret at once."""

from __future__ import annotations

import pytest

from timers.signing import TOLERANCE_SECONDS, sign, verify

BODY = b'{"id":"evt_1","object":"event"}'
NOW = 1_796_143_703


def test_a_signature_within_the_tolerance_verifies_and_any_change_to_body_or_secret_does_not():
    header = sign("whsec_a", BODY, at=NOW)
    assert header.startswith(f"t={NOW},v1=")
    assert verify("whsec_a", BODY, header, now=NOW)
    assert verify("whsec_a", BODY, header, now=NOW + TOLERANCE_SECONDS)
    assert verify("whsec_a", BODY, header, now=NOW - TOLERANCE_SECONDS)
    assert not verify("whsec_b", BODY, header, now=NOW)
    assert not verify("whsec_a", BODY + b" ", header, now=NOW)
    assert not verify("whsec_a", BODY, header.replace(f"t={NOW}", f"t={NOW + 1}"), now=NOW)


@pytest.mark.parametrize("late", [TOLERANCE_SECONDS + 1, 3600, 86400 * 365])
def test_a_stale_signature_is_refused(late):
    """A call recorded and replayed later: its t is older than the tolerance."""
    assert not verify("whsec_a", BODY, sign("whsec_a", BODY, at=NOW), now=NOW + late)


@pytest.mark.parametrize("early", [TOLERANCE_SECONDS + 1, 3600])
def test_a_signature_from_the_future_beyond_the_tolerance_is_refused(early):
    assert not verify("whsec_a", BODY, sign("whsec_a", BODY, at=NOW), now=NOW - early)


def test_the_tolerance_is_the_callers_to_choose():
    header = sign("whsec_a", BODY, at=NOW)
    assert verify("whsec_a", BODY, header, now=NOW + 3600, tolerance=7200)
    assert not verify("whsec_a", BODY, header, now=NOW + 20, tolerance=10)


def test_while_a_secret_is_rotated_the_old_and_the_new_secret_both_verify_and_a_wrong_one_does_not():
    """The sender signs with both (two v1=, the new first); a receiver that has moved to the new secret and one
    still on the old both accept; a receiver holding both accepts a header signed by either alone."""
    both = sign(["whsec_new", "whsec_old"], BODY, at=NOW)
    assert both.count("v1=") == 2
    assert verify("whsec_new", BODY, both, now=NOW)
    assert verify("whsec_old", BODY, both, now=NOW)
    assert not verify("whsec_wrong", BODY, both, now=NOW)
    for alone in (sign("whsec_old", BODY, at=NOW), sign("whsec_new", BODY, at=NOW)):
        assert verify(["whsec_new", "whsec_old"], BODY, alone, now=NOW)
        assert not verify(["whsec_wrong", "whsec_other"], BODY, alone, now=NOW)
    # After the rotation the old secret is dropped from the list: a header signed with it alone is refused.
    assert not verify(["whsec_new"], BODY, sign("whsec_old", BODY, at=NOW), now=NOW)


@pytest.mark.parametrize("header", ["", "t=1796143703", "v1=abc", f"t=soon,v1={'0' * 64}", "garbage"])
def test_a_header_without_a_time_and_a_signature_is_refused(header):
    assert not verify("whsec_a", BODY, header, now=NOW)
