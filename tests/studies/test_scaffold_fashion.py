"""SCAFFOLD's EMNIST setup on Fashion-MNIST (fedbench.studies.scaffold_fashion, stand-in): the similarity
variants on fixture-sized Fashion-MNIST files in the upstream format, step-size selection on the tuning seeds
only, the claims' measures on hand-made curves (a reproduced and a not-reproduced case), the declaration and its
cost, repeatability, and the whole study at the fixture budget."""

from __future__ import annotations

import math

import numpy as np
import pytest

from fedbench.data import stages
from fedbench.data.registry import VARIANTS
from fedbench.studies import real_data
from fedbench.studies import scaffold_fashion as study
from fedbench.studies import scaffold_tables as tables
from fedbench.study.contract import StudyRun, entry
from fedbench.study.runner import run_simulations
from tests.data import fixtures

FIXTURE_CLIENTS = 10  # the fixture's 120 training images (12 of each class) over 10 clients


@pytest.fixture(scope="module")
def real_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("scaffold_fashion")
    raw = root / "raw"
    raw.mkdir()
    for name, data in fixtures.mnist_like().items():
        (raw / name).write_bytes(data)
    for v in (*study.DECLARATION.variants, "fashion_mnist_scaffold_n100_s100"):
        stages.prepare_dataset(v, root, raw=raw, verify=False, variant_params={"num_clients": FIXTURE_CLIENTS})
    return root / "real"


TABLE3, TABLE5 = (c.id for c in study.DECLARATION.claims)


def judged(claim_id: str, runs: tables.Runs | None, budget: str = "fixture") -> dict:
    """Claim ``claim_id``'s entry from hand-made judged ``runs`` (None: a budget that does not run its table), judged
    as the driver judges it."""
    run = StudyRun(study.DECLARATION, budget, runs.budget if runs else study.BUDGETS[budget])
    claim = study.DECLARATION.claim(claim_id)
    return entry(run, claim, study.measure(claim, run, runs))


def test_variants_registered_with_the_papers_split(real_root):
    for s in (0, 10, 100):
        v = VARIANTS[f"fashion_mnist_scaffold_n100_s{s}"]
        assert v.sources == ("fashion_mnist",) and v.defaults == {"num_clients": 100, "similarity_percent": s, "seed": 0}
    zero = tables.dataset("fashion_mnist_scaffold_n100_s0", str(real_root))
    assert zero.num_clients == 10 and zero.train.sizes.tolist() == [12] * 10 and zero.num_classes == 10
    labels = [np.unique(zero.train.y[a:b]).tolist() for a, b in zip(zero.train.offsets[:-1], zero.train.offsets[1:])]
    assert labels == [[k] for k in range(10)]  # 0% similarity: one class a client, in label order
    iid = tables.dataset("fashion_mnist_scaffold_n100_s100", str(real_root))
    assert max(len(np.unique(iid.train.y[a:b])) for a, b in zip(iid.train.offsets[:-1], iid.train.offsets[1:])) > 1
    assert int(zero.test.sizes.sum()) == 0 and len(zero.global_test.y) == 30  # the 30 test images: the global test set
    assert (zero.input.transform, zero.input.transform_params) == ("scale", {"divisor": 255.0})  # x / 255


