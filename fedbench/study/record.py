"""What a claim study ran: one record per simulation, written to ``simulations.jsonl`` beside the study's claims,
and logged by fedbench.track as one MLflow run per simulation (child runs of the study's run).

A record is a JSON object, one per line:

    name          e.g. "scaffold/G=100/K=10/seed=0/lr=0.05"
    params        the algorithm's class and fields, the SimulationConfig fields that change what a run
                  computes, and the study's own knobs (G, delta, ...)
    history       per-round series {metric: [value of round 0, 1, ...]}; the step is the list index
    seconds       wall-clock seconds of the run (when run through fedbench.study.runner.run_simulations)
    final         the final evaluation's scalars ("train/loss", ...)
    metrics       the study's own results of the run ("study/rounds_to_target", ...)
    diverged, param_digest, device    as in the engine's RunResult

Floats keep 6 significant digits and non-finite values are null, so that the files stay small enough to
commit (the report's copy of each study's records, reports/studies/, is in git: fedbench.study.layout.publish).

A record's ``seconds`` (and claims.json's, the study's) are the wall time of the run that computed its numbers. A rerun
whose numbers are all identical keeps the seconds already on disk (:func:`keep_seconds`), so that rerunning a study, or
a fresh clone's ``make repro``, leaves its committed files byte-identical and ``git diff reports/`` shows only numbers
that changed.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fedbench.engine.evaluation import DEFAULT_EVALUATIONS

if TYPE_CHECKING:
    from fedbench.engine.simulation import RunResult, SimulationConfig
    from fedbench.study.runner import Outcome, Simulation

SIMULATIONS = "simulations.jsonl"
# per-round metrics a record keeps unless the study says otherwise (one value per history row; a study with a sparse
# evaluation protocol adds "round", so that readers and MLflow read rounds, not positions)
HISTORY_KEYS = ("train/loss", "test/accuracy")
DIGITS = 6
# SimulationConfig fields that say how a run executes, not what it computes
EXECUTION_FIELDS = ("device", "local_path", "dissimilarity_every", "dissimilarity_samples", "checkpoint_every")


def compact(value: float | None) -> float | None:
    """``value`` with DIGITS significant digits; None if it is None or not finite."""
    if value is None or not math.isfinite(value := float(value)):
        return None
    return float(f"{value:.{DIGITS}g}")


def params(cfg: SimulationConfig, algorithm: Any, **knobs: Any) -> dict[str, Any]:
    """A simulation's params: ``algorithm`` (a dataclass: its class name and fields; a field holding another
    algorithm gives that one's fields as ``field.name``), the fields of ``cfg``
    that change what the run computes (availability flattened to ``availability.<field>``), and ``knobs``.
    A name in two of these with different values is an error."""
    out: dict[str, Any] = {"algorithm": type(algorithm).__name__}
    for f in dataclasses.fields(algorithm):
        value = getattr(algorithm, f.name)
        if f.name == "keeps_partial_work":
            continue
        if dataclasses.is_dataclass(value):  # a wrapped algorithm: its class and fields under its field's name
            out[f.name] = type(value).__name__
            out |= {f"{f.name}.{g.name}": getattr(value, g.name) for g in dataclasses.fields(value)
                    if g.name != "keeps_partial_work"}
        else:
            out[f.name] = value
    for f in dataclasses.fields(cfg):
        if f.name in EXECUTION_FIELDS or (f.name == "lr_decay" and cfg.lr_decay == 1.0):
            continue  # a constant rate (lr_decay 1.0) is every run's but FedLaAvg CIFAR-10's: not recorded
        if f.name == "precision" and cfg.precision == "fp32":
            continue  # fp32 is every run's; a declared reduced mode (fedbench.engine.precision) is recorded
        value = getattr(cfg, f.name)
        if f.name == "evaluations":  # recorded where a study declares its own protocol
            if value != DEFAULT_EVALUATIONS:
                out["evaluations"] = [{k: v for k, v in dataclasses.asdict(e).items() if v not in ((), None)}
                                      for e in value]
        elif f.name == "availability":  # its other fields only matter when some clients are unavailable
            kept = dataclasses.asdict(value) if value.model != "always" else {"model": value.model}
            out |= {f"availability.{k}": v for k, v in kept.items()}
        elif f.name in out and out[f.name] != value:
            raise ValueError(f"param {f.name!r} is an algorithm field ({out[f.name]!r}) and a config field ({value!r})")
        else:
            out[f.name] = value
    clash = {k for k in knobs if k in out and out[k] != knobs[k]}
    if clash:
        raise ValueError(f"study knobs {sorted(clash)} clash with the algorithm or config params")
    return out | knobs


def record(name: str, params: dict[str, Any], result: RunResult | Outcome, keys: tuple[str, ...] = HISTORY_KEYS,
           series: dict[str, Iterable[float]] | None = None,
           metrics: dict[str, float | None] | None = None) -> dict[str, Any]:
    """One simulation as a record: the per-round ``keys`` of ``result.history`` plus the study's own per-round
    ``series`` (e.g. a relative gap, the model's coordinates), the final evaluation, and the study's ``metrics``
    of the run. ``result`` is an engine RunResult or a fedbench.study.runner.Outcome (which adds the run's
    seconds)."""
    history = {k: [compact(row.get(k)) for row in result.history] for k in keys}
    history |= {k: [compact(v) for v in values] for k, values in (series or {}).items()}
    final = result.final if isinstance(result.final, dict) else result.final.scalars()
    out = {"name": name, "params": params, "history": history,
           "final": {k: compact(v) for k, v in final.items()},
           "metrics": {k: compact(v) for k, v in (metrics or {}).items()},
           "diverged": bool(result.diverged), "param_digest": result.param_digest, "device": result.device}
    if getattr(result, "seconds", None) is not None:
        out["seconds"] = round(float(result.seconds), 3)
    return out


def sim_record(sim: Simulation, outcome: Outcome, keys: tuple[str, ...] = HISTORY_KEYS,
               series: dict[str, Iterable[float]] | None = None,
               metrics: dict[str, float | None] | None = None) -> dict[str, Any]:
    """The record of a declared Simulation and its Outcome: params from its config, algorithm and knobs."""
    return record(sim.name, params(sim.config, sim.algorithm, **sim.knobs), outcome, keys, series, metrics)


def write_simulations(out_dir: str | Path, records: list[dict[str, Any]]) -> Path:
    """Write ``records`` to ``out_dir/simulations.jsonl``; names must be unique (they name the MLflow runs)."""
    names = [r["name"] for r in records]
    if len(set(names)) != len(names):
        raise ValueError(f"simulation names repeat: {sorted({n for n in names if names.count(n) > 1})}")
    path = Path(out_dir) / SIMULATIONS
    path.write_text("".join(json.dumps(r, separators=(",", ":"), default=_plain) + "\n" for r in records))
    return path


# what says how long a run took and on how many worker processes (claims.json's "workers"), not what it computed
TIMING = ("seconds", "workers")
# a record's fingerprint (fedbench.study.reuse: the one identity of what computed it), added by the study's run
# (fedbench.study.output.run_claim_study) for the track stage's MLflow tags; it names the code too, so it is neither
# compared as a number nor kept in the report's committed copy (fedbench.study.layout.publish)
FINGERPRINT = "fingerprint"


def keep_seconds(previous: dict[str, Any] | None, new: dict[str, Any]) -> dict[str, Any]:
    """``new`` (a JSON object: a record, or a study's claims.json body) with the :data:`TIMING` of ``previous`` (its
    ``seconds``, and the ``workers`` they were measured with) where the two differ in nothing else; ``new`` as it is
    otherwise.

    Why the committed files keep the earlier timing rather than this run's: a researcher diffing reports/ reads it
    for results, and a wall time differs on every run (the machine, its load, the workers, a reused outcome) without
    anything having been found. Kept beside identical numbers, the seconds still say what computing them cost, and a
    diff shows a change exactly when a number, verdict or setting changed (the timing then changes with them).
    Moving the timing out of the tracked files instead would have left the MLflow runs (fedbench.tracking stamps each
    run's rounds from its record's seconds) and ``fedbench study list``'s cost without it."""
    if previous is None or "seconds" not in previous or "seconds" not in new:
        return new
    same = without(new, TIMING) == without(previous, TIMING)
    return {**new, **{k: previous[k] for k in TIMING if k in new and k in previous}} if same else new


def without(record: dict[str, Any], keys: tuple[str, ...] = ()) -> dict[str, Any]:
    """``record`` without ``keys``, and without its :data:`FINGERPRINT`, which says what computed it, not what it
    computed."""
    return {k: v for k, v in record.items() if k not in keys and k != FINGERPRINT}


def add_fingerprints(study_dir: str | Path, fingerprints: dict[str, str]) -> int:
    """Give each record of ``study_dir`` the :data:`FINGERPRINT` of its simulation (``fingerprints``: by name; a
    record whose name is not there, e.g. one a study composed from several simulations, has none). How many have."""
    records = read_simulations(study_dir)
    stamped = [r | {FINGERPRINT: fingerprints[r["name"]]} if r["name"] in fingerprints else r for r in records]
    if stamped != records:
        write_simulations(study_dir, stamped)
    return sum(FINGERPRINT in r for r in stamped)


def drop_fingerprints(study_dir: str | Path) -> None:
    """The records of ``study_dir`` without their :data:`FINGERPRINT` (the report's committed copy)."""
    records = read_simulations(study_dir)
    if any(FINGERPRINT in r for r in records):
        write_simulations(study_dir, [without(r) for r in records])


def keep_simulation_seconds(previous_dir: str | Path, new_dir: str | Path) -> bool:
    """Rewrite ``new_dir``'s simulations.jsonl with, for each record identical but for its seconds to the record of
    the same name in ``previous_dir`` (the study's folder before this run), the previous seconds (:func:`keep_seconds`).
    Whether every record of both is identical, the same runs in the same order (then the study's own seconds are kept
    too, where its claims are unchanged)."""
    before = read_simulations(previous_dir)
    after = read_simulations(new_dir)
    by_name = {r["name"]: r for r in before}
    kept = [keep_seconds(by_name.get(r["name"]), r) for r in after]
    if kept != after:
        write_simulations(new_dir, kept)
    return [without(r) for r in kept] == [without(r) for r in before]


def keep_folder_seconds(previous_dir: str | Path, new_dir: str | Path) -> bool:
    """``new_dir`` (a study's folder just written) given the seconds of ``previous_dir`` (its folder before) where no
    number changed: its records by :func:`keep_simulation_seconds`, and its claims.json replaced by the previous one
    where every record is the same and the two claims.json differ only in :data:`TIMING`. Whether they did (every
    number as before: the previous claims.json is kept, byte for byte)."""
    previous, new = Path(previous_dir) / "claims.json", Path(new_dir) / "claims.json"
    try:  # an unreadable record of the previous run keeps nothing: the new folder replaces it
        read_simulations(previous_dir)
        before = json.loads(previous.read_text()) if previous.is_file() else None
    except (OSError, ValueError):
        return False
    if not isinstance(before, dict) or not keep_simulation_seconds(previous_dir, new_dir):
        return False
    if keep_seconds(before, json.loads(new.read_text())) != before:
        return False
    new.write_bytes(previous.read_bytes())
    return True


def read_simulations(study_dir: str | Path) -> list[dict[str, Any]]:
    """The records of a study folder ([] if it has none: a study run before simulations were recorded)."""
    path = Path(study_dir) / SIMULATIONS
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _plain(value: Any) -> Any:
    """numpy scalars and arrays, tuples and the like as JSON values."""
    if hasattr(value, "tolist"):
        return value.tolist()
    raise TypeError(f"{type(value).__name__} is not JSON serializable")
