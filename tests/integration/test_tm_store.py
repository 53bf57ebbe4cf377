"""A translation memory that can be corrected: ``--on-conflict``, ``scoi corpora rm``,
``scoi pairs rm`` (by id, file, metadata), metadata kept in ``pair.meta``, and TMX
language variants, through the CLI in this process against a real database."""

from __future__ import annotations

import json
from collections import Counter

import psycopg
import pytest

from tests.helpers.cli import cli, cli_json
from tests.helpers.database import scalar
from tests.helpers.ingest import assert_consistent, stored_pairs, write_tsv

TMX = """<?xml version="1.0" encoding="UTF-8"?>
<tmx version="1.4">
<header creationtool="t" srclang="fr-FR" datatype="plaintext" segtype="sentence" adminlang="en" o-tmf="t"
        creationdate="20200101T000000Z">
  <prop type="client">acme</prop>
</header>
<body>
{units}
</body></tmx>
"""
UNIT = """<tu tuid="{tuid}" creationid="ANNA" usagecount="{uses}" changedate="20240201T000000Z">
  <prop type="domain">legal</prop><prop type="domain">tax</prop><note>{note}</note>
  <tuv xml:lang="fr-FR"><prop type="x-status">ok</prop><seg>{fr}</seg></tuv>
  <tuv xml:lang="en-US"><seg>{en}</seg></tuv>
</tu>"""


def write_memory(path, units: list[tuple[str, str]], note: str = "checked", uses: int = 3):
    body = "\n".join(UNIT.format(tuid=i, fr=fr, en=en, note=note, uses=uses) for i, (fr, en) in enumerate(units))
    path.write_text(TMX.format(units=body), encoding="utf-8")
    return path


def ingest(db_url: str, path, *extra: str) -> dict:
    return cli_json(["ingest", str(path), "--src", "fr", "--tgt", "en", "--workers", "0", *extra], db_url)


def metas(db_url: str) -> dict[str, dict]:
    with psycopg.connect(db_url) as conn:
        return {en: meta for en, meta in conn.execute(
            "SELECT t.text, p.meta FROM pair p JOIN sentence t ON t.id = p.a_id AND t.lang = 'en'")}


def test_reimported_tmx_replaces_the_corrected_translation(db_url, tmp_path):
    """A TMX re-exported after a correction replaces the old translation by default: the
    old pair and its now unused sentence are gone, its metadata are the new file's, and
    --on-conflict add and keep do what they say."""
    units = [("Il mange vite.", "He eat fast."), ("Bonjour.", "Hello.")]
    first = ingest(db_url, write_memory(tmp_path / "tm.tmx", units), "--corpus", "tm")
    assert first["inserted"] == 2 and first["on_conflict"] == "replace"
    fixed = [("Il mange vite.", "He eats quickly."), ("Bonjour.", "Hello.")]
    out = ingest(db_url, write_memory(tmp_path / "tm2.tmx", fixed, note="corrected", uses=4), "--corpus", "tm")
    assert (out["inserted"], out["replaced"], out["removed_sentences"], out["duplicates"]) == (1, 1, 1, 1)
    assert stored_pairs(db_url) == Counter(fixed)
    assert metas(db_url)["Hello."]["note"] == "corrected" and metas(db_url)["Hello."]["usagecount"] == 4
    assert scalar(db_url, "SELECT count(*) FROM sentence WHERE text = 'He eat fast.'") == 0
    # keep: the stored translation stays, the new one is counted as not added
    out = ingest(db_url, write_memory(tmp_path / "tm3.tmx", [("Bonjour.", "Hi.")]), "--corpus", "tm",
                 "--on-conflict", "keep")
    assert (out["inserted"], out["kept_out"]) == (0, 1)
    assert scalar(db_url, "SELECT count(*) FROM sentence WHERE text = 'Hi.'") == 0
    # add: both translations are candidates
    out = ingest(db_url, write_memory(tmp_path / "tm4.tmx", [("Bonjour.", "Hi.")]), "--corpus", "tm",
                 "--on-conflict", "add")
    assert out["inserted"] == 1
    assert stored_pairs(db_url) == Counter(fixed + [("Bonjour.", "Hi.")])
    assert_consistent(db_url)


def test_tmx_metadata_are_kept_on_the_pair(db_url, tmp_path):
    ingest(db_url, write_memory(tmp_path / "tm.tmx", [("Bonjour.", "Hello.")]))
    assert metas(db_url)["Hello."] == {
        "client": "acme", "domain": ["legal", "tax"], "note": "checked", "tuid": "0", "creationid": "ANNA",
        "usagecount": 3, "changedate": "20240201T000000Z", "fr-fr:x-status": "ok"}


