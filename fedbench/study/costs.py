"""What a study's runs cost, projected from measured unit costs (the study framework's costs, issue 30 item 1): the
one figure every place quotes for a study (``fedbench paper list``, ``paper run --dry-run``, the not-run claim
entries, the README). Imports no torch and no benchmark: the unit costs are data, measured by the benchmarks
(fedbench.bench.costs: the per-model table ``fedbench/bench/measured_costs.json``, batch 10; fedbench.bench.paper_cost:
``fedbench paper cost``'s per-study table ``paper-cost.json`` in reports/bench or reports/bench-gpu), read here.

``study_cost`` is that figure: a study's read runs as the runner stacks them (:func:`stack_groups`), priced chain by
chain from their drawn schedules at the clients' sizes (fedbench.study.drawn), on each study's own measured units
where ``fedbench paper cost`` measured them, the per-model table otherwise. The mean-size projections it replaced
stay for what still reads them: ``project`` turns a study's scale (fedbench.study.scale.Scale) into seconds from
equal clients at the mean size, training and evaluation apart (fedbench.bench.costs's docstring says what each
unit cost measures and how a scale spends it); ``project_study`` sums the runs a claim reads, each on its own
(``paper cost``'s record of a measurement); ``project_stacked`` prices them stacked (the GPU check's profile).
Until 2026-12-07 ``paper list`` quoted those: 61.3 GPU-hours for the paper profile on the H200 (417.5 each run
alone), against the drawn schedule's 217.9 (docs/explanation/gpu.md).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from fedbench.study.drawn import Unit
from fedbench.study.scale import Scale
from fedbench.study.stacks import Stack, stack_groups, unit_key  # noqa: F401 (re-exported: the costs' names)

MEASURED = Path(__file__).resolve().parent.parent / "bench" / "measured_costs.json"  # the per-model table
TABLE_BATCH = 10  # the per-model table's batch (fedbench.bench.costs.BATCH)

# what one unit of work costs, in seconds: the keys of a measured model (or a measured study's (model, batch))
COST_KEYS = ("step_s", "round_s", "eval_s", "eval_sample_s", "grad_sample_s")
# what a measured unit may add: the same costs for stacks of 2 runs and more (``stacked``: a list of points, each
# {"runs": R, "round_s", "step_s", "eval_s", "eval_sample_s"}) and the most runs a stack fits in the device's memory
# (``stack_fit``; None: not cut), :func:`stacked_seconds`
STACK_KEYS = ("stacked", "stack_fit")
STACK_POINT_KEYS = ("runs", "round_s", "step_s", "eval_s", "eval_sample_s")


def load_measured(path: Path = MEASURED) -> dict[str, Any]:
    return json.loads(Path(path).read_text())


def table_costs(scale: Scale, measured: dict[str, Any]) -> dict[str, float]:
    """The unit costs of ``scale`` from the per-model table (batch 10): a step of batch B is ``step_s`` x
    max(1, B / 10), a sample's gradient ``step_s`` / 10, the fixed cost of an evaluation 0 (not measured)."""
    if scale.model not in measured["models"]:
        raise KeyError(f"no measured cost of model {scale.model!r} in {MEASURED.name}; measured: "
                       f"{', '.join(measured['models'])}")
    m = measured["models"][scale.model]
    return {"step_s": m["step_s"] * max(1.0, scale.batch_size / TABLE_BATCH), "round_s": m.get("round_s", 0.0),
            "eval_s": m.get("eval_s", 0.0), "eval_sample_s": m["eval_sample_s"],
            "grad_sample_s": m.get("grad_sample_s", m["step_s"] / TABLE_BATCH)}


def table_unit(scale: Scale, per_model: dict[str, Any]) -> Unit:
    """A unit from the per-model table (:func:`table_costs`: one run, no stack timed), as fedbench.study.drawn prices
    one: every row-step at its step_s (a = 0), the round's and an evaluation's fixed costs once a stack."""
    c = table_costs(scale, per_model)
    return Unit(steps=((1.0, c["step_s"]),), rounds=((1.0, c["round_s"]),),
                evals=((1, c["eval_s"], c["eval_sample_s"]),), grad_sample_s=c["grad_sample_s"])


