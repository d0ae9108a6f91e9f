"""A claim study declared as data: its arms, seeds, round budgets, evaluation protocol and claims (issue 19, item 2).

A study module keeps what is specific to it (how an arm becomes a simulation, its measurements, its figure) and
declares the rest once, at module level, as a :class:`StudyDeclaration`, validated when the module is imported: an
arm named twice, a seed repeated or negative, a budget of no rounds, a claim that reads an arm the study does not
declare, or two claims with one id are each refused in one line naming the study, the key and what is allowed.
Imports no torch, so that the declaration can be read (listed, validated, costed) without the engine.

A study with no seed randomness (an analytic check: exact gradients, every client every round) declares ``seeds=()``:
it is deterministic, and other seeds for it are refused (fedbench.config: claim_studies.<group>.<name>.seeds).
:meth:`StudyDeclaration.entry` builds a claim's entry from its declaration (fedbench.claims.entry.new_entry), so a
study states each claim's place in the paper, statement, published value and rule once.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from fedbench.claims.entry import judged, new_entry
from fedbench.claims.fidelity import SETUPS, label, setup_of
from fedbench.claims.verdict import Rule, rule_text
from fedbench.engine.evaluation import DEFAULT_EVALUATIONS, EvalSpec
from fedbench.errors import ConfigError


@runtime_checkable
class Budget(Protocol):
    """A scale a study runs at, where it is more than a round count (a paper-scale study's: its seeds, cohort,
    device, ...): the study's own frozen dataclass with at least these two fields. ``rounds`` None: the paper's,
    which differ by dataset (the study reads them per dataset)."""

    rounds: int | None
    seeds: tuple[int, ...]


@dataclass(frozen=True)
class Arm:
    """One method a study runs: its ``name`` in the study (the simulations' and the figure's), the algorithm
    (a name of fedbench.algorithms) and the settings the paper gives for it, as the paper states them (the study
    turns them into the algorithm's fields and the run's settings; e.g. FedProxVR's beta into eta = 1/(beta L))."""

    name: str
    algorithm: str
    settings: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Claim:
    """A claim the study judges, stated before any run: where the paper says it, the statement, the published value
    (keys value, unit, scope, statement, ...), its rule as data and ``reads``: the arms whose runs the rule reads.

    The rule is data (issue 30, item 3): ``effect``, what one part's per-seed value is and how it is read;
    ``rules``, each group of the claim's parts with the :class:`fedbench.claims.verdict.Rule` that judges it (the
    study judges with these same objects: :meth:`rule_for`); ``combination``, how the parts combine (a name of
    fedbench.claims.verdict.COMBINES); ``notes``, what is reported and not judged and the rule's history. ``rule``,
    its words, is generated from them (fedbench.claims.verdict.rule_text); ``{name}`` fields in them are filled from
    the run's budget (e.g. ``{evaluations}``: :meth:`rule_at`)."""

    id: str
    where: str
    claim_text: str
    published: dict[str, Any]
    rule: str = ""  # generated: left out where declared (dataclasses.replace sets it: on_seeds)
    reads: tuple[str, ...] = ()
    effect: str = ""
    rules: tuple[tuple[str, Rule], ...] = ()
    combination: str = "every"
    notes: str = ""
    rounds_paper: int | None = None  # the paper's round budget for this claim, where it states one
    fidelity: str | None = None  # the entry's at the study's declared budget (None: the study sets it per entry)
    note: str = ""  # what the study assumes where the paper is silent (a not-run entry's deviation)
    scales: tuple[Any, ...] = ()  # the runs its not-run entry declares where not the study's ``scales``: those it
    # was registered with, where the study added runs for later claims that this one does not read (its hash holds)

    def __post_init__(self) -> None:
        if not self.rule or not self.rules:  # its words come from its data (given only by replace: on_seeds)
            try:
                text = rule_text(self.effect, self.rules, self.combination, self.notes)
            except ValueError as e:
                raise ConfigError(f"claims.{self.id}: {e}") from None
            object.__setattr__(self, "rule", text)
        if "reproduced if" in self.effect:
            raise ConfigError(f"claims.{self.id}.effect: states a decision ('reproduced if'); allowed: the measure "
                              "alone, the decision is its rules' (fedbench.claims.verdict.Rule.text)")

    def rule_for(self, which: str = "") -> Rule:
        """The :class:`Rule` this claim declares for its parts ``which`` (its only one where it declares one)."""
        if not which and len(self.rules) == 1:
            return self.rules[0][1]
        found = [rule for name, rule in self.rules if name == which]
        if not found:
            raise KeyError(f"claims.{self.id}: no rule for {which!r}; declared: {[n for n, _ in self.rules]}")
        return found[0]

    def rule_at(self, **fields: Any) -> str:
        """The rule with the budget's fields filled in."""
        return self.rule.format(**fields)


@dataclass(frozen=True)
class StudyDeclaration:
    """What a claim study runs and judges. ``budgets``: the scales it runs at by name ("pipeline": what the DVC
    stage runs; "paper": the paper's; "fixture": the test suite's), each a round count, or a :class:`Budget` where
    more than the rounds changes (its seeds replace ``seeds`` at that budget); ``evaluation``: the engine's protocol
    for every run (fedbench.engine.evaluation.EvalSpec; a study whose protocol depends on the budget states it in
    its module); ``dataset``: a description of the data (the study builds it); ``variants``: the real-data variants
    it trains on (fedbench.data; ``fedbench paper run NAME`` builds them); ``seeds``: the training seeds, () for a
    deterministic study (no seed randomness; its runs use the engine's seed 0, from which nothing is drawn);
    ``knobs``: the settings the study sweeps, by name (e.g. step sizes), each the values it runs; ``scales``: the
    runs of its paper budget that its claims read, for the projected cost (fedbench.study.scale.Scale);
    ``deviations``: where every run of the study departs from the paper (each judged entry's, unless it states its
    own); ``rule_fields``: each budget's values of the rules' ``{name}`` fields (e.g. the rounds it runs), which the
    entries of a study that has not run state (a run fills them from what it ran), one per budget for every field a
    rule names; ``setup``: what its claims' runs are set up on (fedbench.claims.fidelity.SETUPS: "paper" for the
    paper's own data and setup), which labels the entries of a study that has not run as a run at that budget would be
    labelled (:meth:`not_run_label`; a claim's declared ``fidelity`` overrides it); ``fresh_data``: the study draws
    its data itself from a data seed (a generator or a seeded partition: each training seed trains on the draw that
    fedbench.study.contract.StudyRun.data_seed names), so a confirmatory block draws fresh data seeds beside its
    training seeds (issue 51: a replication on new data, not only new training randomness); False for one fixed
    published dataset; ``keeps_outcomes``: the study's store keeps every simulation it ever finished instead of pruning
    those its last run did not name (the main job: its variations, `dvc exp run -S train.rounds=...`, share one store,
    and going back to a setting reads its runs back, as the train store did)."""

    name: str
    paper: str
    dataset: str
    arms: tuple[Arm, ...]
    seeds: tuple[int, ...]
    budgets: dict[str, int]
    claims: tuple[Claim, ...]
    evaluation: tuple[EvalSpec, ...] = DEFAULT_EVALUATIONS
    data_seeds: tuple[int, ...] = (0,)
    knobs: dict[str, tuple[Any, ...]] = field(default_factory=dict)
    variants: tuple[str, ...] = ()
    scales: tuple[Any, ...] = ()
    deviations: tuple[str, ...] = ()
    rule_fields: dict[str, dict[str, Any]] = field(default_factory=dict)
    setup: str = "stand-in"
    fresh_data: bool = False
    keeps_outcomes: bool = False

    def __post_init__(self) -> None:
        where = f"study {self.name}"
        if self.setup not in SETUPS:
            raise ConfigError(f"{where}: setup: {self.setup!r}; allowed: {', '.join(SETUPS)}")
        names = [a.name for a in self.arms]
        if not names:
            raise ConfigError(f"{where}: arms: declare at least one arm")
        if len(set(names)) != len(names):
            raise ConfigError(f"{where}: arms: {sorted({n for n in names if names.count(n) > 1})} named twice; "
                              "allowed: one arm per name")
        self._check_seeds(self.seeds, "seeds", empty_ok=True)
        self._check_seeds(self.data_seeds, "data_seeds", empty_ok=True)
        if self.fresh_data and not self.data_seeds:
            raise ConfigError(f"{where}: fresh_data: the study draws its data from a data seed, so it declares "
                              "data_seeds; allowed: data_seeds=(0,) or more")
        for budget, declared in self.budgets.items():
            rounds = declared.rounds if isinstance(declared, Budget) else declared
            if not (isinstance(declared, Budget) and rounds is None) and (
                    isinstance(rounds, bool) or not isinstance(rounds, int) or rounds < 1):
                raise ConfigError(f"{where}: budgets.{budget}: {rounds!r} rounds; allowed: an integer >= 1")
            if isinstance(declared, Budget):
                self._check_seeds(tuple(declared.seeds), f"budgets.{budget}.seeds", empty_ok=self.deterministic)
        if not self.budgets:
            raise ConfigError(f"{where}: budgets: declare at least one (e.g. pipeline)")
        ids = [c.id for c in self.claims]
        if len(set(ids)) != len(ids):
            raise ConfigError(f"{where}: claims: {sorted({i for i in ids if ids.count(i) > 1})} declared twice")
        self._check_rule_fields(where)
        for c in self.claims:
            unknown = [r for r in c.reads if r not in names]
            if unknown or not c.reads:
                raise ConfigError(f"{where}: claims.{c.id}.reads: {unknown or 'nothing'} is not an arm of the study; "
                                  f"allowed: {', '.join(names)}")

    def _check_rule_fields(self, where: str) -> None:
        """rule_fields names only declared budgets, and at each it names gives a value for every ``{name}`` field a
        rule names (a study whose fields come from params.yaml, as the main job's, declares none)."""
        unknown = sorted(set(self.rule_fields) - set(self.budgets))
        if unknown:
            raise ConfigError(f"{where}: rule_fields: {unknown} are not budgets of the study; allowed: "
                              f"{', '.join(self.budgets)}")
        for c in self.claims:
            named = set(re.findall(r"\{([A-Za-z_]\w*)\}", c.rule))  # a field's name (not "{1, 1/2, ...}": text)
            for budget, values in self.rule_fields.items():
                missing = sorted(named - set(values))
                if missing:
                    raise ConfigError(f"{where}: rule_fields.{budget}: no value for {missing} (claims.{c.id}'s rule "
                                      f"names them); allowed: a value for every field a rule names")

    def _check_seeds(self, seeds: tuple[int, ...], key: str, empty_ok: bool = False) -> None:
        if ((not seeds and not empty_ok) or len(set(seeds)) != len(seeds)
                or any(isinstance(s, bool) or not isinstance(s, int) or s < 0 for s in seeds)):
            raise ConfigError(f"study {self.name}: {key}: {list(seeds)}; allowed: distinct integers >= 0, at least one")

    @property
    def deterministic(self) -> bool:
        """No seed randomness: the study declares no training seeds."""
        return not self.seeds

    def with_seeds(self, seeds: tuple[int, ...] | None) -> StudyDeclaration:
        """The declaration with other training ``seeds`` (params.yaml claim_studies.<group>.<name>.seeds), validated;
        itself for None. A deterministic study takes none."""
        if seeds is None:
            return self
        if self.deterministic:
            raise ConfigError(f"study {self.name}: seeds: {list(seeds)}; the study is deterministic (no seed "
                              "randomness: it declares no seeds); allowed: leave seeds out")
        other = dataclasses.replace(self, seeds=tuple(seeds))
        other._check_seeds(other.seeds, "seeds")
        return other

    def on_seeds(self, seeds: tuple[int, ...], data_seeds: tuple[int, ...] | None = None) -> StudyDeclaration:
        """The declaration judged on other training ``seeds`` (a confirmatory run's frozen block, fedbench.studies.
        confirm): :meth:`with_seeds`, each claim's rule naming them wherever it named the declared seeds ("per judged
        seed (1-5)"), so that the rule's frozen hash, which reads a mention of a run's own seeds as a placeholder
        (fedbench.claims.registry.frozen_hash), stays the exploratory rule's. ``data_seeds``: the block's fresh data
        seeds, one per training seed (a study that draws its own data: ``fresh_data``), which replace the declared
        ones (each training seed trains on its own draw: :meth:`data_seed`)."""
        from fedbench.claims.registry import seeds_text, without_seeds

        other = self.with_seeds(seeds)  # validated first: no seeds, or a repeated one, is one line naming the key
        if data_seeds is not None:
            if not self.fresh_data:
                raise ConfigError(f"study {self.name}: data_seeds: {list(data_seeds)}; the study trains on one fixed "
                                  "dataset (fresh_data is False); allowed: none")
            if len(data_seeds) != len(other.seeds):
                raise ConfigError(f"study {self.name}: data_seeds: {list(data_seeds)}; allowed: one per training "
                                  f"seed ({len(other.seeds)})")
            other = dataclasses.replace(other, data_seeds=tuple(data_seeds))
            other._check_seeds(other.data_seeds, "data_seeds")
        says = seeds_text(list(other.seeds)) if len(other.seeds) > 1 else str(other.seeds[0])
        return dataclasses.replace(other, claims=tuple(
            dataclasses.replace(c, rule=without_seeds(c.rule, list(self.seeds)).replace("{seeds}", says))
            for c in self.claims))

    def data_seed(self, seed: int) -> int:
        """The data seed training seed ``seed`` trains on: the one declared data seed (one fixed draw for every
        training seed), or, where a confirmatory block gave one per training seed (:meth:`on_seeds`), its own."""
        if len(self.data_seeds) == 1:
            return self.data_seeds[0]
        if len(self.data_seeds) == len(self.seeds) and seed in self.seeds:
            return self.data_seeds[self.seeds.index(seed)]
        raise ConfigError(f"study {self.name}: data_seeds: {list(self.data_seeds)} pair with no training seed "
                          f"{seed} of {list(self.seeds)}; allowed: one data seed, or one per training seed")

    def data_label(self, seed: int) -> dict[str, int]:
        """What a run's record says of its data draw: {"data_seed": ...} where the runs train on several draws (a
        confirmatory block's fresh ones), nothing where every run trains on the one declared draw."""
        return {} if len(self.data_seeds) == 1 else {"data_seed": self.data_seed(seed)}

    def not_run_label(self, claim_id: str, budget: str) -> str:
        """The fidelity label a run of claim ``claim_id`` at ``budget`` would carry (fedbench.claims.fidelity.label of
        the claim's declared setup, else the study's, the budget's rounds and seeds against the paper's rounds: the
        claim's, else the study's "paper" budget's), for its entry while it has not run: a study not run yet is
        counted in the class its run will be counted in."""
        c = self.claim(claim_id)
        seeds = self.seeds_at(budget)
        paper_rounds = c.rounds_paper or (self.rounds("paper") if "paper" in self.budgets else None)
        return label(setup_of(c.fidelity) if c.fidelity else self.setup, self.rounds(budget), paper_rounds,
                     len(seeds) or None)

    def budget(self, budget: str) -> Any:
        """The declared budget ``budget`` (a round count or a :class:`Budget`); a ConfigError naming the allowed."""
        if budget not in self.budgets:
            raise ConfigError(f"study {self.name}: budget {budget!r}; allowed: {', '.join(self.budgets)}")
        return self.budgets[budget]

    def rounds(self, budget: str) -> int | None:
        declared = self.budget(budget)
        return declared.rounds if isinstance(declared, Budget) else declared

    def seeds_at(self, budget: str) -> tuple[int, ...]:
        """The training seeds run at ``budget``: the Budget's own, else the study's."""
        declared = self.budget(budget)
        return tuple(declared.seeds) if isinstance(declared, Budget) else self.seeds

    def arm(self, name: str) -> Arm:
        return next(a for a in self.arms if a.name == name)

    def claim(self, claim_id: str) -> Claim:
        return next(c for c in self.claims if c.id == claim_id)

    def entry(self, claim_id: str, rule_fields: dict[str, Any] | None = None, **fields: Any) -> dict[str, Any]:
        """Claim ``claim_id``'s entry, not yet judged (fedbench.claims.entry.new_entry): its id, where, statement,
        published value and rule from the declaration (the rule's ``{name}`` fields filled from ``rule_fields``), the
        study's paper, its training and data seeds unless given, and ``fields`` (scale, deviations, reproduced, ...)."""
        c = self.claim(claim_id)
        fields.setdefault("deviations", list(self.deviations))
        fields.setdefault("training_seeds", list(self.seeds))
        fields.setdefault("data_seeds", list(self.data_seeds))
        fields.setdefault("rounds_paper", c.rounds_paper)
        if c.fidelity is not None:
            fields.setdefault("fidelity", c.fidelity)
        return new_entry(id=c.id, paper=self.paper, where=c.where, claim_text=c.claim_text, published=c.published,
                         rule=c.rule_at(**rule_fields) if rule_fields else c.rule, **fields)

    def judged(self, claim_id: str, result: dict[str, Any], rule_fields: dict[str, Any] | None = None,
               **fields: Any) -> dict[str, Any]:
        """Claim ``claim_id``'s entry (:meth:`entry`) judged by ``result`` (fedbench.claims.verdict.judge's; fedbench.
        claims.entry.judged)."""
        return judged(self.entry(claim_id, rule_fields, **fields), result)

    def runs(self) -> list[tuple[str, int]]:
        """(arm, seed) of every run, seed-major (the order the study's records are written in)."""
        return [(a.name, s) for s in self.seeds for a in self.arms]
