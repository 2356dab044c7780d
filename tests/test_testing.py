"""check_policy passes the papers' policies and a policy written as the docs show, and names what a
broken one gets wrong."""

from __future__ import annotations

import pytest

from msj_gym.core import Policy
from msj_gym.core.jit import inline_jit
from msj_gym.core.state import I_FREE, I_WHEAD, NEED, WNEXT
from msj_gym.testing import check_policy


@inline_jit
def _scan_fit(view, pdata, actions):
    free = view.iv[I_FREE]
    s = view.iv[I_WHEAD]
    n = 0
    while s != -1:
        if view.ji[s, NEED] <= free:
            actions[n] = s
            n += 1
            free -= view.ji[s, NEED]
        s = view.ji[s, WNEXT]
    return n


@inline_jit
def _overfill(view, pdata, actions):
    s = view.iv[I_WHEAD]  # starts the oldest job whether or not it fits
    if s == -1:
        return 0
    actions[0] = s
    return 1


class ScanFit(Policy):
    """Scan the queue in arrival order and start every job that fits. Non-preemptive; size-oblivious."""

    policy_id = "scan-fit"
    reference = "First-Fit, written again (docs/write-your-own.md)"
    kernel = _scan_fit


class Overfill(Policy):
    """Starts the oldest waiting job even when it does not fit. Non-preemptive; size-oblivious."""

    policy_id = "overfill"
    reference = "a broken example"
    kernel = _overfill


@pytest.mark.parametrize("policy", ["first-fit", "server-filling", "easy-backfilling", ScanFit()])
def test_good_policies_pass(policy) -> None:
    result = check_policy(policy, num_arrivals=1500)
    assert result["num_measured"] > 0


def test_a_policy_written_again_equals_the_original() -> None:
    mine = check_policy(ScanFit(), num_arrivals=1500)
    theirs = check_policy("first-fit", num_arrivals=1500)
    assert mine["mean_response_time"] == theirs["mean_response_time"]


def test_an_invalid_decision_is_named() -> None:
    with pytest.raises(
        AssertionError, match=r"check_policy\('overfill'\): the native run in debug mode failed"
    ):
        check_policy(Overfill(), num_arrivals=500)


def test_declarations_are_checked() -> None:
    class NoReference(ScanFit):
        """Scan-fit without a reference."""

        policy_id = "no-reference"
        reference = ""

    class BadId(ScanFit):
        """Scan-fit with a bad id."""

        policy_id = "Bad_Id"

    with pytest.raises(AssertionError, match="reference is empty"):
        check_policy(NoReference())
    with pytest.raises(AssertionError, match="kebab-case"):
        check_policy(BadId())
