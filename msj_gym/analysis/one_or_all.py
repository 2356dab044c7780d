"""Mean response time of MSF and MSFQ(ell) in the one-or-all multiserver-job system.

Chen et al. (2026), Quickswap, Sec. 5; the formulas, stripped from the text we have, are rebuilt here
from the paper's phase structure and checked against its figures. Two classes: light jobs need 1 server (rate
``lam_light``, Exp(``mu_light``)), heavy jobs need all k (rate ``lam_heavy``, Exp(``mu_heavy``)). MSFQ cycles
through four phases (1: heavy jobs, exhaustive; 2: lights while >= k are present; 3: lights until at most
``ell`` remain; 4: the last ``ell`` lights drain, none admitted); ``ell = 0`` is MSF.

The analysis assumes every cycle visits every phase (>= 1 heavy job when phase 1 starts, >= k light
jobs when phase 2 starts): accurate at medium and high load (for k = 32, lambda >~ 5). At low load the
mean length of phase 2 comes out <= 0 and the formulas do not apply; :func:`one_or_all_msfq` then
raises ``ValueError`` rather than return a meaningless number.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["OneOrAllAnalysis", "one_or_all_msfq"]


@dataclass(frozen=True)
class OneOrAllAnalysis:
    """Results of :func:`one_or_all_msfq`; phase tuples are indexed phase 1..4."""

    mean_response_time: float
    weighted_mean_response_time: float
    light_response_time: float
    heavy_response_time: float
    phase_means: tuple[float, float, float, float]
    phase_fractions: tuple[float, float, float, float]


def _busy_period(lam: float, mu: float) -> tuple[float, float]:
    """First two moments of an M/M/1 busy period."""
    return 1.0 / (mu - lam), 2.0 * mu / (mu - lam) ** 3


def _checked_system(
    num_servers: int, lam_light: float, lam_heavy: float, ell: int, mu_light: float, mu_heavy: float
) -> int:
    """:func:`one_or_all_msfq`'s arguments checked (a stable system); the number of servers."""
    k = int(num_servers)
    if k < 2:
        raise ValueError(f"num_servers: expected an integer >= 2, got {num_servers!r}")
    if isinstance(ell, bool) or int(ell) != ell or not 0 <= ell <= k - 1:
        raise ValueError(f"ell: expected an integer in [0, {k - 1}], got {ell!r}")
    for name, v in (
        ("lam_light", lam_light),
        ("lam_heavy", lam_heavy),
        ("mu_light", mu_light),
        ("mu_heavy", mu_heavy),
    ):
        if not (math.isfinite(v) and v > 0):
            raise ValueError(f"{name}: expected a positive finite rate, got {v!r}")
    rho = float(lam_light) / (k * float(mu_light)) + float(lam_heavy) / float(mu_heavy)
    if rho >= 1:
        raise ValueError(f"load: rho_light + rho_heavy = {rho:.6g} >= 1, no steady state")
    return k


def _phase3_moments(k: int, ell: int, l1: float, m1: float, ebl: float, ebl2: float) -> tuple[float, float]:
    """Phase 3's first two moments: first passages of the light birth-death chain from k-1 down to
    ell, starting from D_k, a busy period of M/M/1(l1, k m1) (moments ``ebl``, ``ebl2``)."""
    ea, ea2 = ebl, ebl2
    e3 = var3 = 0.0
    for i in range(k - 1, ell, -1):
        r = l1 + i * m1
        q = l1 / r
        e = (1.0 + l1 * ea) / (i * m1)
        e2 = (2.0 / r**2 + (2.0 * q / r) * (ea + e) + q * (ea2 + 2.0 * ea * e)) / (1.0 - q)
        e3 += e
        var3 += e2 - e * e
        ea, ea2 = e, e2
    return e3, var3 + e3**2


def _light_phase3_response(k: int, ell: int, l1: float, m1: float, rho_l: float) -> float:
    """The mean response time of a light job arriving in phase 3 (``ell < k - 1``)."""
    v = 0.0
    taus = {}
    for i in range(ell + 1, k + 1):
        d = min(i, k) * m1
        q_down = d / (l1 + d)
        if i == ell + 1:
            v = 1.0 / q_down
        else:
            dp = min(i - 1, k) * m1
            p_prev = l1 / (l1 + dp)
            v = (v * p_prev + (1.0 if i - 1 <= k - 2 else 0.0)) / q_down
        taus[i] = v / (l1 + d)
    total = sum(taus[i] for i in range(ell + 1, k)) + taus[k] / (1 - rho_l)
    return 1 / m1 + (taus[k] / (1 - rho_l) ** 2) / (k * m1 * total)


