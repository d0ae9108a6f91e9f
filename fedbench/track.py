"""The DVC ``track`` stage: log every finished training run and every claim study to MLflow (fedbench.tracking),
each once: what is already there with the same fingerprint is not logged again.

Each simulation becomes one tracking.Record, made by one function from its record (fedbench.study.record):
simulation_record, tagged alike whatever study it belongs to (simulation_tags: study, budget, arm, seed, rounds,
fingerprint). A claim study's simulations are nested in its study run, which carries its verdicts. A run of
params.yaml's grid (the main job's simulations, fedbench.study.experiments: the track stage's and ``fedbench run``'s)
is logged from its record over every metric it evaluated (run_record) as a run of its own in ``train-<study>``
(the experiment is the study): MLflow 3.17's runs table shows a parent run collapsed, its nested runs hidden
until expanded, and its chart view then draws none of their curves, with or without a search on their tags
(seen in headless Chromium on 2026-11-29), so nesting them would hide the headline comparisons that `fedbench ui`
links (HEADLINE_CHARTS: FedProx vs FedAvg at 90% stragglers, a search, then the chart view)."""

from __future__ import annotations

import hashlib
import json
import math
import os
import tempfile
import time
from collections.abc import Callable
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fedbench import tracking_index
from fedbench.config import PIPELINE_BUDGET, Config
from fedbench.provenance import STUDY_CODE, git_commit
from fedbench.study.experiments import DATA_ROOT, RunKey, find_run, outcome_path, run_params
from fedbench.study.layout import MAIN_JOB, RESULTS_ROOT, adopt, reported_folder, study_folder
from fedbench.study.record import SIMULATIONS

if TYPE_CHECKING:
    from fedbench import tracking

# One naming scheme: `train-<study>` holds a training study's runs (params.yaml `studies:`, and `fedbench run`'s
# --study, default adhoc), one per (dataset, algorithm, stragglers, seed); `claims-<study>` holds a claim study
# (params.yaml `claim_studies:`, or a paper-scale study of `fedbench paper run`): one run, a nested run per simulation.
TRAIN_NOTES = {
    "stragglers": "FedProx (Li et al., MLSys 2020) Figures 1 and 5: FedAvg, FedProx mu=0 and mu=1 at 0/10/50/90% "
                  "stragglers on Synthetic(1,1) and Synthetic-IID, 200 rounds.",
    "heterogeneity": "FedProx (Li et al., MLSys 2020) Figure 2: FedAvg and FedProx mu=1 on Synthetic(0,0) and "
                     "(0.5,0.5), no stragglers.",
    "fedprox_mnist5k": "FedProx's MNIST scheme on 5,000 real MNIST images (100 devices): FedAvg and FedProx mu=1 at "
                       "0/50/90% stragglers, lr 0.03, 100 rounds (reduced scale).",
    "adhoc": "Runs started by hand with `fedbench run` (a run the main job logged already stays in its experiment).",
}
RUNS_HOW = (" One run per (dataset, algorithm variant, stragglers, seed) and settings, named by what tells it apart: "
            "algorithm and hyperparameters, stragglers, seed, what it sets otherwise than params.yaml, dataset (its "
            "outcome file: tag fedbench.fingerprint). The runs-table links `fedbench ui` prints show the params that "
            "differ between runs and the last round's metrics as columns; the tags dataset, variant, stragglers, mu, "
            "seed, rounds, budget and study are columns too (Columns > Tags), final/* tags the final values. Curves: "
            "tick runs, then Chart view (x axis Step = round). The report's figures with seed bands: reports/.")


