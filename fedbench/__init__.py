"""fedbench: rerun the headline experiments of federated-optimization papers and check their numbers."""

import os

# Intel MKL's strict Conditional Numerical Reproducibility: without it, MKL's (batched) matrix products round
# differently depending on the memory alignment of each matrix, so a client's local step would depend on
# where its rows sit in the cohort's buffers, and a run stacked with other runs would drift from the same run
# alone in the last bits. MKL reads this at its first call, so it is set before anything runs; measured cost
# on the engine's small products: none. An explicit MKL_CBWR in the environment is respected.
os.environ.setdefault("MKL_CBWR", "AUTO,STRICT")

__version__ = "0.1.0"
