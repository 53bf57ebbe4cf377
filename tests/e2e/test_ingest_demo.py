"""The demo corpus ingested once through the CLI (a real process, default settings), then checked row
by row: terms, tokens, views, statistics and the BM25 index; ``scoi corpora`` and ``scoi db status``
(in this process) on it."""

from __future__ import annotations

from collections import Counter

import psycopg
import pytest

from tests.helpers.cli import cli, cli_json, last_json
from tests.helpers.database import scratch_database
from tests.helpers.ingest import (
    DEMO,
    PIPELINES,
    assert_consistent,
    ingest_json,
    spacy_tokens,
    stored_pairs,
    tree_size_problems,
)


@pytest.fixture(scope="module")
def demo(server_url, template_url):
    """(db_url, summary) of the demo TSV ingested with `scoi ingest --batch-size 64`."""
    with scratch_database(server_url) as url:
        summary = ingest_json([str(DEMO), "--src", "fr", "--tgt", "en", "--batch-size", "64"], url)
        yield url, summary


def test_summary(demo, pairs):
    _, s = demo
    assert (s["corpus"], s["read"], s["inserted"], s["duplicates"], s["rejected"]) == ("demo.fr-en", len(pairs),
                                                                                       len(pairs), 0, 0)
    assert s["rejected_rows"] == []
    assert set(s["parsers"]) == {"fr", "en"}


def test_every_sentence_has_spacy_tokens_plus_one_terms(demo, pairs):
    """The tree is built over the pipeline's own tokens of the stripped text (as the
    authors parse), so its terms number spaCy tokens + 1, whatever the Moses tokens."""
    url, _ = demo
    with psycopg.connect(url) as conn:
        rows = conn.execute("""
            SELECT s.lang, s.n_tokens, coalesce(sum(st.mult), 0)
            FROM sentence s LEFT JOIN sentence_term st ON st.sentence_id = s.id
            GROUP BY s.id""").fetchall()
    assert len(rows) == 2 * len(pairs)  # every side of the demo is distinct
    assert Counter(lang for lang, _, _ in rows) == {"fr": len(pairs), "en": len(pairs)}
    assert not tree_size_problems(url)
    assert min(total for _, _, total in rows) >= 3
    # The two tokenisations differ on a good share of the demo (apostrophes, hyphens, «»).
    assert sum(total != n + 1 for _, n, total in rows) >= 20


def test_tokens_are_sacremoses_output(demo, pairs):
    from sacremoses import MosesPunctNormalizer, MosesTokenizer

    url, _ = demo
    moses = {lang: (MosesPunctNormalizer(lang=lang), MosesTokenizer(lang=lang)) for lang in ("fr", "en")}
    with psycopg.connect(url) as conn:
        stored = {(lang, text): tokens for lang, text, tokens in
                  conn.execute("SELECT lang, text, tokens FROM sentence").fetchall()}
    for fr, en in pairs:
        for lang, text in (("fr", fr), ("en", en)):
            norm, tok = moses[lang]
            assert stored[(lang, text)] == tok.tokenize(norm.normalize(text), escape=False), text
    # The demo has apostrophes, quotes and numbers; they must survive unescaped.
    all_tokens = {t for toks in stored.values() for t in toks}
    assert {"&apos;", "&quot;", "&amp;"}.isdisjoint(all_tokens)
    assert "'" in "".join(all_tokens) and '"' in all_tokens


def test_example_view_has_both_directions(demo, pairs):
    url, _ = demo
    assert stored_pairs(url) == Counter(pairs)
    with psycopg.connect(url) as conn:
        en_fr = conn.execute("""
            SELECT s.text, t.text FROM example e JOIN sentence s ON s.id = e.src_id JOIN sentence t ON t.id = e.tgt_id
            WHERE e.src_lang = 'en' AND e.tgt_lang = 'fr'""").fetchall()
        directions = conn.execute("SELECT src_lang, tgt_lang, count(*) FROM example GROUP BY 1, 2").fetchall()
        pair_text = conn.execute("SELECT src, tgt, line FROM pair_text ORDER BY line").fetchall()
    assert Counter(map(tuple, en_fr)) == Counter((en, fr) for fr, en in pairs)
    assert sorted(directions) == [("en", "fr", len(pairs)), ("fr", "en", len(pairs))]
    # pair_text shows the ingest direction and the file line (line 1 is the header).
    assert [(s, t) for s, t, _ in pair_text] == pairs
    assert [line for _, _, line in pair_text] == list(range(2, len(pairs) + 2))


