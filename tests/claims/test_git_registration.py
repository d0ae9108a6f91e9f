"""Pre-registration shown by git (issue 51, item 1): for every confirmation of the committed registry, the history
holds its freeze in one commit and the first result on its seeds in a later commit descending from it, or the
confirmation is marked "not shown" and not counted (fedbench.claims.registry.status gives it no confirmatory verdict,
so the tally counts none). The machinery itself (fedbench.claims.registry.preregistration, audit, history_seeds) is
also checked on a repository made here, commit by commit."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from fedbench.claims import registry as reg

ROOT = Path(__file__).resolve().parents[2]


def _git_state(cwd: Path) -> str | None:
    """Why the history cannot be read here (None where it can)."""
    try:
        inside = subprocess.run(["git", "rev-parse", "--is-inside-work-tree"], cwd=cwd, capture_output=True,
                                text=True, check=False)
    except OSError:
        return "git is not installed"
    if inside.returncode != 0 or inside.stdout.strip() != "true":
        return "not a git checkout: the history that shows a pre-registration is not here"
    if reg.shallow(cwd):
        return "a shallow clone: its history is cut, so no freeze can be shown before its result (git fetch --unshallow)"
    return None


@pytest.fixture(scope="module")
def history():
    why = _git_state(ROOT)
    if why:
        pytest.skip(why)
    return reg.history(ROOT)


def test_every_counted_confirmation_is_frozen_in_an_earlier_commit_than_its_result(history):
    committed = history["registry"][-1][1]
    confirmed = {cid: r["confirmatory"] for cid, r in committed.items() if r.get("confirmatory")}
    assert confirmed, "the committed registry holds no confirmation to check"
    counted = 0
    for cid, record in confirmed.items():
        shown = reg.preregistration(cid, history, ROOT)
        # the mark the tally reads is the history's verdict, never a registry's word for itself
        assert reg.counted_confirmation(record) == shown["shown"], (cid, record.get("registration"), shown["why"])
        if shown["shown"]:
            counted += 1
            assert shown["freeze"] and shown["result"] and shown["freeze"] != shown["result"], cid
            assert reg.is_ancestor(shown["freeze"], shown["result"], ROOT), cid
            assert record["frozen_in"] == shown["freeze"], cid
        else:
            assert record["registration"].startswith("not shown: "), cid


def test_a_confirmation_not_shown_gives_the_tally_no_confirmatory_verdict(history):
    """A confirmation git does not show pre-registered is never what the tally reads: one still recorded as the
    claim's is marked not counted, and one whose claim was frozen again on a fresh block (issue 51, item 1) is kept
    under earlier_blocks, disclosed with its verdict and why, and the claim's counted confirmation (if any) is the new
    block's, shown by git."""
    committed = history["registry"][-1][1]
    unshown = [cid for cid, r in committed.items() if r.get("confirmatory")
               and not reg.counted_confirmation(r["confirmatory"])]
    earlier = {cid: r["earlier_blocks"] for cid, r in committed.items() if r.get("earlier_blocks")}
    assert unshown or earlier  # issue 51 found 16: frozen and first run in one commit, or a block dropped
    held = 0
    for cid in unshown:
        record = committed[cid]
        entry = {"id": cid, "rule": record["spec"]["rule"],
                 "parts": [{"part": a, "rule": b} for a, b in record["spec"]["parts"]]}
        holds = record["frozen"]["hash"] == reg.frozen_hash({**entry, **_spec_entry(record)})
        st = reg.status({**entry, **_spec_entry(record)}, committed)
        assert st["confirmatory"] is None, cid  # what tally.counted_verdict reads: nothing
        if holds:
            held += 1
            assert st["unshown_confirmatory"] == record["confirmatory"] and "not counted" in st["confirmation"], cid
    for cid, blocks in earlier.items():
        record = committed[cid]
        for b in blocks:
            # frozen again because git did not show it pre-registered (not counted), or to draw fresh data as well
            # (claims confirm --fresh-data: a confirmation that was counted, superseded by the block on fresh data)
            assert b["why"].startswith(("its pre-registration is", "frozen again with fresh data seeds")), cid
            if b["why"].startswith("its pre-registration is"):
                assert not reg.counted_confirmation(b["confirmatory"]), cid
            else:
                assert "data_seeds" not in b["frozen"] and "data_seeds" in record["frozen"], cid
            assert set(b["frozen"]["seeds"]).isdisjoint(record["frozen"]["seeds"]), cid  # frozen again: fresh seeds
        entry = {"id": cid, "rule": record["spec"]["rule"],
                 "parts": [{"part": a, "rule": b} for a, b in record["spec"]["parts"]]}
        st = reg.status({**entry, **_spec_entry(record)}, committed)
        assert st["confirmatory"] in (None, record.get("confirmatory")), cid  # never an earlier block's
        assert st["earlier_blocks"] == blocks, cid
        held += record["frozen"]["hash"] == reg.frozen_hash({**entry, **_spec_entry(record)})
    assert held  # the entries rebuilt from their registered specs are the frozen rules: the check above ran


