"""A database as migration 0007 leaves one ingested before it (every sentence on a 'moses'
parser row, its tree built over its Moses tokens), and what the reanalyze tests compare.
The fixtures ``old_template``/``old_db`` (tests/conftest.py) build it once per session."""

from __future__ import annotations

import psycopg

from scoi.core.polynomial import tree_terms
from tests.helpers.database import scalar
from tests.helpers.ingest import PIPELINES


# ------------------------------------------------------------------ the old scheme
def moses_tree_analyses(lang: str, texts: list[str]):
    """Analyses as scoi made them before 0007: the tree over the Moses tokens (a
    pre-tokenised spaCy ``Doc``), n Moses tokens -> n + 1 terms."""
    from spacy.tokens import Doc

    from scoi.analysis import Analysis, analyzer

    a = analyzer(lang, PIPELINES[lang])
    token_lists = [a.tokenize(t) for t in texts]
    docs = iter(a.nlp.pipe(Doc(a.nlp.vocab, words=toks) for toks in token_lists if toks))
    out = []
    for toks in token_lists:
        doc = next(docs) if toks else ()
        terms = dict(tree_terms([t.head.i for t in doc], [t.dep_ or "dep" for t in doc]))
        out.append(Analysis(tokens=toks, terms=terms, tree_tokens=len(toks)))
    return out


def to_old_scheme(url: str) -> None:
    """Rewrite a freshly ingested database to an upgraded pre-0007 one: the same
    pipelines and versions on 'moses' parser rows, trees over the Moses tokens, and no
    'spacy' parser row, term or label left."""
    from ingest.reanalyze import write_batch
    from ingest.terms import LabelRegistry, TermResolver
    from scoi.parsers import parser_labels

    with psycopg.connect(url) as conn:
        for new_pid, lang, name, version in conn.execute("SELECT id, lang, name, version FROM parser").fetchall():
            with conn.transaction():
                old_pid = conn.execute("INSERT INTO parser (lang, name, version, tree_tokens) "
                                       "VALUES (%s, %s, %s, 'moses') RETURNING id", (lang, name, version)).fetchone()[0]
                labels = LabelRegistry(conn, old_pid, parser_labels(name))
                labels.flush(conn)
            rows = conn.execute("SELECT id, text FROM sentence WHERE parser_id = %s ORDER BY id", (new_pid,)).fetchall()
            moved = write_batch(conn, TermResolver(conn, {lang: old_pid}, {lang: labels}), lang,
                                [r[0] for r in rows], moses_tree_analyses(lang, [r[1] for r in rows]))
            assert moved == len(rows)
            with conn.transaction():
                conn.execute("DELETE FROM term WHERE parser_id = %s", (new_pid,))
                conn.execute("DELETE FROM parser WHERE id = %s", (new_pid,))  # its labels cascade


# ------------------------------------------------------------------ what the tests compare
UNTOUCHED = {  # everything that does not depend on the tree, as text, in a fixed order
    "sentence": "SELECT (id, lang, text, text_sha, tokens, n_tokens, eligible)::text FROM sentence ORDER BY id",
    "pair": "SELECT p::text FROM pair p ORDER BY id",
    "bm25_block": "SELECT b::text FROM bm25_block b ORDER BY token_id, block_no",
    "bm25_dir": "SELECT d::text FROM bm25_dir d ORDER BY token_id",
    "bm25_doc": "SELECT d::text FROM bm25_doc d ORDER BY sentence_id",
    "vocab": "SELECT v::text FROM vocab v ORDER BY id",
    "bm25_stats": "SELECT b::text FROM bm25_stats b ORDER BY lang",
}


def untouched(url: str) -> dict[str, list[str]]:
    with psycopg.connect(url) as conn:
        return {name: [r[0] for r in conn.execute(sql)] for name, sql in UNTOUCHED.items()}


def stored_terms(url: str) -> dict[tuple[str, str], dict[str, int]]:
    with psycopg.connect(url) as conn:
        return {(lang, text): dict(zip(keys, mults)) for lang, text, keys, mults in
                conn.execute("SELECT lang, text, term_keys, term_mults FROM sentence")}


def fresh_terms(url: str) -> dict[tuple[str, str], dict[str, int]]:
    """Every stored sentence analysed now, the authors' way."""
    from scoi.analysis import analyzer

    out = {}
    for lang in PIPELINES:
        with psycopg.connect(url) as conn:
            texts = [r[0] for r in conn.execute("SELECT text FROM sentence WHERE lang = %s ORDER BY id", (lang,))]
        for text, a in zip(texts, analyzer(lang, PIPELINES[lang]).analyze(texts)):
            out[(lang, text)] = a.terms
    return out


def schemes_in_use(url: str) -> list[tuple[str, str]]:
    with psycopg.connect(url) as conn:
        return sorted(conn.execute("""SELECT DISTINCT p.lang, p.tree_tokens FROM sentence s
                                      JOIN parser p ON p.id = s.parser_id""").fetchall())


def moved(url: str) -> int:
    return scalar(url, "SELECT count(*) FROM sentence s JOIN parser p ON p.id = s.parser_id "
                       "WHERE p.tree_tokens = 'spacy'")
