"""The command line's everyday path (issue 23): the install that cannot pull in another project, `fedbench ui`'s
port check, `fedbench run`'s closing lines, `paper run`'s confirmation, `show --claims` and its filters, the
help texts, and the small things of item 10 (figure colours and draw order, progress bars in a log)."""

from __future__ import annotations

import json
import re
import shutil
import socket
import sys
from pathlib import Path

import pytest

from fedbench.cli import build_parser, main

ROOT = Path(__file__).resolve().parents[1]


def _exit(argv: list[str], capsys) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as stop:
        main(argv)
    out = capsys.readouterr()
    return stop.value.code, out.out, out.err


def test_distribution_is_not_the_package_index_fedbench():
    """Item 3: PyPI's `fedbench` 0.1.3 is another project; ours is `fedbench-repro`, imported and run as `fedbench`."""
    tomllib = pytest.importorskip("tomllib")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["name"] == "fedbench-repro"
    assert project["scripts"] == {"fedbench": "fedbench.cli:main"}
    assert "ray" in project["optional-dependencies"]
    readme = (ROOT / "README.md").read_text()
    assert "pip install -e '.[ray]'" in readme and "pip install 'fedbench[ray]'" not in readme


@pytest.mark.parametrize("port", ["99999", "0", "-1"])
def test_ui_port_out_of_range_fails_in_one_line(port, capsys):
    """Item 5: `--port 99999` printed an 89-line traceback after 31 s and exited 0."""
    code, out, err = _exit(["ui", "--port", port], capsys)
    assert code == 2 and out == "" and err == f"fedbench: config error: --port {port}: allowed 1..65535\n"


def test_ui_port_in_use_fails_before_starting_anything(capsys):
    """Item 5: with the port taken, MLflow printed the URL, then a bind error, and exited 0."""
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        code, out, err = _exit(["ui", "--port", str(port)], capsys)
    assert code == 2 and out == "" and len(err.splitlines()) == 1
    assert f"--port {port}: 127.0.0.1:{port} is in use; pick another" in err


CLAIMS = [
    {"id": "fedprox/a", "paper": "FedProx: Li et al. MLSys 2020", "where": "Fig. 1", "verdict": "reproduced",
     "fidelity": "paper-scale", "observed": "gain +9.4 " + "x" * 400, "rule": "interval above 0", "deviations": []},
    {"id": "fedprox/b", "paper": "FedProx: Li et al. MLSys 2020", "where": "Fig. 2", "verdict": "not-run",
     "fidelity": "paper-scale", "observed": "not run", "rule": "r", "deviations": ["d1"],
     "command": "fedbench paper run fedprox_mnist", "cost": {"hours": 0.41, "device": "cpu"}},
    {"id": "fedprox/c", "paper": "FedProx: Li et al. MLSys 2020", "where": "Fig. 3", "verdict": "not-run",
     "fidelity": "paper-scale", "observed": "not run", "rule": "r", "deviations": [],
     "command": "fedbench paper run fedprox_mnist", "cost": {"hours": 0.41, "device": "cpu"}},
    {"id": "scaffold/d", "paper": "SCAFFOLD: Karimireddy et al. ICML 2020", "where": "Sec. 7", "verdict": "inconclusive",
     "fidelity": "stand-in", "observed": "-0.1 [-0.3, +0.2]", "rule": "r", "deviations": []},
]


@pytest.fixture
def claims_dir(tmp_path):
    (tmp_path / "claims.json").write_text(json.dumps({"claims": CLAIMS}))
    return tmp_path


