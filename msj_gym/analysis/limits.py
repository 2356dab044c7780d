"""The exact solver's default size limit, apart from the solver so that the command line can show it
without importing it."""

#: The largest chain (states) solved unless a caller says otherwise: one-or-all at load 0.9 (4.7 M
#: states, about 3 GB at the peak) fits, and so does every two-class point of the benchmark.
DEFAULT_MAX_STATES = 6_000_000

#: Minutes a solve may be estimated to take before it is refused at once (``msj-gym optimal
#: --max-minutes``'s default, and the limit of every other path to the solver: the leaderboard's
#: optimum rows, ``mdp-optimal``); the estimate is good to a factor of about 3.
DEFAULT_SOLVE_MINUTES = 10.0