def test_tsv_extra_columns_and_jsonl_extra_keys_are_metadata(db_url, tmp_path):
    tsv = tmp_path / "c.tsv"
    tsv.write_text("fr\ten\tclient\tdomain\nBonjour.\tHello.\tacme\tlegal\nMerci.\tThanks.\tbeta\t\n",
                   encoding="utf-8")
    ingest(db_url, tsv)
    jsonl = tmp_path / "c.jsonl"
    jsonl.write_text(json.dumps({"src": "Oui.", "tgt": "Yes.", "client": "acme", "score": 0.9}) + "\n",
                     encoding="utf-8")
    ingest(db_url, jsonl)
    got = metas(db_url)
    assert (got["Hello."], got["Thanks."], got["Yes."]) == (
        {"client": "acme", "domain": "legal"}, {"client": "beta"}, {"client": "acme", "score": 0.9})


def test_tsv_row_with_the_wrong_number_of_columns_names_the_header(db_url, tmp_path):
    tsv = tmp_path / "c.tsv"
    tsv.write_text("fr\ten\tclient\nBonjour.\tHello.\n", encoding="utf-8")
    result = cli(["ingest", str(tsv), "--src", "fr", "--tgt", "en", "--workers", "0"], db_url)
    assert result.exit_code == 1
    assert f"{tsv}:2: expected 3 tab-separated columns (source, target, client), found 2 columns" in result.stderr
    assert scalar(db_url, "SELECT count(*) FROM corpus") == 0


def test_corpora_rm_deletes_the_corpus_and_only_its_sentences(db_url, tmp_path, few):
    """Sentences another corpus still uses stay (b translates two of a's French sentences
    its own way); a pair belongs to the corpus that stored it first."""
    b_rows = [(few[4][0], "Another translation."), (few[5][0], "Yet another one.")] + few[6:9]
    ingest(db_url, write_tsv(tmp_path / "a.tsv", few[:6]), "--corpus", "a")
    ingest(db_url, write_tsv(tmp_path / "b.tsv", b_rows), "--corpus", "b")
    refused = cli(["corpora", "rm", "a"], db_url)  # not a terminal: must say --yes
    assert refused.exit_code == 2 and "--yes" in refused.stderr
    dry = cli_json(["corpora", "rm", "a", "--dry-run"], db_url)
    assert (dry["pairs"], dry["dry_run"]) == (6, True) and sum(stored_pairs(db_url).values()) == 11
    out = cli_json(["corpora", "rm", "a", "--yes"], db_url)
    assert (out["pairs"], out["sentences"]) == (6, 10)
    assert stored_pairs(db_url) == Counter(b_rows)
    assert [c["name"] for c in cli_json(["corpora"], db_url)] == ["b"]
    again = cli(["corpora", "rm", "a", "--yes"], db_url)
    assert again.exit_code == 1 and "no corpus 'a'" in again.stderr
    assert_consistent(db_url)


def test_pairs_rm_by_id_file_and_metadata(db_url, tmp_path, few):
    tsv = tmp_path / "m.tsv"
    tsv.write_text("fr\ten\tclient\n" + "".join(f"{fr}\t{en}\t{'acme' if i % 2 else 'beta'}\n"
                                               for i, (fr, en) in enumerate(few[:6])), encoding="utf-8")
    ingest(db_url, tsv, "--corpus", "m")
    ingest(db_url, write_tsv(tmp_path / "other.tsv", few[6:9]), "--corpus", "o")
    out = cli_json(["pairs", "rm", "--where", "client=acme", "--yes"], db_url)
    assert out["pairs"] == 3
    assert stored_pairs(db_url) == Counter([few[0], few[2], few[4]] + few[6:9])
    out = cli_json(["pairs", "rm", "--file", str(tmp_path / "other.tsv"), "--yes"], db_url)
    assert out["pairs"] == 3
    pid = scalar(db_url, "SELECT min(id) FROM pair")
    out = cli_json(["pairs", "rm", "--id", str(pid), "--id", "999999", "--yes"], db_url)
    assert (out["pairs"], out["missing_ids"]) == (1, [999999])
    assert sum(stored_pairs(db_url).values()) == 2
    bad = cli(["pairs", "rm", "--where", "client", "--yes"], db_url)
    assert bad.exit_code == 2 and "expected KEY=VALUE" in bad.stderr
    both = cli(["pairs", "rm", "--id", "1", "--file", "x.tsv", "--yes"], db_url)
    assert both.exit_code == 2 and "one way" in both.stderr
    assert_consistent(db_url)