def test_declaration_cells_seeds_and_paper_scales():
    cells = study.cells()
    assert len(cells) == 2 * 2 * 1 + 2 + 2 * 3  # Table 3: s x {SCAFFOLD, FedAvg} x E = 5, SGD x s; Table 5: 2 x 3
    assert len({c.label() for c in cells}) == len(cells) and {c.variant for c in cells} == set(study.DECLARATION.variants)
    assert [c.table for c in cells] == [3] * 6 + [5] * 6
    b = study.BUDGETS["paper"]
    assert b.rounds == 100 and b.seeds == (0, 1, 2, 3, 4) and b.tuning_seeds == (100, 101) and b.tables == (3,)
    assert b.lr_grid == (0.03, 0.1, 0.3) and study.BUDGETS["full"] == tables.Budget(100, b.seeds, (100, 101), b.lr_grid,
                                                                                   "auto", (3, 5))
    assert not set(b.seeds) & set(b.tuning_seeds) and b.device == "auto"
    assert study.TARGET == 0.70
    assert sum(s.runs for s in study.DECLARATION.scales) == 6 * (3 * 2 + 5) == 66  # Table 3 only, no widening
    assert {s.batch_size for s in study.DECLARATION.scales} == {120} and {s.clients_per_round for s in study.DECLARATION.scales} == {20}
    assert {s.rounds for s in study.DECLARATION.scales} == {100}
    assert {(s.model, s.local_steps) for s in study.DECLARATION.scales} == {("mclr", 5 * 5), ("mclr", 5 * 1)}  # steps of batch 120


def test_the_declaration_states_arms_seeds_knobs_and_what_each_claim_reads():
    d = study.DECLARATION
    assert [(a.name, a.algorithm) for a in d.arms] == [("scaffold", "scaffold"), ("fedavg", "fedavg"),
                                                      ("sgd", "minibatch_sgd")]
    assert d.seeds == (0, 1, 2, 3, 4) and d.seeds_at("full") == d.seeds and d.seeds_at("fixture") == (0, 1)
    assert d.data_seeds == () and d.knobs["lr"] == (0.03, 0.1, 0.3) and d.knobs["tuning_seeds"] == (100, 101)
    assert d.evaluation == tables.EVALUATION and d.rounds("paper") == 100 and d.budgets is study.BUDGETS
    assert [c.reads for c in d.claims] == [("scaffold", "fedavg", "sgd")] * 2
    assert {c.fidelity for c in d.claims} == {"stand-in"} and {c.rounds_paper for c in d.claims} == {1000}
    assert {c.method for c in study.cells()} == {a.name for a in d.arms}


def _flat(value: float, rounds: int = 5) -> list[float]:
    return [0.0] + [value] * rounds


def test_step_selection_by_margin_with_the_smaller_step_on_a_tie():
    b = tables.Budget(rounds=5, seeds=(0, 1), tuning_seeds=(100, 101), lr_grid=(0.1, 0.3, 0.9), device="cpu")
    cell = study.STUDY.cell
    t3, clear, never, t5 = cell(3, "fedavg", 0, 5), cell(3, "scaffold", 10, 5), cell(3, "sgd", 0), cell(5, "scaffold", 10)
    # the curves of the tuning seeds only: selection never reads a judged seed (it would fail with a KeyError)
    curves = {(c, lr, s): _flat(0.1) for c in (t3, clear, never, t5) for lr in b.lr_grid for s in b.tuning_seeds}

    def put(c, lr, one, two):
        curves[(c, lr, 100)], curves[(c, lr, 101)] = one, two

    put(t3, 0.1, [0, 0, 0.7, 0.7, 0.7, 0.7], [0, 0, 0, 0, 0.7, 0.7])  # rounds 2 and 4: mean 3, spread 2
    put(t3, 0.3, [0, 0.7, 0.7, 0.7, 0.7, 0.7], [0, 0.7, 0.7, 0.7, 0.7, 0.7])  # 1 and 1: ahead by 2, not more
    put(clear, 0.1, [0, 0, 0, 0, 0.7, 0.7], [0, 0, 0, 0, 0.7, 0.7])  # 4 and 4
    put(clear, 0.3, [0, 0.7, 0.7, 0.7, 0.7, 0.7], [0, 0, 0.7, 0.7, 0.7, 0.7])  # 1 and 2: ahead by 2.5 > 1
    put(never, 0.3, _flat(0.6), _flat(0.62))  # never at 0.7: by best accuracy, 0.61 ahead of 0.1 (0.1) by far
    put(t5, 0.1, _flat(0.80), _flat(0.70))  # best accuracy: mean 0.75, spread 0.1
    put(t5, 0.3, _flat(0.76), _flat(0.76))  # 0.76 ahead by 0.01 < 0.1: tied, the smaller step
    sel = tables.select_steps([t3, clear, never, t5], curves, b, study.STUDY.select_target)
    assert {c: s.step for c, s in sel.items()} == {t3: 0.1, clear: 0.3, never: 0.3, t5: 0.1}
    assert (sel[t3].choice.leader, sel[t3].choice.tied, sel[t3].higher_is_better) == (0.3, (0.1, 0.3), False)
    assert sel[never].higher_is_better and sel[never].readings[0.3] == (0.6, 0.62)
    assert sel[clear].readings[0.3] == (1.0, 2.0) and sel[clear].interior and sel[never].interior
    # the tie-break's 0.1 is the grid's lower end and nothing runs new steps here: said, not widened
    assert not sel[t3].interior and sel[t3].text.endswith("extend the grid towards smaller steps")
    put(t5, 0.1, _flat(0.80), _flat(0.79))  # now 0.795 ahead of 0.76 by more than 0.01: the tuning seeds decide
    assert tables.select_steps([t5], curves, b, study.STUDY.select_target)[t5].step == 0.1


