"""The main job, FedProx (Li et al., MLSys 2020) Figures 1, 2, 5, 6 and 7 on the paper's four synthetic sets: a claim
study like every other (issue 50, item 1), its declaration and three hooks run by the one driver
(fedbench.study.contract), into results/fedprox_main_job/<budget>/ (claims.json, simulations.jsonl, outcomes/).

Setting (params.yaml, the paper's where it gives one; fedbench/studies/fedprox_curves.py common_deviations lists the rest):
Synthetic-IID, (0,0), (0.5,0.5) and (1,1), 30 devices, data seed 0, multinomial logistic regression, K = 10 devices
a round drawn uniformly, E = 20, batch 10, lr 0.01, 0/10/50/90% stragglers (section 5.2; the authors' code's
U{1..E-1} epochs), the paper's 200 rounds; arms FedAvg (drops its stragglers), FedProx with mu = 0 (keeps their
partial work) and mu = 1 (the paper's best for Synthetic(1,1)), params.yaml's ``algorithms``.

Its grid is params.yaml's, not the declaration's: ``simulations`` builds one run per (dataset, algorithm variant,
straggler fraction, seed) of params.yaml's ``studies`` (each run once, with the first study listing it) under its
``train`` and ``algorithms`` sections (:func:`settings`), so that ``dvc exp run -S train.rounds=...`` runs a variation;
budget "pipeline" is ``train.rounds``, "paper" the paper's 200 rounds; the seeds are ``train.seeds`` unless a
confirmatory block names others. ``measure`` judges each claim's parts with its declared rule
(fedbench.studies.fedprox_main_job_claims, fedprox_main_job_heterogeneity), ``figure`` draws Figures 1, 2 and 5
(fedbench.studies.fedprox_figures), ``record`` keeps each run with the settings that determine it
(:func:`run_params`, as logged to MLflow). Importing it imports no torch.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fedbench.claims.papers import FEDPROX_PAPER
from fedbench.claims.stats import Share
from fedbench.claims.verdict import Rule
from fedbench.config import Config, ConfigError, check_stragglers
from fedbench.studies.fedprox_curves import HETERO, MU_CASE_LABELS, MU_CASES, PAPER_ROUNDS, Curves
from fedbench.study import experiments
from fedbench.study.contract import Measurement, StudyRun
from fedbench.study.declaration import Arm, Claim, StudyDeclaration
from fedbench.study.experiments import DATA_ROOT, dataset_meta, run_params  # noqa: F401 (run_params: the runs' params)

if TYPE_CHECKING:
    from fedbench.study.runner import Simulation

PIPELINE_ROUNDS = 200  # params.yaml train.rounds (tests/studies/test_fedprox_main_job.py checks they agree)
SEEDS = (0, 1, 2, 3, 4)  # params.yaml train.seeds (idem); a config's own train.seeds override them
MAIN_STUDIES = ("stragglers", "heterogeneity")  # the params.yaml studies whose runs the claims read (their arms: ours)

# the rules' parts, each stated once: fedbench/studies/fedprox_main_job_claims.py and _heterogeneity.py judge with these
GAIN_RULE = Rule("greater", 0.0, "accuracy points")  # the sign: the paper states no per-dataset gain to test
# (issue 32: the 5-point threshold was this project's choice, not the paper's)
LOSS_RULE = Rule("greater", 0.0, "training loss")
INSTABILITY_RULE = Rule("greater", 0.0, "loss rise")
DISSIMILARITY_RULE = Rule("greater", 0.0, "dissimilarity")
ACCURACY_RULE = Rule("greater", 0.0, "accuracy points")
IID_MARGIN = 10.0  # % above the 0%-straggler loss that still counts as "rather robust"
IID_RULE = Rule("at_most", IID_MARGIN, "% loss increase", chosen=True)  # no number in the paper (issue 51)
# Figure 5's "not much effect" of partial work on IID data, as an equivalence margin registered from the paper's
# wording before any of our values was read: the training losses of FedAvg and FedProx(mu=0) within 10% of each other
# (the margin fedbench already reads "rather robust" with, IID_MARGIN, for the same figure), and their test accuracies
# within 5 points (the smallest gain fedbench counts as "improves", fedprox/synthetic-1-1/stragglers-90/accuracy-gain)
IID_PARTIAL_LOSS_MARGIN = 10.0  # % of FedProx(mu=0)'s training loss
IID_PARTIAL_ACCURACY_MARGIN = 5.0  # accuracy points
IID_PARTIAL_LOSS_RULE = Rule("within", IID_PARTIAL_LOSS_MARGIN, "% loss difference", chosen=True)
IID_PARTIAL_ACCURACY_RULE = Rule("within", IID_PARTIAL_ACCURACY_MARGIN, "accuracy points", chosen=True)

# Figures 6 and 7's comparisons of mu > 0 with mu = 0 (fedbench.studies.fedprox_curves.MU_CASES)
SHARE_RULE = Rule("greater", 0.0, "% of cases", share=Share(cases=len(MU_CASES), minus=50.0))  # a bounded, discrete
# reading: an exact interval (issue 32: the t interval over five equal shares read [33.3, 33.3], p = 0)

REGISTERED_FROM_TEXT = ("Registered from the paper's text before any of our values for it was read; the runs (the "
                        "stragglers study) existed already")

DECLARATION = StudyDeclaration(
    name="fedprox_main_job", paper=FEDPROX_PAPER,
    dataset="FedProx's four synthetic sets (Synthetic-IID, (0,0), (0.5,0.5), (1,1)), 30 devices, 90/10 split",
    arms=(Arm("fedavg", "fedavg"), Arm("fedprox_mu0", "fedprox", {"mu": 0.0}),
          Arm("fedprox_mu1", "fedprox", {"mu": 1.0})),
    seeds=SEEDS, budgets={"pipeline": PIPELINE_ROUNDS, "paper": PAPER_ROUNDS}, data_seeds=(0,),
    knobs={"datasets": HETERO, "stragglers": (0.0, 0.1, 0.5, 0.9)},
    keeps_outcomes=True,  # params.yaml's variations share the store: each one's runs stay for the next (issue 50)
    claims=(
    Claim(
        id="fedprox/synthetic-1-1/stragglers-90/accuracy-gain",
        where="abstract, section 5.3.2, Figure 7 (appendix C.3.2)",
        claim_text="With 90% stragglers, FedProx (best mu > 0) improves absolute test accuracy over FedAvg, by 22% on "
                   "average over the five datasets (Synthetic(1,1), MNIST, FEMNIST, Shakespeare, Sent140).",
        published={"value": 22.0, "unit": "accuracy points",
                   "scope": "mean over the paper's five datasets, 90% stragglers",
                   "statement": "FedProx improves absolute test accuracy by 22% on average in highly heterogeneous "
                                "settings (the MLSys proceedings abstract says 18.8%); per-dataset values exist only "
                                "as Figure 7 curves, so the Synthetic(1,1) gain is not published on its own"},
        effect="per seed, gain = test accuracy of FedProx(mu=1) - that of FedAvg in points, each the mean of the last 5 "
               "evaluations, on Synthetic(1,1) at 90% stragglers",
        rules=(("", GAIN_RULE),),
        notes="The sign only: the published +22 is a five-dataset mean (fedprox/five-datasets/mean-accuracy-gain judges "
              "that size), and the paper states no gain for Synthetic(1,1) alone. Rule history: the first version read "
              "each method at its appendix C.3.2 round; that reading compares different rounds (FedAvg seed 2 read at "
              "round 10 'diverging' though it recovers by round 40), so it is now a sensitivity reading; the second "
              "asked the interval to reach +5 points, a threshold this project chose (issue 32: removed)",
        reads=("fedprox_mu1", "fedavg"), rounds_paper=PAPER_ROUNDS),
    Claim(
        id="fedprox/synthetic-1-1/partial-work", where="section 5.2, Figure 1",
        claim_text="Incorporating the partial work of stragglers (FedProx, mu=0) leads to better convergence than "
                   "dropping them (FedAvg) at 50% and 90% stragglers.",
        published={"value": None, "unit": "training loss",
                   "scope": "Synthetic(1,1), 50% and 90% stragglers (Figure 1 curves)",
                   "statement": "FedProx(mu=0)'s training loss below FedAvg's"},
        effect="per seed and straggler level, effect = FedAvg's training loss - FedProx(mu=0)'s, each the mean of the "
               "last 5 evaluations (a diverged run counts as infinite)",
        rules=(("each level", LOSS_RULE),),
        reads=("fedprox_mu0", "fedavg"), rounds_paper=PAPER_ROUNDS),
    Claim(
        id="fedprox/synthetic-1-1/mu-stabilises", where="section 5.3.2, Figure 1 and its caption, Figure 7",
        claim_text="FedProx with mu > 0 leads to more stable convergence and enables otherwise divergent methods to "
                   "converge, both with systems heterogeneity (50% and 90% stragglers) and without (0%).",
        published={"value": None, "unit": "training loss",
                   "scope": "Synthetic(1,1), 0/50/90% stragglers (Figure 1 curves)",
                   "statement": "FedProx(mu>0)'s training-loss curves steadier than FedProx(mu=0)'s, and converging "
                                "where mu=0 diverges"},
        effect="instability of a run = the sum of the rises of its training loss from one round to the next (its "
               "upward variation; a diverged run counts as infinite); per seed and straggler level, effect = "
               "instability of FedProx(mu=0) - that of FedProx(mu=1)",
        rules=(("each level", INSTABILITY_RULE),),
        notes="Runs flagged diverging by appendix C.3.2 (f_t - f_t-10 > 1) are counted and reported, not judged",
        reads=("fedprox_mu0", "fedprox_mu1"), rounds_paper=PAPER_ROUNDS),
    Claim(
        id="fedprox/synthetic/heterogeneity-hurts-fedavg", where="section 5.3.1, Figure 2 (top row)",
        claim_text="As data become more heterogeneous (Synthetic-IID, (0,0), (0.5,0.5), (1,1)), FedAvg's convergence "
                   "worsens; setting mu > 0 helps on the heterogeneous sets.",
        published={"value": None, "unit": "training loss", "scope": "four synthetic sets, no stragglers (Figure 2 "
                                                                    "curves)",
                   "statement": "FedAvg's training loss ordered IID < (0,0) < (0.5,0.5) < (1,1); FedProx(mu>0) below "
                                "FedAvg on the non-IID sets"},
        effect="training loss = mean of the last 5 evaluations, no stragglers, paired per seed. Parts A: FedAvg's loss "
               "on each dataset minus its loss on the next less heterogeneous one (three steps); parts B: FedAvg's "
               "loss minus FedProx(mu=1)'s on each non-IID set",
        rules=(("each part", LOSS_RULE),),
        reads=("fedavg", "fedprox_mu1"), rounds_paper=PAPER_ROUNDS),
    Claim(
        id="fedprox/synthetic/dissimilarity-tracks-loss", where="section 5.3.3, Figure 2 (bottom row)",
        claim_text="The dissimilarity measure (variance of local gradients) captures statistical heterogeneity and is "
                   "consistent with the training loss (smaller dissimilarity, better convergence); increasing mu leads "
                   "to smaller dissimilarity.",
        published={"value": None, "unit": "variance of local gradients",
                   "scope": "four synthetic sets, no stragglers (Figure 2 curves)",
                   "statement": "dissimilarity ordered as heterogeneity and as the loss; FedProx(mu>0) lowers it"},
        effect="dissimilarity of a run = mean of its evaluated dissimilarity over the rounds, no stragglers, paired "
               "per seed. Parts A: FedAvg's dissimilarity on each dataset minus that on the next less heterogeneous "
               "one (it follows heterogeneity, the order in which fedprox/synthetic/heterogeneity-hurts-fedavg judges "
               "the loss); parts B: FedAvg's dissimilarity minus FedProx(mu=1)'s on each non-IID set",
        rules=(("each part", DISSIMILARITY_RULE),),
        notes="The per-seed Spearman correlation of dissimilarity and loss over the four datasets is reported, not "
              "judged",
        reads=("fedavg", "fedprox_mu1"), rounds_paper=PAPER_ROUNDS),
    Claim(
        id="fedprox/synthetic-iid/robust-to-stragglers", where="section 5.2 and appendix C.3.1, Figure 5",
        claim_text="On IID data (Synthetic-IID), FedAvg is rather robust to stragglers (device failure).",
        published={"value": None, "unit": "training loss",
                   "scope": "Synthetic-IID, 0/10/50/90% stragglers (Figure 5 curves)",
                   "statement": "FedAvg's training-loss curves at 0, 10, 50 and 90% stragglers close together"},
        # {levels}: the straggler levels of 10/50/90% that params.yaml's studies run FedAvg at on Synthetic-IID
        effect="per seed and straggler level, effect = 100 (FedAvg's training loss at that level / its loss at 0% - "
               "1), each the mean of the last 5 evaluations",
        rules=(("each level ({levels})", IID_RULE),),
        reads=("fedavg",), rounds_paper=PAPER_ROUNDS),
    Claim(
        id="fedprox/synthetic-1-1/stragglers-0-50/accuracy-gain",
        where="section 5.2, Figure 1 caption, Figure 7 (appendix C.3.2)",
        claim_text="FedProx (mu = 1, the paper's best for Synthetic(1,1)) reaches a higher test accuracy than FedAvg "
                   "also without stragglers and with 50% stragglers (Figure 1's caption: 'We also report testing "
                   "accuracy in Figure 7 ... and show that FedProx improves the test accuracy on all datasets').",
        published={"value": None, "unit": "accuracy points",
                   "scope": "Synthetic(1,1), 0% and 50% stragglers (Figure 7 curves)",
                   "statement": "'FedProx improves the test accuracy on all datasets' (Figure 1 caption); no number is "
                                "published at 0% or 50% (the +22 is the 90% five-dataset mean)"},
        effect="per seed and straggler level, gain = test accuracy of FedProx(mu=1) - that of FedAvg in points, each "
               "the mean of the last 5 evaluations (a diverged run reads 0 from its divergence on)",
        rules=(("each level", ACCURACY_RULE),),
        notes="Direction only: the paper publishes no size at these levels. " + REGISTERED_FROM_TEXT,
        reads=("fedprox_mu1", "fedavg"), rounds_paper=PAPER_ROUNDS),
    Claim(
        id="fedprox/synthetic-1-1/stragglers-hurt-fedavg", where="section 5.2, Figure 1",
        claim_text="Systems heterogeneity has negative effects on convergence, and larger heterogeneity results in "
                   "worse convergence (FedAvg): FedAvg's training loss at 0% < 50% < 90% stragglers.",
        published={"value": None, "unit": "training loss",
                   "scope": "Synthetic(1,1), 0/50/90% stragglers (Figure 1 curves)",
                   "statement": "'We see that on all the datasets, systems heterogeneity has negative effects on "
                                "convergence, and larger heterogeneity results in worse convergence (FedAvg).'"},
        effect="per seed, FedAvg's training loss (the mean of the last 5 evaluations; a diverged run counts as "
               "infinite) at the higher straggler level minus that at the lower one, for 0% -> 50% and 50% -> 90%",
        rules=(("each step", LOSS_RULE),),
        notes=REGISTERED_FROM_TEXT,
        reads=("fedavg",), rounds_paper=PAPER_ROUNDS),
    Claim(
        id="fedprox/synthetic/mu-increases-accuracy", where="section 5.3.2, Figures 6 and 7 (appendix C.3.2)",
        claim_text="mu > 0 also increases the test accuracy in most cases (Figure 6: the four synthetic sets without "
                   "stragglers; Figure 7: Synthetic(1,1) at 0/50/90% stragglers).",
        published={"value": None, "unit": "% of cases", "scope": "the six synthetic comparisons of Figures 6 and 7",
                   "statement": "'mu > 0 also increases the accuracy in most cases (see Figure 6 and Figure 7 in "
                                "Appendix C.3.2)'"},
        effect="a case is one comparison of Figures 6-7 that the main job runs (" + ", ".join(MU_CASE_LABELS) + "; mu "
               "> 0 is mu = 1, mu = 0 is FedAvg at 0% stragglers and FedProx(mu=0) with stragglers); per seed, share = "
               "the percentage of the six cases in which FedProx(mu=1)'s test accuracy (the mean of the last 5 "
               "evaluations; a diverged run reads 0 from its divergence on) is above mu = 0's (a tie counts as not "
               "above), effect = share - 50 ('most cases': more than half)",
        rules=(("", SHARE_RULE),),
        notes="The per-case gains are reported, not judged. Registered from the paper's text before any of our values "
              "for it was read; the runs existed already",
        reads=("fedavg", "fedprox_mu0", "fedprox_mu1"), rounds_paper=PAPER_ROUNDS),
    Claim(
        id="fedprox/synthetic-iid/partial-work-no-effect", where="section 5.2 and appendix C.3.1, Figure 5",
        claim_text="On IID data (Synthetic-IID), incorporating the partial solutions of the stragglers (FedProx, mu = "
                   "0) or dropping them (FedAvg) makes not much difference to convergence, at 10%, 50% and 90% "
                   "stragglers.",
        published={"value": None, "unit": "training loss and test accuracy",
                   "scope": "Synthetic-IID, 10/50/90% stragglers (Figure 5 curves)",
                   "statement": "'whether incorporating partial solutions from the stragglers would not have much "
                                "effect on convergence' (Figure 5 caption); 'tolerating variable amounts of local "
                                "work may not cause major improvement' (section 5.2)"},
        effect="per seed and straggler level, loss effect = 100 (FedAvg's training loss / FedProx(mu=0)'s - 1) and "
               "accuracy effect = FedAvg's test accuracy - FedProx(mu=0)'s in points, each the mean of the last 5 "
               "evaluations",
        rules=(("each loss part", IID_PARTIAL_LOSS_RULE), ("each accuracy part", IID_PARTIAL_ACCURACY_RULE)),
        notes="An equivalence rule, its margins registered from the paper's wording ('not much effect') before any of "
              "our values was read (10%: the margin fedbench reads Figure 5's 'rather robust' with; 5 points: the "
              "smallest gain fedbench counts as 'improves'). The runs (the stragglers study) existed already",
        reads=("fedavg", "fedprox_mu0"), rounds_paper=PAPER_ROUNDS),
))


# -- the hooks: params.yaml's grid as Simulations, each claim measured, Figures 1, 2 and 5 -------------------------

Key = tuple[str, str, float, int]  # a run: (dataset, algorithm variant, straggler fraction, seed)


def settings(run: StudyRun) -> Config:
    """params.yaml's Config (``run.config``) at the run's budget and seeds: budget "pipeline" keeps ``train.rounds``,
    another sets it to the declared rounds (a params.yaml study's own ``train.rounds`` stays its own); the seeds are
    ``train.seeds`` unless the run names others (a confirmatory block: the declaration's seeds replaced). A
    ConfigError where the run has no config."""
    cfg = run.config
    if cfg is None:
        raise ConfigError(f"study {DECLARATION.name}: its grid is params.yaml's (train, algorithms, studies); allowed: "
                          "a run given params.yaml's config (`fedbench study run fedprox_main_job`, its DVC stage)")
    train = cfg.train
    if run.budget_name != "pipeline":
        train = dataclasses.replace(train, rounds=run.rounds)
    if run.declaration.seeds != DECLARATION.seeds:
        train = dataclasses.replace(train, seeds=tuple(run.declaration.seeds))
    return cfg if train is cfg.train else dataclasses.replace(cfg, train=train)


def grid(cfg: Config) -> list[Key]:
    """Every run of params.yaml's studies (Config.cells, then each of ``train.seeds``), each once, in the order the
    first study listing it names it."""
    return list(dict.fromkeys((ds, variant, float(f), seed) for _, ds, variant, f in cfg.cells()
                              for seed in cfg.train.seeds))


def name(key: Key) -> str:
    dataset, variant, stragglers, seed = key
    return f"{dataset} {variant} stragglers={stragglers:g} seed={seed}"


def simulation(cfg: Config, key: Key, meta: dict[str, Any], data_root: str | Path = DATA_ROOT) -> Simulation:
    """Run ``key`` under ``cfg`` (its dataset's ``meta``: dataset_meta) as a Simulation of the one runner, its settings
    (run_params) its knobs: fedbench.study.experiments.simulation, its straggler fraction checked against ``train``."""
    check_stragglers(cfg.train, key[2], f"studies: {key[0]} {key[1]}")
    return experiments.simulation(cfg, key, meta, data_root)


def simulations(run: StudyRun) -> dict[Key, Simulation]:
    """params.yaml's grid (:func:`grid`) under :func:`settings`, each run a Simulation (every dataset's metadata read
    and checked once), its data in ``run.real_root`` where given (the generated sets; a real variant's folder is
    data/real/<name> beside them: fedbench.data.registry.dataset_dir), else :data:`DATA_ROOT`."""
    cfg = settings(run)
    keys = grid(cfg)
    root = DATA_ROOT if run.real_root is None else run.real_root  # a confirmation's own data root, else data/generated
    metas = {ds: dataset_meta(cfg, ds, root) for ds in dict.fromkeys(k[0] for k in keys)}
    return {key: simulation(cfg, key, metas[key[0]], root) for key in keys}


record = experiments.record  # a run's record: its history, final values and its settings (run_params)


def curves(run: StudyRun) -> Curves:
    """The finished runs as curves by (dataset, variant, stragglers, seed), built once per run of the study."""
    import pandas as pd

    cached = _CURVES.get(id(run))
    if cached is not None and cached[0] is run and cached[1] == len(run.outcomes):
        return cached[2]
    frames = [pd.DataFrame(o.history).assign(dataset=k[0], variant=k[1], stragglers=k[2], seed=k[3],
                                             diverged=o.diverged) for k, o in run.outcomes.items()]
    made = Curves(pd.concat(frames, ignore_index=True) if frames else pd.DataFrame())
    _CURVES.clear()
    _CURVES[id(run)] = (run, len(run.outcomes), made)
    return made


_CURVES: dict[int, tuple[StudyRun, int, Curves]] = {}


def measure(claim: Claim, run: StudyRun) -> Measurement:
    """Claim ``claim`` measured on the finished runs (fedbench.studies.fedprox_main_job_claims.MEASURES)."""
    from fedbench.studies.fedprox_main_job_claims import MEASURES

    return MEASURES[claim.id](settings(run), curves(run), claim)


def figure(run: StudyRun, out: Path) -> None:
    """FedProx's Figures 1 (Synthetic(1,1) at each straggler level), 2 (heterogeneity) and 5 (IID stragglers), each
    where its runs are in the grid."""
    from fedbench.studies.fedprox_figures import FIGURE2_DATASETS, figure1, figure2, figure5

    hist = curves(run).frame
    for draw, path, datasets in ((figure1, "fig1_stragglers_synthetic_1_1.png", ("synthetic_1_1",)),
                                 (figure2, "fig2_heterogeneity.png", FIGURE2_DATASETS),
                                 (figure5, "fig5_iid_stragglers.png", ("synthetic_iid",))):
        if len(hist) and hist["dataset"].isin(datasets).any():
            draw(hist, Path(out) / path)


def evaluate_claims(cfg: Config, hist: Any, summ: Any = None) -> list[dict[str, Any]]:
    """Every claim's entry judged on the runs of history table ``hist`` (rows of (dataset, variant, stragglers,
    seed, round, metrics...)) under ``cfg``, as the one driver judges the study's own runs (fedbench.study.contract.entry
    of :func:`measure`'s Measurement): for runs read from elsewhere (a confirmatory root, the train store until its
    move). ``summ`` is not read."""
    return [judged_on(cfg, Curves(hist), c) for c in DECLARATION.claims]


def judged_on(cfg: Config, runs: Curves, claim: Claim) -> dict[str, Any]:
    """Claim ``claim``'s entry judged on ``runs`` under ``cfg`` (:func:`evaluate_claims`)."""
    from fedbench.studies.fedprox_main_job_claims import MEASURES
    from fedbench.study.contract import entry

    run = StudyRun(DECLARATION, "pipeline", cfg.train.rounds, config=cfg)
    return entry(run, claim, MEASURES[claim.id](cfg, runs, claim))