FINGERPRINT_CHARS = 6  # of a claim study run's name's fingerprint: 16.7 million values
PARAMS = Path("params.yaml")  # the defaults a run is told apart from: the params file `dvc repro` reads
# run params the name always gives (and algo.*: the algorithm's hyperparameters)
NAMED = ("dataset", "algorithm", "variant", "straggler_fraction", "seed")
# the params shown first in the runs table where they differ between an experiment's runs (tracking.runs_view)
TABLE_PARAMS = ("dataset", "algorithm", "algo.mu", "straggler_fraction", "seed", "rounds", "variant")
METRIC_KEYS = ("train/loss", "train/accuracy", "test/loss", "test/accuracy", "train/dissimilarity",
               "test/error_p90", "diverging", "wall_time_s")  # a training run's step metrics
# the metrics shown first in the runs table (their last round's values; tracking.runs_view)
TABLE_METRICS = ("test/accuracy", "train/loss", "test/loss", "train/accuracy", "train/dissimilarity", "test/error_p90")


# processes drawing the runs' curves while the track stage logs (Curves): the main job's two cores
CURVE_WORKERS = max(1, min(4, os.cpu_count() or 1))


@dataclass(frozen=True)
class HeadlineChart:
    """A headline comparison of the main job, as `fedbench ui` links it: the runs of ``variants`` on ``dataset`` at
    ``stragglers`` in training study ``study``'s experiment, opened in MLflow's chart view (their curves at once)."""

    title: str
    study: str
    dataset: str
    stragglers: float
    variants: tuple[str, ...]

    def search(self, cfg: Config) -> str:
        """The MLflow search filter selecting exactly these runs (MLflow's filter has no OR: the study's other
        variants are excluded one by one)."""
        others = [v for v in cfg.studies[self.study].algorithms if v not in self.variants]
        return " and ".join([f"tags.dataset = '{self.dataset}'", f"tags.stragglers = '{self.stragglers:g}'",
                             *(f"tags.variant != '{v}'" for v in others)])


# each selects at most 10 runs (2 variants x 5 seeds): MLflow's chart view draws the first 10 visible runs
HEADLINE_CHARTS = (
    HeadlineChart("FedProx (mu=1) vs FedAvg, 90% stragglers, Synthetic(1,1) (FedProx Figure 1)", "stragglers",
                  "synthetic_1_1", 0.9, ("fedavg", "fedprox_mu1")),
    HeadlineChart("FedProx (mu=1) vs FedAvg on Synthetic(0,0), no stragglers (FedProx Figure 2)", "heterogeneity",
                  "synthetic_0_0", 0.0, ("fedavg", "fedprox_mu1")),
    HeadlineChart("FedProx (mu=1) vs FedAvg, 90% stragglers, MNIST-5k (FedProx Figure 1 on real data)",
                  "fedprox_mnist5k", "mnist5k_fedprox", 0.9, ("fedavg", "fedprox_mu1")),
)


def headline_charts(cfg: Config) -> list[tuple[str, str, str]]:
    """(title, MLflow experiment, search filter) of each HEADLINE_CHARTS comparison whose study ``cfg`` has."""
    return [(c.title, train_experiment(c.study), c.search(cfg)) for c in HEADLINE_CHARTS if c.study in cfg.studies]


def train_experiment(study: str) -> str:
    """The MLflow experiment of training study ``study``'s runs."""
    return f"train-{study}"


def claims_experiment(study: str) -> str:
    """The MLflow experiment of claim study ``study``."""
    return f"claims-{study}"


def train_description(study: str) -> str:
    return TRAIN_NOTES.get(study, f"Training runs of study {study!r} (params.yaml `studies.{study}`).") + RUNS_HOW


def claims_description(study: str, claims: list[dict[str, Any]]) -> str:
    """The study's purpose (its module's first docstring line, where it is one of fedbench.studies), its verdicts
    and where its runs are."""
    import importlib.util

    head = f"Claim study {study!r}."
    if importlib.util.find_spec(f"fedbench.studies.{study}") is not None:
        import importlib

        doc = (importlib.import_module(f"fedbench.studies.{study}").__doc__ or "").strip().split("\n\n")[0]
        head = " ".join(doc.split()) or head
    counts: dict[str, int] = {}
    for c in claims:
        counts[c["verdict"]] = counts.get(c["verdict"], 0) + 1
    verdicts = ", ".join(f"{n} {v}" for v, n in sorted(counts.items()))
    return (f"{head} Claims: {verdicts or 'none'} (verdict.* tags; reports/claims.md). One run per study run, "
            "with a nested run per simulation it ran (expand the study run).")


