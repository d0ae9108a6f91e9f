"""Each algorithm's local step in the elementwise form the fused kernels evaluate (issue 53, item 1).

An algorithm's ``client_step`` is ``local' = f(local, grad_fn, bcast)``. On the models whose gradient a fused
kernel computes itself (fedbench.engine.fused.mclr), the kernel needs the step as arithmetic over one row's
tiles, so that the minibatch gradient and the update run in one program. The form of a step is

    update(s, g, v, a, step) -> s'

- ``s``: the vectors of the row's local state that the step changes (up to 4 of length P: the parameters, and
  e.g. FedProxVR's output, previous iterate and estimator);
- ``g``: the minibatch-loss gradients at the points ``grads_at`` names (1 or 2: FedProxVR and Mime take two in
  one step, at the iterate and at an anchor);
- ``v``: per-row vectors the step reads and never changes (up to 4: the proximal anchor, a control variate, the
  server's momentum);
- ``a``: per-row scalars (up to 8: lr, mu, bias corrections, ...);
- ``step``: the engine's step index t (0-based), for an algorithm whose step depends on it.

``update`` is a Triton function, so the kernel inlines it as its epilogue; ``operands`` reads the algorithm,
broadcast and local state into those slots (rows broadcast, numbers made per-row), and ``result`` writes the
slots back into the algorithm's own local-state type, so the engine hands ``client_result`` exactly what the
static path (fedbench.engine.static.run_static) would. The finished-row mask is the kernel's, not the form's:
a row that is not active at step t keeps its state; ``computes`` optionally bounds the steps that change
anything (FedProxVR's w^(tau) is its last iterate).

Where the forms live, and how a form is found. The engine knows no algorithm by name and imports none
(tests/faults/test_layering.py): :func:`form_of` finds a form by the code of the algorithm's ``client_step``,
compared with the code each form declares it translates (:data:`CLIENT_STEPS`, compared as parsed Python, so
annotations, comments and layout do not matter). Algorithms whose steps are the same code share a form (FedAvg,
Delta-FL, FedAdam, ... all take ``sgd_step``); a step whose code changes has no form, and runs the static path, until
its form is checked again. The forms would read best beside each algorithm (a one-line ``fused_form`` in its file,
STYLE rule 1); they sit here because this change may not edit the algorithm files, and the engine may not import
them. tests/engine/test_fused_mclr.py checks each form against ``run_static`` of the algorithm's own ``client_step``
and that every registered algorithm's step has a form. Every slot's arithmetic keeps the order of operations of the
algorithm's code, so the fused numbers differ from the eager ones only by the gradient's rounding (the kernel sums
in another order), not by a rewritten formula.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import inspect
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
import triton
import triton.language as tl

from fedbench.optimizers import Adam, SGDMomentum

SLOTS = 4  # state vectors and read-only vectors a form may use, each
SCALARS = 8  # per-row scalars a form may use


# ---- the updates, as Triton functions over one row's tiles ---------------------------------------------------


@triton.jit
def sgd(s, g, v, a, step):
    """theta - lr g (fedbench.ops.sgd_step); a[0] = lr (FedLaAvg: lr N p_i)."""
    return s[0] - a[0] * g[0], s[1], s[2], s[3]


@triton.jit
def prox_sgd(s, g, v, a, step):
    """FedProx eq. 2 as fedbench.ops.prox_sgd_step orders it: d = (theta - anchor) mu + g; theta - d lr.
    v[0] = anchor w^t; a = (lr, mu)."""
    d = (s[0] - v[0]) * a[1] + g[0]
    return s[0] - d * a[0], s[1], s[2], s[3]


@triton.jit
def corrected_sgd(s, g, v, a, step):
    """SCAFFOLD line 10: y - lr (g + (c - c_i)). v[0] = c - c_i; a = (lr,)."""
    return s[0] - a[0] * (g[0] + v[0]), s[1], s[2], s[3]


@triton.jit
def prox_corrected_sgd(s, g, v, a, step):
    """FedDANE: w - lr (g + mu (w - w^t) + correction) (fedbench.ops.prox_gradient, then the correction).
    v = (w^t, correction); a = (lr, mu)."""
    return s[0] - a[0] * ((g[0] + a[1] * (s[0] - v[0])) + v[1]), s[1], s[2], s[3]


@triton.jit
def gradient_sum(s, g, v, a, step):
    """Minibatch SGD's client: the running sum of minibatch gradients at the server model (g at v[0])."""
    return s[0] + g[0], s[1], s[2], s[3]


