"""The development data (real fr-en text, not in the repository): the example database
and held-out queries the benchmarks use.

The one place that knows where it lives: ``$SCOI_DEV_DATA``, else the folder ``shared/data``
beside the repository's own folder (where the development machines keep it). Allow-listed
in tests/unit/test_no_outside_references.py for that reason.
"""

from __future__ import annotations

import gzip
import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("SCOI_DEV_DATA", ROOT.parent / "shared" / "data"))


def _lines(path: Path) -> list[str]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as fh:
        return [line.rstrip("\n") for line in fh]


def corpus_files() -> list[tuple[Path, Path]]:
    """(fr, en) aligned file pairs making up the ~42k-pair example database."""
    return [
        (DATA / "europarl-sample/europarl-v7.fr-en.fr", DATA / "europarl-sample/europarl-v7.fr-en.en"),
        (DATA / "multi30k/train.fr.gz", DATA / "multi30k/train.en.gz"),
        (DATA / "multi30k/val.fr.gz", DATA / "multi30k/val.en.gz"),
        (DATA / "tatoeba-fr-en/tatoeba.fr", DATA / "tatoeba-fr-en/tatoeba.en"),
    ]


def corpus_pairs() -> list[tuple[str, str]]:
    out = []
    for fr, en in corpus_files():
        out.extend(zip(_lines(fr), _lines(en)))
    return out


EUROPARL_HELD_OUT = 200  # last non-empty Europarl lines kept out of the selection benchmarks' database


def _europarl_held_out_lines() -> set[int]:
    """Line numbers (0-based) of the last EUROPARL_HELD_OUT non-empty French Europarl lines."""
    fr = _lines(corpus_files()[0][0])
    return set([i for i, line in enumerate(fr) if line.strip()][-EUROPARL_HELD_OUT:])


def long_queries(n: int = EUROPARL_HELD_OUT) -> list[str]:
    """Long queries (~30 tokens): the held-out Europarl French sentences, in file order.
    The selection benchmarks build their database with :func:`selection_corpus_files`,
    which leaves these lines out."""
    fr = _lines(corpus_files()[0][0])
    return [fr[i] for i in sorted(_europarl_held_out_lines())][:n]


def selection_corpus_files(workdir: Path) -> list[tuple[Path, Path]]:
    """:func:`corpus_files` with the held-out Europarl lines removed (written to
    ``workdir``): the selection benchmarks' database, so that :func:`long_queries` are not
    in it."""
    held = _europarl_held_out_lines()
    files = corpus_files()
    out = []
    for path in files[0]:
        kept = [line for i, line in enumerate(_lines(path)) if i not in held]
        dest = workdir / path.name
        dest.write_text("".join(line + "\n" for line in kept), encoding="utf-8")
        out.append(dest)
    return [(out[0], out[1]), *files[1:]]


def held_out_queries(n: int = 200, start: int = 0) -> list[str]:
    """French Multi30k test_2016_flickr sentences (1,000): not in the example database."""
    return [q for q in _lines(DATA / "multi30k/test_2016_flickr.fr.gz") if q.strip()][start:start + n]


def warm_up(select, n: int = 200) -> None:
    """Run ``select`` on n held-out queries that are *not* the timed ones (sentences
    200-399), so the timed run sees a server in its steady state (plans, caches) without
    having seen its own queries."""
    for q in held_out_queries(n, start=200):
        select(q)


def available() -> bool:
    return all(fr.exists() and en.exists() for fr, en in corpus_files())


#: What a benchmark that needs the dev data says when it is not there.
MISSING = f"the dev data is not in {DATA} (set SCOI_DEV_DATA to its folder)"