def seconds(scale: Scale, c: dict[str, float]) -> tuple[float, float]:
    """(training, evaluation) seconds of one run of ``scale`` at unit costs ``c`` (COST_KEYS)."""
    signal = scale.clients_per_round * scale.client_samples * c["eval_sample_s"] if scale.cohort_signal else 0.0
    train = scale.rounds * (c["round_s"] + scale.steps_per_round() * c["step_s"] + signal)
    evaluation = scale.evaluations() * (c["eval_s"] + scale.eval_samples * c["eval_sample_s"])
    return train, evaluation + dissimilarity_seconds(scale, c)


def dissimilarity_seconds(scale: Scale, c: dict[str, float]) -> float:
    """Seconds of one run's gradient dissimilarity (0 where it is off), at the run-alone ``grad_sample_s``."""
    return scale.dissimilarities() * scale.dissimilarity_samples * c["grad_sample_s"]


def project(scale: Scale, measured: dict[str, Any] | None = None, costs: dict[str, float] | None = None,
            basis: str = "") -> dict[str, Any]:
    """The projected cost of ``scale``'s runs: from unit ``costs`` when given (a measurement of this study), else
    from the per-model table ``measured``: seconds and hours in all, of training and of evaluation, and how they
    were got."""
    if costs is None:
        measured = measured or load_measured()
        costs = table_costs(scale, measured)
        basis = basis or f"per-model table, batch 10, measured {measured['measured_on']} on {measured['device']}"
    train, evaluation = seconds(scale, costs)
    total = (train + evaluation) * scale.runs
    return {"device": (measured or {}).get("device", ""), "per_round_s": round((train + evaluation) / scale.rounds, 4),
            "rounds": scale.rounds, "runs": scale.runs, "seconds": round(total, 1), "hours": round(total / 3600, 2),
            "train_hours": round(train * scale.runs / 3600, 2),
            "eval_hours": round(evaluation * scale.runs / 3600, 2),
            "basis": (f"{scale.steps_per_round():,} local steps of batch {scale.batch_size} x "
                      f"{costs['step_s'] * 1e3:.3g} ms + {costs['round_s'] * 1e3:.3g} ms fixed a round, x {scale.rounds:,} "
                      f"rounds; {scale.evaluations():,} evaluations of {scale.eval_samples:,} samples x "
                      f"{costs['eval_sample_s'] * 1e6:.3g} us + {costs['eval_s'] * 1e3:.3g} ms"
                      + (f"; {scale.dissimilarities():,} dissimilarities of {scale.dissimilarity_samples:,} gradients"
                         if scale.dissimilarities() else "")
                      + f"; x {scale.runs} runs, each on its own ({basis})")}


def project_study(scales: tuple[Scale, ...] | list[Scale], measured: dict[str, Any] | None = None,
                  study_costs: dict[str, dict[str, float]] | None = None) -> dict[str, Any]:
    """A study's cost: its scales that a claim reads, summed (hours, training and evaluation hours, runs, the most
    rounds), ``left_out`` the runs no claim reads, and ``source``: "measured" where ``study_costs`` (unit costs keyed
    by :func:`unit_key`) covers every counted scale, "projected" where none, "partly measured" between."""
    measured = measured or load_measured()
    study_costs = study_costs or {}
    read = [s for s in scales if s.read]
    parts, hits = [], 0
    for s in read:
        c = study_costs.get(unit_key(s))
        hits += c is not None
        parts.append(project(s, measured, c, basis="measured" if c is not None else ""))
    total = sum(p["seconds"] for p in parts)
    source = "measured" if read and hits == len(read) else ("partly measured" if hits else "projected")
    return {"device": measured["device"], "seconds": round(total, 1), "hours": round(total / 3600, 2),
            "train_hours": round(sum(p["train_hours"] for p in parts), 2),
            "eval_hours": round(sum(p["eval_hours"] for p in parts), 2), "runs": sum(p["runs"] for p in parts),
            "left_out": sum(s.runs for s in scales if not s.read),
            "rounds": max((p["rounds"] for p in parts), default=0), "source": source,
            "basis": "; ".join(f"{s.model}: {p['basis']}" for s, p in zip(read, parts))}


