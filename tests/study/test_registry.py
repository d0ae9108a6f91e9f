"""fedbench.study.registry: the one explicit list of claim studies (issue 30). It names every study module, each
declared one way, and it, like every declaration, imports no torch; params.yaml is validated by asking it."""

import importlib
import subprocess
import sys
from pathlib import Path

import pytest

from fedbench.errors import ConfigError
from fedbench.study import registry
from fedbench.study.contract import follows_contract
from fedbench.study.declaration import StudyDeclaration

STUDIES = Path(__file__).resolve().parents[2] / "fedbench" / "studies"


def test_the_registry_names_every_study_module_and_only_those():
    """A module of fedbench/studies/ that runs a study (states the three hooks of fedbench.study.contract, or defines
    run()) is in the registry, and nothing else is: a new study left out of the list, or a name that is no study,
    fails here."""
    def is_study(module) -> bool:
        return follows_contract(module) or callable(getattr(module, "run", None))

    runs = {f.stem for f in STUDIES.glob("*.py") if not f.stem.startswith("_")
            and is_study(importlib.import_module(f"fedbench.studies.{f.stem}"))}
    assert set(registry.names()) == runs and len(runs) == 24
    assert not set(registry.SMALL) & set(registry.CLAIM_STUDIES)


def test_every_claim_study_is_declared_one_way():
    """Each study declares itself as one StudyDeclaration named after its module; the real-data ones (declaring
    variants) are exactly the registry's CLAIM_STUDIES, and their claims state their fidelity."""
    for name in registry.names():
        d = registry.declaration(name)
        assert isinstance(d, StudyDeclaration) and d.name == name and d.claims, name
        assert registry.is_paper_scale(name) == (name in registry.CLAIM_STUDIES), name
        assert all(c.fidelity is not None for c in d.claims) or name not in registry.CLAIM_STUDIES, name


@pytest.mark.parametrize("name, budgets, deterministic, seeds", [
    ("fedprox_synthetic", ["pipeline", "paper"], False, True),
    ("mime_synthetic", ["pipeline"], False, True),
    ("delta_fl_triangle", ["pipeline"], True, False),
    ("scaffold_fashion", ["paper", "full", "fixture"], False, True),
    ("fedproxvr_fashion", ["paper", "convex", "fixture"], False, True),  # runs on a confirmatory block
])
def test_what_params_yaml_asks_of_a_study(name, budgets, deterministic, seeds):
    """The answers config's validation reads: the declared budgets in order, no seed randomness, run() taking seeds."""
    assert registry.budgets(name) == budgets
    assert registry.is_deterministic(name) is deterministic and registry.takes_seeds(name) is seeds


def test_a_study_takes_other_seeds_exactly_when_it_has_seed_randomness():
    """Every seed-based study's run() takes a confirmatory block of seeds (`fedbench claims confirm`, params.yaml
    ``seeds``); a deterministic one takes none (a rerun would be a copy)."""
    assert [n for n in registry.names() if registry.takes_seeds(n) == registry.is_deterministic(n)] == []


def test_an_unknown_study_is_one_line():
    with pytest.raises(ConfigError) as err:
        registry.declaration("record")  # a module of fedbench/studies/, but no study
    assert str(err.value) == f"study 'record': no such claim study; allowed: {', '.join(registry.names())}"


def test_the_registry_and_every_declaration_import_no_torch():
    """Importing the registry, then every study's declaration (and the two declarations that have no run():
    the main job's), in a fresh interpreter leaves torch, MLflow, pandas and matplotlib unloaded."""
    probe = ("import sys\nfrom fedbench.study import registry\n"
             "ds = [registry.declaration(n) for n in registry.names()]\n"
             "import fedbench.studies.fedprox_main_job, fedbench.studies.fedprox_real_data\n"
             "print(len(ds), sorted(m for m in ('torch', 'mlflow', 'pandas', 'matplotlib') if m in sys.modules))")
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, "-c", probe], cwd=root, capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "24 []", out.stderr[-2000:]


def _every_claim():
    """Every declared claim (the 89 of the report): the registry's studies, the main job and FedProx's real-data
    claims, one per id."""
    from fedbench.studies import fedprox_main_job
    from fedbench.studies import fedprox_real_data as real
    from fedbench.study.paper_profile import STUDIES as PAPER

    decls = [registry.declaration(n) for n in registry.names()] + [fedprox_main_job.DECLARATION, real.FIVE_DATASETS,
                                                                    real.PARTIAL_WORK]
    decls += [real.declaration(s) for s in [*PAPER.values(), real.MNIST5K_STUDY] if not s.partial_work]
    return {c.id: c for d in decls for c in d.claims}