def test_show_claims_counts_then_each_claim_with_its_effect_or_command(claims_dir, capsys, monkeypatch):
    """Item 7: 114 lines, the longest 1,039 characters, the not-run commands repeated, no count. Issue 29 item 3:
    the counts are the one tally's (fedbench.claims.tally), the lines fit the width, the commands are whole."""
    monkeypatch.setenv("COLUMNS", "100")  # shutil.get_terminal_size reads it first
    main(["show", "--claims", "--out", str(claims_dir)])
    lines = capsys.readouterr().out.splitlines()
    blank = lines.index("")
    assert " ".join(lines[:blank]).startswith(
        f"{claims_dir / 'claims.json'}: 4 entries: 4 claims. Toward the headline: 1 reproduced, 0 direction-only, "
        "0 not-reproduced, 0 inconclusive, 2 not-run (3 claims on the papers' own data). Counted apart: stand-in: 1 inconclusive.")
    assert lines[blank - 2:blank] == ["  paper-scale:           1 reproduced, 2 not-run",
                                      "  stand-in:              1 inconclusive"]
    heads = [line for line in lines[blank + 1:] if line and not line.startswith(" ")]
    assert [h.split()[-1] for h in heads[:4]] == ["fedprox/a", "fedprox/b", "fedprox/c", "scaffold/d"]  # one line each
    assert lines.count("  fedbench paper run fedprox_mnist") == 1 and not any(x.startswith(("    run: ", "    why: ")) for x in lines)
    assert max(len(line) for line in lines) <= 100 and "x" * 40 not in "".join(lines)  # the observation: --verbose
    assert lines[-2:] == ["  fedbench paper run fedprox_mnist", "      2 claims; projected 0.41 h on cpu"]


def test_show_claims_filters_and_verbose(claims_dir, capsys):
    main(["show", "--claims", "--out", str(claims_dir), "--paper", "fedprox", "--verdict", "not-run", "--verbose"])
    lines = capsys.readouterr().out.splitlines()
    assert " ".join(lines[:lines.index("")]).startswith(
        f"{claims_dir / 'claims.json'} (paper FedProx, verdict not-run): 2 entries: 2 claims.")
    assert "    deviations: d1" in lines and "    rule: r" in lines
    main(["show", "--claims", "--out", str(claims_dir), "--fidelity", "stand-in"])
    assert "(fidelity stand-in): 1 entries: 1 claims. Toward the headline: 0 reproduced, 0 direction-only, 0 " \
           "not-reproduced, 0 inconclusive, 0 not-run (0 claims on the papers' own data). Counted apart: stand-in: 1 inconclusive." \
           in " ".join(capsys.readouterr().out.split("\n\n")[0].split())


@pytest.mark.parametrize("flag, value, known", [("--paper", "fedavg", "FedProx, SCAFFOLD"),
                                                ("--verdict", "passed", "reproduced, direction-only, not-reproduced"),
                                                ("--fidelity", "full", "paper-scale, reduced-budget, reduced-data")])
def test_show_claims_unknown_name_exits_with_the_known_ones(claims_dir, capsys, flag, value, known):
    code, out, err = _exit(["show", "--claims", "--out", str(claims_dir), flag, value], capsys)
    assert code == 2 and out == "" and err.startswith(f"fedbench: config error: {flag} {value!r} is not known; known: ")
    assert known in err and len(err.splitlines()) == 1


def test_show_unknown_experiment_exits_naming_the_known(tmp_path, monkeypatch, capsys):
    """Item 7: `fedbench show --experiment nosuch` said "no runs in sqlite:///..." and exited 0."""
    from mlflow.tracking import MlflowClient

    uri = f"sqlite:///{tmp_path / 'store.db'}"
    MlflowClient(uri).create_experiment("train-stragglers")
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    code, out, err = _exit(["show", "--experiment", "nosuch"], capsys)
    assert code == 2 and err.splitlines()[-1] == (  # (above it: MLflow's log of the store made by this test)
        f"fedbench: config error: --experiment 'nosuch' is not an MLflow experiment in {uri}; "
        "known: Default, train-stragglers")


def _paper(argv: list[str], capsys, monkeypatch, tty: bool = False, answer: str = "") -> tuple[int, str, str, list]:
    from fedbench import paper as paper_run

    started = []
    monkeypatch.setattr(paper_run, "run", lambda *a, **k: started.append(a))
    monkeypatch.setattr("sys.stdin.isatty", lambda: tty)
    monkeypatch.setattr("builtins.input", lambda prompt: answer)
    code, out, err = _exit(["paper", *argv], capsys)
    return code, out, err, started


