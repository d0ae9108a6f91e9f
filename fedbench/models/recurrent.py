"""The network shared by the papers' recurrent models: a classifier of token sequences.

    token ids [n, T] -> embedding [n, T, d] (trainable, or a frozen table such as GloVe)
    -> stacked LSTM or GRU from a zero state -> the last step's hidden state [n, H] -> linear layers -> [n, C]

FedProx's Shakespeare and Sent140 LSTMs and Delta-FL's Sent140 LSTM and Shakespeare GRU are all of this form
(each model's file gives its sizes and source). The batched recurrent kernel (fedbench.engine.kernels.rnn) runs
exactly this family.

The authors' TF models use ``rnn.BasicLSTMCell``: one bias per gate and a constant forget bias added to the
forget gate, ``c' = sigmoid(f + forget_bias) c + ...``. PyTorch's LSTM has two biases (b_ih, b_hh) whose sum acts
as TF's one; :func:`single_bias_lstm` makes b_hh a frozen constant (``forget_bias`` on the forget gate, 0
elsewhere) and leaves b_ih trainable, which is TF's cell exactly: the same trainable parameters (the authors'
count) and the same gradient steps (with two trainable biases, SGD would move their sum at twice the rate).

Token ids are integers; floating inputs holding integral ids (a dataset stored as float32) are converted, which is
exact below 2^24.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import nn

FROZEN_TABLE = "table"  # the frozen embedding's name among the model's frozen tensors


class SequenceClassifier(nn.Module):
    """Token ids [n, T] -> outputs [n, C] of the last step (see the module docstring).

    ``embedding`` is a trainable ``nn.Embedding``, or None when the model embeds with a frozen table [V, d] passed
    in as the buffer ``table`` (``table_shape`` gives its shape; the skeleton holds it on 'meta' only)."""

    def __init__(self, rnn: nn.LSTM | nn.GRU, head: Sequence[nn.Linear], embedding: nn.Embedding | None = None,
                 table_shape: tuple[int, int] | None = None) -> None:
        super().__init__()
        if (embedding is None) == (table_shape is None):
            raise ValueError("a SequenceClassifier embeds with a trainable embedding or a frozen table, exactly one")
        if not rnn.batch_first or rnn.bidirectional or getattr(rnn, "proj_size", 0) or rnn.dropout:
            raise ValueError("the recurrent layer must be batch_first, one-directional, without projection or dropout")
        self.embedding = embedding
        if table_shape is not None:
            self.register_buffer(FROZEN_TABLE, torch.empty(table_shape, device="meta"))
        self.rnn = rnn
        self.head = nn.Sequential(*head)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        ids = x.long() if x.is_floating_point() else x
        e = self.embedding(ids) if self.embedding is not None else F.embedding(ids, getattr(self, FROZEN_TABLE))
        out, _ = self.rnn(e)
        return self.head(out[:, -1])


def single_bias_lstm(input_size: int, hidden_size: int, num_layers: int,
                     forget_bias: float) -> tuple[nn.LSTM, dict[str, torch.Tensor]]:
    """A stacked ``nn.LSTM`` computing TF's ``MultiRNNCell([BasicLSTMCell(hidden_size, forget_bias)] * L)``.

    Returns the module (on 'meta') and its frozen tensors: each layer's b_hh as the constant forget bias
    (PyTorch's gate order is input, forget, cell, output, so the forget gate is rows H..2H), never trained."""
    with torch.device("meta"):
        lstm = nn.LSTM(input_size, hidden_size, num_layers, batch_first=True)
    frozen = {}
    for layer in range(num_layers):
        name = f"bias_hh_l{layer}"
        del lstm._parameters[name]
        lstm.register_buffer(name, torch.empty(4 * hidden_size, device="meta"))
        constant = torch.zeros(4 * hidden_size)
        constant[hidden_size: 2 * hidden_size] = forget_bias
        frozen[name] = constant
    lstm._init_flat_weights()  # the module's list of its weights now names the buffers
    return lstm, frozen


def check_embedding(model: str, embedding: torch.Tensor | None) -> torch.Tensor:
    """The frozen word embedding a model was given: a floating [V, d] matrix (a dataset provides it)."""
    if embedding is None:
        raise ValueError(f"model {model} embeds words with a frozen table: pass the dataset's embedding matrix "
                         "(float32 [vocabulary + unknown row, d])")
    if not isinstance(embedding, torch.Tensor) or embedding.dim() != 2 or not embedding.is_floating_point():
        shape = tuple(embedding.shape) if isinstance(embedding, torch.Tensor) else type(embedding).__name__
        raise ValueError(f"model {model}: the embedding must be a floating [V, d] tensor, not {shape}")
    return embedding


def check_sequence_input(model: str, feature_shape: tuple[int, ...]) -> int:
    """The sequence length of token-id inputs of ``feature_shape`` (one id per step)."""
    if len(feature_shape) != 1 or feature_shape[0] < 1:
        raise ValueError(f"model {model} takes sequences of token ids (feature shape (T,)), not {feature_shape}")
    return feature_shape[0]
