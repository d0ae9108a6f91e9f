"""The paper profile and FedProx's synthetic study priced from their drawn schedules on the committed H200
calibration (issue 49, item 1; the review's D0): what ``fedbench bench --parts proxies`` prints.

The pricing itself is the study framework's, the one every place quotes for a study (fedbench.study.drawn, through
fedbench.study.costs.study_cost): each stack the runner would run, priced chain by chain from the rounds it would
draw at the clients' sizes,

    t = sum over rounds r of (chain_r x a + row_steps_r x b) + rounds x round(R) + evaluation + cohort signal

(fedbench.study.drawn's docstring says what each term is and how it is read off ``paper-cost.json``). Its names are
re-exported here for the benchmarks that read them (proxies, gpu_proxies). This module adds the calibration: the
committed H200 tables (``reports/bench-gpu/paper-cost.json`` and ``workload.json``), the profile's studies priced
on them (:func:`price_profile`: the same figure ``fedbench paper list --device cuda`` prints), and the synthetic
study's seconds from its chain.

History: before the drawn schedule, the profile was projected from equal clients at the mean size: 61.3 GPU-hours
stacked (417.5 each run alone) on the same H200 table (:data:`PROFILE_BASELINE_H`).

Imports no torch.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fedbench.study.drawn import (ARM_CLASSES, PUBLISHED, SEEDS, SIZES_OF, TRAIN_FRACTION, Drawn, Unit,  # noqa: F401
                                  client_sizes, draw_stack, fit_unit, price_study, stack_seconds)

# history: the H200 projection from mean sizes (reports/bench-gpu/paper-cost.json, 51c981a), before the drawn schedule
PROFILE_BASELINE_H = 61.3


def load_table(path: Path) -> dict[str, Any]:
    return json.loads(Path(path).read_text())


H200_TABLE = Path("reports/bench-gpu/paper-cost.json")
H200_WORKLOAD = Path("reports/bench-gpu/workload.json")


def profile_names() -> list[str]:
    """The paper profile: FedProx's four studies and the other papers' paper-scale claim studies."""
    from fedbench.study.paper_profile import PAPER
    from fedbench.study.registry import PAPER_CLAIM_STUDIES

    return list(PAPER) + list(PAPER_CLAIM_STUDIES)


def price_profile(table: dict[str, Any], seeds: int = SEEDS, merged: bool = False, names: list[str] | None = None,
                  log=lambda _: None) -> dict[str, Any]:
    """Every study of the paper profile priced from its drawn schedule (a study whose units ``table`` has not all
    measured is left out); ``total`` their sum (hours), as ``fedbench paper list`` sums them."""
    from fedbench.study.paper_profile import study_scales

    scales = study_scales(seeds)
    out: dict[str, Any] = {}
    for name in names if names is not None else profile_names():
        log(f"    {name}")
        got = price_study(name, scales[name], table, merged)
        if got is not None:
            out[name] = got
    out_hours = {k: round(v["hours"], 3) for k, v in out.items()}
    return {"studies": out, "hours": out_hours, "total": round(sum(v["hours"] for v in out.values()), 2)}


def synthetic_seconds(workload: dict[str, Any], chain: int) -> float:
    """FedProx's synthetic study on the workload measurement's calibration (reports/bench-gpu/workload.json, all 140
    runs stacked as today): a chain step at the stacked runs' measured seconds per chain step (training seconds over
    the measured rounds' chain; the step's time did not grow with its rows: 180 us at 10 rows alone, 158 us at 500
    and 900, so it is latency, b = 0), plus the measured evaluation of all runs projected to the study's rounds."""
    whole = workload["subsets"]["all"]
    return whole["stacked_s_per_chain_step"] * chain + whole["stacked"]["projected_eval_s"]


def price_proxies(studies: tuple[str, ...] | None = None, chain: dict[str, Any] | None = None,
                  log=lambda _: None) -> dict[str, Any]:
    """The figures ``fedbench bench --parts proxies`` prints: the profile's GPU-hours from drawn schedules on the
    committed H200 table (``studies``: which; None: the profile), the synthetic study's seconds from its chain
    (``chain``: fedbench.bench.proxies.synthetic_chain's dict), and the calibration they were fitted on."""
    table = load_table(H200_TABLE)
    priced = price_profile(table, names=None if studies is None else list(studies), log=log)
    merged = price_profile(table, names=None if studies is None else list(studies), merged=True)
    workload = next(w for w in load_table(H200_WORKLOAD)["workloads"] if w["name"] == "fedprox_synthetic")
    synthetic = None
    if chain is not None and chain.get("rounds") == workload["rounds"]:
        synthetic = {"stacked_as_today": round(synthetic_seconds(workload, chain["chain"]), 1),
                     "one_stack": round(synthetic_seconds(workload, chain["one_stack_chain"]), 1)}
    return {"gpu_hours": priced["hours"] | {"total": priced["total"]},
            "gpu_hours_one_stack_a_study": merged["hours"] | {"total": merged["total"]}, "synthetic_s": synthetic,
            "calibration": {"table": str(H200_TABLE), "device": table["device_name"], "date": table["date"],
                            "torch": table["torch"], "workload": str(H200_WORKLOAD),
                            "synthetic_s_per_chain_step": workload["subsets"]["all"]["stacked_s_per_chain_step"],
                            "baseline_profile_hours": PROFILE_BASELINE_H}}
