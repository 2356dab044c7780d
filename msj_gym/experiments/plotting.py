"""The one door to matplotlib for the experiments' pictures: its Agg backend (files, no window), or
None where matplotlib is not installed, so that a table is still written without its picture."""

from __future__ import annotations

from typing import Any


def pyplot() -> Any:
    """``matplotlib.pyplot`` on the Agg backend, or None without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    return plt
