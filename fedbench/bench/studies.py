"""The studies the workload benchmark runs (issue 10): their runs, settings and data.

- :func:`fedprox_study`: FedProx's synthetic study at the paper's settings (section 5.1 and appendix C): 30
  devices, K = 10, E = 20, batch 10, lr 0.01, 200 rounds; 140 runs.
- :func:`cnn_study`: a CNN study with 10 clients per round on CIFAR-10-shaped data with FedLaAvg's CIFAR-10
  CNN (run only on a GPU).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

import numpy as np

from fedbench.algorithms.fedavg import FedAvg
from fedbench.algorithms.fedprox import FedProx
from fedbench.data.format import FederatedDataset
from fedbench.data.synthetic import SYNTHETIC_DATASETS, generate_synthetic
from fedbench.engine.simulation import SimulationConfig


@dataclass(frozen=True)
class StudyRun:
    dataset: str
    algorithm: str  # fedavg | fedprox
    mu: float  # FedProx's mu (0 for FedAvg)
    stragglers: float
    seed: int

    @property
    def label(self) -> str:
        alg = "fedavg" if self.algorithm == "fedavg" else f"fedprox_mu{self.mu:g}"
        return f"{self.dataset}/{alg}/stragglers{self.stragglers:g}/seed{self.seed}"


@dataclass(frozen=True)
class Workload:
    name: str
    about: str
    model: str
    runs: tuple[StudyRun, ...]
    subsets: dict[str, tuple[int, ...]]  # label -> indices of runs ("R = 1", "R = 15", "all")
    dataset: Callable[[str], FederatedDataset]
    rounds: int  # the study's rounds (what measurements are projected to)
    clients_per_round: int
    local_epochs: int
    batch_size: int
    lr: float
    local_steps: int = 0
    numpy_loop: bool = False

    def config(self, run: StudyRun, rounds: int, device: str) -> SimulationConfig:
        return SimulationConfig(rounds=rounds, clients_per_round=self.clients_per_round,
                                local_epochs=self.local_epochs, batch_size=self.batch_size,
                                straggler_fraction=run.stragglers, seed=run.seed, device=device, dissimilarity_every=1,
                                checkpoint_every=10**9, local_steps=self.local_steps)

    def algorithm(self, run: StudyRun):
        return FedAvg(lr=self.lr) if run.algorithm == "fedavg" else FedProx(lr=self.lr, mu=run.mu)


# ---- the two studies -------------------------------------------------------------------------------------

FEDPROX_PAPER = {"num_devices": 30, "clients_per_round": 10, "local_epochs": 20, "batch_size": 10, "lr": 0.01,
                 "rounds": 200}  # FedProx section 5.1 and appendix C


@cache
def synthetic_dataset(name: str) -> FederatedDataset:
    alpha, beta, iid = SYNTHETIC_DATASETS[name]
    return generate_synthetic(alpha, beta, iid, num_devices=FEDPROX_PAPER["num_devices"], seed=0)


def fedprox_study(seeds: tuple[int, ...] = (0, 1, 2, 3, 4)) -> Workload:
    """FedProx's synthetic study at the paper's settings: FedAvg, FedProx mu = 0 and mu = 1 at 0/10/50/90%
    stragglers on Synthetic(1,1) and Synthetic-IID (Figures 1 and 5, 10% added), FedAvg and FedProx mu = 1 on
    Synthetic(0,0) and (0.5,0.5) (Figure 2), every seed. R = 15 is Figure 1's FedProx mu = 1 at 0/50/90%
    stragglers x 5 seeds, R = 1 its first run."""
    runs = [StudyRun(ds, alg, mu, f, s)
            for ds in ("synthetic_1_1", "synthetic_iid")
            for alg, mu in (("fedavg", 0.0), ("fedprox", 0.0), ("fedprox", 1.0))
            for f in (0.0, 0.1, 0.5, 0.9) for s in seeds]
    runs += [StudyRun(ds, alg, mu, 0.0, s) for ds in ("synthetic_0_0", "synthetic_0p5_0p5")
             for alg, mu in (("fedavg", 0.0), ("fedprox", 1.0)) for s in seeds]
    figure1 = tuple(i for i, r in enumerate(runs) if r.dataset == "synthetic_1_1" and r.algorithm == "fedprox"
                    and r.mu == 1.0 and r.stragglers in (0.0, 0.5, 0.9))
    return Workload(
        name="fedprox_synthetic", model="mclr", runs=tuple(runs),
        about="FedProx on the synthetic data at the paper's settings (30 devices, K = 10, E = 20, batch 10, "
              "lr 0.01, 200 rounds)",
        subsets={"R = 1": figure1[:1], f"R = {len(figure1)}": figure1, "all": tuple(range(len(runs)))},
        dataset=synthetic_dataset, rounds=FEDPROX_PAPER["rounds"],
        clients_per_round=FEDPROX_PAPER["clients_per_round"], local_epochs=FEDPROX_PAPER["local_epochs"],
        batch_size=FEDPROX_PAPER["batch_size"], lr=FEDPROX_PAPER["lr"], numpy_loop=True)


CNN_STUDY = {"num_clients": 100, "images_per_client": 50, "clients_per_round": 10, "local_steps": 10,
             "batch_size": 5, "lr": 0.01, "rounds": 200}  # FedLaAvg's code defaults (C = 10, batch 5) at K = 10


def cnn_study(seeds: tuple[int, ...] = (0, 1, 2, 3, 4), scale: float = 1.0) -> Workload:
    """A 10-client-per-round CNN study on CIFAR-10-shaped data (random images, 100 clients of 50, as
    FedLaAvg's partition gives on average): FedAvg and FedProx mu = 0.01, 0.1, 1, every seed, C = 10 local
    steps of batch 5. R = 15 is the FedProx runs, R = 1 the first. ``scale`` < 1 shrinks the federation (tests)."""
    from fedbench.bench.federation import bench_model, make_federation

    runs = [StudyRun("cifar_shaped", "fedavg", 0.0, 0.0, s) for s in seeds]
    runs += [StudyRun("cifar_shaped", "fedprox", mu, 0.0, s) for mu in (0.01, 0.1, 1.0) for s in seeds]
    n_clients = max(2, int(CNN_STUDY["num_clients"] * scale))
    k = min(CNN_STUDY["clients_per_round"], n_clients)
    spec = bench_model("cifar_cnn")

    @cache
    def dataset(name: str) -> FederatedDataset:
        sizes = np.full(n_clients, max(1, int(CNN_STUDY["images_per_client"] * scale)))
        return make_federation(spec, spec.build(), n_clients, sizes=sizes)

    fedprox = tuple(range(len(seeds), len(runs)))
    return Workload(
        name="cnn_cifar_shaped", model="cifar_cnn", runs=tuple(runs),
        about=f"FedAvg/FedProx with FedLaAvg's CIFAR-10 CNN, {n_clients} clients, K = {k}, "
              f"C = {CNN_STUDY['local_steps']} local steps of batch {CNN_STUDY['batch_size']}",
        subsets={"R = 1": fedprox[:1], f"R = {len(fedprox)}": fedprox, "all": tuple(range(len(runs)))},
        dataset=dataset, rounds=CNN_STUDY["rounds"], clients_per_round=k, local_epochs=1,
        batch_size=CNN_STUDY["batch_size"], lr=CNN_STUDY["lr"], local_steps=CNN_STUDY["local_steps"])
