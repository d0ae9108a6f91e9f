"""Delta-FL's Shakespeare RNN (Pillutla et al., appendix C.1.3; code krishnap25/simplicial-fl
models/shakespeare/erm_lstm_log_reg.py with MODEL_PARAMS (lr, 20, 53, 128, 1)), a next-character classifier:

    characters [n, 20] (ids in " A-Za-z", 53 symbols) -> trainable embedding 53 x 8 -> GRU(8, 128) from a zero
    state -> the last step's output -> fc 128 -> 128 logits; softmax cross-entropy

69,928 trainable parameters, the authors' PyTorch count: embedding 424; GRU 3*128*(8+128) + 2*384 (PyTorch's two
biases, as the authors have them); fc 16,512.

Deviations and notes:
1. The paper says the FC layer has 53 outputs; the code (used here) builds ``RecurrentModel(num_classes,
   n_hidden, n_recurrent_layers, n_hidden)``, so output_dim = n_hidden = 128: 128 logits of which only the first
   53 are ever a label. The softmax runs over all 128, as in the authors' runs.
2. Init is PyTorch's default (embedding N(0, 1), GRU and Linear uniform), from our seeded generator.
"""

from __future__ import annotations

import torch
from torch import nn

from fedbench.models.recurrent import SequenceClassifier
from fedbench.models.spec import Model

NAME = "deltafl_shakespeare_gru"
EMBED_DIM = 8
HIDDEN = 128
OUTPUTS = HIDDEN  # the authors' output_dim = n_hidden (deviation 1)


def deltafl_shakespeare_gru(num_classes: int = 53) -> Model:
    """The model over a vocabulary of ``num_classes`` characters (the authors' 53)."""
    if not 1 <= num_classes <= OUTPUTS:
        raise ValueError(f"model {NAME} has {OUTPUTS} outputs; it cannot classify {num_classes} classes")
    with torch.device("meta"):
        net = SequenceClassifier(nn.GRU(EMBED_DIM, HIDDEN, batch_first=True), [nn.Linear(HIDDEN, OUTPUTS)],
                                 embedding=nn.Embedding(num_classes, EMBED_DIM))
    return Model(name=NAME, config=(num_classes,), module=net, loss="softmax_ce", input_dtype=torch.int64)

