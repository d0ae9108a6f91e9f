"""FedProx's Shakespeare model (Li et al., "Federated Optimization in Heterogeneous Networks", MLSys 2020,
appendix C.1; code litian96/FedProx flearn/models/shakespeare/stacked_lstm.py), a next-character classifier:

    characters [n, 80] (ids in the 80-symbol vocabulary) -> trainable embedding 80 x 8
    -> 2 x LSTM(256) (TF BasicLSTMCell, forget bias 1.0) -> the last step's output -> dense 256 -> 80 logits
    softmax cross-entropy

817,872 trainable parameters, the authors' TF count: embedding 640; LSTM 1 4*256*(8+256) + 1,024; LSTM 2
4*256*(256+256) + 1,024; dense 20,560. (A stock ``nn.LSTM`` has a second bias per gate and would count 819,920.)

Deviations and notes:
1. The paper says 100 hidden units; the code (used here) has 256 (the Shakespeare and Sent140 sizes are swapped
   between the paper and the code).
2. TF's single LSTM bias with its constant forget bias: b_ih is trainable and b_hh is the frozen constant
   (fedbench.models.recurrent.single_bias_lstm), so the trainable parameters and the gradient steps are TF's.
3. Init as TF1's defaults (fedbench.models.tf_init): Glorot-uniform embedding, LSTM kernels (fans of TF's one
   [in + H, 4H] kernel) and dense kernel, zero biases; drawn from our seeded generator, not TF's.
4. The authors feed one-hot labels to softmax_cross_entropy_with_logits_v2; integer labels give the same loss.
"""

from __future__ import annotations

import torch
from torch import nn

from fedbench.models.recurrent import SequenceClassifier, single_bias_lstm
from fedbench.models.spec import Model
from fedbench.models.tf_init import tf_glorot_init

NAME = "fedprox_shakespeare_lstm"
EMBED_DIM = 8
HIDDEN = 256
LAYERS = 2
FORGET_BIAS = 1.0  # BasicLSTMCell's default


def fedprox_shakespeare_lstm(num_classes: int = 80) -> Model:
    """The model over a vocabulary of ``num_classes`` characters (the authors' 80), predicting one of them."""
    lstm, lstm_frozen = single_bias_lstm(EMBED_DIM, HIDDEN, LAYERS, FORGET_BIAS)
    with torch.device("meta"):
        net = SequenceClassifier(lstm, [nn.Linear(HIDDEN, num_classes)], embedding=nn.Embedding(num_classes, EMBED_DIM))
    return Model(name=NAME, config=(num_classes,), module=net, loss="softmax_ce", input_dtype=torch.int64,
                 frozen={f"rnn.{k}": v for k, v in lstm_frozen.items()}, init_fn=tf_glorot_init)