def track_runs(study: str, summaries: list[dict[str, Any]], results_root: Path = RESULTS_ROOT,
               curves: Curves | None = None, defaults: Config | None = None) -> list[str]:
    """Log runs of params.yaml's grid (their summaries: fedbench.study.experiments) to MLflow, in ``train-<study>``,
    each skipped if already logged with the same fingerprint (:func:`run_record`, with the figure of its curves).
    ``curves``: the figures drawn ahead in other processes (track_all); without it each is drawn here when its run is
    logged. ``defaults``: the config a run's name and tags say it differs from (default: the params file, PARAMS)."""
    ids = []
    for s in summaries:
        found = logged(s["fingerprint"])
        if found is not None:  # read from the store's file: neither MLflow nor matplotlib is loaded
            ids.append(found[1])
            continue
        from fedbench import tracking
        from fedbench.plotting import run_curves

        defaults = defaults if defaults is not None else params_file_config()
        p = s["params"]
        key = RunKey(p["dataset"], p["variant"], float(p["straggler_fraction"]), int(p["seed"]))
        outcome = outcome_path(results_root, s["fingerprint"])
        finished_ms = int(outcome.stat().st_mtime * 1000) if outcome.exists() else None
        base = None if defaults is None or key.variant not in defaults.algorithms else run_params(defaults, *key)
        with tempfile.TemporaryDirectory(prefix="fedbench-curves-") as tmp:  # private to this process
            def figure(s=s, key=key, tmp=tmp) -> list[Path]:
                if curves is not None and s["fingerprint"] in curves:
                    return [curves.wait(s["fingerprint"])]
                return [run_curves(s["history"], Path(tmp) / f"curves-seed-{key.seed}.png", title=key.desc)]

            record = run_record(study, run_name(p, differs(p, base)), s, base, figure, finished_ms)
            ids += tracking.log_runs(train_experiment(study), [record], train_description(study))
    return ids


def run_record(study: str, name: str, summary: dict[str, Any], defaults: dict[str, Any] | None,
               artifacts: Callable[[], list[Path]], finished_ms: int | None = None) -> tracking.Record:
    """A run of params.yaml's grid as the run MLflow logs: its record (fedbench.study.record.record over every
    metric it evaluated and its rounds' wall times) logged as every simulation is (:func:`simulation_record`), named
    ``name``, tagged besides with its budget (``pipeline`` where its rounds are the defaults', ``custom`` where they
    are not), its dataset, algorithm, variant, stragglers and mu (run_tags), its reporting round and provenance; its
    rounds stamped with their real times, ending ``finished_ms`` (default: now)."""
    from types import SimpleNamespace

    from fedbench import tracking
    from fedbench.study.record import record

    params, history = summary["params"], summary["history"]
    keys = tuple(k for k in ("round", *METRIC_KEYS) if any(k in row for row in history))
    ran = SimpleNamespace(history=history, final=summary["final"], diverged=summary["diverged"],
                          param_digest=summary["param_digest"], device=summary["device"])
    sim = record(RunKey(params["dataset"], params["variant"], float(params["straggler_fraction"]),
                        int(params["seed"])).desc, params, ran, keys) | {"fingerprint": summary["fingerprint"]}
    budget = {} if defaults is None else {
        "budget": "pipeline" if params.get("rounds") == defaults.get("rounds") else "custom"}
    tags = {**run_tags(params), "arm": str(params["variant"]), "dataset_hash": summary["dataset_hash"],
            **{f"version.{k}": v for k, v in summary["versions"].items()},
            "reporting_reason": summary["reporting_reason"], "reporting/round": str(summary["reporting_round"]),
            "dvc.experiment": tracking.dvc_experiment()}
    if summary["reporting_test_accuracy"] is not None:
        tags["reporting/test_accuracy"] = repr(float(summary["reporting_test_accuracy"]))
    if summary.get("diverged_at_round") is not None:
        tags["diverged_at_round"] = str(summary["diverged_at_round"])
    return simulation_record(sim, {"study": study, **budget, "git_commit": summary.get("git_commit", "unknown")},
                             int(time.time() * 1000) if finished_ms is None else finished_ms, name, tags, artifacts)


