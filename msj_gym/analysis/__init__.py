"""Closed forms used as references for the simulator: Erlang B/C, M/M/k, M/G/1, the one-or-all
MSF / MSFQ analysis of Chen et al. (2026), Sec. 5, Balanced Splitting's partition and Erlang-B bounds (Anselmi
& Doncel (2024), Sec. 3-5), and policies' stability limits."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import LazyNames

if TYPE_CHECKING:
    from .balanced_splitting import (
        BSPartition,
        bs_partition,
        helper_load,
        helper_probabilities,
        relative_demands,
        theorem1_limit,
        theorem2_bound,
    )
    from .one_or_all import OneOrAllAnalysis, one_or_all_msfq
    from .queueing import erlang_b, erlang_c, mg1_mean_response_time, mmk_mean_response_time
    from .stability import (
        SaturatedFCFS,
        fcfs_limit,
        fcfs_saturated,
        msf_one_or_all_limit,
        server_filling_limit,
        static_quickswap_limit,
    )

# imported when first asked for: the command line reads one limit of the exact solver from here, and
# nothing else of the package
_LAZY = LazyNames(
    __name__,
    globals(),
    {
        "balanced_splitting": (
            "BSPartition", "bs_partition", "helper_load", "helper_probabilities", "relative_demands",
            "theorem1_limit", "theorem2_bound",
        ),
        "one_or_all": ("OneOrAllAnalysis", "one_or_all_msfq"),
        "queueing": ("erlang_b", "erlang_c", "mg1_mean_response_time", "mmk_mean_response_time"),
        "stability": (
            "SaturatedFCFS", "fcfs_limit", "fcfs_saturated", "msf_one_or_all_limit", "server_filling_limit",
            "static_quickswap_limit",
        ),
    },
)  # fmt: skip
__getattr__ = _LAZY
__dir__ = _LAZY.dir

__all__ = [
    "BSPartition",
    "OneOrAllAnalysis",
    "SaturatedFCFS",
    "bs_partition",
    "erlang_b",
    "erlang_c",
    "fcfs_limit",
    "fcfs_saturated",
    "helper_load",
    "helper_probabilities",
    "mg1_mean_response_time",
    "mmk_mean_response_time",
    "msf_one_or_all_limit",
    "one_or_all_msfq",
    "relative_demands",
    "server_filling_limit",
    "static_quickswap_limit",
    "theorem1_limit",
    "theorem2_bound",
]
