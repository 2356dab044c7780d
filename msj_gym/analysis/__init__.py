"""Closed forms used as references for the simulator: Erlang B/C, M/M/k, M/G/1, and the one-or-all
MSF / MSFQ analysis of 004 Sec. 5."""

from .one_or_all import OneOrAllAnalysis, one_or_all_msfq
from .queueing import erlang_b, erlang_c, mg1_mean_response_time, mmk_mean_response_time

__all__ = [
    "OneOrAllAnalysis",
    "erlang_b",
    "erlang_c",
    "mg1_mean_response_time",
    "mmk_mean_response_time",
    "one_or_all_msfq",
]
