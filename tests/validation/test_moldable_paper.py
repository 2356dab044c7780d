"""Slow: the moldable paper's Table 1 (spec moldable.md 5.2) and Fig. 2 trends (6.3) at full size."""

from __future__ import annotations

import numpy as np
import pytest

from msj_gym.metrics.stats import replication_ci
from msj_gym.moldable import LINEAR, SUB_LINEAR, MoldableSystem, simulate_moldable
from tests.conftest import assert_within

pytestmark = pytest.mark.slow

# (speed-up, alpha, beta, paper E[T], paper P_B), Exp column of Table 1
ROWS = [
    (LINEAR, 0.5, 0.1, 0.2000, 0.0267),
    (SUB_LINEAR, 0.0, 0.2, 0.3782, 0.0204),
    (SUB_LINEAR, 0.5, 0.1, 0.9930, 0.0126),
]


@pytest.mark.parametrize(("s", "alpha", "beta", "mean_t", "blocking"), ROWS)
def test_table1_exponential_column(s, alpha, beta, mean_t, blocking) -> None:
    """Replications from empty, 1e6 arrivals each, n = 4000: the paper's values within 99 % CIs of
    the mean over 8 runs (widened by the paper's 4-digit rounding)."""
    system = MoldableSystem.single(4000, s, alpha=alpha, beta=beta)
    runs = [
        simulate_moldable(system, "moldable-p-scheme", seed=seed, num_arrivals=1_000_000, warmup=0)
        for seed in range(8)
    ]
    pb = replication_ci([r.blocking for r in runs])
    et = replication_ci([r.mean_execution_time for r in runs])
    assert_within(pb.mean, blocking, pb.ci95_half_width + 5e-5, "blocking")
    assert_within(et.mean, mean_t, et.ci95_half_width + 5e-5, "E[T]")


def test_greedy_floor_and_p_scheme_decay_at_scale() -> None:
    """Spec 6.3: sub-linear mean-field, n = 1000 and 16000: greedy's blocking stays above 0.15,
    the p-scheme's shrinks about 4x (n^-1/2)."""
    out = {}
    for n in (1000, 16000):
        system = MoldableSystem.single(n, SUB_LINEAR, alpha=0.0, beta=0.2)
        for pid in ("moldable-p-scheme", "moldable-greedy"):
            out[n, pid] = np.mean(
                [simulate_moldable(system, pid, seed=s, num_arrivals=1_000_000).blocking for s in range(3)]
            )
    assert out[1000, "moldable-greedy"] > out[16000, "moldable-greedy"] > 0.15
    ratio = out[1000, "moldable-p-scheme"] / out[16000, "moldable-p-scheme"]
    assert 2.5 < ratio < 6.0
