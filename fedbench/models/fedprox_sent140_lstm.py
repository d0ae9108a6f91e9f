"""FedProx's Sent140 model (Li et al., MLSys 2020, appendix C.1; code litian96/FedProx
flearn/models/sent140/stacked_lstm.py), a tweet-sentiment classifier over frozen GloVe embeddings:

    word ids [n, 25] -> frozen GloVe 6B 300d (400,000 words + a zero row for unknown words)
    -> 2 x LSTM(100) (TF BasicLSTMCell, forget bias 1.0) -> the last step's output -> dense 100 -> 30 (linear)
    -> dense 30 -> 1 logit; sigmoid cross-entropy; correct when the logit's sign matches the label

243,861 trainable parameters, the authors' TF count: LSTM 1 4*100*(300+100) + 400; LSTM 2 4*100*(100+100) + 400;
dense 3,030; dense 31 (a stock ``nn.LSTM`` would count 244,661). The GloVe table (120,000,300 floats at full size)
is a frozen tensor: never in theta, never averaged, stored once on the device.

The table is the builder's argument (the dataset provides it, with its vocabulary and the unknown row); the
model takes its vocabulary size and dimension from it, so the count above holds at d = 300.

Deviations and notes:
1. The paper says 256 hidden units; the code (used here) has 100 (swapped with Shakespeare's, see that model).
2. TF's single LSTM bias with its constant forget bias, as in fedbench.models.recurrent.single_bias_lstm.
3. Init as TF1's defaults (fedbench.models.tf_init), from our seeded generator.
4. TF runs the LSTM over all 25 steps, padding included (no sequence lengths), and reads the last step; so do we.
"""

from __future__ import annotations

import torch
from torch import nn

from fedbench.models.recurrent import FROZEN_TABLE, SequenceClassifier, check_embedding, single_bias_lstm
from fedbench.models.spec import Model
from fedbench.models.tf_init import tf_glorot_init

NAME = "fedprox_sent140_lstm"
HIDDEN = 100
LAYERS = 2
DENSE = 30
FORGET_BIAS = 1.0


def fedprox_sent140_lstm(embedding: torch.Tensor) -> Model:
    """The model over the frozen word embedding ``embedding`` [V, d] (GloVe 6B 300d with its unknown row)."""
    embedding = check_embedding(NAME, embedding)
    vocab, dim = embedding.shape
    lstm, lstm_frozen = single_bias_lstm(dim, HIDDEN, LAYERS, FORGET_BIAS)
    with torch.device("meta"):
        net = SequenceClassifier(lstm, [nn.Linear(HIDDEN, DENSE), nn.Linear(DENSE, 1)], table_shape=(vocab, dim))
    frozen = {FROZEN_TABLE: embedding, **{f"rnn.{k}": v for k, v in lstm_frozen.items()}}
    return Model(name=NAME, config=(vocab, dim), module=net, loss="sigmoid_ce", input_dtype=torch.int64,
                 frozen=frozen, init_fn=tf_glorot_init)

