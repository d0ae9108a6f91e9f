"""Issue 19 item 4 and issue 20 item 3: costs count only the runs the claims read and the evaluation each protocol
does (fedbench.bench.costs), ``fedbench paper cost`` measures them (fedbench.bench.paper_cost), ``paper list``
shows the measured figure where there is one."""

import json

import pytest

from fedbench.bench import drawn_cost, paper_cost
from fedbench.study import costs as study_costs_module
from fedbench.study.costs import Scale, project, project_study, seconds, table_costs, unit_key
from fedbench.cli import main
from fedbench.study.paper_profile import PAPER_CLAIM_STUDIES, PROFILES, STUDIES, study_scales
from fedbench.paper import listing

COSTS = {"step_s": 0.01, "round_s": 0.5, "eval_s": 0.2, "eval_sample_s": 0.001, "grad_sample_s": 0.004}
TABLE = {"device": "test CPU", "measured_on": "today", "models": {"m": {"step_s": 0.02, "eval_sample_s": 0.001}}}


def _exit(argv, capsys):
    with pytest.raises(SystemExit) as stop:
        main(argv)
    out = capsys.readouterr()
    return stop.value.code, out.out, out.err


def test_evaluations_are_counted_exactly_from_the_protocol():
    s = Scale("m", 1, 100, 10, 50, 1, 10, 1000, eval_every=20, eval_rounds=(5, 10, 20, 150))
    assert s.evaluations() == 8  # rounds 0, 20, 40, 60, 80, the listed 5 and 10 (20 once, 150 > rounds), final
    assert Scale("m", 1, 100, 10, 50, 1, 10, 1000, eval_every=20, eval_final=False).evaluations() == 5
    assert s.dissimilarities() == 0  # off unless declared
    assert Scale("m", 1, 100, 10, 50, 1, 10, 1000, dissimilarity_every=10).dissimilarities() == 11


def test_training_and_evaluation_seconds_term_by_term():
    s = Scale("m", 3, 10, 4, 25, 2, 10, 500, eval_every=5, dissimilarity_every=5, dissimilarity_samples=100)
    train, evaluation = seconds(s, COSTS)
    # a round: 0.5 fixed + 4 clients x 2 epochs x ceil(25/10) = 24 steps x 0.01 + the cohort's losses 4 x 25 x 0.001
    assert train == pytest.approx(10 * (0.5 + 24 * 0.01 + 100 * 0.001))
    # 3 evaluations (rounds 0, 5, final) x (0.2 + 500 x 0.001), 3 dissimilarities x 100 gradients x 0.004
    assert evaluation == pytest.approx(3 * (0.2 + 0.5) + 3 * 100 * 0.004)
    p = project(s, TABLE, COSTS)
    assert p["seconds"] == pytest.approx(3 * (8.4 + 3.3)) and p["runs"] == 3
    assert p["train_hours"] == round(3 * 8.4 / 3600, 2) and p["eval_hours"] == round(3 * 3.3 / 3600, 2)
    no_signal = Scale("m", 3, 10, 4, 25, 2, 10, 500, cohort_signal=False, local_steps=7)
    assert seconds(no_signal, COSTS)[0] == pytest.approx(10 * (0.5 + 4 * 7 * 0.01))


def test_the_batch_10_table_prices_a_larger_batch_and_a_gradient():
    c = table_costs(Scale("m", 1, 1, 1, 64, 1, 32, 0), TABLE)
    assert c == {"step_s": pytest.approx(0.064), "round_s": 0.0, "eval_s": 0.0, "eval_sample_s": 0.001,
                 "grad_sample_s": pytest.approx(0.002)}
    assert table_costs(Scale("m", 1, 1, 1, 64, 1, 5, 0), TABLE)["step_s"] == 0.02  # a smaller batch: as batch 10
    with pytest.raises(KeyError, match="no measured cost of model 'nosuch'"):
        table_costs(Scale("nosuch", 1, 1, 1, 1, 1, 1, 0), TABLE)