def test_every_rule_is_data_and_its_words_are_generated_from_it():
    """Issue 30, item 3: no claim states its rule in words of its own. Each declares its effect, its parts' rules,
    their combination and notes, and its rule is the words generated from them; only the rules say a decision."""
    from fedbench.claims.verdict import rule_text

    claims = _every_claim()
    assert len(claims) == 89
    for c in claims.values():
        assert c.rules and c.rule == rule_text(c.effect, c.rules, c.combination, c.notes), c.id
        assert "reproduced if" not in c.effect, c.id


def test_every_judged_part_is_judged_by_a_rule_its_claim_declares():
    """The committed report's judged claims: each part's rule (its words, which state kind, threshold and unit) is one
    of the rules its claim declares, so the words a reader sees are the code's (scaffold_concrete's part (c) adds what
    its threshold means on the step grid, as registered)."""
    import json

    claims = _every_claim()
    entries = json.loads((STUDIES.parents[1] / "reports" / "claims.json").read_text())["claims"]
    judged = [e for e in entries if e["parts"]]
    assert judged  # how many moves as the report is regenerated; each is held to its declared rules below
    for e in judged:
        declared = tuple(rule.text() for _, rule in claims[e["id"]].rules)
        assert all(p["rule"] in declared or p["rule"].startswith(declared[-1] + " (on the grid") for p in e["parts"]), \
            e["id"]


def test_each_judged_claims_verdict_is_its_declared_combination_of_its_parts():
    """The committed report's judged claims without a size part: the verdict is the declared combination
    (fedbench.claims.verdict.COMBINES) of the parts' verdicts, as the words say."""
    import json

    from fedbench.claims.verdict import COMBINES

    claims = _every_claim()
    entries = json.loads((STUDIES.parents[1] / "reports" / "claims.json").read_text())["claims"]
    judged = [e for e in entries if e["parts"] and e["magnitude"] is None]
    assert judged and {claims[e["id"]].combination for e in judged} == {"every"}
    for e in judged:
        assert COMBINES[claims[e["id"]].combination][0]([p["verdict"] for p in e["parts"]]) == e["verdict"], e["id"]


def test_every_study_is_its_declaration_and_three_hooks():
    """Every registered study states its runs, measurements and figure as the three hooks of fedbench.study.contract
    (issue 50, item 2: no study-specific run()), and judges nothing itself: no ``judge(``/``judged(`` in its module,
    the driver judges every declared claim; a variant's base is a registered study."""
    import re

    for name in registry.names():
        module = registry.module(name)
        assert follows_contract(module) and not hasattr(module, "run"), name
        assert not re.search(r"\bjudged?\(", Path(module.__file__).read_text()), f"{name} judges a claim itself"
    assert set(registry.VARIANTS) <= set(registry.names()) and set(registry.VARIANTS.values()) <= set(registry.names())


@pytest.mark.parametrize("name", [n for n in registry.names() if registry.declaration(n).fresh_data])
def test_a_study_that_draws_its_data_trains_each_confirmatory_seed_on_its_own_fresh_draw(name):
    """Issue 51, item 2: where a study declares fresh_data, a confirmatory block's data seeds reach its runs: each
    training seed of the block trains on the draw of its own data seed (fedbench.study.contract.StudyRun.data_seed),
    the two seeds on different data, neither on the exploratory draw; without data seeds every seed trains on the
    declared draw. Only the runs' data is built (simulations(), nothing trained)."""
    from fedbench.study.contract import seeded

    module = registry.module(name)
    budget = next(iter(module.DECLARATION.budgets))

    def data_by_seed(data_seeds):
        run = seeded(module.DECLARATION, budget, (1000, 1001), data_seeds=data_seeds)
        hashes = {}
        for sim in module.simulations(run).values():
            hashes.setdefault(sim.config.seed, set()).add(sim.dataset().content_hash)
        return hashes

    declared, fresh = data_by_seed(None), data_by_seed((1002, 1003))
    assert set(declared) == set(fresh) == {1000, 1001}
    assert declared[1000] & declared[1001]  # one fixed draw for every seed (a seed's context runs may pool it)
    assert fresh[1000].isdisjoint(fresh[1001])
    assert (fresh[1000] | fresh[1001]).isdisjoint(declared[1000] | declared[1001])