def test_paper_run_refuses_without_yes_when_not_a_terminal(capsys, monkeypatch):
    """Item 6: `paper run mime_emnist` started at once (about 2 GB of downloads, 11,488 projected CPU-hours)."""
    code, out, err, started = _paper(["run", "mime_emnist"], capsys, monkeypatch)
    assert code == 2 and not started
    assert out.splitlines()[0].startswith("fedbench paper run mime_emnist: projected ")  # its hours, then runs
    assert out.splitlines()[1:] == ["downloads:", "  femnist      about 2 GB (two zips of 128x128 PNGs)"]
    assert err == ("fedbench paper run: not starting without confirmation (stdin is not a terminal): pass --yes to "
                   "start it, or --dry-run to see the cost only\n")


def test_paper_run_dry_run_yes_and_the_question(capsys, monkeypatch):
    code, out, _, started = _paper(["run", "fedprox_sent140", "--dry-run"], capsys, monkeypatch)
    assert code == 0 and not started and out.endswith("dry run: nothing started\n")
    assert "  sent140      about 81 MB" in out and "  glove        about 860 MB (822 MiB)" in out
    assert _paper(["run", "fedprox_sent140", "--yes"], capsys, monkeypatch)[3]
    code, out, _, started = _paper(["run", "fedprox_sent140"], capsys, monkeypatch, tty=True, answer="n")
    assert code == 0 and not started and out.endswith("not started\n")
    assert _paper(["run", "fedprox_sent140"], capsys, monkeypatch, tty=True, answer="y")[3]


def test_paper_run_unknown_name_says_did_you_mean(capsys, monkeypatch):
    code, out, err, started = _paper(["run", "nosuchstud"], capsys, monkeypatch)
    assert code == 2 and not started and err.startswith("fedbench paper run: 'nosuchstud' is not a paper study; ")
    code, out, err, started = _paper(["run", "fedprox_mnst"], capsys, monkeypatch)
    assert "did you mean 'fedprox_mnist'?" in err and len(err.splitlines()) == 1
    code, out, err, started = _paper(["run", "femnist"], capsys, monkeypatch)
    assert code == 2 and "did you mean 'fedprox_femnist'?" in err and len(err.splitlines()) == 1


def test_options_have_help_text(capsys):
    """Item 10: `--out`, `--port` and `paper --params` had no help text; `bench --help` named issue numbers and
    "about 1 min" (the README says 3)."""
    sub = next(a for a in build_parser()._actions if a.dest == "command").choices
    for command, dest in (("report", "out"), ("show", "out"), ("ui", "port")):
        assert next(a for a in sub[command]._actions if a.dest == dest).help
    code, out, _ = _exit(["paper", "--help"], capsys)
    assert "--params PARAMS  params file (default: params.yaml)" in " ".join(out.split("\n")).replace("  ", " ") or \
        "params file (default: params.yaml)" in out
    code, out, _ = _exit(["bench", "--help"], capsys)
    assert code == 0 and "issue" not in out and "about 3 min on 2 cores" in out


@pytest.mark.parametrize("argv", [["run"], ["show"], ["compare"], ["ui"], ["check-config"], ["study", "list"],
                                  ["data", "fetch"], ["data", "show"], ["paper", "list"], ["paper", "cost"],
                                  ["claims", "register"], ["claims", "freeze"]])
def test_every_command_help_says_what_it_does(argv, capsys):
    """`fedbench run --help` printed the usage and the options alone: a command's help line showed only in its
    parent's list. Each opens with it now (fedbench.helptext), as a sentence."""
    code, out, _ = _exit([*argv, "--help"], capsys)
    first = next(line for line in out.split("\n\n")[1:] if line.strip())  # the paragraph after the usage
    assert code == 0 and first[0].isupper() and not first.startswith(("options:", "positional arguments:")), out


def test_described_keeps_a_given_description_and_describes_nested_commands():
    import argparse

    from fedbench.helptext import described

    p = argparse.ArgumentParser()
    sub = p.add_subparsers()
    given = sub.add_parser("a", help="short", description="The long one.")
    nested = sub.add_parser("b", help="has commands").add_subparsers().add_parser("c", help="draw a figure.")
    silent = sub.add_parser("d")
    described(p)
    assert (given.description, nested.description, silent.description) == ("The long one.", "Draw a figure.", None)
    assert sub.choices["b"].description == "Has commands."