def test_only_the_runs_a_claim_reads_count_and_the_source_is_said():
    read = Scale("m", 2, 10, 1, 10, 1, 10, 0, cohort_signal=False, local_steps=1)
    context = Scale("m", 5, 10, 1, 10, 1, 10, 0, cohort_signal=False, local_steps=1, read=False)
    other = Scale("m", 1, 10, 1, 10, 1, 20, 0, cohort_signal=False, local_steps=1)
    c = project_study((read, context, other), TABLE)
    assert (c["runs"], c["left_out"], c["source"]) == (3, 5, "projected")
    # table: a round is one step of 0.02 s (batch 10) or 0.04 s (batch 20), plus one final evaluation of 0 samples
    assert c["seconds"] == pytest.approx(2 * 10 * 0.02 + 10 * 0.04)
    measured = {unit_key(read): COSTS}
    part = project_study((read, context, other), TABLE, measured)
    assert part["source"] == "partly measured"
    # measured: 10 rounds of 0.5 + 0.01 s, 11 evaluations (rounds 0-9 and the final model) of 0.2 s fixed
    assert part["seconds"] == pytest.approx(2 * (10 * (0.5 + 0.01) + 11 * 0.2) + 10 * 0.04)
    both = project_study((read, context, other), TABLE, {**measured, unit_key(other): COSTS})
    assert both["source"] == "measured" and both["left_out"] == 5


def test_fedprox_studies_count_the_20_runs_the_rules_read_and_the_10_that_compute_the_dissimilarity():
    computing, read, context = STUDIES["fedprox_shakespeare"].scales(5)
    assert [(s.runs, s.read, s.dissimilarity_every) for s in (computing, read, context)] == [
        (10, True, 1), (10, True, 0), (25, False, 0)]
    # every device's gradient on at most 4 x 50 samples, every round and the final model; all samples evaluated
    assert computing.dissimilarity_samples == 143 * 200 and computing.dissimilarities() == 41
    assert read.dissimilarities() == 0 and read.evaluations() == computing.evaluations() == 41
    assert not read.cohort_signal and read.eval_samples == 517106
    mnist = STUDIES["fedprox_mnist"].scales(3)
    assert [s.runs for s in mnist] == [6, 6, 15] and mnist[0].dissimilarity_samples == round(69035 * 0.9)


def test_claim_studies_declare_their_context_runs_and_protocols():
    scales = study_scales(5)
    fedlaavg = project_study(scales["fedlaavg_cifar10"], TABLE | {"models": {"cifar_cnn": COSTS}})
    assert (fedlaavg["runs"], fedlaavg["left_out"]) == (75, 0)  # P and gamma rows on every seed: read, none context
    delta = scales["delta_fl_real"][0]
    assert delta.evaluations() == 60 + 5 + 1  # rounds 0, 50, ..., 2950; 5, 10, 15, 20, 75 (not 50); the final
    assert all(s.dissimilarity_every == 0 for name, ss in scales.items() if name not in STUDIES for s in ss)


def _measured_file(folder, hours_scale=1.0):
    """A paper-cost.json as `paper cost` writes it, for study mime_fashion only (costs COSTS)."""
    data = {"device": "cpu", "device_name": "test CPU", "torch": "0", "cuda": None, "date": "2026-11-26",
            "load_average": [1.0, 1.0, 1.0], "max_seconds": 5, "timed_rounds": 1,
            "studies": {"mime_fashion": {"units": {"mclr@10": {**{k: v * hours_scale for k, v in COSTS.items()},
                                                                "measured_with": {}, "notes": []}},
                                          "projection": {}, "measured_at": "now", "load_average": [1.0]}}}
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "paper-cost.json").write_text(json.dumps(data))
    return data