def run_tags(params: dict[str, Any]) -> dict[str, str]:
    """The tags that say which training run this is, as columns of the UI's runs table: dataset, algorithm,
    variant, stragglers, mu (``-`` for an algorithm without one), seed and rounds."""
    return {"dataset": str(params["dataset"]), "algorithm": str(params["algorithm"]),
            "variant": str(params["variant"]), "stragglers": f"{float(params['straggler_fraction']):g}",
            "mu": f"{float(params['algo.mu']):g}" if "algo.mu" in params else "-", "seed": str(params["seed"]),
            "rounds": str(params["rounds"])}


def final_tags(final: dict[str, float | None]) -> dict[str, str]:
    """``final/<name>`` (slashes in the name become underscores) for each final value that exists, as tags: a
    summary value in the runs table, not a one-point chart."""
    return {f"final/{k.replace('/', '_')}": repr(float(v)) for k, v in final.items() if v is not None}


def round_times(history: list[dict[str, Any]], finished_ms: int) -> tuple[int, list[int]]:
    """The run's start and each history row's timestamp (ms): the rows' ``wall_time_s`` cumulated from the start,
    which is ``finished_ms`` less their sum (a row without a wall time takes none)."""
    walls = [float(row.get("wall_time_s") or 0.0) for row in history]
    walls = [w if math.isfinite(w) else 0.0 for w in walls]
    start = finished_ms - round(1000 * sum(walls))
    out, t = [], 0.0
    for w in walls:
        t += w
        out.append(start + round(1000 * t))
    return start, out


def logged(fingerprint: str) -> tuple[str, str] | None:
    """(experiment name, run id) of the finished run logged with ``fingerprint``, or None: read from a SQLite
    store's file where it can be (fedbench.tracking_index: no MLflow loaded), else asked of MLflow."""
    try:
        return tracking_index.find_logged(fingerprint)
    except tracking_index.Unanswered:
        from fedbench import tracking

        return tracking.find_logged(fingerprint)


def curves_title(dataset: str, variant: str, stragglers: float, seed: int) -> str:
    """The title of a run's curves figure."""
    return f"{dataset} {variant} stragglers={stragglers:g} seed={seed}"


class Curves:
    """The curves figures of the runs about to be logged, drawn meanwhile by ``workers`` other processes (a
    figure takes about 0.2 s of matplotlib, a third of the time logging the main job's runs took when drawn in
    turn); each is drawn into a private temporary folder, exactly as it would be drawn in turn."""

    def __init__(self, workers: int) -> None:
        from concurrent.futures import ProcessPoolExecutor

        self._tmp = tempfile.TemporaryDirectory(prefix="fedbench-curves-")
        self._pool = ProcessPoolExecutor(max_workers=workers)
        self._futures: dict[str, Any] = {}

    def draw(self, summary: dict[str, Any], title: str) -> None:
        from fedbench.plotting import run_curves

        fp = summary["fingerprint"]
        if fp not in self._futures:
            path = Path(self._tmp.name) / fp / f"curves-seed-{summary['params']['seed']}.png"
            self._futures[fp] = self._pool.submit(run_curves, summary["history"], path, title=title)

    def __contains__(self, fingerprint: str) -> bool:
        return fingerprint in self._futures

    def wait(self, fingerprint: str) -> Path:
        return self._futures[fingerprint].result()

    def close(self) -> None:
        self._pool.shutdown(cancel_futures=True)
        self._tmp.cleanup()


