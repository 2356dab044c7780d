"""The exact solver's default size limit, apart from the solver so that the command line can show it
without importing it."""

#: The largest chain (states) solved unless a caller says otherwise: one-or-all at load 0.9 (4.7 M
#: states, about 3 GB at the peak) fits, and so does every two-class point of the benchmark.
DEFAULT_MAX_STATES = 6_000_000
