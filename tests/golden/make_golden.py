"""Write ``tests/golden/golden_results.json`` from the code as it is now.

Run from the repository root, only when a change is MEANT to change simulation results (and say so in
the commit)::

    python -m tests.golden.make_golden      # or: python tests/golden/make_golden.py

It recomputes every case of :mod:`tests.golden.cases` (several minutes, most of it numba compilation).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a file: make the repository root importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.golden.cases import all_cases

GOLDEN = Path(__file__).with_name("golden_results.json")


def main() -> None:
    out = {}
    for name, case in all_cases().items():
        start = time.perf_counter()
        out[name] = case()
        print(f"{time.perf_counter() - start:7.2f} s  {name}", flush=True)
    # sorted keys and a trailing newline: a regenerated file differs from the old one only where results do
    GOLDEN.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
    skipped = sum("skipped" in record for record in out.values())
    print(f"wrote {len(out)} cases ({skipped} recorded as skipped) to {GOLDEN}")


if __name__ == "__main__":
    main()