def test_data_show_of_an_unknown_name_does_not_suggest_generate(tmp_path, capsys):
    from fedbench.data.cli import main as data_main

    assert data_main(["--root", str(tmp_path), "show", "nosuch"]) != 0
    err = capsys.readouterr().err
    assert "'nosuch' is not a dataset; known: " in err and "synthetic_1_1" in err and "generate" not in err
    assert data_main(["--root", str(tmp_path), "show", "synthetic_1_1"]) != 0
    assert "fedbench generate synthetic_1_1" in capsys.readouterr().err


def test_throughput_kernel_keeps_its_colour_across_panels():
    from fedbench.bench.report import kernel_colours

    cases = [{"kernels": {"mclr": {}, "loop": {}}}, {"kernels": {"vmap": {}, "loop": {}}}]
    assert kernel_colours(cases) == {"loop": "C0", "mclr": "C1", "vmap": "C2"}


def test_figure5_draws_0_percent_last_and_dashed(tmp_path, monkeypatch):
    """Item 10: Figure 5's 0% line hid under the 10% line (they nearly coincide)."""
    import pandas as pd

    from fedbench.studies import fedprox_figures as figures  # the main job study's figure hook draws it

    rows = [{"dataset": "synthetic_iid", "variant": "fedavg", "stragglers": f, "seed": s, "round": r,
             "train/loss": 1.0 / (r + 1)} for f in (0.0, 0.1, 0.5, 0.9) for s in (0, 1) for r in range(3)]
    drawn = {}
    monkeypatch.setattr(figures, "save_figure", lambda fig, path: drawn.setdefault("ax", fig.axes[0]))
    figures.figure5(pd.DataFrame(rows), tmp_path / "f5.png")
    ax = drawn["ax"]
    lines = [line for line in ax.get_lines() if not line.get_label().startswith("_")]
    assert [line.get_label() for line in lines][-1] == "0% stragglers" and lines[-1].get_linestyle() == "--"
    assert [t.get_text() for t in ax.get_legend().get_texts()] == [
        "0% stragglers", "10% stragglers", "50% stragglers", "90% stragglers"]


def test_worker_progress_bars_only_on_a_terminal(monkeypatch):
    """Item 10: the two workers' position bars wrote raw `[A` escapes into DVC's log."""
    from fedbench.executors import LocalExecutor
    from fedbench.study.runner import worker_bars

    monkeypatch.setattr("sys.stderr.isatty", lambda: False)
    assert not worker_bars(True, LocalExecutor(2))
    monkeypatch.setattr("sys.stderr.isatty", lambda: True)
    assert worker_bars(True, LocalExecutor(2)) and not worker_bars(False, LocalExecutor(2))


def test_run_says_where_it_wrote_and_logs_a_reused_run_once(tmp_path, monkeypatch, capsys):
    """Item 10: `fedbench run` did not say where it wrote its run or which MLflow experiment it used, and logged a
    run the main job had logged again under `adhoc`."""
    from mlflow.tracking import MlflowClient

    shutil.copy(ROOT / "params.yaml", tmp_path / "params.yaml")
    monkeypatch.chdir(tmp_path)
    uri = f"sqlite:///{tmp_path / 'store.db'}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    args = ["run", "--dataset", "synthetic_iid", "--algorithm", "fedavg", "--seed", "0", "--set", "train.rounds=2"]
    main(args + ["--study", "stragglers"])
    first = capsys.readouterr().out.splitlines()[-2:]  # (above: the dataset generated)
    head = "synthetic_iid fedavg stragglers=0 seed=0: wrote "
    assert first[0].startswith(head + "results/fedprox_main_job/pipeline/outcomes/") and (tmp_path / first[0][len(head):]).is_file()
    assert first[1].startswith("  MLflow: experiment 'train-stragglers', run ")
    main(args)  # --study adhoc: the run is reused, and is in MLflow already
    again = capsys.readouterr().out.splitlines()  # the one runner's line on the store, then where the run is
    assert again == ["1 of 1 simulations reused (fingerprint match in results/fedprox_main_job/pipeline/outcomes)",
                     first[0].replace(": wrote ", ": reused "), first[1]]
    client = MlflowClient(uri)
    assert [e.name for e in client.search_experiments()] == ["train-stragglers"]