def test_list_shows_the_measured_figure_where_there_is_one(tmp_path):
    data = _measured_file(tmp_path / "bench")
    assert study_costs_module.study_costs(data, "mime_fashion") == {"mclr@10": COSTS}
    assert study_costs_module.study_costs(data, "mime_emnist") is None
    text = listing("params.yaml", "cpu", tmp_path / "bench")
    row = next(line for line in text.splitlines() if line.split()[:1] == ["mime_fashion"])
    expected = study_costs_module.study_cost("mime_fashion", study_scales(5)["mime_fashion"], "cpu", tmp_path / "bench")
    assert row.split()[1] == "measured" and row.split()[-2:] == [f"{expected['hours']:,.2f}", str(expected["stacks"])]
    # its unit does not say the rows it was timed at: one point, every client-step at its step_s; three stacks of 15
    # runs (its three arms' local steps differ), each paying a round's and an evaluation's fixed costs once; its
    # clients are equal, of the mean size rounded (356 samples: the cohort's losses every round)
    mime = study_scales(5)["mime_fashion"]
    assert [(m.runs, m.read, m.local_steps) for m in mime] == [(15, True, 56), (15, True, 46), (15, True, 10)]
    assert expected["stacks"] == 3
    seconds = sum(m.rounds * (COSTS["round_s"] + 15 * m.clients_per_round * (m.local_steps * COSTS["step_s"]
                                                                           + round(m.client_samples) * COSTS["eval_sample_s"]))
                  + m.evaluations() * (COSTS["eval_s"] + 15 * m.eval_samples * COSTS["eval_sample_s"]) for m in mime)
    assert expected["seconds"] == pytest.approx(seconds, abs=0.05)
    assert "measured: unit costs by `fedbench paper cost --device cpu` on test CPU" in text
    fedprox = next(line for line in text.splitlines() if line.split()[:1] == ["fedprox_mnist"])
    assert fedprox.split()[1:4] == ["projected", "20", "25"]  # runs read, runs left out
    gpu = listing("params.yaml", "cuda", tmp_path / "none")
    assert "measured: none for cuda yet" in gpu and "(0 measured" not in gpu
    assert "fedlaavg_cifar10           not measured" in gpu


def test_list_reads_each_table_once(tmp_path, monkeypatch):
    """`paper list` prices every study from the tables it read once, not twice a study."""
    _measured_file(tmp_path / "bench")
    reads = {"load": 0, "load_measured": 0}
    for name in reads:
        real = getattr(study_costs_module, name)

        def counted(*args, _real=real, _name=name, **kwargs):
            reads[_name] += 1
            return _real(*args, **kwargs)

        monkeypatch.setattr(study_costs_module, name, counted)
    listing("params.yaml", "cpu", tmp_path / "bench")
    assert reads == {"load": 1, "load_measured": 1}


def test_a_corrupt_measured_file_is_one_line(tmp_path, capsys):
    (tmp_path / "paper-cost.json").write_text("{not json")
    code, out, err = _exit(["paper", "list", "--costs", str(tmp_path)], capsys)
    assert code == 2 and out == "" and len(err.splitlines()) == 1
    assert err.startswith(f"fedbench paper list: {tmp_path / 'paper-cost.json'}: not valid JSON")
    (tmp_path / "paper-cost.json").write_text(json.dumps({"studies": {"x": {"units": {"m@1": {"step_s": 1}}}}}))
    code, _, err = _exit(["paper", "list", "--costs", str(tmp_path)], capsys)
    assert code == 2 and "study x, unit m@1: missing round_s, eval_s, eval_sample_s, grad_sample_s" in err
    unit = {**COSTS, "stacked": [{"runs": 4, **{k: 0.1 for k in ("round_s", "step_s", "eval_s", "eval_sample_s")}},
                                 {"runs": 2, **{k: 0.1 for k in ("round_s", "step_s", "eval_s", "eval_sample_s")}}]}
    (tmp_path / "paper-cost.json").write_text(json.dumps({"studies": {"x": {"units": {"m@1": unit}}}}))
    code, _, err = _exit(["paper", "list", "--costs", str(tmp_path)], capsys)
    assert code == 2 and len(err.splitlines()) == 1 and err.rstrip().endswith(
        "study x, unit m@1: 'stacked' must list points of increasing runs >= 2, each with runs, round_s, step_s, "
        "eval_s, eval_sample_s")


