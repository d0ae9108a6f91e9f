"""A study's runs at some scale, for the projected cost: what a study declaration's ``scales`` hold
(fedbench.study.declaration), costed by fedbench.bench.costs and fedbench.bench.paper_cost. Imports no torch."""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Scale:
    """A study's runs at some scale: ``runs`` simulations of ``rounds`` rounds, ``clients_per_round`` (K) clients of
    ``client_samples`` mean training samples each doing ``local_epochs`` (E) epochs of batch ``batch_size``, or
    ``local_steps`` fixed steps a client when given (FedLaAvg, SCAFFOLD: steps, not epochs; VR and Mime methods:
    their local work in minibatch-gradient units of batch ``batch_size``).

    Its evaluation protocol (fedbench.engine.evaluation.EvalSpec, as the study declares it): ``eval_samples``
    samples evaluated at round 0, every ``eval_every`` rounds, the listed ``eval_rounds`` and (``eval_final``) the
    final model; ``cohort_signal``: the training loss is not evaluated every round, so the engine reads the
    cohort's own losses each round; the gradient dissimilarity every ``dissimilarity_every`` rounds (0: off, as in
    every claim study) over ``dissimilarity_samples`` samples. ``read``: whether a claim's rule reads these runs
    (runs no claim reads are context and are not counted); ``label`` names them."""

    model: str
    runs: int
    rounds: int
    clients_per_round: int
    client_samples: float
    local_epochs: int
    batch_size: int
    eval_samples: int
    eval_every: int = 1
    local_steps: int | None = None
    eval_rounds: tuple[int, ...] = ()
    eval_final: bool = True
    cohort_signal: bool = True
    dissimilarity_every: int = 0
    dissimilarity_samples: int = 0
    read: bool = True
    label: str = ""

    def steps_per_client(self) -> int:
        if self.local_steps is not None:
            return self.local_steps
        return self.local_epochs * math.ceil(self.client_samples / self.batch_size)

    def steps_per_round(self) -> int:
        return self.clients_per_round * self.steps_per_client()

    def evaluations(self) -> int:
        """Evaluations of one run: the rounds r < ``rounds`` with r % eval_every == 0 or r in eval_rounds, and the
        final model."""
        due = set(range(0, self.rounds, self.eval_every)) | {r for r in self.eval_rounds if r < self.rounds}
        return len(due) + (1 if self.eval_final else 0)

    def dissimilarities(self) -> int:
        """Dissimilarity evaluations of one run: rounds 0, k, 2k, ... and the final model (0: off)."""
        if self.dissimilarity_every <= 0:
            return 0
        return len(range(0, self.rounds, self.dissimilarity_every)) + 1