@triton.jit
def _prox_squared_distance(x, anchor, a):
    """fedbench.proximal.prox_squared_distance: (x + eta mu anchor) / (1 + eta mu); a[1] = eta mu, a[2] = 1 + eta mu
    (mu = 0 gives x exactly)."""
    return (x + a[1] * anchor) / a[2]


@triton.jit
def prox_svrg(s, g, v, a, step):
    """FedProxVR (8b): v = grad f(w) - grad f(w^(0)) + v^(0); w' = prox(w - eta v); out = w' where t' = t + 1.
    s = (w, out, w_prev); g at (w, w^(0)); v = (w^(0), v^(0)); a = (eta, eta mu, 1 + eta mu, t', t at step 0)."""
    w_next = _prox_squared_distance(s[0] - a[0] * (g[0] - g[1] + v[1]), v[0], a)
    out = tl.where(a[3] == a[4] + step + 1, w_next, s[1])
    return w_next, out, s[0], s[3]


@triton.jit
def prox_sarah(s, g, v, a, step):
    """FedProxVR (8a): v = grad f(w) - grad f(w_prev) + v; w' = prox(w - eta v); out = w' where t' = t + 1.
    s = (w, out, w_prev, v); g at (w, w_prev); v = (w^(0),); a as prox_svrg."""
    estimate = g[0] - g[1] + s[3]
    w_next = _prox_squared_distance(s[0] - a[0] * estimate, v[0], a)
    out = tl.where(a[3] == a[4] + step + 1, w_next, s[1])
    return w_next, out, s[0], estimate


@triton.jit
def _adam_direction(g, m, v, a):
    """fedbench.optimizers.Adam.update at the server's fixed (m, v): a = (lr, beta1, beta2, 1 - beta1^t,
    1 - beta2^t, eps)."""
    m_next = g + a[1] * (m - g)
    gg = g * g
    v_next = gg + a[2] * (v - gg)
    return (m_next / a[3]) / (tl.sqrt(v_next / a[4]) + a[5])


@triton.jit
def mime_sgdm(s, g, v, a, step):
    """Mime: g(y) - g(x) + c, then the server's momentum g + beta m, then y - lr d. v = (x, c, m); a = (lr, beta)."""
    d = g[0] - g[1] + v[1]
    return s[0] - a[0] * (d + a[1] * v[2]), s[1], s[2], s[3]


@triton.jit
def mimelite_sgdm(s, g, v, a, step):
    """MimeLite: g(y), then g + beta m, then y - lr d. v = (x, c, m); a = (lr, beta)."""
    return s[0] - a[0] * (g[0] + a[1] * v[2]), s[1], s[2], s[3]


@triton.jit
def mime_adam(s, g, v, a, step):
    """Mime with Adam as the base: g(y) - g(x) + c through the server's fixed Adam state. v = (x, c, m, v)."""
    return s[0] - a[0] * _adam_direction(g[0] - g[1] + v[1], v[2], v[3], a), s[1], s[2], s[3]


@triton.jit
def mimelite_adam(s, g, v, a, step):
    """MimeLite with Adam as the base: g(y) through the server's fixed Adam state. v = (x, c, m, v)."""
    return s[0] - a[0] * _adam_direction(g[0], v[2], v[3], a), s[1], s[2], s[3]


# ---- the forms ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Operands:
    """One round's slots: ``state`` and ``vectors`` [K, P] each, ``scalars`` numbers or tensors of one value per
    row ([K], [K, 1]) or one for all."""

    state: list[torch.Tensor]
    vectors: list[torch.Tensor]
    scalars: list[Any]


