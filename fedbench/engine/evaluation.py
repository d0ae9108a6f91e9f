"""What a simulation evaluates, and when: a declaration (data, no torch) that the engine carries out.

A simulation (``SimulationConfig.evaluations``) carries a tuple of :class:`EvalSpec`, at most one per split:

    EvalSpec("train")                       the global model's loss and accuracy on every client's training data,
                                            every round and on the final model (today's default, with "test")
    EvalSpec("test", every=20)              rounds 0, 20, 40, ... and the final model
    EvalSpec("test", every=50, rounds=(1, 5, 10))   also rounds 1, 5 and 10
    EvalSpec("global_test", samples_sample=10000)   the dataset's global test set (pooled: no client owns it),
                                            on a seeded sample of at most 10,000 of its samples
    EvalSpec("test", clients_sample=100)    a seeded sample of 100 clients with test data, each evaluated on all
                                            its own test samples

Metrics of a split (``split/name``; ``metrics=()`` keeps all of them):

    train:        train/loss, train/accuracy (and the per-device training loss of the final model)
    test:         test/loss, test/accuracy, test/error_p90 (the 90th percentile over devices of 1 - accuracy,
                  per device on each client's own test data)
    global_test:  global_test/loss, global_test/accuracy (pooled; no per-device reading: no client owns it)

A sample is drawn per run and round from fedbench.seeding (seed, round, "evaluation", split), so two algorithms
with the same seed are evaluated on the same clients or samples. ``clients_sample`` draws clients among those
with data in the split, uniformly without replacement; ``samples_sample`` draws samples of the pooled split,
uniformly without replacement (a client's per-device metric is then over its drawn samples, NaN if none).

History. The engine writes one row per round at which it evaluated anything (the round's protocol, what the
algorithm declares it needs, the dissimilarity, a divergence confirmation), and no row for a round without an
evaluation; each row's ``round`` is the round of the model evaluated (round r: the model w_r that round r
starts from; the final model is round ``rounds``). A row holds the metrics evaluated at that round only, so
readings must read rows by their ``round``, never by their position (with the default protocol, every round
has a row and the two agree). ``wall_time_s`` of a row is the time of the rounds since the previous row.

Divergence (fedbench.engine.metrics.has_diverged). Where the full training loss is evaluated every round (the
default), the rule reads it, as it always has. Otherwise the engine reads a cheap signal every round: the
n_k-weighted mean of F_k(w_r), the selected cohort's own training losses at the start of round r (a forward pass
on their data, which Delta-FL's filter computes anyway); when that signal trips the rule, the engine evaluates
the full training loss at once and the run has diverged if that loss trips the rule too (f_0, in both: the first
training loss evaluated, else the signal's first value). Every evaluation of train/loss the protocol makes is
checked by the rule as well.

Algorithms that read an evaluation in ``begin_round`` declare the metrics they read (a class attribute
``needs_evaluation = ("train/loss",)``); the engine evaluates exactly those, on the full split, every round the
protocol does not already, and refuses at build time an algorithm with ``begin_round`` and no declaration, or
one that needs a metric the engine does not compute.

The gradient dissimilarity (FedProx Figure 2) has its own cadence and sample size:
``SimulationConfig.dissimilarity_every`` (rounds; the params.yaml key ``train.eval_every`` maps onto it) and
``dissimilarity_samples`` (each client's gradient on a seeded sample of at most that many of its training
samples; FedProx's authors use at most 4 minibatches of 50 for their LSTMs: 200). The final model always has it.
"""

from __future__ import annotations

from dataclasses import dataclass

SPLITS = ("train", "test", "global_test")
METRICS = {
    "train": ("train/loss", "train/accuracy"),
    "test": ("test/loss", "test/accuracy", "test/error_p90"),
    "global_test": ("global_test/loss", "global_test/accuracy"),
}
DISSIMILARITY = "train/dissimilarity"
# every metric an algorithm may declare in needs_evaluation
KNOWN_METRICS = tuple(m for split in SPLITS for m in METRICS[split])


