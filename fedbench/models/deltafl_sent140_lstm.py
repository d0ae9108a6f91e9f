"""Delta-FL's Sent140 RNN (Pillutla, Laguel, Malick, Harchaoui, "Federated Learning with Superquantile
Aggregation for Heterogeneous Data", appendix C.1.2; code krishnap25/simplicial-fl
models/sent140/erm_lstm_log_reg.py), a tweet-sentiment classifier over frozen GloVe embeddings:

    word ids [n, 20] -> frozen GloVe 6B 50d (with the unknown-word row) -> LSTM(50, hidden 50) from a zero state
    -> the last step's output -> fc 50 -> 1 logit; sigmoid cross-entropy (BCE with logits)

20,451 trainable parameters, the authors' PyTorch count: LSTM 4*50*(50+50) + 2*200 (PyTorch's two biases, as the
authors have them); fc 51. The hidden size is the embedding's dimension (the authors' hidden_dim=-1), taken
from the frozen table the dataset provides.

Deviations and notes:
1. The authors compute in float64 (torch.set_default_dtype); the engine trains in float32.
2. Their (lambda/2)||w||^2 term is 0 for this model in their scripts (no regularisation), so there is none here.
3. Init is PyTorch's default for LSTM and Linear, from our seeded generator.
"""

from __future__ import annotations

import torch
from torch import nn

from fedbench.models.recurrent import FROZEN_TABLE, SequenceClassifier, check_embedding
from fedbench.models.spec import Model

NAME = "deltafl_sent140_lstm"


def deltafl_sent140_lstm(embedding: torch.Tensor) -> Model:
    """The model over the frozen word embedding ``embedding`` [V, d] (GloVe 6B 50d with its unknown row)."""
    embedding = check_embedding(NAME, embedding)
    vocab, dim = embedding.shape
    with torch.device("meta"):
        net = SequenceClassifier(nn.LSTM(dim, dim, batch_first=True), [nn.Linear(dim, 1)], table_shape=(vocab, dim))
    return Model(name=NAME, config=(vocab, dim), module=net, loss="sigmoid_ce", input_dtype=torch.int64,
                 frozen={FROZEN_TABLE: embedding})