def test_deleting_a_picked_pair_keeps_the_recorded_selection(db_url, tmp_path, few):
    ingest(db_url, write_tsv(tmp_path / "a.tsv", few), "--corpus", "a")
    with psycopg.connect(db_url) as conn:
        pid = conn.execute("SELECT min(id) FROM pair").fetchone()[0]
        sel = conn.execute("INSERT INTO selection (query, src_lang, tgt_lang, method, k, params, signature, query_tokens) "
                           "VALUES ('q', 'fr', 'en', 'scoi', 1, '{}', 's', '{q}') RETURNING id").fetchone()[0]
        conn.execute("INSERT INTO selection_pick (selection_id, position, pair_id, criterion) VALUES (%s, 0, %s, 'c')",
                     (sel, pid))
        conn.execute("INSERT INTO selection_candidate (selection_id, rank, pair_id) VALUES (%s, 0, %s)", (sel, pid))
    out = cli_json(["pairs", "rm", "--id", str(pid), "--yes"], db_url)
    assert out["pairs"] == 1
    assert scalar(db_url, "SELECT count(*) FROM selection_pick WHERE pair_id IS NULL") == 1
    assert scalar(db_url, "SELECT count(*) FROM selection_candidate WHERE pair_id IS NULL") == 1


def test_tmx_variants_match_case_insensitively_and_a_dropped_one_is_reported(db_url, tmp_path):
    path = tmp_path / "variants.tmx"
    path.write_text(TMX.format(units="""
<tu><tuv xml:lang="fr-FR"><seg>Il mange vite.</seg></tuv><tuv xml:lang="fr-CA"><seg>Il mange rapidement.</seg></tuv>
<tuv xml:lang="en-US"><seg>He eats quickly.</seg></tuv></tu>
<tu><tuv xml:lang="FR-fr"><seg>Bonjour.</seg></tuv><tuv xml:lang="EN-us"><seg>Hello.</seg></tuv></tu>"""),
                    encoding="utf-8")
    exact = cli_json(["ingest", str(path), "--src", "fr-FR", "--tgt", "en-US", "--workers", "0"], db_url)
    assert (exact["inserted"], exact["warnings"]) == (2, [])
    out = cli(["ingest", str(path), "--src", "fr", "--tgt", "en", "--workers", "0", "--corpus", "v"], db_url)
    assert out.exit_code == 0, out.stderr
    assert "note: 1 <tu> had several variants" in out.stdout and "2 fr variants (fr-FR, fr-CA): used fr-FR" in out.stdout
    out = cli_json(["ingest", str(path), "--src", "fr-CA", "--tgt", "en", "--workers", "0", "--corpus", "ca"], db_url)
    assert out["inserted"] == 2
    assert scalar(db_url, "SELECT count(*) FROM sentence WHERE text = 'Il mange rapidement.'") == 1


def test_an_unknown_on_conflict_value_is_one_line_and_writes_nothing(db_url, tmp_path, few):
    result = cli(["ingest", str(write_tsv(tmp_path / "a.tsv", few[:2])), "--src", "fr", "--tgt", "en",
                  "--on-conflict", "merge"], db_url)
    assert result.exit_code == 1
    assert result.stderr.strip() == "error: --on-conflict 'merge': expected one of add, replace, keep"
    assert scalar(db_url, "SELECT count(*) FROM corpus") == 0


def test_an_xliff_file_given_as_tmx_is_named_not_empty(db_url, tmp_path):
    path = tmp_path / "doc.xlf"
    path.write_text('<?xml version="1.0"?>\n<xliff version="1.2"><file source-language="fr" datatype="plaintext" '
                    'original="x"><body><trans-unit id="1"><source>Bonjour</source><target>Hello</target>'
                    '</trans-unit></body></file></xliff>\n', encoding="utf-8")
    result = cli(["ingest", str(path), "--src", "fr", "--tgt", "en", "--format", "tmx"], db_url)
    assert result.exit_code == 1
    assert f"{path}:2: not a TMX file (root element <xliff>)" in result.stderr


@pytest.mark.parametrize("workers", ["0", "1"])
def test_replace_keeps_a_sentence_a_later_batch_of_the_run_uses(db_url, tmp_path, workers):
    """Batch 1 replaces Bonjour -> Hello, leaving "Hello." in no pair; batch 2, read (and
    told "Hello." is stored) before batch 1 was written, pairs it with Salut: the run keeps
    it for batch 2, and deletes only what no pair uses at the end ("Bye."). (In one
    process, batch 2 is read after batch 1 is written and parses "Hello." again.)"""
    ingest(db_url, write_memory(tmp_path / "tm.tmx", [("Bonjour.", "Hello."), ("Salut.", "Bye.")]), "--corpus", "tm")
    new = [("Bonjour.", "Hi."), ("Salut.", "Hello.")]
    args = ["ingest", str(write_memory(tmp_path / "tm2.tmx", new)), "--src", "fr", "--tgt", "en", "--corpus", "tm",
            "--batch-size", "1", "--workers", workers]
    out = cli_json(args, db_url)
    assert (out["replaced"], out["inserted"]) == (2, 2)
    assert stored_pairs(db_url) == Counter(new)
    assert scalar(db_url, "SELECT count(*) FROM sentence WHERE text IN ('Bye.', 'Hello.')") == 1
    assert_consistent(db_url)
    again = cli_json(args, db_url)
    assert (again["replaced"], again["inserted"]) == (0, 0)