def test_step_selection_widens_a_cell_grid_until_interior():
    b = tables.Budget(rounds=5, seeds=(0, 1), tuning_seeds=(100, 101), lr_grid=(0.1, 0.3, 0.9), device="cpu")
    t5 = study.STUDY.cell(5, "fedavg", 0)
    best = {0.1: 0.5, 0.3: 0.6, 0.9: 0.7, 2.7: 0.8, 8.1: 0.4}  # rising to 2.7, then falling
    curves = {(t5, lr, s): _flat(best[lr] + d) for lr in b.lr_grid for s, d in zip(b.tuning_seeds, (0.0, 0.01))}
    asked = []

    def evaluate(pairs):
        asked.append(pairs)
        curves.update({(c, lr, s): _flat(best[lr] + d) for c, lr in pairs for s, d in zip(b.tuning_seeds, (0.0, 0.01))})

    sel = tables.select_steps([t5], curves, b, study.STUDY.select_target, evaluate)[t5]
    assert asked == [[(t5, 2.7)], [(t5, 8.1)]] and sel.added == (2.7, 8.1) and sel.grid == (0.1, 0.3, 0.9, 2.7, 8.1)
    assert sel.step == 2.7 and sel.interior and sel.record()["tuning"]["8.1"] == [0.4, 0.41]


def _judged_runs(scaffold_round: int, fedavg_rounds: tuple[int, int, int]) -> tables.Runs:
    """Judged curves on seeds 0-2: SCAFFOLD reaches 0.7 at ``scaffold_round``, FedAvg and SGD at
    ``fedavg_rounds``; Table 5: SCAFFOLD best 0.80, the others 0.78 and 0.79."""
    b = tables.Budget(rounds=6, seeds=(0, 1, 2), tuning_seeds=(100, 101), lr_grid=(0.1, 0.3), device="cpu")

    def reach(r: int) -> list[float]:
        return [0.0] * r + [0.71] * (7 - r)

    curves = {}
    for c in study.cells():
        for i, s in enumerate(b.seeds):
            if c.table == 3:
                curves[(c, s)] = reach(scaffold_round if c.method == "scaffold" else fedavg_rounds[i])
            else:
                curves[(c, s)] = _flat({"scaffold": 0.80, "fedavg": 0.78, "sgd": 0.79}[c.method], 6)
    tuning = {(c, lr, s): _flat(0.1, 6) for c in study.cells() for lr in b.lr_grid for s in b.tuning_seeds}
    selections = tables.select_steps(study.cells(), tuning, b, study.STUDY.select_target)  # all tied: 0.1, not widened
    return tables.Runs(curves, {c: sel.step for c, sel in selections.items()}, b, selections)