def test_study_list_says_what_runs_each_study_and_its_cost(tmp_path):
    from fedbench.config import load_config
    from fedbench.studies.stage import list_studies

    lines = list_studies(load_config(ROOT / "params.yaml"), root=tmp_path)  # no study has run here
    row = {line.split()[0]: line for line in lines[1:]}
    assert "dvc repro (study@mime_synthetic)" in row["mime_synthetic"]
    assert "opt-in: fedbench study run feddane_synthetic" in row["feddane_synthetic"]
    assert "1,721 s wall, 2 workers on 2 CPU cores beside other jobs (2,615 CPU-s) (2026-11-26)" in row["feddane_synthetic"]
    assert "paper, pipeline" in row["fedprox_synthetic"] and "paper-scale: fedbench paper run" in row["mime_emnist"]


_NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?")


def _last_place(text: str) -> float:
    """One unit in the last printed place of a number's text: 1e-4 for "3.1606", 1e-7 for "1.3e-07"."""
    mantissa, _, exponent = text.lower().partition("e")
    decimals = len(mantissa.partition(".")[2])
    return 10.0 ** (int(exponent or 0) - decimals)


def assert_same_up_to_rounding(got, want, tol: float, where: str = "claims.json") -> None:
    """``got`` and ``want`` (parsed JSON) equal in structure, in every string's words and in every integer, and
    in every float and every number printed with a decimal point within ``tol`` plus one unit in its last printed
    place (two values ``tol`` apart round, at that precision, at most that far apart)."""
    assert type(got) is type(want) or {type(got), type(want)} <= {int, float}, f"{where}: {got!r} vs {want!r}"
    if isinstance(want, dict):
        assert got.keys() == want.keys(), f"{where}: keys {sorted(got)} vs {sorted(want)}"
        for key in want:
            assert_same_up_to_rounding(got[key], want[key], tol, f"{where}.{key}")
    elif isinstance(want, list):
        assert len(got) == len(want), f"{where}: {len(got)} items vs {len(want)}"
        for i, (a, b) in enumerate(zip(got, want)):
            assert_same_up_to_rounding(a, b, tol, f"{where}[{i}]")
    elif isinstance(want, float) or isinstance(got, float):
        assert abs(got - want) <= tol + _last_place(repr(float(want))), f"{where}: {got} vs {want}"
    elif isinstance(want, str):
        assert _NUMBER.split(got) == _NUMBER.split(want), f"{where}: the words differ:\n{got}\n{want}"
        for a, b in zip(_NUMBER.findall(got), _NUMBER.findall(want)):
            if any(c in b for c in ".eE"):  # a float as printed
                assert abs(float(a) - float(b)) <= tol + _last_place(b), f"{where}: {a} vs {b} in\n{got}"
            else:
                assert a == b, f"{where}: {a} vs {b} in\n{got}"
    else:
        assert got == want, f"{where}: {got!r} vs {want!r}"


@pytest.mark.numerics
def test_study_run_writes_the_pipeline_folder_with_the_committed_numbers(tmp_path, monkeypatch, capsys):
    """The committed claim, recomputed: its words and integers exactly, its floats up to the float32 resolution of
    the study's positions. Every float of the claim is a position (resolved to RESOLUTION), a loss or ratio of
    losses (F_i has gradient w - mu_i, at most 5 in size on the triangle, and the ratio divides by FedAvg's loss,
    about 3), or a fraction of mixtures: each moves by at most 5 * RESOLUTION when the positions do, on another CPU
    or kernel path (tests/rounding.py); the words and integers do not move."""
    from fedbench.studies.delta_fl_triangle import RESOLUTION

    monkeypatch.chdir(tmp_path)
    main(["study", "run", "delta_fl_triangle", "--workers", "1", "--params", str(ROOT / "params.yaml")])
    got = json.loads((tmp_path / "results/delta_fl_triangle/pipeline/claims.json").read_text())
    committed = json.loads((ROOT / "reports/studies/delta_fl_triangle/claims.json").read_text())
    strip = ("seconds", "workers")
    assert_same_up_to_rounding({k: v for k, v in got.items() if k not in strip},
                               {k: v for k, v in committed.items() if k not in strip}, 5 * RESOLUTION)