def _spec_entry(record: dict) -> dict:
    """An entry whose rule spec is the one ``record`` registered (its sensitivity cells rebuilt from the readings)."""
    spec = record["spec"]
    cells = [{"reading": spec["primary"], "budget": 1.0, "primary": True, "verdict": ""}] if spec["primary"] else []
    cells += [{"reading": r, "budget": 1.0, "primary": False, "verdict": ""} for r in spec["readings"] if r != spec["primary"]]
    cells += [{"reading": spec["primary"], "budget": b, "primary": False, "verdict": ""} for b in spec["budgets"] if b != 1.0]
    runs = spec["runs"]
    return {"sensitivity": cells, "scale": runs["scale"], "seeds": runs["seeds"], "rounds_run": runs["rounds_run"],
            "rounds_paper": runs["rounds_paper"], "published": {"value": spec["published"]}}


# the machinery on a repository made here


def _repo(tmp_path: Path) -> Path:
    why = _git_state(ROOT)
    if why == "git is not installed":
        pytest.skip(why)
    path = tmp_path / "repo"
    (path / "fedbench" / "claims").mkdir(parents=True)
    for args in (["init", "-q"], ["config", "user.email", "t@t"], ["config", "user.name", "t"]):
        subprocess.run(["git", *args], cwd=path, check=True)
    return path


def _commit(repo: Path, registry: dict, message: str, claims: list | None = None) -> str:
    (repo / "fedbench" / "claims" / "registry.json").write_text(json.dumps(registry))
    if claims is not None:
        (repo / "reports").mkdir(exist_ok=True)
        (repo / "reports" / "claims.json").write_text(json.dumps({"claims": claims}))
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
    subprocess.run(["git", "commit", "-q", "-m", message], cwd=repo, check=True)
    return subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True,
                          check=True).stdout.strip()


FROZEN = {"hash": "h", "commit": "x", "date": "d", "seeds": [1000, 1001]}
RESULT = {"verdict": "reproduced", "commit": "y", "date": "d", "hash": "h", "seeds": [1000, 1001]}


def test_freeze_then_result_in_a_later_commit_is_shown(tmp_path):
    repo = _repo(tmp_path)
    _commit(repo, {"a/1": {"hash": "r", "commit": "x", "before_result": True}}, "registered")
    freeze = _commit(repo, {"a/1": {"hash": "r", "commit": "x", "frozen": FROZEN}}, "frozen")
    result = _commit(repo, {"a/1": {"hash": "r", "commit": "x", "frozen": FROZEN, "confirmatory": RESULT}}, "result")
    shown = reg.preregistration("a/1", reg.history(repo), repo)
    assert shown == {"shown": True, "freeze": freeze, "result": result,
                     "why": f"frozen in {freeze[:12]}, first result in the later {result[:12]}"}
    assert reg.history_seeds(reg.history(repo)) == {1000, 1001}  # frozen or run once: never fresh again
    body = json.loads((repo / "fedbench" / "claims" / "registry.json").read_text())
    audited, lines = reg.audit(body, reg.history(repo), repo)
    assert reg.counted_confirmation(audited["a/1"]["confirmatory"]) and audited["a/1"]["confirmatory"]["frozen_in"] == freeze
    assert lines == [f"a/1: confirmation shown: frozen in {freeze[:12]}, first result in the later {result[:12]}"]


