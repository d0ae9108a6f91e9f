"""fedbench: rerun the headline experiments of federated-optimization papers and check their numbers."""

__version__ = "0.1.0"
