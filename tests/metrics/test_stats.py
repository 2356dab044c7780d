import numpy as np
import pytest

from msj_gym.metrics import assess_stability, batch_means, jain_index, replication_ci, student_t_quantile
from msj_gym.metrics.stats import batch_ratio


@pytest.mark.parametrize("df", [1, 2, 5, 29, 100, 1000])
@pytest.mark.parametrize("p", [0.9, 0.975, 0.995])
def test_t_quantiles_match_scipy(p, df):
    stats = pytest.importorskip("scipy.stats")
    assert student_t_quantile(p, df) == pytest.approx(stats.t.ppf(p, df), rel=1e-8)


def test_batch_ratio_covers_the_truth_about_95_percent_of_the_time():
    rng = np.random.default_rng(0)
    hits = 0
    runs = 400
    for _ in range(runs):
        counts = rng.integers(50, 150, size=30)
        sums = np.array([rng.exponential(2.0, c).sum() for c in counts])
        est = batch_ratio(sums, counts)
        hits += est.low <= 2.0 <= est.high
    # Binomial(400, 0.95): 3 standard deviations is 13 runs.
    assert abs(hits / runs - 0.95) < 13 / runs


def test_batch_means_and_replications_agree_on_iid_data():
    x = np.random.default_rng(1).normal(5.0, 1.0, 30_000)
    bm = batch_means(x, 30)
    assert bm.mean == pytest.approx(5.0, abs=4 * 1 / np.sqrt(x.size))
    assert bm.ci95_half_width == pytest.approx(1.96 / np.sqrt(x.size), rel=0.35)
    rep = replication_ci([4.0, 5.0, 6.0])
    assert rep.mean == 5.0 and rep.ci95_half_width == pytest.approx(4.302653 * 1 / np.sqrt(3), rel=1e-6)


def test_jain_index():
    assert jain_index([1.0, 1.0, 1.0]) == pytest.approx(1.0)
    assert jain_index([1.0, 0.0, 0.0, 0.0]) == pytest.approx(0.25)
    assert jain_index([2.0, 4.0]) == pytest.approx(36 / (2 * 20))
    assert np.isnan(jain_index([]))


def test_stability_assessment():
    ok, note = assess_stability(1.05, False, np.ones(41), 10_000)
    assert not ok and "offered load" in note
    ok, note = assess_stability(0.9, True, np.ones(41), 10_000)
    assert not ok and "arrival cap" in note
    growing = np.linspace(100, 2000, 41)
    ok, note = assess_stability(0.9, False, growing, 20_000)
    assert not ok and "queue keeps growing" in note
    noisy = 50 + 10 * np.sin(np.arange(41))
    assert assess_stability(0.9, False, noisy, 20_000) == (True, "")
