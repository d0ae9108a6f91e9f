"""The simulation engine: client selection, stragglers, vectorized local work, aggregation, evaluation."""