# -- the one-time move of the train store's runs into the study's (issue 50, item 1; remove after 2027-03-01) -------

def adopt_train_store(cfg: Config, root: str | Path = Path("results")) -> tuple[int, int]:
    """The main job's finished runs in the train store of ``root`` (``root/train/``: its index names each run's
    fingerprint by its settings, data and code) linked into the study's store (``root/fedprox_main_job/pipeline/
    outcomes/``) under the study's fingerprint, so that no run of params.yaml's grid under ``cfg`` is computed again.
    A run moves only where its index line has its settings (:func:`run_params`) and its data's content hash, and the
    code that computed it is today's (:func:`_same_run_code`: the run code at the commit its outcome records hashes to
    its index line's code, and the numbers' code, STUDY_RUN_CODE, is unchanged since); a run computed from a tree
    with uncommitted run code cannot be shown the same and is computed anew. The outcome file is linked (copied where
    a link is not possible), never rewritten: the train store is left as it was. (moved, runs found in the index)."""
    from fedbench.study.contract import seeded
    from fedbench.study.layout import MAIN_JOB, study_folder

    sims = simulations(seeded(DECLARATION, "pipeline", config=cfg)).values()
    return link_train_runs(sims, study_folder(MAIN_JOB, "pipeline", root), root)


def link_train_runs(sims: Any, folder: Path, root: str | Path = Path("results")) -> tuple[int, int]:
    """The finished runs of ``sims`` in the train store of ``root`` linked into the store of the study folder
    ``folder`` under the study's fingerprints (:func:`adopt_train_store` says which move). (moved, runs found)."""
    import json
    import os
    import shutil

    from fedbench.study.layout import OUTCOMES, train_folder
    from fedbench.study.reuse import OutcomeStore

    index = train_folder(root) / "index.jsonl"
    if not index.is_file():
        return 0, 0
    lines: dict[tuple[str, str], dict[str, Any]] = {}
    for line in index.read_text().splitlines():
        try:
            e = json.loads(line)
            lines[(json.dumps(e["params"], sort_keys=True), e["dataset_hash"])] = e  # the last line wins
        except (ValueError, KeyError, TypeError):
            continue  # a line cut short by a crash
    store = OutcomeStore(Path(folder) / OUTCOMES)
    same: dict[tuple[str, str], bool] = {}
    moved = found = 0
    for sim in sims:
        e = lines.get((json.dumps(sim.knobs, sort_keys=True), sim.dataset().content_hash))
        old = None if e is None else train_folder(root) / OUTCOMES / f"{e['fingerprint']}.json"
        if old is None or not old.is_file():
            continue
        found += 1
        target = store.folder / f"{store.key(sim)}.json"
        if target.exists():
            continue
        commit = (json.loads(old.read_text()).get("about") or {}).get("git_commit", "unknown")
        if (commit, e["code"]) not in same:
            same[(commit, e["code"])] = _same_run_code(commit, e["code"])
        if not same[(commit, e["code"])]:
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.link(old, target)
        except OSError:
            shutil.copy2(old, target)
        moved += 1
    return moved, found