@dataclass(frozen=True)
class UpdateForm:
    """One algorithm's local step as the fused kernels evaluate it (module docstring).

    ``fields`` names the local state's fields held in the state slots, in order ("" when the local state is one
    tensor); ``vectors`` is how many read-only vectors ``operands`` gives; ``grads_at`` where each gradient is
    taken: "s0".."s3" (a state slot) or "v0".."v3" (a read-only vector)."""

    update: Any  # a triton.jit function (s, g, v, a, step) -> 4 state tiles
    fields: tuple[str, ...]
    vectors: int
    grads_at: tuple[str, ...]
    operands: Callable[[Any, Any, Any], Operands]  # (algorithm, bcast, local) -> slots
    computes: Callable[[Any, Any], int | None] = lambda algorithm, local: None  # steps that change anything
    finish: Callable[[Any, Any, int], dict[str, Any]] = lambda algorithm, local, steps: {}  # non-tensor fields

    def __post_init__(self) -> None:
        if not 1 <= len(self.fields) <= SLOTS or not 0 <= self.vectors <= SLOTS or not 1 <= len(self.grads_at) <= 2:
            raise ValueError(f"a form holds 1-{SLOTS} state vectors, 0-{SLOTS} read-only ones and 1-2 gradients, got "
                             f"{self.fields}, {self.vectors}, {self.grads_at}")
        for at in self.grads_at:
            if at[:1] not in ("s", "v") or not at[1:].isdigit() or int(at[1:]) >= SLOTS:
                raise ValueError(f"grads_at {at!r}: allowed s0..s{SLOTS - 1} or v0..v{SLOTS - 1}")

    def grad_codes(self) -> tuple[int, int]:
        """The kernel's slot codes of the gradient points: 0-3 state slots, 4-7 vectors (the second one repeats the
        first when the form takes one gradient)."""
        codes = [int(at[1:]) + (SLOTS if at[0] == "v" else 0) for at in self.grads_at]
        return codes[0], codes[-1]

    def result(self, algorithm: Any, local: Any, state: list[torch.Tensor], steps: int) -> Any:
        """The algorithm's local state with the state slots written back (fields not in a slot kept)."""
        if self.fields == ("",):
            return state[0]
        changes = dict(zip(self.fields, state)) | self.finish(algorithm, local, steps)
        return dataclasses.replace(local, **changes)


def _rows(vector: torch.Tensor, k: int) -> torch.Tensor:
    """A broadcast vector [P] or per-row [K, P] as [K, P]."""
    return vector.expand(k, -1) if vector.dim() == 1 else vector


def _parameters(algorithm, bcast, local) -> Operands:
    return Operands(state=[local], vectors=[], scalars=[algorithm.lr])


def _prox(algorithm, bcast, local) -> Operands:
    return Operands(state=[local], vectors=[_rows(bcast.theta, local.shape[0])], scalars=[algorithm.lr, bcast.mu])


def _scaffold(algorithm, bcast, local) -> Operands:
    return Operands(state=[local.y], vectors=[local.correction], scalars=[algorithm.lr])


def _fedlaavg(algorithm, bcast, local) -> Operands:
    return Operands(state=[local.theta], vectors=[], scalars=[algorithm.lr * local.scale])  # as client_step rounds it


def _feddane(algorithm, bcast, local) -> Operands:
    return Operands(state=[local.w], vectors=[_rows(bcast, local.w.shape[0]), local.correction],
                    scalars=[algorithm.lr, algorithm.mu])


def _gradient_sum(algorithm, bcast, local) -> Operands:
    return Operands(state=[local], vectors=[_rows(bcast, local.shape[0])], scalars=[])