def one_or_all_msfq(
    num_servers: int,
    lam_light: float,
    lam_heavy: float,
    ell: int,
    mu_light: float = 1.0,
    mu_heavy: float = 1.0,
) -> OneOrAllAnalysis:
    """Mean response times of MSFQ with threshold ``ell`` (0 <= ell <= k-1; 0 is MSF)."""
    k = _checked_system(num_servers, lam_light, lam_heavy, ell, mu_light, mu_heavy)
    l1, lk, m1, mk = float(lam_light), float(lam_heavy), float(mu_light), float(mu_heavy)
    rho_l, rho_h = l1 / (k * m1), lk / mk
    ebh, ebh2 = _busy_period(lk, mk)
    ebl, ebl2 = _busy_period(l1, k * m1)
    a = lk * ebh

    # Phase 4: the last ell lights finish (max of ell exponentials).
    e4 = sum(1.0 / (i * m1) for i in range(1, ell + 1))
    e4sq = sum(1.0 / (i * m1) ** 2 for i in range(1, ell + 1)) + e4**2
    e3, e3sq = _phase3_moments(k, ell, l1, m1, ebl, ebl2)

    # Phase 2 (closed form), then the second moments by fixed-point iteration.
    e2m = ebl * (l1 * e4 * (1 + a) + l1 * a * e3 - (k - 1)) / (1 - l1 * a * ebl)
    if e2m <= 0:
        raise ValueError(
            f"the one-or-all analysis needs >= k lights at the start of phase 2; at lam_light={l1:.6g}, "
            f"lam_heavy={lk:.6g} the mean phase-2 length is {e2m:.3g} <= 0 (load too low)"
        )
    e2sq = e2m**2
    for _ in range(1_000_000):
        ex = e2m + e3 + e4
        ex2 = e2sq + e3sq + e4sq + 2 * (e2m * e3 + e2m * e4 + e3 * e4)
        e1 = a * ex
        e1sq = lk * ebh2 * ex + a * a * ex2
        e41 = a * (e4sq + e4 * (e2m + e3))
        ey = e4 + e1
        ey2 = e4sq + 2 * e41 + e1sq
        enl = l1 * ey
        enl2 = l1 * ey + l1 * l1 * ey2
        em = enl - (k - 1)
        em2 = enl2 - 2 * (k - 1) * enl + (k - 1) ** 2
        new_e2sq = em * (ebl2 - ebl**2) + em2 * ebl**2
        done = abs(new_e2sq - e2sq) <= 1e-14 * max(1.0, abs(new_e2sq))
        e2sq = new_e2sq
        if done:
            break
    else:  # pragma: no cover - the map is a contraction whenever rho < 1
        raise RuntimeError("one_or_all_msfq: the second-moment iteration did not converge")
    phases = (e1, e2m, e3, e4)
    cycle = sum(phases)
    f1, f2, f3, f4 = (p / cycle for p in phases)

    # Heavy jobs.
    enh = lk * ex
    enh2 = lk * ex + lk * lk * ex2
    exe, exe2 = enh / mk, (enh2 + enh) / mk**2
    r_h1 = exe2 / (2 * exe) + lk * (2 / mk**2) / (2 * (1 - rho_h)) + 1 / mk
    r_h234 = ex2 / (2 * ex) * (1 + lk / mk) + 1 / mk
    t_heavy = f1 * r_h1 + (1 - f1) * r_h234
    # Light jobs.
    ele, ele2 = em / (k * m1), (em2 + em) / (k * m1) ** 2
    r_l2 = ele2 / (2 * ele) + l1 * (2 / (k * m1) ** 2) / (2 * (1 - rho_l)) + 1 / m1
    r_l3 = _light_phase3_response(k, ell, l1, m1, rho_l) if ell < k - 1 else 0.0
    eyr = ey2 / (2 * ey)
    r_l41 = eyr + max(l1 * eyr - (k - 1), 0.0) / (k * m1) + 1 / m1
    t_light = f2 * r_l2 + f3 * r_l3 + (f4 + f1) * r_l41

    lam = l1 + lk
    mean = (l1 * t_light + lk * t_heavy) / lam
    weighted = (rho_l * t_light + rho_h * t_heavy) / (rho_l + rho_h)
    return OneOrAllAnalysis(
        mean_response_time=mean,
        weighted_mean_response_time=weighted,
        light_response_time=t_light,
        heavy_response_time=t_heavy,
        phase_means=phases,
        phase_fractions=(f1, f2, f3, f4),
    )
