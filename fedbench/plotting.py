"""matplotlib for fedbench's figures: the file-only Agg backend and one way to write a figure. Used by the
report's figures and by the studies' own figures (a study draws what it measures; the report renders)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402 (after the backend is chosen)


def pyplot():
    """matplotlib.pyplot on the file-only Agg backend (selected when this module is imported), for figure code that
    imports this module lazily."""
    return plt


def save_figure(fig, path: str | Path, dpi: int = 110) -> Path:
    """Lay out ``fig``, write it to ``path`` as PNG (creating the folder) and close it."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=dpi)
    plt.close(fig)
    return path