def stack_point_seconds(scale: Scale, c: dict[str, float], point: dict[str, float]) -> float:
    """Seconds of one stack of ``point["runs"]`` runs of ``scale`` at the unit costs timed for such a stack
    (fedbench.bench.paper_cost: ``round_s`` and ``eval_s`` the stack's fixed costs, ``step_s`` a client-step and
    ``eval_sample_s`` a sample, each one row of the stack's batched work); the dissimilarity's gradients are priced
    per run at the run-alone ``grad_sample_s`` of ``c``. At one run it is :func:`seconds`'s sum."""
    runs = point["runs"]
    signal = scale.clients_per_round * scale.client_samples * point["eval_sample_s"] if scale.cohort_signal else 0.0
    train = scale.rounds * (point["round_s"] + runs * (scale.steps_per_round() * point["step_s"] + signal))
    evaluation = scale.evaluations() * (point["eval_s"] + runs * scale.eval_samples * point["eval_sample_s"])
    return train + evaluation + runs * dissimilarity_seconds(scale, c)


def stacked_seconds(scale: Scale, c: dict[str, float], runs: int) -> float:
    """Seconds of one stack of ``runs`` runs of ``scale`` at unit costs ``c`` (COST_KEYS), as the study runner runs
    it (fedbench.engine.simulation.simulate_stack).

    Where stacks of this unit were timed (``c["stacked"]``: a list of points, each the unit costs of a stack of
    ``runs`` runs, from 2 runs up; fedbench.bench.paper_cost), the stack's seconds are read off the measured curve
    through (1, T_1) (T_1: one run alone, :func:`seconds`) and each point's seconds (:func:`stack_point_seconds`),
    linear between points and along the last segment beyond the last. A batched step's cost grows less than
    linearly in its rows (its launches are shared), so a chord lies above the curve: between points and beyond
    them the figure overstates the stack, never understates it.

    Where no stack was timed, the assumption fedbench had before it measured stacks: the stack pays a round's fixed
    cost (``round_s``) and an evaluation's fixed cost (``eval_s``) once for all its runs, and everything else per
    run (the batched step taken as linear in its rows, which overstates it):
        stack(R) = R T_1 - (R - 1) (rounds x round_s + E x eval_s)."""
    train, evaluation = seconds(scale, c)
    points = [(1, train + evaluation)] + [(p["runs"], stack_point_seconds(scale, c, p)) for p in c.get("stacked") or ()]
    if len(points) == 1:
        shared = scale.rounds * c["round_s"] + scale.evaluations() * c["eval_s"]
        return runs * (train + evaluation) - (runs - 1) * shared
    for (r0, t0), (r1, t1) in zip(points, points[1:]):  # the segment holding ``runs``, else the last one
        if runs <= r1:
            break
    return t0 + (runs - r0) * (t1 - t0) / (r1 - r0)


def group_sizes(scales: tuple[Scale, ...] | list[Scale]) -> dict[str, int]:
    """unit key -> the most runs one of its stacks would hold, memory aside (:func:`stack_groups`): how large a
    stack ``fedbench paper cost`` times."""
    out: dict[str, int] = {}
    for stack in stack_groups(scales):
        out[unit_key(stack.scale)] = max(out.get(unit_key(stack.scale), 0), stack.runs)
    return out


def stack_cost(stack: Stack, c: dict[str, Any]) -> tuple[float, float]:
    """(alone, stacked) seconds of ``stack`` at unit costs ``c``: its runs each on its own, and as one stack
    (:func:`stacked_seconds`), the dissimilarity added for the runs that compute it."""
    off = dataclasses.replace(stack.scale, dissimilarity_every=0)
    extra = stack.dissimilarity_runs * dissimilarity_seconds(stack.scale, c)
    return stack.runs * sum(seconds(off, c)) + extra, stacked_seconds(off, c, stack.runs) + extra


