"""Ingest in this process: bad rows of JSONL and Moses input skipped, the length filter,
and parser discovery matching spaCy's without importing it."""

from __future__ import annotations

from collections import Counter

import psycopg

from tests.helpers.database import scalar
from tests.helpers.ingest import (
    PIPELINES,
    assert_consistent,
    ingest_inprocess,
    long_french_sentence,
    spacy_tokens,
    stored_pairs,
    write_jsonl,
    write_moses,
    write_tsv,
)


def test_skip_bad_jsonl_and_moses(db_url, tmp_path, pairs):
    good = pairs[:5]
    path = write_jsonl(tmp_path / "c.jsonl", good)
    with open(path, "a", encoding="utf-8") as fh:
        fh.write('{"src": "Bonjour"\n')
        fh.write('{"source": "Bonjour", "target": "Hello"}\n')
    s = ingest_inprocess(db_url, [path], skip_bad=True, corpus="j")
    assert (s.inserted, [(r.line, r.reason.split(" ")[0]) for r in s.rejected_rows]) == (5, [(6, "invalid"),
                                                                                          (7, "expected")])
    fr, en = write_moses(tmp_path, "m", pairs[5:9])
    en.write_bytes(en.read_bytes().replace(b"\n", b"\n\xff\n", 1))  # line 2 of the .en is not UTF-8
    fr.write_text(fr.read_text(encoding="utf-8").replace("\n", "\nUne ligne de plus.\n", 1), encoding="utf-8")
    s = ingest_inprocess(db_url, [fr, en], skip_bad=True, corpus="m")
    assert (s.inserted, [(r.file, r.line) for r in s.rejected_rows]) == (4, [(str(en), 2)])
    assert stored_pairs(db_url) == Counter(pairs[:9])


# ------------------------------------------------------------------ the length filter
def test_long_source_is_stored_but_not_indexed(db_url, tmp_path, pairs):
    long_fr = long_french_sentence()
    exactly_120 = "Les numéros gagnants sont " + " ".join(str(i) for i in range(1, 116)) + "."
    rows = [pairs[0], (long_fr, "Yesterday we went shopping for all the houses."),
            (exactly_120, "The winning numbers are listed above."), pairs[1]]
    s = ingest_inprocess(db_url, [write_tsv(tmp_path / "long.tsv", rows)])
    assert s.inserted == 4
    with psycopg.connect(db_url) as conn:
        got = {text: (n, eligible, postings, terms) for text, n, eligible, postings, terms in conn.execute("""
            SELECT s.text, s.n_tokens, s.eligible,
                   (SELECT coalesce(sum(cardinality(d.token_ids)), 0) FROM bm25_doc d WHERE d.sentence_id = s.id),
                   (SELECT sum(mult) FROM sentence_term st WHERE st.sentence_id = s.id)
            FROM sentence s WHERE s.lang = 'fr'""").fetchall()}
        n_docs = conn.execute("SELECT n_docs FROM bm25_stats WHERE lang = 'fr'").fetchone()[0]
        eligible_pairs = conn.execute("SELECT both_sides_eligible, pairs FROM corpus_stats").fetchone()
    n, eligible, postings, terms = got[long_fr]
    assert n > 120 and eligible is False and postings == 0
    assert terms == len(spacy_tokens(PIPELINES["fr"], long_fr)) + 1  # still parsed: its polynomial is stored
    assert got[exactly_120][:2] == (120, True) and got[exactly_120][2] > 0
    assert n_docs == 3
    assert eligible_pairs == (3, 4)
    # The long sentence's words are in no posting list (only it uses "numéro").
    assert scalar(db_url, "SELECT count(*) FROM vocab WHERE lang = 'fr' AND token = 'numéro'") == 0
    assert_consistent(db_url)


def test_pipeline_discovery_matches_spacy_without_importing_it(tmp_path, monkeypatch):
    """Parser discovery reads meta.json itself (no spaCy/torch import in the main process)
    and finds what spaCy's own registry finds, with the same metadata."""
    import subprocess
    import sys

    import spacy.util

    from scoi.parsers import installed_pipelines, needs_torch, pipeline_meta

    installed = installed_pipelines()
    assert installed and set(installed) <= set(spacy.util.get_installed_models())
    for name, (lang, version) in installed.items():
        meta = spacy.util.load_meta(spacy.util.get_package_path(name) / "meta.json")
        keys = ("lang", "name", "version", "pipeline", "components", "labels", "requirements")
        assert {k: pipeline_meta(name).get(k) for k in keys} == {k: meta.get(k) for k in keys}
        assert (lang, version) == (meta["lang"], meta["version"])
        assert not needs_torch(name)  # the "sm" pipelines: thinc-only
    code = ("import sys; from scoi.parsers import choose_parser, parser_labels; "
            "c = choose_parser('fr'); parser_labels(c.name); print('spacy' in sys.modules, 'torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]
    # A transformer pipeline (its meta.json is all that is read) keeps torch in its workers.
    pkg = tmp_path / "xx_fake_trf"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "meta.json").write_text('{"lang": "xx", "version": "0.0.1", "pipeline": ["transformer", "parser"],'
                                   ' "requirements": ["spacy-curated-transformers>=0.2"]}')
    monkeypatch.syspath_prepend(str(tmp_path))
    assert pipeline_meta("xx_fake_trf")["lang"] == "xx" and needs_torch("xx_fake_trf")
    assert pipeline_meta("no_such_pipeline_pkg") is None