def test_same_up_to_rounding_allows_the_last_printed_place_and_nothing_else():
    claim = {"observed": "ends at (2.0000, 0.0000), 1.3e-07 from 3 devices", "n": 11476, "loss": 3.16056}
    assert_same_up_to_rounding({"observed": "ends at (2.0001, -0.0000), 1.1e-07 from 3 devices", "n": 11476,
                                "loss": 3.16057}, claim, 1e-7)
    for moved in ({**claim, "observed": "ends at (2.0002, 0.0000), 1.3e-07 from 3 devices"},  # two last places
                  {**claim, "observed": "ends at (2.0000, 0.0000), 1.3e-07 from 4 devices"},  # an integer
                  {**claim, "observed": "ends near (2.0000, 0.0000), 1.3e-07 from 3 devices"},  # a word
                  {**claim, "n": 11477}, {**claim, "loss": 3.1606}, {**claim, "extra": 1}):
        with pytest.raises(AssertionError):
            assert_same_up_to_rounding(moved, claim, 1e-7)


@pytest.mark.parametrize("args, message", [
    (["nosuch"], "fedbench: config error: study: 'nosuch' is not allowed; allowed: delta_fl_real, "),
    (["mime_synthetic", "--budget", "paper"],
     "fedbench: config error: --budget (study mime_synthetic): 'paper' is not allowed; allowed: pipeline"),
    (["mime_synthetic", "--workers", "0"], "fedbench: config error: --workers: must be >= 1, got 0"),
])
def test_study_run_bad_input_is_one_line(tmp_path, monkeypatch, capsys, args, message):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as ex:
        main(["study", "run", *args, "--params", str(ROOT / "params.yaml")])
    err = capsys.readouterr().err
    assert ex.value.code == 2 and err.startswith(message) and err.count("\n") == 1
    assert not (tmp_path / "reports").exists()


def test_paper_commands_get_the_reports_rebuild_from_the_cli(monkeypatch):
    """`fedbench paper run` rebuilds reports/ with the function the CLI hands in (fedbench.paper stands below the
    report and imports none of it: tests/faults/test_layering.py FLOORS)."""
    import fedbench.paper
    from fedbench import cli

    seen = {}
    monkeypatch.setattr(fedbench.paper, "main", lambda argv, report=None: seen.update(argv=argv, report=report) or 0)
    with pytest.raises(SystemExit) as ex:
        cli.main(["paper", "list"])
    assert ex.value.code == 0 and seen == {"argv": ["list"], "report": cli._rebuild_report}


@pytest.mark.parametrize("stop, code, word", [(KeyboardInterrupt, 130, "interrupted"), (None, 143, "terminated")])
def test_paper_run_stopped_is_one_line_and_its_exit_code(stop, code, word, capsys, monkeypatch):
    """SIGTERM on `fedbench paper run` killed it without a word (no handler was installed; Ctrl-C had its line)."""
    import signal

    from fedbench import paper as paper_run

    def stopped(*args, **kwargs):
        if stop is None:  # the handler paper run installs, as the kernel would call it
            signal.getsignal(signal.SIGTERM)(signal.SIGTERM, None)
        raise stop()

    handler = signal.getsignal(signal.SIGTERM)
    monkeypatch.setattr(paper_run, "run", stopped)
    try:
        got, _, err = _exit(["paper", "run", "fedprox_sent140", "--yes"], capsys)
    finally:
        signal.signal(signal.SIGTERM, handler)
    assert got == code and err == (f"fedbench paper run: {word}; rerun the same command (downloads resume, finished "
                                   "runs are kept)\n")