def test_sentence_polynomial_view(demo, pairs):
    url, _ = demo
    with psycopg.connect(url) as conn:
        rows = conn.execute("SELECT lang, text, n_tokens, n_terms, polynomial FROM sentence_polynomial").fetchall()
    assert len(rows) == 2 * len(pairs)
    assert all(n_terms == len(spacy_tokens(PIPELINES[lang], text)) + 1 for lang, text, _, n_terms, _ in rows)
    by_text = {(lang, text): poly for lang, text, _, _, poly in rows}
    with psycopg.connect(url) as conn:
        terms = conn.execute("SELECT lang, text, term, mult FROM sentence_terms").fetchall()
    expected: dict = {}
    for lang, text, key, mult in terms:
        expected.setdefault((lang, text), Counter())[key] = mult
    for k, poly in by_text.items():  # the readable polynomial says the same as sentence_terms
        parsed = Counter()
        for part in poly.split(" + "):
            mult, _, key = part.rpartition("*")
            parsed[key] += int(mult or 1)
        assert parsed == expected[k], (k, poly)
        assert poly.startswith("ROOT + ")
    # Several sentences parse with two roots (e.g. "De rien." in French): 2*ROOT^2.
    assert sum("2*ROOT^2 " in poly for poly in by_text.values()) >= 3
    # docs/method.md §2 worked example, through the real parser and the database.
    assert by_text[("en", "Cats sleep.")] == "ROOT + ROOT^2 + ROOT^2·nsubj + ROOT^2·punct"


def test_corpus_stats(demo, pairs):
    from sacremoses import MosesPunctNormalizer, MosesTokenizer

    url, _ = demo
    with psycopg.connect(url) as conn:
        row = conn.execute("""SELECT name, src_lang, tgt_lang, pairs, both_sides_eligible, avg_tokens_a,
                                     avg_tokens_b, runs, last_ingest FROM corpus_stats""").fetchall()
        run = conn.execute("SELECT status, pairs_read, inserted, duplicates, rejected, format "
                           "FROM ingest_run").fetchall()
    assert len(row) == 1
    name, src, tgt, n, eligible, avg_a, avg_b, runs, last = row[0]
    assert (name, src, tgt, n, eligible, runs) == ("demo.fr-en", "fr", "en", len(pairs), len(pairs), 1)
    assert last is not None

    def avg(lang, texts):
        norm, tok = MosesPunctNormalizer(lang=lang), MosesTokenizer(lang=lang)
        return round(sum(len(tok.tokenize(norm.normalize(t), escape=False)) for t in texts) / len(texts), 1)

    # a_* is the language that sorts first: en.
    assert float(avg_a) == pytest.approx(avg("en", [en for _, en in pairs]), abs=0.051)
    assert float(avg_b) == pytest.approx(avg("fr", [fr for fr, _ in pairs]), abs=0.051)
    assert run == [("done", len(pairs), len(pairs), 0, 0, "tsv")]


def test_bm25_index_matches_postings(demo, pairs):
    url, _ = demo
    assert_consistent(url)  # df == postings per token, n_docs, total_len, no orphans, ...
    with psycopg.connect(url) as conn:
        stats = dict((lang, (n, total)) for lang, n, total in
                     conn.execute("SELECT lang, n_docs, total_len FROM bm25_stats").fetchall())
        lens = dict(conn.execute("SELECT lang, sum(n_tokens) FROM sentence GROUP BY lang").fetchall())
        postings = conn.execute("""
            SELECT s.lang, s.text, v.token, u.tf FROM bm25_doc d
            CROSS JOIN LATERAL unnest(d.token_ids, d.tfs) AS u(token_id, tf)
            JOIN sentence s ON s.id = d.sentence_id JOIN vocab v ON v.id = u.token_id""").fetchall()
        tokens = conn.execute("SELECT lang, text, tokens FROM sentence").fetchall()
        df = {(lang, tok): d for lang, tok, d in conn.execute("SELECT lang, token, df FROM vocab").fetchall()}
    assert stats == {"fr": (len(pairs), lens["fr"]), "en": (len(pairs), lens["en"])}
    # Postings are the lowercased token counts of each sentence, and df counts sentences.
    got: dict = {}
    for lang, text, tok, tf in postings:
        got.setdefault((lang, text), Counter())[tok] = tf
    expected_df: Counter = Counter()
    for lang, text, toks in tokens:
        counts = Counter(t.lower() for t in toks)
        assert got[(lang, text)] == counts, text
        expected_df.update((lang, t) for t in counts)
    assert df == dict(expected_df)
    assert df[("fr", "le")] > 10 and df[("en", "the")] > 10


def test_corpora_json_lists_the_corpus(demo, pairs):
    url, _ = demo
    result = cli(["corpora", "--json"], url)
    assert result.exit_code == 0, result.stderr
    rows = last_json(result)
    assert [(r["name"], r["src_lang"], r["tgt_lang"], r["pairs"], r["runs"]) for r in rows] == [
        ("demo.fr-en", "fr", "en", len(pairs), 1)]
    table = cli(["corpora"], url)
    assert table.exit_code == 0 and "demo.fr-en" in table.stdout and str(len(pairs)) in table.stdout


def test_db_status_prints_a_psql_url(demo, pairs):
    url, _ = demo
    result = cli(["db", "status"], url)
    assert result.exit_code == 0, result.stderr
    lines = [ln.strip() for ln in result.stdout.splitlines()]
    psql = [ln for ln in lines if ln.startswith("psql '")]
    assert len(psql) == 1, result.stdout
    printed = psql[0].removeprefix("psql '").removesuffix("'")
    assert printed.startswith("postgresql://")
    with psycopg.connect(printed) as conn:  # the printed URL really opens this database
        assert conn.execute("SELECT count(*) FROM pair").fetchone()[0] == len(pairs)
    status = cli_json(["db", "status"], url)
    assert status["revision"] == status["head"] and status["url"].startswith("postgresql://")
