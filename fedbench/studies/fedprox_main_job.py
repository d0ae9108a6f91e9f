"""The main job's FedProx claims, declared as data (issue 19, item 2): FedProx (Li et al., MLSys 2020) Figures 1, 2,
5, 6 and 7 on the paper's four synthetic sets, judged from the train stage's runs of params.yaml's ``studies:``
(fedbench/studies/fedprox_main_job_claims.py and fedprox_main_job_heterogeneity.py judge each claim against the rule
stated here).

Setting (params.yaml, the paper's where it gives one; fedbench/studies/fedprox_curves.py common_deviations lists the rest):
Synthetic-IID, (0,0), (0.5,0.5) and (1,1), 30 devices, data seed 0, multinomial logistic regression, K = 10 devices
a round drawn uniformly, E = 20, batch 10, lr 0.01, 0/10/50/90% stragglers (section 5.2; the authors' code's
U{1..E-1} epochs), the paper's 200 rounds; arms FedAvg (drops its stragglers), FedProx with mu = 0 (keeps their
partial work) and mu = 1 (the paper's best for Synthetic(1,1)), params.yaml's ``algorithms``.

``seeds`` and ``budgets["pipeline"]`` are params.yaml's defaults (train.seeds, train.rounds); a run with other ones
(``dvc exp run -S train.seeds=...``) is judged on its own: the entries carry the config's seeds and rounds, and a
rule whose text depends on the config (the straggler levels configured for Synthetic-IID) names its ``{field}``,
filled from the config where the entry is built. Imports no torch and runs nothing (no ``run()``: it is no claim
study of params.yaml ``claim_studies``); the runs are the train stage's.
"""

from __future__ import annotations

from fedbench.claims.papers import FEDPROX_PAPER
from fedbench.claims.stats import Share
from fedbench.claims.verdict import Rule
from fedbench.study.declaration import Arm, Claim, StudyDeclaration

PAPER_ROUNDS = 200  # FedProx's synthetic runs (FP run_fedavg.sh / run_fedprox.sh: num_rounds = 200)
PIPELINE_ROUNDS = 200  # params.yaml train.rounds (tests/studies/test_fedprox_main_job.py checks they agree)
SEEDS = (0, 1, 2, 3, 4)  # params.yaml train.seeds (idem); a config's own train.seeds override them
MAIN_STUDIES = ("stragglers", "heterogeneity")  # the params.yaml studies whose runs the claims read (their arms: ours)
HETERO = ("synthetic_iid", "synthetic_0_0", "synthetic_0p5_0p5", "synthetic_1_1")
TITLES = {"synthetic_iid": "Synthetic-IID", "synthetic_0_0": "Synthetic(0,0)",
          "synthetic_0p5_0p5": "Synthetic(0.5,0.5)", "synthetic_1_1": "Synthetic(1,1)"}

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

# Figures 6 and 7's comparisons of mu > 0 with mu = 0 that the main job runs: (dataset, stragglers, the mu = 0 arm).
# At 0% stragglers FedProx(mu=0) is FedAvg (Figure 1's caption), and the heterogeneity study runs FedAvg only
MU_CASES = (("synthetic_iid", 0.0, "fedavg"), ("synthetic_0_0", 0.0, "fedavg"), ("synthetic_0p5_0p5", 0.0, "fedavg"),
            ("synthetic_1_1", 0.0, "fedavg"), ("synthetic_1_1", 0.5, "fedprox_mu0"),
            ("synthetic_1_1", 0.9, "fedprox_mu0"))
MU_CASE_LABELS = tuple(f"{TITLES[d]} at {int(f * 100)}%" for d, f, _ in MU_CASES)
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