def test_output_cut_short_by_its_reader_ends_quietly(monkeypatch, capsys):
    """Issue 52, item 7: `fedbench show --claims --verbose | head` ended in a BrokenPipeError traceback, exit 1."""
    import os

    from fedbench import cli

    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone: writing raises BrokenPipeError

    class ClosedPipe:
        def write(self, text):
            raise BrokenPipeError(32, "Broken pipe")

        def flush(self):
            pass

        def fileno(self):
            return write_end

    monkeypatch.setattr(sys, "stdout", ClosedPipe())
    with pytest.raises(SystemExit) as stop:
        cli.main(["check-config"])
    os.close(write_end)
    assert stop.value.code == cli.SIGPIPE_EXIT and "Traceback" not in capsys.readouterr().err


@pytest.mark.parametrize("argv, hint", [
    (["run", "--dataset", "synthetic_1_l", "--algorithm", "fedavg"], "(did you mean 'synthetic_1_1'?)"),
    (["run", "--dataset", "synthetic_1_1", "--algorithm", "fedavgg"], "(did you mean 'fedavg'?)"),
    (["run", "--dataset", "synthetic_1_1", "--algorithm", "scafold"], "(did you mean 'scaffold'?)"),
    (["compare", "--metric", "test/acuracy"], "(did you mean 'test/accuracy'?)"),
    (["compare", "--dataset", "synthetic_iidd"], "(did you mean 'synthetic_iid'?)"),
])
def test_a_misspelled_name_gets_a_did_you_mean(argv, hint, capsys):
    code, out, err = _exit([*argv, "--no-track"] if argv[0] == "run" else argv, capsys)
    assert code == 2 and out == "" and len(err.splitlines()) == 1 and hint in err, err


def test_a_paper_study_is_suggested_by_the_dataset_it_names():
    """`paper run femnist` suggested fedprox_mnist: a name holding the word wins over a close spelling."""
    from fedbench.algorithms import closest
    from fedbench.paper import NAMES

    assert closest("femnist", NAMES) == "fedprox_femnist"
    assert closest("sent140", NAMES) == "fedprox_sent140"
    assert closest("scafold", ["fedavg", "scaffold"]) == "scaffold" and closest("xyz", ["fedavg"]) is None


def test_a_registered_algorithm_runs_by_name_with_its_hyperparameters_set(tmp_path, monkeypatch, capsys):
    """Issue 52, item 4: `fedbench run --algorithm scaffold` was refused (only params.yaml's variants ran)."""
    import shutil

    shutil.copy(ROOT / "params.yaml", tmp_path / "params.yaml")
    monkeypatch.chdir(tmp_path)
    code, out, err = _exit(["run", "--dataset", "synthetic_1_1", "--algorithm", "scaffold", "--set",
                            "algorithms.scaffold.eta_g=-1", "--no-track"], capsys)
    assert code == 2 and err == "fedbench: config error: algorithms.scaffold.eta_g: must be > 0, got -1.0\n"
    main(["run", "--dataset", "synthetic_1_1", "--algorithm", "scaffold", "--set", "algorithms.scaffold.eta_g=2",
          "--set", "train.rounds=2", "--seed", "0", "--no-track"])
    out = capsys.readouterr().out
    assert "synthetic_1_1 scaffold stragglers=0 seed=0: wrote results/fedprox_main_job/pipeline/outcomes/" in out


USER_MODULE = '''
from dataclasses import dataclass
from fedbench.algorithms import Domain


@dataclass(frozen=True)
class Good:
    DOMAINS = {"beta": Domain(low=0.0, high=1.0)}
    lr: float
    beta: float = 0.5
    keeps_partial_work: bool = False
    def init(self, theta0, num_clients): return theta0
    def broadcast(self, state): return state
    def client_init(self, theta, cohort): return theta
    def client_step(self, local, grad_fn, theta): return local
    def server_update(self, state, local, weights, cohort): return state


@dataclass
class Thawed:
    lr: float


@dataclass(frozen=True)
class Misspelled(Good):
    def client_stepp(self, local, grad_fn, theta): return local


@dataclass(frozen=True)
class Untyped(Good):
    table: list = None


@dataclass(frozen=True)
class NoSteps:
    lr: float
'''