@dataclass(frozen=True)
class EvalSpec:
    """One evaluation of a simulation: which ``split`` ("train", "test", "global_test"), which ``metrics`` (of
    that split; empty: all), at which rounds (every ``every`` rounds from round 0, and the listed ``rounds``),
    whether on the final model (``final``), and on what: every client and sample (both samples None), a seeded
    sample of ``clients_sample`` clients, or of ``samples_sample`` samples."""

    split: str
    metrics: tuple[str, ...] = ()
    every: int = 1
    rounds: tuple[int, ...] = ()
    final: bool = True
    clients_sample: int | None = None
    samples_sample: int | None = None

    def __post_init__(self) -> None:
        if self.split not in SPLITS:
            raise ValueError(f"evaluation split {self.split!r} is not allowed; allowed: {', '.join(SPLITS)}")
        where = f"evaluation of {self.split}"
        unknown = [m for m in self.metrics if m not in METRICS[self.split]]
        if unknown:
            raise ValueError(f"{where}: metrics {unknown} are not allowed; allowed: {', '.join(METRICS[self.split])}")
        if not isinstance(self.every, int) or self.every < 1:
            raise ValueError(f"{where}: every={self.every!r} must be an integer >= 1 (rounds between evaluations)")
        if any(not isinstance(r, int) or r < 0 for r in self.rounds):
            raise ValueError(f"{where}: rounds={self.rounds!r} must be round indices >= 0")
        for key in ("clients_sample", "samples_sample"):
            value = getattr(self, key)
            if value is not None and (not isinstance(value, int) or value < 1):
                raise ValueError(f"{where}: {key}={value!r} must be an integer >= 1 or None (all)")
        if self.clients_sample is not None and self.samples_sample is not None:
            raise ValueError(f"{where}: give clients_sample or samples_sample, not both")
        if self.split == "global_test" and self.clients_sample is not None:
            raise ValueError(f"{where}: clients_sample is not allowed (no client owns the global test set); "
                             "use samples_sample")

    @property
    def kept_metrics(self) -> tuple[str, ...]:
        return self.metrics or METRICS[self.split]

    @property
    def sampled(self) -> bool:
        return self.clients_sample is not None or self.samples_sample is not None

    def due(self, round_: int) -> bool:
        """Whether this evaluation runs at the start of round ``round_`` (the final model: ``final``)."""
        return round_ % self.every == 0 or round_ in self.rounds


# The main job's protocol (FedProx's authors evaluate every round, all devices): train and test, every round,
# every client, and the final model.
DEFAULT_EVALUATIONS = (EvalSpec("train"), EvalSpec("test"))


def check_evaluations(evaluations: tuple[EvalSpec, ...], *, train_samples: int, test_samples: int,
                      global_test_samples: int | None, train_clients: int, test_clients: int,
                      dataset: str = "the dataset") -> None:
    """Refuse, in one line, a protocol the dataset cannot serve: a split it lacks (only global_test can be lacking;
    an empty test split evaluates to NaN, as it always has), a sample larger than the split, or a split evaluated
    twice."""
    seen = set()
    for spec in evaluations:
        if not isinstance(spec, EvalSpec):
            raise TypeError(f"evaluations: {spec!r} is not an EvalSpec")
        if spec.split in seen:
            raise ValueError(f"evaluations: split {spec.split!r} is declared twice; declare one evaluation per split")
        seen.add(spec.split)
        samples, clients = {"train": (train_samples, train_clients), "test": (test_samples, test_clients),
                            "global_test": (global_test_samples or 0, 0)}[spec.split]
        if spec.split == "global_test" and global_test_samples is None:
            raise ValueError(f"evaluations: {dataset} has no global_test split; its splits: train, test")
        if spec.samples_sample is not None and spec.samples_sample > samples:
            raise ValueError(f"evaluations: samples_sample={spec.samples_sample} exceeds the {samples} samples of "
                             f"{dataset}'s {spec.split} split")
        if spec.clients_sample is not None and spec.clients_sample > clients:
            raise ValueError(f"evaluations: clients_sample={spec.clients_sample} exceeds the {clients} clients with "
                             f"{spec.split} data in {dataset}")


def check_needs(algorithm: object) -> tuple[str, ...]:
    """The metrics ``algorithm`` declares it reads in begin_round (checked against what the engine computes)."""
    needs = tuple(getattr(algorithm, "needs_evaluation", ()))
    name = type(algorithm).__name__
    if hasattr(algorithm, "begin_round") and not needs:
        raise ValueError(f"algorithm {name} defines begin_round but declares no needs_evaluation; declare the "
                         f"metrics it reads, from: {', '.join(KNOWN_METRICS)}")
    unknown = [m for m in needs if m not in KNOWN_METRICS]
    if unknown:
        raise ValueError(f"algorithm {name}: needs_evaluation {unknown} are not metrics the engine computes; "
                         f"allowed: {', '.join(KNOWN_METRICS)}")
    return needs
