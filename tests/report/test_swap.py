"""The report goes into its folder whole: a Ctrl-C or SIGTERM while its tables, figures and studies' records are
moved in waits until they all are (an interrupt-and-resume audit, 2026-11-29, found claims.json new beside the old
claims.md, metrics.json, runs.csv and figures). On empty results: every claim not-run, two seconds."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from fedbench.config import load_config
from fedbench.report import build

PARAMS = Path(__file__).resolve().parents[2] / "params.yaml"


@pytest.fixture
def ctrl_c_raises():
    """SIGINT raises KeyboardInterrupt, as in a terminal (a pytest-xdist worker may have another handler)."""
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, before)


def test_a_stop_while_the_report_goes_in_comes_after_all_of_it(tmp_path, monkeypatch, ctrl_c_raises):
    out = tmp_path / "reports"
    (out / "figures").mkdir(parents=True)
    for name in (*build.TABLES, "figures/old.png"):
        (out / name).write_text("old")
    moved, replace = [], os.replace

    def replace_once_stopped(src, dst):
        if not moved:
            os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C just as the first file goes in
        moved.append(Path(dst).name)
        replace(src, dst)

    monkeypatch.setattr(build.os, "replace", replace_once_stopped)
    with pytest.raises(KeyboardInterrupt):
        build.build_report(load_config(PARAMS), out, tmp_path / "results", tmp_path / "data")
    # everything went in before the stop was raised: the tables, the study pages, the figures
    assert moved == [*build.TABLES, build.PAGES, ".figures.old", "figures"]
    assert all((out / name).read_text() != "old" for name in build.TABLES)
    assert (out / "figures" / "old.png").read_text() == "old"  # a figure not drawn here (no runs) is kept
    assert sorted(p.name for p in out.iterdir()) == sorted([*build.TABLES, build.PAGES, "figures"])  # no temporary folder