@pytest.mark.parametrize("args, message", [
    (["--study", "nosuch"], "fedbench paper cost: --study 'nosuch' is not a paper study; known: fedprox_mnist, "),
    (["--rounds", "0"], "fedbench paper cost: --rounds 0: must be an integer >= 1"),
    (["--max-seconds", "0"], "fedbench paper cost: --max-seconds 0.0: must be > 0"),
])
def test_bad_input_is_one_line_and_writes_nothing(tmp_path, capsys, args, message):
    code, out, err = _exit(["paper", "cost", "--out", str(tmp_path / "out"), *args], capsys)
    assert code == 2 and out == "" and err.startswith(message) and len(err.splitlines()) == 1
    assert not (tmp_path / "out").exists()


def test_a_tiny_measurement_end_to_end(tmp_path):
    from fedbench.bench import drawn_cost

    """A generated mclr study of 3 clients, timed within a few seconds: every unit cost >= 0 and finite, the step
    and the evaluated sample > 0, the notes say what was scaled up; the files are written and read back."""
    tiny = (Scale("mclr", 2, 30, 3, 40, 1, 10, 20000, eval_every=10, local_steps=300),  # enough work to time
            Scale("mclr", 4, 30, 3, 40, 1, 10, 20000, read=False))
    result = paper_cost.run({"tiny": tiny}, "cpu", tmp_path, max_seconds=4.0, rounds=1, progress=lambda m: None)
    unit = result["studies"]["tiny"]["units"]["mclr@10"]
    assert all(unit[k] >= 0 for k in study_costs_module.COST_KEYS) and unit["step_s"] > 0 and unit["eval_sample_s"] > 0
    assert unit["grad_sample_s"] == 0.0 and unit["real"] == {"clients": 3, "client_samples": 40, "steps": 300,
                                                              "eval_samples": 20000}
    projection = result["studies"]["tiny"]["projection"]
    assert (projection["runs"], projection["left_out"], projection["stacks"], projection["source"]) == (2, 4, 1,
                                                                                                        "measured")
    drawn = drawn_cost.price_study("tiny", tiny, result)  # the one figure: priced from its drawn schedule
    assert projection["hours"] == round(drawn["hours"], 2) and drawn["chain"] == 30 * 300
    assert projection == {k: study_costs_module.study_cost("tiny", tiny, "cpu", tmp_path)[k]
                          for k in paper_cost.PROJECTION_KEYS}
    # its 2 read runs share a stack: timed as one (half the budget is kept for it), not cut on the CPU
    assert [p["runs"] for p in unit["stacked"]] in ([], [2]) and unit["stack_fit"] is None
    back = study_costs_module.load("cpu", tmp_path)
    assert back["device_name"] == result["device_name"] and "tiny" in back["studies"]
    md = (tmp_path / "paper-cost.md").read_text()
    assert md.startswith("# Paper studies: measured cost (cpu)") and "| tiny | 2 | 4 | 30 |" in md
    assert "load average" in md and f"torch {result['torch']}" in md
    # a second study measured later keeps the first
    paper_cost.run({"tiny2": tiny[:1]}, "cpu", tmp_path, max_seconds=2.0, rounds=1, progress=lambda m: None)
    assert set(study_costs_module.load("cpu", tmp_path)["studies"]) == {"tiny", "tiny2"}