def run_name(params: dict[str, Any], differences: dict[str, Any] | None = None) -> str:
    """A run's name, from its params, what tells runs apart first: the algorithm with the hyperparameters its
    variant sets (``algo.*``), the straggler percentage, the seed, the settings that differ from the defaults and
    the dataset: ``fedprox mu=1 90% s0 synthetic_1_1`` at params.yaml's settings, ``fedavg 90% s0 rounds=10
    synthetic_1_1`` with train.rounds=10. Within a headline comparison (one dataset, one straggler level) the first
    19 characters tell the runs apart: the chart view's run list shows about 21 (the runs table's links widen its
    name column to RUN_NAME_WIDTH, tracking.TABLE_VIEW). Runs with the same settings whose data or code differ share a
    name and differ in their fingerprint (tag ``fedbench.fingerprint``, the name of their outcome file)."""
    label = " ".join([str(params["algorithm"]), *(f"{k.removeprefix('algo.')}={_value(v)}" for k, v in params.items()
                                                  if k.startswith("algo."))])
    changed = " ".join(f"{k}={_value(v)}" for k, v in (differences or {}).items() if not k.startswith("algo."))
    stragglers = f"{100 * float(params['straggler_fraction']):g}%"
    return " ".join(p for p in (label, stragglers, f"s{params['seed']}", changed, str(params["dataset"])) if p)


def _value(v: Any) -> str:
    return f"{v:g}" if isinstance(v, float) else str(v)


def params_file_config(path: Path = PARAMS) -> Config | None:
    """``path`` as a config (the defaults of `fedbench run`'s runs, whatever its --set), or None where there is
    none or it does not load: then names carry no differences, only the fingerprint."""
    from fedbench.config import ConfigError, load_config

    try:
        return load_config(path)
    except ConfigError:
        return None


def differs(params: dict[str, Any], defaults: dict[str, Any] | None) -> dict[str, Any]:
    """The run params, other than those the name gives (NAMED), whose values are not the defaults', in the
    params' order ({} where the defaults are not known); a param the defaults lack counts, one only they have
    is ``-``."""
    if defaults is None:
        return {}
    out = {k: v for k, v in params.items() if k not in NAMED and (k not in defaults or defaults[k] != v)}
    return out | {k: "-" for k in defaults if k not in NAMED and k not in params}


def track_study(name: str, folder: Path, nested: bool = True) -> str:
    """Log claim study ``name``, run into ``folder`` (fedbench.study.layout), as one MLflow run of experiment
    ``claims-<name>`` with a nested run per simulation (none where ``nested`` is False: the main job's, whose runs the
    training runs' experiments log, train-<study>); its fingerprint is the hash of claims.json and the simulation
    records. The commit recorded is the one claims.json names, if it does, else HEAD, dirty only if the studies' code
    (fedbench/studies and STUDY_CODE) differs from it: the track stage runs on studies DVC has just found up to date
    with that code."""
    folder = Path(folder)
    claims_json = (folder / "claims.json").read_bytes()
    records_path = folder / SIMULATIONS
    records = records_path.read_bytes() if records_path.exists() else b""  # none: a study from before records
    fingerprint = hashlib.sha256(claims_json + records).hexdigest()[:16]
    found = logged(fingerprint)
    if found is not None:
        return found[1]
    from fedbench import tracking

    body = json.loads(claims_json)
    simulations = [json.loads(line) for line in records.splitlines()]  # as fedbench.study.record.read_simulations
    budget = body.get("budget") or PIPELINE_BUDGET  # claims.json: null at the pipeline budget
    commit = body.get("git_commit") or git_commit(("studies", *STUDY_CODE))
    now = int(time.time() * 1000)
    study = {"study": name, "budget": budget, "git_commit": commit}
    tags = {**study, "study/seconds": f"{float(body['seconds']):g}", "study/simulations": str(len(simulations)),
            **{f"verdict.{c['id']}": c["verdict"] for c in body["claims"]}}
    files = sorted(p for p in folder.iterdir() if p.is_file())
    parent = tracking.Record(study_run_name(name, budget, fingerprint), fingerprint, tags, {"study": name}, [],
                             now - int(1000 * float(body["seconds"])), now, lambda: files)
    return tracking.log_study(claims_experiment(name), parent,
                              [simulation_record(sim, study, now) for sim in simulations] if nested else [],
                              claims_description(name, body["claims"]))


