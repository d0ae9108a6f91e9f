"""Small studies that turn paper statements into claims with verdicts from real runs.

Each module exposes ``run(out_dir) -> list[claim dict]``: it runs what it needs through the engine (seconds on
two CPU cores), writes its figure(s) as PNG and a record of every simulation it ran (fedbench.studies.record)
into ``out_dir``, and returns one entry per claim, with exactly the keys of fedbench.report.claims entries.
Verdicts come from the rule stated in each entry, never from the published number. ``run_claim_study`` is
the DVC ``study`` stage; the ``track`` stage (fedbench.track) logs the results to MLflow.
"""

from __future__ import annotations

import importlib
import json
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fedbench.data.format import atomic_folder
from fedbench.studies.record import SIMULATIONS

if TYPE_CHECKING:
    from fedbench.engine.simulation import SimulationConfig

STUDIES_ROOT = Path("reports/studies")

CLAIM_KEYS = ("id", "paper", "where", "claim", "published", "reproduced", "rule", "verdict", "scale", "deviations",
              "observed")
VERDICTS = ("reproduced", "not-reproduced", "inconclusive", "not-run")

FEDPROX_PAPER = ("FedProx: Li, Sahu, Zaheer, Sanjabi, Talwalkar, Smith. Federated Optimization in "
                 "Heterogeneous Networks. MLSys 2020")
FEDLAAVG_PAPER = ("FedLaAvg: Yan, Niu, Ding, Zheng, Wu, Chen, Tang, Jiang. Distributed Non-Convex Optimization "
                  "with Sublinear Speedup under Intermittent Client Availability. arXiv 2002.07399 v1 (2020)")
DELTA_FL_PAPER = ("Delta-FL: Pillutla, Laguel, Malick, Harchaoui. Device Heterogeneity in Federated Learning: "
                  "A Superquantile Approach. arXiv 2002.11223 (2020)")


def claim(**fields: Any) -> dict[str, Any]:
    """A claim entry with exactly CLAIM_KEYS (a missing or extra key is a bug in the study)."""
    if set(fields) != set(CLAIM_KEYS):
        raise ValueError(f"claim keys differ: missing {set(CLAIM_KEYS) - set(fields)}, extra {set(fields) - set(CLAIM_KEYS)}")
    if fields["verdict"] not in VERDICTS:
        raise ValueError(f"verdict {fields['verdict']!r} is not one of {VERDICTS}")
    return {k: fields[k] for k in CLAIM_KEYS}


def sim_config(**fields: Any) -> SimulationConfig:
    """A SimulationConfig with the studies' defaults, ``fields`` on top: on the CPU (the studies are small),
    the gradient dissimilarity evaluated in round 0 only (eval_every) and no checkpoints (checkpoint_every)."""
    from fedbench.engine.simulation import SimulationConfig  # here: importing fedbench.studies needs no torch

    return SimulationConfig(**{"device": "cpu", "eval_every": 10**9, "checkpoint_every": 10**9, **fields})


class ModelTrace:
    """Callback keeping the global model after every round (small models only: it copies to the CPU)."""

    def __init__(self) -> None:
        self.models: list = []

    def on_model(self, round_: int, theta) -> None:
        self.models.append(theta.detach().double().cpu().numpy().copy())


def run_claim_study(name: str, root: Path = STUDIES_ROOT) -> list[dict[str, Any]]:
    """Run fedbench.studies.<name> into ``root/name`` (atomically: a temporary folder renamed into place), with
    its claims and the seconds it took in ``claims.json`` beside the study's figures and simulation records."""
    module = importlib.import_module(f"fedbench.studies.{name}")
    with atomic_folder(root / name) as tmp:
        t0 = time.perf_counter()
        claims = module.run(tmp)
        seconds = time.perf_counter() - t0
        if not (tmp / SIMULATIONS).exists():
            raise RuntimeError(f"study {name} wrote no {SIMULATIONS} (fedbench.studies.record.write_simulations)")
        (tmp / "claims.json").write_text(json.dumps({"study": name, "seconds": round(seconds, 1), "claims": claims},
                                                    indent=2, default=float) + "\n")
    for c in claims:
        print(f"{c['verdict']:>15}  {c['id']}")
    return claims
