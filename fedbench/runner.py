"""Removed (issue 50, item 1): the train stage's store, index and summaries are gone. params.yaml's experiments are the
main job's simulations (fedbench.study.experiments), kept in the main job study's store and record; the one-time move
of a checkout's results/train/ into that store is fedbench.studies.fedprox_main_job.adopt_train_store, which reads the
old index itself.

This empty module stays only because fedbench.provenance (RUN_CODE, MAIN_JOB_STAGE_CODE) and dvc.yaml (the main_job
and track stages' deps) still name fedbench/runner.py, and tests/faults/test_layering.py checks that every file they
name exists. Delete it with those entries (STUDY_RUN_CODE, the fingerprints' scope, never held it)."""