def simulation_record(sim: dict[str, Any], study: dict[str, str], now: int, name: str | None = None,
                      tags: dict[str, str] | None = None,
                      artifacts: Callable[[], list[Path]] | None = None) -> tracking.Record:
    """A simulation's record (fedbench.study.record) as the run MLflow logs (tracking.Record), the one way every
    simulation is logged: named ``name`` (default: by the record); tagged with ``study`` (its study, budget and
    commit), simulation_tags, its param digest, device, final values and study results, and ``tags`` on top; its
    history as step metrics (a record that keeps its rows' rounds, ``round``, is stepped by them; else element i is
    round i), stamped with the rounds' own wall times where the record keeps them (``wall_time_s``), else at equal
    shares of its recorded seconds, ending ``now``; ``artifacts`` writes the files logged with it."""
    from fedbench import tracking

    tags = {**study, **simulation_tags(sim), "param_digest": sim["param_digest"], "device": sim["device"],
            "diverged": str(sim["diverged"]), **final_tags(sim["final"]),
            **{k: repr(float(v)) for k, v in sim["metrics"].items() if v is not None}, **(tags or {})}
    fingerprint = tags.pop("fedbench.fingerprint")
    steps = max((len(v) for k, v in sim["history"].items() if k != "round"), default=0)
    walls = sim["history"].get("wall_time_s")
    seconds = float(sim.get("seconds") or 0.0)
    start, stamps = round_times([{"wall_time_s": w} for w in walls] if walls and len(walls) == steps else
                                [{"wall_time_s": seconds / max(steps, 1)}] * steps, now)
    rounds = sim["history"].get("round")

    def step(values: list, i: int) -> int:
        return int(rounds[i]) if rounds and len(rounds) == len(values) else i

    points = [(key, v, stamps[i], step(values, i)) for key, values in sim["history"].items()
              if key != "round" for i, v in enumerate(values) if v is not None]
    return tracking.Record(name or sim["name"], fingerprint, tags, {k: str(v) for k, v in sim["params"].items()},
                           points, start, stamps[-1] if stamps else start, artifacts if artifacts is not None else tuple)


def simulation_tags(sim: dict[str, Any]) -> dict[str, str]:
    """A simulation record's columns of the runs table: its arm (the record's ``arm`` or ``method`` param, else
    the first part of its name, as the studies name them: ``scaffold/G=1/K=2``), seed and rounds (where its params
    give them), and its fingerprint (``fedbench.fingerprint``): the one fingerprint of its simulation
    (fedbench.study.reuse, the name of its outcome file), which its study's run wrote into the record; for a record
    without one (composed from several simulations, or written before), the hash of its params and final
    parameters' digest, which tells apart simulations that computed different things."""
    params = sim["params"]
    identity = json.dumps({"params": params, "param_digest": sim["param_digest"]}, sort_keys=True, default=str)
    tags = {"arm": str(params.get("arm") or params.get("method") or sim["name"].split("/")[0]),
            "fedbench.fingerprint": sim.get("fingerprint") or hashlib.sha256(identity.encode()).hexdigest()[:16]}
    return tags | {k: str(params[k]) for k in ("seed", "rounds") if params.get(k) is not None}


