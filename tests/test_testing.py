"""check_policy passes the papers' policies and a policy written as the docs show, and names what a
broken one gets wrong."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np
import pytest

from msj_gym.core import Param, Policy
from msj_gym.core.access import first_waiting, free_servers, int_value, next_waiting, server_need, start
from msj_gym.core.jit import inline_jit
from msj_gym.core.record import Record
from msj_gym.testing import check_policy


@inline_jit
def _scan_fit(view, pdata, actions):  # as docs/write-your-own.md writes it
    free = free_servers(view)
    s = first_waiting(view)
    n = 0
    while s != -1:
        if server_need(view, s) <= free:
            n = start(actions, n, s)
            free -= server_need(view, s)
        s = next_waiting(view, s)
    return n


@inline_jit
def _overfill(view, pdata, actions):
    s = first_waiting(view)  # starts the oldest job whether or not it fits
    return 0 if s == -1 else start(actions, 0, s)


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


FIELDS = Record("max_skips")  # as docs/write-your-own.md writes it
(MAX_SKIPS,) = FIELDS.ids


@inline_jit
def _skip_fit(view, pdata, actions):
    skips = int_value(pdata.params, MAX_SKIPS)
    free = free_servers(view)
    s = first_waiting(view)
    n = 0
    while s != -1:
        if server_need(view, s) <= free:
            n = start(actions, n, s)
            free -= server_need(view, s)
        elif skips == 0:
            break
        else:
            skips -= 1
        s = next_waiting(view, s)
    return n


class SkipFit(Policy):
    """Start waiting jobs in arrival order, passing over at most ``max_skips`` that do not fit.
    Non-preemptive; size-oblivious."""

    policy_id = "skip-fit"
    reference = "a parameter carried by a Record (docs/write-your-own.md)"
    params_spec: ClassVar[Mapping[str, Param]] = {
        "max_skips": Param(int, 0, "jobs that do not fit the scan may pass over", minimum=0)
    }
    kernel = _skip_fit

    def prepare(self, workload: Any, rng: np.random.Generator):
        base = super().prepare(workload, rng)
        return base._replace(params=FIELDS.pack(max_skips=self.param_values["max_skips"]))


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


def test_a_decision_outside_the_window_names_check_policys_own_argument() -> None:
    # ServerFilling-SRPT starts the shortest jobs, not the oldest of their class: with a window of one
    # job per class, the advice is to give check_policy a larger window, not to remake an env
    with pytest.raises(
        AssertionError, match=r"outside queue_window=1; pass check_policy a larger queue_window=$"
    ):
        check_policy("server-filling-srpt", queue_window=1, num_arrivals=300)


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


@pytest.mark.parametrize(("max_skips", "original"), [(0, "fcfs"), (10**9, "first-fit"), (2, None)])
def test_a_policy_with_a_record_parameter(max_skips, original) -> None:
    mine = check_policy(SkipFit(max_skips=max_skips), num_arrivals=1500)
    if original is not None:
        assert mine["mean_response_time"] == check_policy(original, num_arrivals=1500)["mean_response_time"]