def project_stacked(scales: tuple[Scale, ...] | list[Scale], costs_of, max_stack: int | None = None) -> dict[str, Any]:
    """A study's read runs as the study runner would run them (:func:`stack_groups`, :func:`stacked_seconds`)
    beside each run on its own, from mean client sizes; ``costs_of(scale)``: the unit costs of a scale. A unit whose
    costs say how many runs fit in the device's memory (``stack_fit``, timed on CUDA) has its groups cut to that.
    Seconds and hours of both, the stacks, and ``gain`` (one by one / stacked). The figure quoted for a study is
    :func:`study_cost`'s, from its drawn schedule; this one stays for the GPU check's profile (fedbench.bench.gpucheck)
    and for ``paper cost``'s record of what stacking gains."""
    def cut(s: Scale) -> int | None:
        fit = costs_of(s).get("stack_fit")
        return fit if max_stack is None else (max_stack if fit is None else min(fit, max_stack))

    stacks = stack_groups(scales, cut)
    priced = [stack_cost(st, costs_of(st.scale)) for st in stacks]
    alone, stacked = sum(p[0] for p in priced), sum(p[1] for p in priced)
    return {"stacks": len(stacks), "runs": sum(st.runs for st in stacks), "alone_seconds": round(alone, 1),
            "alone_hours": round(alone / 3600, 2), "stacked_seconds": round(stacked, 1),
            "stacked_hours": round(stacked / 3600, 2), "gain": round(alone / stacked, 3) if stacked else 1.0}


FILE = "paper-cost.json"


FOLDERS = {"cpu": Path("reports/bench"), "cuda": Path("reports/bench-gpu")}


DEVICES = tuple(FOLDERS)


def folder(device: str) -> Path:
    return FOLDERS[device]


def load(device: str, root: Path | None = None) -> dict[str, Any] | None:
    """The measured file for ``device`` (``root`` or its default folder), None where there is none; a corrupt one
    is a one-line error naming the file."""
    path = (root or folder(device)) / FILE
    if not path.exists():
        return None
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno}); rerun `fedbench paper cost "
                         f"--device {device}`") from None
    if not isinstance(data, dict) or not isinstance(data.get("studies"), dict):
        raise ValueError(f"{path}: no 'studies' table; rerun `fedbench paper cost --device {device}`")
    for name, study in data["studies"].items():
        for key, unit in (study.get("units") or {}).items():
            missing = [k for k in COST_KEYS if not isinstance(unit.get(k), (int, float))]
            if missing:
                raise ValueError(f"{path}: study {name}, unit {key}: missing {', '.join(missing)}")
            points = unit.get("stacked") or []
            bad = [p for p in points if not isinstance(p, dict)
                   or not all(isinstance(p.get(k), (int, float)) for k in STACK_POINT_KEYS)]
            runs = [p["runs"] for p in points if p not in bad]
            if bad or runs != sorted(set(runs)) or any(r < 2 for r in runs):
                raise ValueError(f"{path}: study {name}, unit {key}: 'stacked' must list points of increasing "
                                 f"runs >= 2, each with {', '.join(STACK_POINT_KEYS)}")
    return data


def study_costs(data: dict[str, Any] | None, name: str) -> dict[str, dict[str, Any]] | None:
    """The unit costs measured for study ``name`` (unit key -> COST_KEYS, with ``stacked`` and ``stack_fit`` where
    stacks were timed: :func:`stacked_seconds`), None where it was not measured."""
    if not data or name not in data["studies"]:
        return None
    return {k: {c: float(u[c]) for c in COST_KEYS} | {s: u[s] for s in STACK_KEYS if s in u}
            for k, u in data["studies"][name]["units"].items()}


READ = object()  # study_cost's and stacked_cost's default: read the tables themselves


