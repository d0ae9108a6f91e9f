"""The claim studies: content only, one study per module (issue 30). The framework they stand on is fedbench.study.

Each study module declares its study as data (``DECLARATION``: fedbench.study.declaration) and states three hooks
(fedbench.study.contract): ``simulations(run)``, the runs it needs (``Simulation``: a name, a SimulationConfig, a
dataset builder, a model, an algorithm); ``measure(claim, run)``, each declared claim's per-seed values of its parts
read from the outcomes; ``figure(run, out)``, its figure(s). The one driver (fedbench.study.contract.drive) runs the
simulations through the one runner (fedbench.study.runner.run_simulations, the train stage's too), writes a record of
each (fedbench.study.record), judges each claim by the rules it declares and builds its entry; verdicts come from
those rules, never from the published number. A variant (a stand-in dataset, another mu) is a module holding only
its declaration that runs its base study's hooks (fedbench.study.registry.VARIANTS). fedbench.study.output.
run_claim_study runs one study into its folder (the DVC ``study@NAME`` stage and ``fedbench study run``, through
fedbench.studies.stage), reusing the simulations it finished before (fedbench.study.reuse); the ``track`` stage
(fedbench.track) logs the results to MLflow. The registry of studies is fedbench.study.registry.
"""