def _same_run_code(commit: str, train_code: str) -> bool:
    """Whether a train-store run computed at ``commit`` (its outcome's ``git_commit``), whose index line names the code
    ``train_code`` (the hash of provenance.LEGACY_TRAIN_RUN_CODE, runner.py included), was computed by today's
    numbers' code: those files as committed at ``commit`` hash to ``train_code`` and STUDY_RUN_CODE as committed there
    hashes as today's tree does. False for an unknown or ``-dirty`` commit (its files are not in git)."""
    import subprocess
    import tempfile

    from fedbench.provenance import LEGACY_TRAIN_RUN_CODE, PACKAGE, STUDY_RUN_CODE, code_hash

    if commit == "unknown" or commit.endswith("-dirty"):
        return False
    top = subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=PACKAGE, capture_output=True, text=True,
                         check=False)
    if top.returncode:
        return False
    git = ["git", "-C", top.stdout.strip()]
    listed = subprocess.run([*git, "ls-tree", "-r", "--name-only", commit, "--",
                             *(f"fedbench/{p}" for p in LEGACY_TRAIN_RUN_CODE)],
                            capture_output=True, text=True, check=False)
    if listed.returncode:
        return False
    with tempfile.TemporaryDirectory() as tmp:
        for name in listed.stdout.split():
            blob = subprocess.run([*git, "show", f"{commit}:{name}"], capture_output=True, check=False)
            if blob.returncode:
                return False
            (Path(tmp) / name).parent.mkdir(parents=True, exist_ok=True)
            (Path(tmp) / name).write_bytes(blob.stdout)
        then = Path(tmp) / "fedbench"
        return (code_hash(LEGACY_TRAIN_RUN_CODE, then) == train_code
                and code_hash(STUDY_RUN_CODE, then) == code_hash(STUDY_RUN_CODE))