def study_cost(name: str, scales: tuple[Scale, ...] | list[Scale], device: str = "cpu",
               root: Path | None = None, table: Any = READ, per_model: dict[str, Any] | None = None,
               data_root: Path = Path("data")) -> dict[str, Any]:
    """The one cost every place quotes for study ``name`` (``fedbench paper list``, ``paper cost``, ``paper run
    --dry-run``, the not-run claim entries, the README): its read runs as the runner stacks them, priced chain by
    chain from their drawn schedules at the clients' sizes (fedbench.study.drawn.price_study), on the unit costs
    ``fedbench paper cost`` measured for it on ``device`` (``paper-cost.json`` in ``root``, default :func:`folder`)
    where they are, else those measured for the study that prices it (fedbench.study.paper_profile.UNIT_COSTS_OF: an
    E = 1 study, by its E = 20 study's units of the same model and batch; ``units_of`` names it), else the per-model
    table's (fedbench/bench/measured_costs.json).

    hours, seconds, train_hours, eval_hours, runs (read), left_out (runs no claim reads), rounds, stacks, source
    ("measured", "partly measured": some units from each table, or "projected": the per-model table alone) and basis,
    with ``machine`` and ``date`` of the table the figure comes from, ``table`` (its file) and ``device``: the
    machine, the date and the unit in words.

    A caller pricing many studies passes the tables it read once: ``table`` (:func:`load`'s result, None where there is
    no file) and ``per_model`` (:func:`load_measured`'s). ``data_root``: where a built dataset gives the clients'
    sizes."""
    from fedbench.study.drawn import price_study
    from fedbench.study.paper_profile import UNIT_COSTS_OF

    per_model = per_model or load_measured()
    data = load(device, root) if table is READ else table
    priced_by = name if study_costs(data, name) else UNIT_COSTS_OF.get(name, name)
    own = study_costs(data, priced_by)
    got = price_study(name, scales, data, data_root=data_root, fallback=lambda s: table_unit(s, per_model))
    read = [s for s in scales if s.read]
    c = {"seconds": round(got["seconds"], 1), "hours": round(got["hours"], 2),
         "train_hours": round(got["train_hours"], 2), "eval_hours": round(got["eval_hours"], 2),
         "runs": sum(s.runs for s in read), "left_out": sum(s.runs for s in scales if not s.read),
         "rounds": max((s.rounds for s in read), default=0), "stacks": got["stacks"], "source": got["source"]}
    units_said = {"measured": "the unit costs measured for it", "projected": "the per-model table's unit costs",
                  "partly measured": "unit costs measured for it where they were, the per-model table's otherwise"}
    c["basis"] = (f"{c['runs']} runs its claims read, in {got['stacks']} stack(s) as the runner stacks them, priced "
                  f"chain by chain from their drawn schedules ({got['chain']:,} chain steps, {got['row_steps']:,} "
                  f"client-steps; client sizes: {'; '.join(got['sizes'])}) on {units_said[got['source']]}")
    fallback = {"machine": per_model["device"], "date": per_model["measured_on"], "table": f"fedbench/bench/{MEASURED.name}"}
    if own and priced_by != name:
        c |= {"units_of": priced_by, "basis": f"{c['basis']} (the unit costs measured for {priced_by}: the same model "
                                              "and batch)"}
    if own:
        measured = {"machine": data["device_name"], "date": data["studies"][priced_by]["measured_at"][:10],
                    "table": str((root or folder(device)) / FILE)}
        c |= measured if c["source"] == "measured" else {
            k: f"{measured[k]}; the rest {fallback[k]}" for k in measured}
    else:
        c |= fallback
    return c | {"device": f"{c['machine']}, measured {c['date']} ({'GPU' if device == 'cuda' else 'CPU'}-hours)"}


def stacked_cost(name: str, scales: tuple[Scale, ...] | list[Scale], device: str = "cpu", root: Path | None = None,
                 max_stack: int | None = None, table: Any = READ, per_model: dict[str, Any] | None = None
                 ) -> dict[str, Any]:
    """Study ``name``'s read runs as the study runner would run them, stacked (:func:`project_stacked`:
    the model is stated there), beside each run on its own; unit costs as :func:`study_cost` takes them (measured
    on ``device`` where they are, the per-model table otherwise; ``table``, ``per_model``: as there)."""
    own = study_costs(load(device, root) if table is READ else table, name) or {}
    per_model = per_model or load_measured()
    return project_stacked(scales, lambda s: own.get(unit_key(s)) or table_costs(s, per_model), max_stack)


def units(scales: tuple[Scale, ...] | list[Scale]) -> dict[str, Scale]:
    """unit key -> the read scale of that unit with the most run-rounds (what is timed), with the dissimilarity of
    the unit's read runs that compute it (so that its gradient is timed where any of them computes it)."""
    out: dict[str, Scale] = {}
    computing: dict[str, Scale] = {}
    for s in scales:
        if s.read:
            k = unit_key(s)
            if k not in out or s.runs * s.rounds > out[k].runs * out[k].rounds:
                out[k] = s
            if s.dissimilarity_every > 0:
                computing.setdefault(k, s)
    return {k: s if k not in computing else dataclasses.replace(
        s, dissimilarity_every=computing[k].dissimilarity_every, dissimilarity_samples=computing[k].dissimilarity_samples)
        for k, s in out.items()}
