"""Models as flat parameter vectors: single-client maths for the reference path and evaluation, and a
batched gradient over a cohort ([K, P] parameters) for the vectorized engine."""

from fedbench.models.linear import MultinomialLogisticRegression

__all__ = ["MultinomialLogisticRegression", "build_model"]


def build_model(name: str, feature_shape: tuple[int, ...], num_classes: int):
    """The model called ``name`` for data of ``feature_shape`` with ``num_classes`` classes."""
    if name == "mclr":
        (d,) = feature_shape
        return MultinomialLogisticRegression(in_features=d, num_classes=num_classes)
    raise ValueError(f"unknown model {name!r}; allowed: ['mclr']")
