"""Bad input on the command line (a newcomer's audit of every subcommand, 2026-11-29): one line naming the option
or file and what is allowed, exit 2, and nothing written. Each case printed a traceback, exited 0 or wrote into
the working folder before."""

from __future__ import annotations

from pathlib import Path

import pytest

from fedbench.cli import main

PARAMS = str(Path(__file__).resolve().parents[1] / "params.yaml")
RUN = ["run", "--params", PARAMS, "--dataset", "synthetic_1_1", "--algorithm", "fedavg", "--no-track"]

CASES = [
    (["report", "--params", PARAMS, "--out", ""],
     "config error: --out '': empty; expected a new or empty folder, or a report folder, e.g. reports"),
    (["report", "--params", PARAMS, "--out", "afile"],
     "config error: --out afile: not a folder; expected a new or empty folder, or a report folder, e.g. reports"),
    (["report", "--params", PARAMS, "--out", "notes"],
     ("config error: --out notes: holds files but no report (none of claims.json, claims.md, runs.csv, metrics.json, "
      "figures, studies, mlflow_runs.csv); allowed: a new or empty folder, or a report folder")),
    (["--params", PARAMS, "claims", "register"],
     "config error: --params: `fedbench claims` reads no params file; allowed: the command without --params"),
    (["--params", PARAMS, "bench", "--quick"],
     "config error: --params: `fedbench bench` reads no params file; allowed: the command without --params"),
    (["show", "--claims", "--experiment", "train-stragglers"],
     "config error: --experiment selects MLflow runs: use it without --claims"),
    (["show", "--out", "reports"], "config error: --out is the report folder --claims reads: use it with --claims"),
    (["compare", "--params", PARAMS, "--seed", "-1"], "config error: --seed -1: allowed: seeds >= 0, e.g. 0, 1, 2, 3, 4"),
    (["compare", "--params", PARAMS, "--out", "x.pdf"], "config error: --out 'x.pdf': allowed: a .png file, e.g. compare.png"),
    (["compare", "--params", PARAMS, "--set", "=5"],
     "config error: --set '=5': no key before '='; expected KEY=VALUE, e.g. train.rounds=200"),
    (["compare", "--params", PARAMS, "--set", "studies.new.datasets=[synthetic_iid]"],
     "config error: studies.new: missing algorithms, stragglers; required: datasets, algorithms, stragglers"),
    (["generate", "--params", PARAMS, "synthetic_iid", "bogus"],  # the first name is not generated either
     ("config error: dataset 'bogus' is not in data.datasets; allowed: synthetic_iid, synthetic_0_0, "
      "synthetic_0p5_0p5, synthetic_1_1")),
    ([*RUN, "--seed", "-1"], "config error: --seed -1: allowed: a seed >= 0"),
    ([*RUN, "--seed", "0", "--set", "train.seeds=[1]"],
     "config error: --seed and --set train.seeds both choose the seeds: give one of them"),
]


@pytest.mark.parametrize("argv, line", CASES, ids=[" ".join(a[:1] + a[-2:]) for a, _ in CASES])
def test_a_bad_option_is_one_line_exit_2_and_nothing_written(argv, line, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "afile").write_text("kept\n")
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "n.txt").write_text("kept\n")
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    with pytest.raises(SystemExit) as stop:
        main(argv)
    err = capsys.readouterr().err
    assert stop.value.code == 2 and err == f"fedbench: {line}\n"
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before


def test_an_unknown_real_variant_names_its_key(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["compare", "--params", PARAMS, "--set", "data.real=[mnist5k_fedprx]"])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and err.startswith("fedbench: config error: data.real: dataset variant "
                                                   "'mnist5k_fedprx' is not known (did you mean 'mnist5k_fedprox'?)")


@pytest.mark.parametrize("body, what", [('{"claims": [', "not valid JSON (Expecting value, line 1)"),
                                        ("[1]", "expected a JSON object with 'claims'")])
def test_show_claims_of_a_broken_claims_json_names_it(body, what, tmp_path, capsys):
    (tmp_path / "claims.json").write_text(body)
    with pytest.raises(SystemExit) as stop:
        main(["show", "--claims", "--out", str(tmp_path)])
    assert stop.value.code == 2 and capsys.readouterr().err == (
        f"fedbench: data error: {tmp_path / 'claims.json'}: {what}; rebuild it: `fedbench report` (or `dvc repro`)\n")


def test_study_list_with_a_broken_record_names_it_and_the_command_that_rewrites_it(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    record = Path("results/feddane_synthetic/paper/claims.json")
    record.parent.mkdir(parents=True)
    record.write_text('{"seconds": 1')
    with pytest.raises(SystemExit) as stop:
        main(["study", "list", "--params", PARAMS])
    assert stop.value.code == 2 and capsys.readouterr().err == (
        f"fedbench: data error: {record}: not valid JSON (Expecting ',' delimiter, line 1); run the study again to "
        "write it anew: fedbench study run feddane_synthetic\n")


@pytest.mark.parametrize("argv", [["--params", "nope.yaml", "paper", "profile", "paper"],
                                  ["--params=nope.yaml", "paper", "profile", "paper"],
                                  ["--params", PARAMS, "--params", "nope.yaml", "paper", "profile", "paper"]])
def test_params_before_a_command_with_its_own_parser_is_the_file_it_reads(argv, tmp_path, monkeypatch, capsys):
    """`fedbench --params x paper ...` was an AttributeError traceback; it now reads x (the last one given), as
    `paper --params x ...` does: a file that is not there is named."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as stop:
        main(argv)
    assert stop.value.code == 2 and capsys.readouterr().err == "fedbench paper profile: nope.yaml: no such file\n"


def test_params_before_data_is_read_by_data(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as stop:
        main(["--params", "nope.yaml", "data", "prepare", "mnist5k_fedprox"])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and "nope.yaml: no such file" in err and err.count("\n") == 1
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("argv, line", [
    (["paper", "list", "--costs", "nowhere"], ("fedbench paper list: --costs nowhere: not a folder; allowed: a folder "
                                               "holding paper-cost.json")),
    (["paper", "--params", "nope.yaml", "profile", "paper"], "fedbench paper profile: nope.yaml: no such file")])
def test_paper_commands_refuse_a_missing_file_in_one_line(argv, line, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as stop:
        main(argv)
    assert stop.value.code == 2 and capsys.readouterr().err == line + "\n"


def test_report_accepts_a_report_folder_whose_last_build_was_cut_short(tmp_path, monkeypatch):
    """DVC removes the report stage's outputs before it runs: a folder left with only the track stage's table (or
    any other of the report's outputs) is still a report folder, so `fedbench report` can be run again by hand."""
    from fedbench.cli import report_folder

    (tmp_path / "mlflow_runs.csv").write_text("")
    (tmp_path / "data").mkdir()
    assert report_folder(str(tmp_path)) == tmp_path
    assert report_folder(str(tmp_path / "new")) == tmp_path / "new"