def _fedproxvr(algorithm, bcast, local) -> Operands:
    k = local.w.shape[0]
    eta, mu = algorithm.eta, algorithm.mu
    scalars = [eta, eta * mu, 1.0 + eta * mu, local.t_out, local.t]
    if algorithm.estimator == "svrg":
        return Operands(state=[local.w, local.out, local.w_prev], vectors=[_rows(bcast, k), local.v], scalars=scalars)
    return Operands(state=[local.w, local.out, local.w_prev, local.v], vectors=[_rows(bcast, k)], scalars=scalars)


def _fedproxvr_computes(algorithm, local) -> int:
    return max(0, algorithm.tau - local.t)  # client_step returns at once from w^(tau) on


def _fedproxvr_finish(algorithm, local, steps: int) -> dict[str, Any]:
    return {"t": min(local.t + steps, max(local.t, algorithm.tau))}


def _mime(algorithm, bcast, local) -> Operands:
    k = local.y.shape[0]
    opt = algorithm.optimizer
    vectors = [_rows(bcast.theta, k), local.c, _rows(bcast.opt.m, k)]
    if isinstance(opt, SGDMomentum):
        return Operands(state=[local.y], vectors=vectors, scalars=[algorithm.lr, opt.momentum])
    t = bcast.opt.step + 1
    return Operands(state=[local.y], vectors=vectors + [_rows(bcast.opt.v, k)],
                    scalars=[algorithm.lr, opt.beta1, opt.beta2, 1.0 - opt.beta1**t, 1.0 - opt.beta2**t, opt.eps])


SGD = UpdateForm(sgd, ("",), 0, ("s0",), _parameters)
PROX_SGD = UpdateForm(prox_sgd, ("",), 1, ("s0",), _prox)
SCAFFOLD = UpdateForm(corrected_sgd, ("y",), 1, ("s0",), _scaffold)
SCALED_SGD = UpdateForm(sgd, ("theta",), 0, ("s0",), _fedlaavg)
FEDDANE = UpdateForm(prox_corrected_sgd, ("w",), 2, ("s0",), _feddane)
GRADIENT_SUM = UpdateForm(gradient_sum, ("",), 1, ("v0",), _gradient_sum)
PROX_SVRG = UpdateForm(prox_svrg, ("w", "out", "w_prev"), 2, ("s0", "v0"), _fedproxvr, _fedproxvr_computes,
                       _fedproxvr_finish)
PROX_SARAH = UpdateForm(prox_sarah, ("w", "out", "w_prev", "v"), 1, ("s0", "s2"), _fedproxvr, _fedproxvr_computes,
                        _fedproxvr_finish)
# Mime's, by (variant, base optimizer): the server's momentum (and Adam's second moment) are read-only vectors
MIME = {
    ("mime", "sgdm"): UpdateForm(mime_sgdm, ("y",), 3, ("s0", "v0"), _mime),
    ("mime", "adam"): UpdateForm(mime_adam, ("y",), 4, ("s0", "v0"), _mime),
    ("mimelite", "sgdm"): UpdateForm(mimelite_sgdm, ("y",), 3, ("s0",), _mime),
    ("mimelite", "adam"): UpdateForm(mimelite_adam, ("y",), 4, ("s0",), _mime),
}
EVERY_FORM = (SGD, PROX_SGD, SCAFFOLD, SCALED_SGD, FEDDANE, GRADIENT_SUM, PROX_SVRG, PROX_SARAH, *MIME.values())


def _mime_form(algorithm: Any) -> UpdateForm:
    return MIME[algorithm.variant, "adam" if isinstance(algorithm.optimizer, Adam) else "sgdm"]


