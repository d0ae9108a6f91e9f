"""The part every claim study's run() shares (issue 19.2): its round budget and its runs at that budget
(:class:`StudyRuns`: the output folder, simulations run in batches, one record each, written once). Imports
nothing of params.yaml, so that a study module importing it depends on no more than its DVC stage declares."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from fedbench.study.runner import WORKERS

if TYPE_CHECKING:
    from fedbench.study.runner import Outcome, Simulation


K = TypeVar("K", bound=Hashable)


@dataclass
class StudyRuns:
    """A claim study's runs at one budget, the part every study's run() shares (issue 19.2): its output folder, its
    simulations run through the one runner (run_simulations) one batch per call (a batch of tuning runs, then the runs
    they pick), and one record per simulation (fedbench.study.record), kept in the order the batches ran and written
    once by :meth:`write`. The study's run() keeps what is specific to it: which runs, and what it reads from them."""

    out: Path
    workers: int = WORKERS
    records: list[dict[str, Any]] = field(default_factory=list)

    def run(self, simulations: Mapping[K, Simulation], record: Callable[..., dict[str, Any]] | None = None,
            keep: bool = True, **record_fields: Any) -> dict[K, Outcome]:
        """Run ``simulations`` (by key) in one call and keep each one's record: ``record(sim, outcome)`` if given, else
        fedbench.study.record.sim_record(sim, outcome, **record_fields); none with ``keep=False`` (a study whose
        records read all its runs adds them to ``records`` itself). The outcomes, by the same keys."""
        from fedbench.study.record import sim_record
        from fedbench.study.runner import run_simulations

        outcomes = dict(zip(simulations, run_simulations(list(simulations.values()), self.workers)))
        if keep:
            self.records += [record(simulations[k], o) if record else sim_record(simulations[k], o, **record_fields)
                             for k, o in outcomes.items()]
        return outcomes

    def run_list(self, simulations: Sequence[Simulation], record: Callable[..., dict[str, Any]] | None = None,
                 **record_fields: Any) -> list[Outcome]:
        """:meth:`run` of a list of simulations; their outcomes in order."""
        return list(self.run(dict(enumerate(simulations)), record, **record_fields).values())

    def run_jobs(self, jobs: Sequence[K], simulation: Callable[..., Simulation],
                 record: Callable[..., dict[str, Any]] | None = None, **record_fields: Any) -> dict[K, Outcome]:
        """:meth:`run` of ``simulation(*job)`` for each job (a tuple)."""
        return self.run({job: simulation(*job) for job in jobs}, record, **record_fields)

    def curves(self, jobs: Sequence[K], simulation: Callable[..., Simulation], metric: str,
               **simulation_args: Any) -> dict[K, list[float]]:
        """For a study that reads one curve a run: ``simulation(*job, **simulation_args)`` run for every job (one
        record each, then all written, :meth:`write`) and each job's ``metric`` per round."""
        outcomes = self.run({job: simulation(*job, **simulation_args) for job in jobs})
        self.write()
        return {job: o.series(metric) for job, o in outcomes.items()}

    def write(self) -> None:
        """The records of every simulation run so far, in ``out`` (fedbench.study.record.write_simulations)."""
        from fedbench.study.record import write_simulations

        write_simulations(self.out, self.records)


def open_budget(out_dir: str | Path, budgets: Mapping[str, Any], budget: str,
                workers: int = WORKERS) -> tuple[Any, StudyRuns]:
    """A study's round budget ``budget`` of its ``budgets`` (a ValueError naming the allowed ones otherwise) and its
    :class:`StudyRuns` into ``out_dir`` (created)."""
    if budget not in budgets:
        raise ValueError(f"budget {budget!r}; allowed: {', '.join(budgets)}")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    return budgets[budget], StudyRuns(out, workers)


def open_declared(out_dir: str | Path, declaration: Any, budget: str,
                  workers: int = WORKERS) -> tuple[Any, StudyRuns, list[str]]:
    """:func:`open_budget` of ``declaration``'s budgets (a fedbench.study.declaration.StudyDeclaration), and the names
    of its arms in declared order: the preamble of a study whose runs are one per arm and seed."""
    b, runs = open_budget(out_dir, declaration.budgets, budget, workers)
    return b, runs, [a.name for a in declaration.arms]


def open_seeded(out_dir: str | Path, declaration: Any, budget: str, workers: int = WORKERS,
                seeds: Sequence[int] | None = None) -> tuple[Any, StudyRuns, Any]:
    """:func:`open_budget` of ``declaration``'s budgets, and the study's ``declaration`` (a fedbench.study.declaration.StudyDeclaration) on
    training ``seeds`` if given (its own otherwise; a rule that names the declared seeds names these:
    StudyDeclaration.on_seeds): a seed-based study's budget, runs and declaration at once. A budget that is a
    dataclass with its own ``seeds`` (a study's Budget) comes back with those seeds replaced by ``seeds``; its other
    seeds (tuning, selection) stay, and so do the choices made on them."""
    b, runs = open_budget(out_dir, declaration.budgets, budget, workers)
    if seeds is None:
        return b, runs, declaration
    d = declaration.on_seeds(tuple(seeds))
    if dataclasses.is_dataclass(b) and any(f.name == "seeds" for f in dataclasses.fields(b)):
        b = dataclasses.replace(b, seeds=d.seeds)
    return b, runs, d
