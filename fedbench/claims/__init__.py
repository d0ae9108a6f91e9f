"""The claim model, below both the studies and the report: the entry schema and how an entry is built
(entry.py), the papers' citations (papers.py), readings of a run's curve (readings.py), paired effects with their
intervals (stats.py), and rules and verdicts (verdict.py). It imports no torch and nothing of fedbench.studies,
fedbench.report or the engine (tests/faults/test_layering.py)."""
