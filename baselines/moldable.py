"""Allocation schemes for moldable jobs in a loss system (Ghanbarian et al. (2024), moldable jobs), with the
formulas the paper's surviving text lost reconstructed (see ``docs/papers/002-moldable.md``). All three are
probabilistic greedy rules within a server pool (see :mod:`msj_gym.moldable.policy`); they differ only in the
pools and probabilities they prepare. Registered in :mod:`msj_gym.registry` on the ``moldable`` model (they
act on the loss system, not on the queueing MSJ model); ``msj_gym.baselines.MOLDABLE_POLICIES`` lists them."""

from __future__ import annotations

import numpy as np

from msj_gym.analysis.moldable import lp_optimum, multiclass_optimum
from msj_gym.moldable.model import MoldableSystem
from msj_gym.moldable.policy import AllocationRule, MoldablePolicy, make_rule

__all__ = ["Greedy", "PScheme", "Reserved", "reserve_servers"]


def _rates(system: MoldableSystem) -> tuple[np.ndarray, np.ndarray, list[tuple[float, ...]]]:
    lam = np.array([c.arrival_rate for c in system.classes])
    mu = np.array([1.0 / c.service_time.mean for c in system.classes])
    if (lam / mu).sum() > 1.0 + 1e-12:
        raise ValueError(
            f"load: the p-scheme is defined for sum_k lam_k / mu_k <= 1 (LP (P) infeasible above), got "
            f"{(lam / mu).sum()!r}"
        )
    return lam, mu, [c.speed_up for c in system.classes]


class PScheme(MoldablePolicy):
    """The p-scheme (Ghanbarian et al. (2024), moldable jobs, Sec. 4): an arrival that finds ``m >= 1`` idle
    servers draws ``J`` with ``P(J = i) = p_i = s(i) x*_i / lam`` and gets ``min(m, J)`` servers, ``x*`` the
    closed-form optimum of LP (P) (Theorem 1) at the system's normalised load ``lam = lam_n / mu``. With
    several classes sharing the servers, ``p^(k)`` comes from the optimum of (Q) (Sec. 6, by water-filling),
    i.e. the reserved scheme's probabilities without the reservation.

    Non-preemptive; size-oblivious; needs the arrival rates and speed-ups (recomputed for every system,
    as ``lam_n`` changes with ``n``). Asymptotically optimal (Theorem 2): blocking -> 0, E[T] -> T*.
    """

    policy_id = "moldable-p-scheme"
    reference = "Ghanbarian et al. (2024), moldable jobs, Sec. 4"

    def prepare(self, system: MoldableSystem) -> AllocationRule:
        lam, mu, speeds = _rates(system)
        if system.num_classes == 1:
            p = [lp_optimum(speeds[0], lam[0] / mu[0]).p]
        else:
            p = multiclass_optimum(lam, mu, speeds).p
        return make_rule(p, np.zeros(system.num_classes), np.array([system.num_servers]))


class Greedy(MoldablePolicy):
    """Greedy (Ghanbarian et al. (2024), moldable jobs, Sec. 3 and 7): an arrival that finds ``m >= 1`` idle
    servers gets
    ``min(m, d)``. The p-scheme with ``p = e_d``: optimal for linear speed-up or ``lam <= s(d)/d``;
    otherwise blocking stays near ``1 - s(d)/(d lam)`` while E[T] -> 1/s(d) < T*.

    Non-preemptive; size-oblivious; needs neither the load nor the speed-up values.
    """

    policy_id = "moldable-greedy"
    reference = "Ghanbarian et al. (2024), moldable jobs, Sec. 7"
    needs_load = False

    def prepare(self, system: MoldableSystem) -> AllocationRule:
        p = [np.eye(c.max_parallelism)[-1] for c in system.classes]
        return make_rule(p, np.zeros(system.num_classes), np.array([system.num_servers]))


def reserve_servers(system: MoldableSystem) -> tuple[np.ndarray, np.ndarray]:
    """Pools of the reserved scheme: ``(gamma*, pool sizes)``, the integer pools ``gamma*_k n`` rounded by
    largest remainders to ``round(n sum_k gamma*_k)`` servers in all (never more than n). Capacity the
    optimum of (Q1) leaves unused (every class already at ``lam' = s(d)/d``) stays unreserved."""
    lam, mu, speeds = _rates(system)
    gamma = multiclass_optimum(lam, mu, speeds).gamma
    n = system.num_servers
    target = gamma * n
    pools = np.floor(target + 1e-9).astype(np.int64)
    total = min(n, round(float(target.sum())))
    extra = total - int(pools.sum())
    for c in np.argsort(-(target - pools), kind="stable")[: max(extra, 0)]:
        pools[c] += 1
    return gamma, pools


class Reserved(MoldablePolicy):
    """Multi-class reservation (Ghanbarian et al. (2024), moldable jobs, Sec. 6): reserve a pool of about
    ``gamma*_k n`` servers for class ``k``, ``gamma*`` the water-filling solution of (Q1), and run the
    p-scheme independently in each pool, with ``p^(k)`` from LP (P) at the pool's own normalised load ``rho_k
    n / pool_k`` (reading: the rounding of the pools is accounted for; capped at 1 where rounding overloads a
    pool). A class whose pool is empty loses every job. With one class it is the p-scheme.

    Non-preemptive; size-oblivious; needs the arrival rates, mean sizes and speed-ups.
    """

    policy_id = "moldable-reserved"
    reference = "Ghanbarian et al. (2024), moldable jobs, Sec. 6"

    def prepare(self, system: MoldableSystem) -> AllocationRule:
        _, pools = reserve_servers(system)
        n = system.num_servers
        p = []
        for c, cl in enumerate(system.classes):
            lam_pool = min(1.0, cl.load * n / pools[c]) if pools[c] > 0 else 1.0
            p.append(lp_optimum(cl.speed_up, lam_pool).p)
        return make_rule(p, np.arange(system.num_classes), pools)