def test_table3_effects_and_verdicts_on_hand_made_curves():
    e = judged(TABLE3, _judged_runs(2, (3, 4, 4)))
    assert e["verdict"] == "reproduced" and len(e["parts"]) == 4
    assert [p["part"] for p in e["parts"]] == [f"{s}% similarity, 5 epochs: {m} - SCAFFOLD" for s in (0, 10)
                                                   for m in ("FedAvg", "SGD (large batch)")]
    assert [p["per_seed"] for p in e["parts"]] == [[1.0, 2.0, 2.0]] * 4
    assert e["reproduced"]["cells"]["fedavg, 5, 0"] == {"lr": 0.1, "per_seed": [3.0, 4.0, 4.0],
                                                            "mean": pytest.approx(11 / 3)}
    assert e["fidelity"] == "smoke-check" and e["rounds_run"] == 6  # 6 of 1,000 rounds: at most a tenth
    assert len(e["reproduced"]["selected_at_grid_edge"]) == 6  # every Table 3 cell at 0.1, the grid's lower end
    assert set(e["reproduced"]["selection"]) == {c.label() for c in study.cells() if c.table == 3}
    assert e["reproduced"]["selection"]["table3/fedavg/E=5/s=0"]["tuning"] == {"0.1": [0.1, 0.1], "0.3": [0.1, 0.1]}
    worse = judged(TABLE3, _judged_runs(5, (1, 2, 2)))
    assert [p["per_seed"] for p in worse["parts"]] == [[-4.0, -3.0, -3.0]] * 4
    assert worse["verdict"] == "not-reproduced"


def test_table5_effects_on_hand_made_curves():
    e = judged(TABLE5, _judged_runs(2, (3, 4, 4)))
    assert [p["part"] for p in e["parts"]] == [f"{s}% similarity: SCAFFOLD - {m}" for s in (0, 10)
                                                   for m in ("FedAvg", "SGD (large batch)")]
    assert [p["per_seed"] for p in e["parts"]] == [pytest.approx([2.0] * 3), pytest.approx([1.0] * 3)] * 2
    assert e["reproduced"]["cells"]["scaffold, 0% similarity"]["mean"] == 0.8


def test_table5_not_run_at_the_paper_budget_names_the_budget_that_runs_it():
    e = judged(TABLE5, None, "paper")
    assert e["id"] == study.DECLARATION.claims[1].id and e["verdict"] == "not-run" and e["fidelity"] == "stand-in"
    assert e["would_change"].startswith("running `fedbench paper run scaffold_fashion --budget full`")
    assert "Table 5 (2-layer network) not run at this budget" in " ".join(e["deviations"])


def test_not_run_entries_are_stand_in_with_the_command_and_a_cost():
    entries = real_data.not_run_entry(study.DECLARATION.name)
    assert [e["id"] for e in entries] == [c.id for c in study.DECLARATION.claims]
    for e in entries:
        assert e["verdict"] == "not-run" and e["command"] == f"fedbench paper run {study.DECLARATION.name}"
        assert e["fidelity"] == "stand-in" and e["cost"]["runs"] == 66 and e["cost"]["seconds"] > 0
        assert "stand-in: full Fashion-MNIST" in e["deviations"][0] and "could differ" in e["deviations"][0]


def test_same_seed_same_numbers(real_root):
    b = study.BUDGETS["fixture"]
    sims = [s for s in study.simulations(StudyRun(study.DECLARATION, "fixture", b, real_root)).values()
            if s.name.startswith("tuning/table3/scaffold/E=5/s=0/lr=0.3")]
    a, c = run_simulations(sims, workers=1), run_simulations(sims, workers=1)
    assert a[0].param_digest == c[0].param_digest
    assert a[0].series(tables.ACCURACY) == c[0].series(tables.ACCURACY)
    assert len(a[0].series(tables.ACCURACY)) == 4 and all(math.isfinite(x) for x in a[0].series(tables.ACCURACY))