def test_another_machines_table_is_kept_unless_replace_is_asked(tmp_path, capsys):
    """A paper-cost.json measured elsewhere (the committed reports/bench/ one, on this project's Intel machine) is
    not overwritten by a measurement here: the command stops before measuring, in one line, the file unchanged."""
    theirs = {"device": "cpu", "device_name": "Elsewhere CPU, 64 cores", "studies": {"fedprox_mnist": {"units": {}}}}
    (tmp_path / "paper-cost.json").write_text(json.dumps(theirs))
    code, out, err = _exit(["paper", "cost", "--out", str(tmp_path), "--study", "fedprox_mnist"], capsys)
    assert code == 2 and out == "" and len(err.splitlines()) == 1
    assert err.startswith(f"fedbench paper cost: {tmp_path / 'paper-cost.json'} holds 1 studies measured on "
                          "Elsewhere CPU, 64 cores; this machine is ") and err.rstrip().endswith(
        "allowed: --out DIR (a folder of its own), or --replace to replace them")
    assert json.loads((tmp_path / "paper-cost.json").read_text()) == theirs
    tiny = (Scale("mclr", 2, 3, 3, 40, 1, 10, 200, local_steps=2),)
    result = paper_cost.run({"tiny": tiny}, "cpu", tmp_path, max_seconds=1.0, rounds=1, progress=lambda m: None,
                            replace=True)
    assert set(result["studies"]) == {"tiny"} and result["device_name"] != theirs["device_name"]


def test_plan_says_when_its_cost_is_the_paper_budgets():
    from fedbench.paper import plan

    line = plan("params.yaml", "fedproxvr_fashion", budget="convex")[0]
    assert line.endswith("that is the paper budget's cost, --budget convex runs part of it (the study's BUDGETS)")
    assert "paper budget's cost" not in plan("params.yaml", "fedproxvr_fashion")[0]


def _fake_rounds(calls, clock=None):
    """_rounds of a made-up engine whose stack of R runs takes, a round: 2 R s fixed + R K' m samples of the
    cohort's losses at 0.125 s and 1/R s a client-step a run (a batched step of R runs costs 1 s), and for
    evaluation 4 s + R x samples x 0.125 s; ``clock`` (a one-item list) advances by the seconds its rounds take."""
    def rounds(model, device, clients, n, batch, steps, eval_n, timed, dissimilarity=0, runs=1):
        calls.append(runs)
        train = 2.0 * runs + runs * clients * n * 0.125 + runs * clients * steps / runs
        evaluation = 4.0 + runs * eval_n * 0.125
        if clock is not None:
            clock[0] += (timed + 1) * (train + evaluation)
        return train, evaluation
    return rounds


def test_the_groups_stack_is_timed_first_then_doubling_sizes_and_their_costs_derived(monkeypatch):
    calls = []
    monkeypatch.setattr(paper_cost, "_rounds", _fake_rounds(calls))
    shape = ("mclr", "cpu", 4, 2, 10, 5, (8, 16), 1)  # K' = 4 clients of m = 2 samples, 5 steps, g = 8 and 16
    single = {"round_s": 2.0, "step_s": 1.0, "eval_s": 4.0, "eval_sample_s": 0.125}
    points, note = paper_cost.measure_stacks(shape, 12, 1e9, single, lambda: 0.0)
    assert note == "" and calls == [12, 12, 2, 2, 4, 4, 8, 8]  # A and B at each size, the group's 12 first
    assert [p["runs"] for p in points] == [2, 4, 8, 12]
    for p in points:
        r = p["runs"]
        assert p == pytest.approx({"runs": r, "round_s": 2.0 * r, "step_s": 1.0 / r, "eval_s": 4.0,
                                   "eval_sample_s": 0.125})


