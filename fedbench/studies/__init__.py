"""The claim studies: content only, one study per module (issue 30). The framework they stand on is fedbench.study.

Each study module declares its study as data (``DECLARATION``: fedbench.study.declaration) and exposes
``run(out_dir, workers=WORKERS, ...) -> list[claim dict]``: it turns its arms into simulations (``Simulation``: a
name, a SimulationConfig, a dataset builder, a model, an algorithm), runs them all through the one runner
(fedbench.study.runner.run_simulations, the train stage's too; fedbench.study.runs for its budget and records), and
only then computes its claims from the outcomes. It writes its figure(s) as PNG and a record of every simulation
(fedbench.study.record) into ``out_dir`` and returns one entry per claim with exactly the keys of
fedbench.claims.entry.CLAIM_KEYS. Verdicts come from the rule stated in each entry, never from the published number.
fedbench.study.output.run_claim_study runs one study into its folder (the DVC ``study@NAME`` stage and ``fedbench
study run``, through fedbench.studies.stage), reusing the simulations it finished before (fedbench.study.reuse); the
``track`` stage (fedbench.track) logs the results to MLflow. The registry of studies is fedbench.study.registry.
"""
