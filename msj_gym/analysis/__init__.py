"""Closed forms used as references for the simulator: Erlang B/C, M/M/k, M/G/1, the one-or-all
MSF / MSFQ analysis of 004 Sec. 5, and policies' stability limits."""

from .one_or_all import OneOrAllAnalysis, one_or_all_msfq
from .queueing import erlang_b, erlang_c, mg1_mean_response_time, mmk_mean_response_time
from .stability import SaturatedFCFS, fcfs_saturated, stability_limit

__all__ = [
    "OneOrAllAnalysis",
    "SaturatedFCFS",
    "erlang_b",
    "erlang_c",
    "fcfs_saturated",
    "mg1_mean_response_time",
    "mmk_mean_response_time",
    "one_or_all_msfq",
    "stability_limit",
]