def test_a_stack_that_would_overrun_the_budget_is_not_timed_and_said(monkeypatch):
    calls, now = [], [0.0]
    monkeypatch.setattr(paper_cost, "_rounds", _fake_rounds(calls, now))
    shape = ("mclr", "cpu", 4, 2, 10, 5, (8, 16), 1)
    single = {"round_s": 2.0, "step_s": 1.0, "eval_s": 4.0, "eval_sample_s": 0.125}
    # A alone: 2 + 4 x 1.25 + 4 + 1 = 12 s a round, 24 s for its 2 rounds; a stack of R: at most R x 24 s.
    # With 100 s: 8 runs (192 s) no; 2 runs: A takes 2 x 16 = 32 s, B at most 2 x (5 x 10 + 6 x 2) = 124 s > 68 s
    # left: no; 4 runs (96 s) > 68 s: no
    points, note = paper_cost.measure_stacks(shape, 8, 100.0, single, lambda: now[0])
    assert points == [] and calls == [2] and now[0] == 32.0
    assert note == ("stacks of 2, 4, 8 runs not timed (over the 100 s left for stacks); the stacked cost is read "
                    "off the sizes timed")
    # with 300 s: A at 8 runs (80 s), B at most 2 x (5 x 28 + 12 x 2) = 328 s > 220: no; 2 runs: A 32 s and B
    # 68 s; 4 runs: A 48 s, B at most 2 x (5 x 16 + 8 x 2) = 192 s > 72 s: no
    calls[:], now[0] = [], 0.0
    points, note = paper_cost.measure_stacks(shape, 8, 300.0, single, lambda: now[0])
    assert [p["runs"] for p in points] == [2] and calls == [8, 2, 2, 4] and now[0] == 228.0
    assert note.startswith("stacks of 4, 8 runs not timed (over the 300 s left for stacks)")


def test_list_quotes_the_figure_priced_from_the_drawn_schedule():
    """`paper list --device cuda` on the committed H200 table: the drawn column is fedbench.bench.drawn_cost's."""
    from fedbench.bench.drawn_cost import price_study
    from fedbench.study.costs import load

    text = listing("params.yaml", "cuda")
    row = next(line for line in text.splitlines() if line.split()[:1] == ["fedprox_sent140"])
    drawn = price_study("fedprox_sent140", study_scales(5)["fedprox_sent140"], load("cuda"))
    assert row.split()[-2:] == [f"{drawn['hours']:,.2f}", "1"] and drawn["stacks"] == 1  # one stack (D1)
    total = next(line for line in text.splitlines() if line.split()[:1] == ["total"])
    priced = drawn_cost.price_profile(drawn_cost.load_table(drawn_cost.H200_TABLE))  # what the proxies print
    assert total.split()[6] == f"{priced['total']:,.1f}" and len(priced["hours"]) == 11


def test_paper_cost_prints_the_total_paper_list_prints(tmp_path, monkeypatch, capsys):
    """`paper cost` ends with the profiles priced from the file it wrote, as `paper list` prints that folder: the same
    rows and the same totals (a made-up measurement: every study's units those of the committed H200 table)."""
    h200 = drawn_cost.load_table(drawn_cost.H200_TABLE)

    def measured(scales, device, max_seconds, rounds=2):
        name = next(n for n, s in study_scales(5).items() if s == scales)
        return {"units": h200["studies"][name]["units"], "projection": {}, "measured_at": "2026-12-07 00:00 UTC",
                "load_average": [1.0]}

    monkeypatch.setattr(paper_cost, "measure_study", measured)
    monkeypatch.setattr(paper_cost, "machine", lambda device: {k: h200[k] for k in (
        "device", "device_name", "torch", "cuda", "python", "date", "load_average")})
    names = ["fedprox_sent140", "fedlaavg_cifar10"]
    code, out, _ = _exit(["paper", "cost", "--device", "cpu", "--study", *names, "--out", str(tmp_path)], capsys)
    assert code == 0
    printed = out.split("(what `fedbench paper list` prints):\n", 1)[1].splitlines()
    listed = listing("params.yaml", "cpu", tmp_path).splitlines()

    def totals(lines):
        return [line for line in lines if line.split()[:1] == ["total"]]

    assert totals(printed) == totals(listed)
    paper_total = totals(printed)[0]
    profile = PROFILES["paper"] + list(PAPER_CLAIM_STUDIES)
    hours = sum(study_costs_module.study_cost(n, study_scales(5)[n], "cpu", tmp_path)["seconds"] for n in profile)
    assert paper_total.split()[6] == f"{hours / 3600:,.1f}" and paper_total.endswith("(2 measured, 9 projected)")
    for name in names:  # each measured study's line as paper list prints it, and its progress line the same figure
        row = next(line for line in listed if line.split()[:1] == [name])
        assert row in printed and f"{name}: {row.split()[-2]} h" in out