# Each form with the client_step code it is the fused form of, written as the algorithms write it (annotations,
# docstrings and comments aside, which the key ignores): an algorithm is found by what its step does, never by its
# name, and a step whose code changes has no form until its form is checked again (tests/engine/test_fused_mclr.py).
CLIENT_STEPS: list[tuple[str, Callable[[Any], UpdateForm]]] = [
    # FedAvg, Delta-FL, sequential SGD, FedAvg with server momentum, FedAdam
    ("""
def client_step(self, theta, grad_fn, bcast):
    return sgd_step(theta, grad_fn(theta), self.lr)
""", lambda algorithm: SGD),
    # FedProx, FedProx with adaptive mu
    ("""
def client_step(self, theta, grad_fn, bcast):
    return prox_sgd_step(theta, grad_fn(theta), bcast.theta, bcast.mu, self.lr)
""", lambda algorithm: PROX_SGD),
    # SCAFFOLD
    ("""
def client_step(self, local, grad_fn, bcast):
    g = grad_fn(local.y) + local.correction
    return ScaffoldLocal(y=sgd_step(local.y, g, self.lr), correction=local.correction)
""", lambda algorithm: SCAFFOLD),
    # FedLaAvg
    ("""
def client_step(self, local, grad_fn, bcast):
    theta = local.theta - self.lr * local.scale * grad_fn(local.theta)
    return FedLaAvgLocal(theta=theta, scale=local.scale)
""", lambda algorithm: SCALED_SGD),
    # FedDANE
    ("""
def client_step(self, local, grad_fn, theta):
    g = prox_gradient(grad_fn(local.w), local.w, theta, self.mu) + local.correction
    return FedDaneLocal(w=sgd_step(local.w, g, self.lr), correction=local.correction)
""", lambda algorithm: FEDDANE),
    # minibatch SGD, server-only optimisers
    ("""
def client_step(self, total, grad_fn, theta):
    return total + grad_fn(theta.expand_as(total))
""", lambda algorithm: GRADIENT_SUM),
    # FedProxVR
    ("""
def client_step(self, local, grad_fn, theta):
    if local.t >= self.tau:
        return local
    if self.estimator == "svrg":
        v = grad_fn(local.w) - grad_fn(theta.expand_as(local.w)) + local.v
    else:
        v = grad_fn(local.w) - grad_fn(local.w_prev) + local.v
    w_next = prox_squared_distance(local.w - self.eta * v, theta, self.eta, self.mu)
    t = local.t + 1
    out = torch.where((local.t_out == t).unsqueeze(1), w_next, local.out)
    return FedProxVRLocal(w=w_next, w_prev=local.w, v=v if self.estimator == "sarah" else local.v,
                          t_out=local.t_out, out=out, t=t)
""", lambda algorithm: PROX_SVRG if algorithm.estimator == "svrg" else PROX_SARAH),
    # Mime, MimeLite
    ("""
def client_step(self, local, grad_fn, bcast):
    g = grad_fn(local.y)
    if self.variant == "mime":
        g = g - grad_fn(bcast.theta.expand_as(local.y)) + local.c
    y = sgd_step(local.y, self.optimizer.update(g, bcast.opt), self.lr)
    return MimeLocal(y=y, c=local.c, grad_x=local.grad_x)
""", _mime_form),
]


def step_key(source: str) -> str:
    """A client_step's code as a key: its arguments and body as Python's parser reads them (``ast.dump``), without
    annotations and docstring, so comments, layout and types do not matter."""
    node = ast.parse(textwrap.dedent(source)).body[0]
    if not isinstance(node, ast.FunctionDef):
        raise TypeError("a client_step key is the source of one function")
    for arg in (*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs):
        arg.annotation = None
    node.returns, node.decorator_list = None, []
    if node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant):
        node.body = node.body[1:] or [ast.Pass()]
    return ast.dump(node)


FORMS: dict[str, Callable[[Any], UpdateForm]] = {step_key(source): declare for source, declare in CLIENT_STEPS}


@functools.cache
def _key_of(client_step: Callable[..., Any]) -> str | None:
    try:
        return step_key(inspect.getsource(client_step))
    except (OSError, TypeError, SyntaxError):  # no source (built in, generated): no form
        return None


def form_of(algorithm: Any) -> UpdateForm | None:
    """The fused form of ``algorithm``'s local step, found by its client_step's code (:data:`CLIENT_STEPS`), or None
    when it has none (the engine then runs its static path)."""
    client_step = getattr(type(algorithm), "client_step", None)
    declare = FORMS.get(_key_of(client_step)) if client_step is not None else None
    return None if declare is None else declare(algorithm)
