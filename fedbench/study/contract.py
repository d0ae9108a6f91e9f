"""A claim study as a declaration plus three hooks, and the one driver that runs every such study (issue 50, item 2).

A study module states what is specific to it and nothing else:

- ``DECLARATION``: the study as data (fedbench.study.declaration.StudyDeclaration: arms, seeds, budgets, claims with
  their rules);
- ``simulations(run) -> {key: Simulation}``: the runs it needs at ``run.budget`` on ``run.seeds``. The driver calls it
  again with the outcomes finished so far (``run.outcomes``) until it names no new key, so a study that tunes first
  names its tuning runs, then, once their outcomes are in, the runs they pick;
- ``measure(claim, run) -> Measurement``: for one declared claim, its parts (each with a rule the claim declares)
  and their per-seed values by reading and budget, and what its entry reports (scale, observed, reproduced, ...);
- ``figure(run, out)``: its figure(s), drawn into the study's folder ``out``.

A study whose records hold more than fedbench.study.record.sim_record's may also define ``record(sim, outcome)``.
The driver (:func:`drive`) alone checks the budget, runs the simulations through the one runner and store, writes
the records in the order the runs were named, judges each declared claim with its declared rules, its parts
combined as the claim declares (fedbench.claims.verdict.judge, recombined), and builds its entry
(:meth:`StudyDeclaration.judged`), so no study hand-wires a judgement. fedbench.study.output.run_claim_study calls it for a study module that defines ``simulations``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from fedbench.claims.entry import not_run
from fedbench.claims.verdict import BUDGETS, Fixed, Part, inconclusive_parts, judge, recombined
from fedbench.study.declaration import Budget, Claim, StudyDeclaration
from fedbench.study.runner import WORKERS

if TYPE_CHECKING:
    from fedbench.study.runner import Outcome, Simulation

HOOKS = ("simulations", "measure", "figure")
# the budget run where none is named: fedbench.study.layout.PIPELINE_BUDGET's value (layout imports the registry, so
# a study importing it would depend on more than its DVC stage declares)
PIPELINE_BUDGET = "pipeline"


@dataclass
class StudyRun:
    """One run of a study at one budget, as its hooks see it: the declaration on the seeds being run, the budget by
    name and as declared (a round count or the study's Budget), where its real data is, and the simulations named so
    far with the outcomes of those finished, by key, in the order they were named."""

    declaration: StudyDeclaration
    budget_name: str
    budget: Any
    real_root: Path | None = None
    config: Any = None  # params.yaml's fedbench.config.Config, for a study whose grid params.yaml sets (the main job)
    simulations: dict[Hashable, Simulation] = field(default_factory=dict)
    outcomes: dict[Hashable, Outcome] = field(default_factory=dict)

    @property
    def seeds(self) -> tuple[int, ...]:
        """The training seeds run (the budget's own where it declares them)."""
        return tuple(self.budget.seeds) if isinstance(self.budget, Budget) else self.declaration.seeds

    @property
    def rounds(self) -> int | None:
        return self.budget.rounds if isinstance(self.budget, Budget) else self.budget

    def data_seed(self, seed: int) -> int:
        """The data seed training seed ``seed`` trains on (StudyDeclaration.data_seed: the declared draw, or the
        confirmatory block's own for that seed)."""
        return self.declaration.data_seed(seed)


@dataclass(frozen=True)
class Measurement:
    """What a study measured for one claim: its ``parts`` (a label and the declared rule each) and ``values(reading,
    budget)``, each part's per-seed values read with ``reading`` from the runs cut at ``budget`` (a fraction of the
    rounds run); the primary ``reading``, the other ``readings`` and ``budgets`` reported beside it, the paper's rounds
    over the rounds run (``paper_budget``: the budget rule) and whether the values are deterministic, all as
    fedbench.claims.verdict.judge takes them; ``fixed``: parts read once, from no seed, judged beside them
    (fedbench.claims.verdict.Fixed); ``inconclusive``: (labels, why, what would change it) for parts the runs cannot
    judge whatever their interval (a mechanism that cannot act within the rounds run: verdict.inconclusive_parts).
    ``entry``: the entry's fields (scale, deviations, observed, reproduced, figure, fidelity, rounds_run, ...:
    fedbench.claims.entry.new_entry), ``rule_fields`` the rule's ``{name}`` fields; ``also``: keys the entry carries
    beyond new_entry's (a not-run claim's command and cost). ``not_run``: (why, what would run it) where the outcomes
    cannot judge the claim; then nothing is judged. ``observed``: where the entry's observed text quotes the judged
    result (its effect, each part's verdict, a sensitivity cell), the text written from that result."""

    parts: Sequence[Part] = ()
    values: Callable[[str, float], list[list[float]]] | None = None
    reading: str = "final"
    readings: tuple[str, ...] = ()
    budgets: tuple[float, ...] = BUDGETS
    paper_budget: float = 1.0
    deterministic: bool = False
    reading_names: dict[str, str] | None = None
    entry: dict[str, Any] = field(default_factory=dict)
    rule_fields: dict[str, Any] | None = None
    not_run: tuple[str, str] | None = None
    fixed: Sequence[Fixed] = ()
    inconclusive: tuple[Sequence[str], str, str] | None = None
    also: dict[str, Any] = field(default_factory=dict)
    observed: Callable[[dict[str, Any]], str] | None = None

    def __post_init__(self) -> None:
        if self.not_run is None and (not self.parts or self.values is None):
            raise ValueError("a Measurement judges parts with values, or says why it is not run (not_run)")


def follows_contract(module: ModuleType) -> bool:
    """Whether a study module states its runs, measurements and figure as the three hooks."""
    return all(callable(getattr(module, hook, None)) for hook in HOOKS)


def entry(run: StudyRun, claim: Claim, m: Measurement) -> dict[str, Any]:
    """Claim ``claim``'s entry from its measurement: judged with its declared rules, or not run where it says why.
    Where the measurement leaves them out, the entry has no scale or figure, the rounds of the budget run and the
    fidelity label of a run at that budget (StudyDeclaration.not_run_label)."""
    fields = {"scale": {}, "figure": None, "rounds_run": run.rounds} | m.entry
    if "fidelity" not in fields:
        fields["fidelity"] = run.declaration.not_run_label(claim.id, run.budget_name)
    if m.not_run is not None:
        return not_run(run.declaration.entry(claim.id, m.rule_fields, **fields), *m.not_run) | m.also
    result = judge(m.parts, m.values, m.reading, m.readings, m.budgets, m.paper_budget, m.deterministic,
                   m.reading_names)
    if claim.combination != "every" and len(m.parts) > 1:  # the claim's declared combination of its parts
        alone = [judge([part], lambda reading, budget, i=i: m.values(reading, budget)[i:i + 1], m.reading, m.readings,
                       m.budgets, m.paper_budget, m.deterministic, m.reading_names) for i, part in enumerate(m.parts)]
        result = recombined(result, alone, m.parts, claim.combination)
    for part in m.fixed:
        result = part.joined(result)
    if m.inconclusive is not None:
        result = inconclusive_parts(result, *m.inconclusive)
    if m.observed is not None:
        fields["observed"] = m.observed(result)
    return run.declaration.judged(claim.id, result, m.rule_fields, **fields) | m.also


def seeded(declaration: StudyDeclaration, budget: str, seeds: Sequence[int] | None = None,
           real_root: Path | None = None, data_seeds: Sequence[int] | None = None, config: Any = None) -> StudyRun:
    """A run of ``declaration`` at ``budget`` (checked: a ConfigError naming the allowed ones), on training ``seeds``
    where given (a confirmatory block: StudyDeclaration.on_seeds, whose rules name the block; a Budget's own seeds
    replaced too, its tuning and selection seeds kept) and the block's fresh ``data_seeds`` (one per training seed,
    for a study that draws its data: StudyDeclaration.fresh_data), its real data in ``real_root``, with nothing run
    yet; ``config``: params.yaml's Config, for a study whose grid it sets (StudyRun.config)."""
    declared = declaration.budget(budget)
    if data_seeds is not None and seeds is None:
        raise ValueError("fresh data seeds come with the training seeds of their block")
    if seeds is not None:
        declaration = declaration.on_seeds(tuple(seeds), None if data_seeds is None else tuple(data_seeds))
        if isinstance(declared, Budget) and dataclasses.is_dataclass(declared):
            declared = dataclasses.replace(declared, seeds=declaration.seeds)
    return StudyRun(declaration, budget, declared, real_root, config)


def _precision_stamp(run: StudyRun):
    """fedbench.plotting.stamped with the declared reduced-precision modes of ``run``'s simulations (their
    fedbench.engine.precision.label), or nothing where every one computed in fp32."""
    import contextlib

    modes = sorted({getattr(s.config, "precision", "fp32") for s in run.simulations.values()} - {"fp32"})
    if not modes:
        return contextlib.nullcontext()
    from fedbench.engine.precision import label
    from fedbench.plotting import stamped

    return stamped("; ".join(label(m) for m in modes))


def drive(module: ModuleType, out: str | Path, budget: str | None = None, seeds: Sequence[int] | None = None,
          workers: int = WORKERS, real_root: Path | None = None,
          data_seeds: Sequence[int] | None = None, config: Any = None) -> list[dict[str, Any]]:
    """Run study ``module`` (one that :func:`follows_contract`) at ``budget`` (default pipeline) into ``out``
    (:func:`seeded`): its simulations, named until it names no new one and each batch run at once through the one
    runner; one record per simulation, in the order named (``record(sim, outcome)`` where the study defines it, else
    fedbench.study.record.sim_record); its figure; and one entry per declared claim, in declared order. ``data_seeds``:
    a confirmatory block's fresh data seeds, one per seed of ``seeds`` (:func:`seeded`); ``config``: params.yaml's
    Config, for a study whose grid it sets (the main job)."""
    from fedbench.study.record import sim_record, write_simulations
    from fedbench.study.runner import run_simulations  # looked up at each call: a test may replace it

    run = seeded(module.DECLARATION, PIPELINE_BUDGET if budget is None else budget, seeds, real_root, data_seeds,
                 config)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    record, records = getattr(module, "record", sim_record), []
    while new := {k: s for k, s in module.simulations(run).items() if k not in run.simulations}:
        run.simulations.update(new)
        finished = dict(zip(new, run_simulations(list(new.values()), workers)))
        run.outcomes.update(finished)
        records += [record(new[k], o) for k, o in finished.items()]
    write_simulations(out, records)
    with _precision_stamp(run):  # a run in a declared reduced precision says so in every figure it draws
        module.figure(run, out)
    return [entry(run, claim, module.measure(claim, run)) for claim in run.declaration.claims]
