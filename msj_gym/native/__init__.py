"""Plumbing of the compiled batch paths, below the environments that use it: the spin-waiting worker
threads that step batches of environments with the GIL released (:mod:`.spin`) and the loop copies
they use (:mod:`.copying`). Shared by the MSJ vector env and the moldable vector env."""
