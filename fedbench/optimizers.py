"""Base optimizers as a pair of maps (U, V), the form Mime needs (Karimireddy et al., "Mime: Mimicking
Centralized Stochastic Algorithms in Federated Learning", Algorithm 1; the SCAFFOLD/Mime talk slides,
"Mime framework"):

    x <- x - lr * U(g, s)      (the parameter update, given gradient g and optimizer state s)
    s <- V(g, s)               (the state update)

Written once here so that Mime, MimeLite and any server-side optimizer share the same maths. ``U`` is
row-wise: g may be [P] or [a, P] (a cohort of clients) while the state s holds [P] tensors that broadcast,
so Mime's clients apply the *fixed* server state to their own gradients.

- SGD with momentum (the slides): U(g, m) = g + beta m;  V(g, m) = g + beta m. Undampened heavy ball, the
  same recursion as ``torch.optim.SGD(momentum=beta)`` (tested against it).
- Adam (Kingma and Ba, ICLR 2015, Algorithm 1): m' = b1 m + (1 - b1) g, v' = b2 v + (1 - b2) g^2,
  U = (m' / (1 - b1^(t+1))) / (sqrt(v' / (1 - b2^(t+1))) + eps); V = (m', v', t + 1). As
  ``torch.optim.Adam`` (tested against it): eps is added after the bias-corrected square root.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

BASE_OPTIMIZERS = ("sgdm", "adam")


@dataclass(frozen=True)
class MomentumState:
    m: torch.Tensor  # [P]


@dataclass(frozen=True)
class SGDMomentum:
    momentum: float  # beta

    def init(self, theta: torch.Tensor) -> MomentumState:
        return MomentumState(m=torch.zeros_like(theta))

    def update(self, g: torch.Tensor, s: MomentumState) -> torch.Tensor:
        """U(g, s) = g + beta m (plain operations: row-independent, see fedbench.ops.sgd_step)."""
        return g + self.momentum * s.m

    def next_state(self, g: torch.Tensor, s: MomentumState) -> MomentumState:
        """V(g, s): m <- g + beta m."""
        return MomentumState(m=g + self.momentum * s.m)


@dataclass(frozen=True)
class AdamState:
    m: torch.Tensor  # [P] first moment
    v: torch.Tensor  # [P] second moment
    step: int  # t, the number of V updates so far


@dataclass(frozen=True)
class Adam:
    beta1: float = 0.9
    beta2: float = 0.999
    eps: float = 1e-8

    def init(self, theta: torch.Tensor) -> AdamState:
        return AdamState(m=torch.zeros_like(theta), v=torch.zeros_like(theta), step=0)

    def _moments(self, g: torch.Tensor, s: AdamState) -> tuple[torch.Tensor, torch.Tensor]:
        # b1 m + (1 - b1) g and b2 v + (1 - b2) g^2, as torch.lerp(g, m, b1) computes them, in plain operations
        m = g + self.beta1 * (s.m - g)
        gg = g * g
        v = gg + self.beta2 * (s.v - gg)
        return m, v

    def update(self, g: torch.Tensor, s: AdamState) -> torch.Tensor:
        m, v = self._moments(g, s)
        t = s.step + 1
        m_hat = m / (1.0 - self.beta1**t)
        return m_hat / (torch.sqrt(v / (1.0 - self.beta2**t)) + self.eps)

    def next_state(self, g: torch.Tensor, s: AdamState) -> AdamState:
        m, v = self._moments(g, s)
        return AdamState(m=m, v=v, step=s.step + 1)


def build_base_optimizer(name: str, momentum: float = 0.9, beta1: float = 0.9, beta2: float = 0.999,
                         eps: float = 1e-8) -> SGDMomentum | Adam:
    """The base optimizer called ``name`` with its hyperparameters (the others are ignored)."""
    if name == "sgdm":
        if not 0.0 <= momentum < 1.0:
            raise ValueError(f"momentum must be in [0, 1), got {momentum}")
        return SGDMomentum(momentum=momentum)
    if name == "adam":
        if not (0.0 <= beta1 < 1.0 and 0.0 <= beta2 < 1.0 and eps > 0):
            raise ValueError(f"adam needs 0 <= beta1, beta2 < 1 and eps > 0, got {beta1}, {beta2}, {eps}")
        return Adam(beta1=beta1, beta2=beta2, eps=eps)
    raise ValueError(f"unknown base optimizer {name!r}; allowed: {list(BASE_OPTIMIZERS)}")