def test_freeze_and_result_in_one_commit_is_not_shown(tmp_path):
    repo = _repo(tmp_path)
    _commit(repo, {"a/1": {"hash": "r", "commit": "x"}}, "registered")
    both = _commit(repo, {"a/1": {"hash": "r", "commit": "x", "frozen": FROZEN, "confirmatory": RESULT}}, "frozen+run")
    shown = reg.preregistration("a/1", reg.history(repo), repo)
    assert not shown["shown"] and shown["why"] == f"frozen and first result in the same commit {both[:12]}"
    audited, _ = reg.audit(json.loads((repo / "fedbench/claims/registry.json").read_text()), reg.history(repo), repo)
    assert audited["a/1"]["confirmatory"]["registration"].startswith("not shown: frozen and first result")
    assert reg.status({"id": "a/1"}, audited)["confirmatory"] is None


def test_a_result_committed_before_the_freeze_or_a_block_dropped_and_frozen_again_is_not_shown(tmp_path):
    repo = _repo(tmp_path)
    entry = {"id": "a/1", "verdict": "reproduced", "seeds": {"training": [1000, 1001], "data": [0]}}
    early = _commit(repo, {"a/1": {"hash": "r", "commit": "x"}}, "a result on the block first", claims=[entry])
    _commit(repo, {"a/1": {"hash": "r", "commit": "x", "frozen": FROZEN}}, "frozen after")
    _commit(repo, {"a/1": {"hash": "r", "commit": "x", "frozen": FROZEN, "confirmatory": RESULT}}, "result")
    shown = reg.preregistration("a/1", reg.history(repo), repo)
    assert not shown["shown"] and shown["result"] == early  # the first result predates the freeze
    repo2 = _repo(tmp_path / "two")
    first = _commit(repo2, {"a/1": {"hash": "r", "commit": "x", "frozen": FROZEN}}, "frozen")
    dropped = _commit(repo2, {"a/1": {"hash": "r", "commit": "x"}}, "reverted")
    _commit(repo2, {"a/1": {"hash": "r", "commit": "x", "frozen": FROZEN}}, "frozen again")
    _commit(repo2, {"a/1": {"hash": "r", "commit": "x", "frozen": FROZEN, "confirmatory": RESULT}}, "result")
    shown = reg.preregistration("a/1", reg.history(repo2), repo2)
    assert not shown["shown"] and shown["freeze"] == first
    assert shown["why"].startswith(f"the block was dropped from the registry in {dropped[:12]} between its freeze")


def test_before_result_falls_where_the_history_holds_an_earlier_result(tmp_path):
    repo = _repo(tmp_path)
    entry = {"id": "a/1", "verdict": "reproduced", "seeds": {"training": [0, 1], "data": [0]}}
    _commit(repo, {}, "a result first", claims=[entry])
    at = _commit(repo, {}, "nothing yet registered", claims=[entry | {"verdict": "not-run"}])
    registered = {"a/1": {"hash": "r", "commit": at, "before_result": True}}  # "before": only the report at hand
    audited, lines = reg.audit(registered, reg.history(repo), repo)
    assert audited["a/1"]["before_result"] is False and lines[0].startswith("a/1: before_result True -> False")
    repo2 = _repo(tmp_path / "two")
    at = _commit(repo2, {}, "registered before any result", claims=[entry | {"verdict": "not-run"}])
    _commit(repo2, {}, "its first result", claims=[entry])
    audited, _ = reg.audit({"a/1": {"hash": "r", "commit": at, "before_result": True}}, reg.history(repo2), repo2)
    assert audited["a/1"]["before_result"] is True