def study_run_name(name: str, budget: str, fingerprint: str) -> str:
    """A claim study run's name: the study, its budget and the start of its fingerprint
    (``delta_fl_triangle pipeline #3f2a1b``), so runs of one study at two budgets, or rerun, differ in name."""
    return f"{name} {budget} #{fingerprint[:FINGERPRINT_CHARS]}"


def track_all(cfg: Config, out_csv: Path, results_root: Path = RESULTS_ROOT, data_root: Path = DATA_ROOT) -> int:
    """Log to MLflow every finished run of the configured studies in ``results_root`` (under the parameters in force:
    fedbench.study.experiments.find_run, the runs the records name), every configured claim study that has run at its budget and every paper-scale study
    that has run, each from the folder the report reads (``results_root``: fedbench.study.layout); write the run-id
    index of the training runs to ``out_csv``."""
    import pandas as pd

    adopt(cfg, results_root)  # the earlier layout's runs/ and studies, moved in first
    rows = []
    found = {cell: [s for s in (find_run(cfg, data_root, results_root, RunKey(*cell[1:], seed))
                                for seed in cfg.train.seeds) if s is not None] for cell in cfg.cells()}
    with closing(Curves(CURVE_WORKERS)) as curves:
        for (_, ds, variant, f), summaries in found.items():  # the figures of the runs not logged yet, drawn ahead
            for s in summaries:
                if logged(s["fingerprint"]) is None:
                    curves.draw(s, curves_title(ds, variant, f, s["params"]["seed"]))
        for (study_name, ds, variant, f), summaries in found.items():
            ids = track_runs(study_name, summaries, results_root, curves, cfg)
            rows += [{"experiment": train_experiment(study_name), "dataset": ds,
                      "variant": variant, "stragglers": f, "seed": s["params"]["seed"], "mlflow_run_id": i}
                     for s, i in zip(summaries, ids)]
    # the configured claim studies at their budgets, then the paper-scale studies `fedbench study run` / `paper run`
    # left, each from the folder the report reads it from
    from fedbench.study.paper_profile import CLAIM_STUDIES

    reported = ({name: study_folder(name, c.budget, results_root) for name, c in cfg.claim_studies.items()}
                | {name: reported_folder(name, results_root) for name in sorted(CLAIM_STUDIES)})
    studies = [name for name, folder in reported.items() if (folder / "claims.json").exists()]
    for name in studies:
        track_study(name, reported[name])
    main_job = study_folder(MAIN_JOB, None, results_root)  # the main job's verdicts: its runs are logged above
    if (main_job / "claims.json").exists():
        track_study(MAIN_JOB, main_job, nested=False)
        studies.append(MAIN_JOB)
    from fedbench.study.registry import FEDPROX_REAL, budgets

    for name in FEDPROX_REAL:  # FedProx's real-data studies (fedbench.studies.fedprox_real), at their one budget
        folder = study_folder(name, budgets(name)[0], results_root)
        if (folder / "claims.json").exists():  # a params.yaml study's runs are logged above, a profile study's here
            track_study(name, folder, nested=name not in cfg.studies)
            studies.append(name)
    out_csv = Path(out_csv)
    out_csv.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{out_csv.name}.", dir=out_csv.parent)  # a name no other writer uses
    try:
        with os.fdopen(fd, "w") as f:
            pd.DataFrame(rows).to_csv(f, index=False)
        os.chmod(tmp, 0o644)
        os.replace(tmp, out_csv)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    print(f"{len(rows)} runs and {len(studies)} claim studies in MLflow (experiments: "
          f"{', '.join(sorted({r['experiment'] for r in rows} | {claims_experiment(n) for n in studies}))})")
    return len(rows)