@pytest.fixture
def user_module(tmp_path, monkeypatch):
    """A module of the user's, outside fedbench, on the path; the algorithm registry restored afterwards."""
    from fedbench import algorithms

    (tmp_path / "user_algos_x.py").write_text(USER_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    kept = [(d, dict(d)) for d in (algorithms.ALGORITHMS, algorithms.USER_ALGORITHMS, algorithms.HYPERPARAMETERS,
                                   algorithms.DOMAINS)]
    yield "user_algos_x"
    for d, before in kept:
        d.clear()
        d.update(before)


@pytest.mark.parametrize("target, message", [
    ("user_algos_x:Thawed", "is not a frozen dataclass"),
    ("user_algos_x:Misspelled", "user_algos_x:Misspelled.client_stepp is not a method the engine calls (did you mean "
                                "'client_step'?)"),
    ("user_algos_x:Untyped", "user_algos_x:Untyped.table is typed"),
    ("user_algos_x:NoSteps", "lacks init, broadcast, client_init, client_step, server_update"),
    ("user_algos_x:Missing", "module 'user_algos_x' has no class 'Missing'"),
    ("no_such_module_x:Algo", "module 'no_such_module_x' not found"),
    ("user algos:Good", "is not a class path"),
])
def test_a_user_algorithm_is_checked_like_ours(user_module, target, message, capsys):
    code, out, err = _exit(["run", "--dataset", "synthetic_1_1", "--algorithm", target, "--no-track"], capsys)
    assert code == 2 and len(err.splitlines()) == 1 and message in err, err


def test_a_user_algorithm_s_domains_and_fields_are_its_hyperparameters(user_module, capsys):
    from fedbench import algorithms

    code, _, err = _exit(["run", "--dataset", "synthetic_1_1", "--algorithm", "user_algos_x:Good", "--set",
                          "algorithms.Good.beta=2", "--no-track"], capsys)
    assert code == 2 and err == "fedbench: config error: algorithms.Good.beta: must be in [0, 1], got 2.0\n"
    code, _, err = _exit(["run", "--dataset", "synthetic_1_1", "--algorithm", "user_algos_x:Good", "--set",
                          "algorithms.Good.gamma=2", "--no-track"], capsys)
    assert code == 2 and "algorithms.Good.gamma: unknown key for user_algos_x:Good; allowed: name, beta" in err
    assert algorithms.hyperparameters("user_algos_x:Good") == {"beta": float}
    assert algorithms.build_algorithm("user_algos_x:Good", 0.1).beta == 0.5


def test_an_entry_point_names_a_user_algorithm(user_module, monkeypatch):
    """A package declares `good = "user_algos_x:Good"` in the group fedbench.algorithms: the name is an algorithm."""
    import importlib.metadata

    from fedbench import algorithms

    point = importlib.metadata.EntryPoint("good", "user_algos_x:Good", algorithms.ENTRY_POINT_GROUP)
    monkeypatch.setattr(importlib.metadata, "entry_points", lambda group: [point] if group == point.group else [])
    algorithms._register_entry_points()
    assert algorithms.resolve("good") == "good" and algorithms.hyperparameters("good") == {"beta": float}
    assert algorithms.check_hyperparameters("good", {"beta": 1}) == {"beta": 1.0}
    with pytest.raises(ValueError, match=r"good\.beta: must be in \[0, 1\], got -1.0"):
        algorithms.check_hyperparameters("good", {"beta": -1})


def test_a_hyperparameter_without_a_default_must_be_given(capsys):
    """`fedbench run --algorithm fedprox` (mu has no default) ended in a TypeError traceback."""
    code, out, err = _exit(["run", "--dataset", "synthetic_1_1", "--algorithm", "fedprox", "--no-track"], capsys)
    assert code == 2 and out == "" and err == (
        "fedbench: config error: algorithms.fedprox: mu has no default in fedprox: give it a value (params.yaml, or "
        "--set algorithms.VARIANT.mu=VALUE)\n")
