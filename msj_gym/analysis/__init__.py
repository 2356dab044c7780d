"""Closed forms used as references for the simulator: Erlang B/C, M/M/k and M/G/1."""

from .queueing import erlang_b, erlang_c, mg1_mean_response_time, mmk_mean_response_time

__all__ = ["erlang_b", "erlang_c", "mg1_mean_response_time", "mmk_mean_response_time"]
