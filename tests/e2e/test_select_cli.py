"""``scoi select`` and ``scoi prompt`` (docs/method.md §4-6) on a database holding the demo corpus and
a second corpus ("extra"). Commands run in-process (typer's CliRunner, parsers loaded
once); one full selection and the start-up split run as real subprocesses."""

from __future__ import annotations

import json

import psycopg
import pytest
from typer.testing import CliRunner

from scoi.selection.selector import SelectionError, Selector
from tests.helpers.cli import run_scoi
from tests.helpers.database import scratch_database
from tests.helpers.ingest import DEMO, DEMO_TEST, demo_pairs, ingest_inprocess, write_tsv

QUERY = "Le chat dort sur le canapé du salon."
EN_QUERY = "The dog is sleeping in the garden."
EXTRA = "extra"


@pytest.fixture(scope="module")
def demo():
    return demo_pairs(DEMO)


@pytest.fixture(scope="module")
def extra():
    return demo_pairs(DEMO_TEST)


@pytest.fixture(scope="module")
def cli_db(server_url, template_url, extra, tmp_path_factory):
    d = tmp_path_factory.mktemp("cli")
    with scratch_database(server_url) as url:
        ingest_inprocess(url, [DEMO])
        ingest_inprocess(url, [write_tsv(d / "extra.tsv", extra)], corpus=EXTRA)
        yield url


@pytest.fixture()
def cli(cli_db, monkeypatch):
    """Run ``scoi ARGS`` in this process against the module database."""
    from scoi.cli.main import app

    monkeypatch.setenv("SCOI_DATABASE_URL", cli_db)

    def run(*args: str, ok: bool = True):
        result = CliRunner().invoke(app, list(args))
        if ok:
            assert result.exit_code == 0, (args, result.stdout, result.stderr, result.exception)
        return result

    return run


def last_json(stdout: str) -> dict:
    return json.loads(stdout.strip().splitlines()[-1])


def pairs_of_corpus(url: str, name: str) -> set[int]:
    with psycopg.connect(url) as conn:
        return {r[0] for r in conn.execute(
            "SELECT p.id FROM pair p JOIN corpus c ON c.id = p.corpus_id WHERE c.name = %s", (name,))}


# ------------------------------------------------------------------ subprocesses
def test_select_json_end_to_end(cli_db, demo, extra):
    proc = run_scoi(["select", QUERY, "--src", "fr", "--tgt", "en", "--json"], cli_db, check=True)
    out = last_json(proc.stdout)
    assert out["query"] == QUERY and out["method"] == "scoi"
    assert out["src_lang"] == "fr" and out["tgt_lang"] == "en" and out["k"] == 4
    assert len(out["candidates"]) == 100 and all(isinstance(c, int) for c in out["candidates"])
    assert len(out["selected"]) == 4
    texts = dict(demo + extra)
    for p in out["selected"]:
        assert set(p) >= {"pair_id", "src", "tgt", "criterion", "coverage"}
        assert p["pair_id"] in out["candidates"] and texts[p["src"]] == p["tgt"]
        assert p["criterion"] in ("syntax", "word") and 0 < p["coverage"] <= 1
    assert [p["criterion"] for p in out["selected"]] == ["syntax", "word", "syntax", "word"]
    with Selector("fr", "en", url=cli_db) as sel:
        res = sel.select(QUERY)
    assert out["candidates"] == [c.pair_id for c in res.candidates]
    assert [p["pair_id"] for p in out["selected"]] == [p.pair_id for p in res.selected]
    assert out["signature"] == res.signature


def test_verbose_split_on_stderr_json_on_stdout(cli_db):
    """A one-off select imports neither torch (the pipeline needs none) nor SQLAlchemy or
    Alembic (the database is at head); --verbose prints the split to stderr only."""
    proc = run_scoi(["select", QUERY, "--src", "fr", "--tgt", "en", "--json", "--verbose"], cli_db, check=True)
    out = last_json(proc.stdout)
    assert out["query"] == QUERY and len(proc.stdout.strip().splitlines()) == 1
    for step in ("imports", "server start/connect", "migration check", "spaCy import", "pipeline load",
                 "Moses set-up", "query analysis", "preselection + fetch", "coverage", "total"):
        assert f"  {step}" in proc.stderr, (step, proc.stderr)
    assert "heavy modules imported: none" in proc.stderr, proc.stderr


# ------------------------------------------------------------------ in-process
def test_select_help_mentions_method(cli):
    result = cli("select", "--help")
    assert "--method" in result.stdout and "--src" in result.stdout


def test_direction_without_corpus_fails_clearly(cli):
    result = cli("select", QUERY, "--src", "fr", "--tgt", "de", "--json", ok=False)
    assert result.exit_code != 0
    assert "fr-de" in result.stderr and "scoi ingest" in result.stderr and "--src fr --tgt de" in result.stderr
    # an error the command reports (a user would see no traceback), not an exception
    assert isinstance(result.exception, SystemExit) and result.stdout.strip() == ""


@pytest.mark.parametrize("text", ["", "   ", "\t \u3000"])
def test_blank_sentence_is_refused_in_one_line(cli, cli_db, text):
    result = cli("select", text, "--src", "fr", "--tgt", "en", "--json", ok=False)
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit) and result.stdout.strip() == ""
    assert result.stderr.startswith("error: ") and "blank" in result.stderr and result.stderr.count("\n") == 1
    prompt = cli("prompt", text, "--src", "fr", "--tgt", "en", ok=False)
    assert prompt.exit_code == 1 and "blank" in prompt.stderr and prompt.stdout.strip() == ""
    with Selector("fr", "en", url=cli_db) as sel, pytest.raises(SelectionError, match="blank"):
        sel.select(text)


def test_unknown_corpus_fails_clearly(cli):
    result = cli("select", QUERY, "--src", "fr", "--tgt", "en", "--corpus", "nope", ok=False)
    assert result.exit_code != 0
    assert "nope" in result.stderr and isinstance(result.exception, SystemExit)


def test_explain_candidates_are_objects(cli):
    plain = last_json(cli("select", QUERY, "--src", "fr", "--tgt", "en", "--json").stdout)
    out = last_json(cli("select", QUERY, "--src", "fr", "--tgt", "en", "--json", "--explain").stdout)
    cands = out["candidates"]
    assert [c["pair_id"] for c in cands] == plain["candidates"]
    assert all(set(c) == {"pair_id", "score", "match", "src", "tgt"} for c in cands)
    scores = [c["score"] for c in cands]
    assert scores == sorted(scores, reverse=True) and scores[-1] > 0
    assert out["selected"] == plain["selected"]
    by_id = {c["pair_id"]: c for c in cands}
    for p in out["selected"]:
        assert (by_id[p["pair_id"]]["src"], by_id[p["pair_id"]]["tgt"]) == (p["src"], p["tgt"])


def test_file_gives_one_json_object_per_line(cli, cli_db, tmp_path, extra):
    queries = [fr for fr, _ in extra[:3]]
    f = tmp_path / "queries.txt"
    f.write_text(f"{queries[0]}\n\n{queries[1]}\n   \n{queries[2]}\n", encoding="utf-8")
    res = cli("select", "--file", str(f), "--src", "fr", "--tgt", "en", "-k", "2")
    lines = [line for line in res.stdout.splitlines() if line.strip()]
    assert len(lines) == 3
    objs = [json.loads(line) for line in lines]
    assert [o["query"] for o in objs] == queries
    assert all(len(o["selected"]) == 2 and o["k"] == 2 for o in objs)
    # each query is in the "extra" corpus: its own pair is a candidate
    with psycopg.connect(cli_db) as conn:
        own = dict(conn.execute("""SELECT s.text, e.pair_id FROM example e JOIN sentence s ON s.id = e.src_id
                                   WHERE e.src_lang = 'fr' AND e.tgt_lang = 'en'""").fetchall())
    assert all(own[q] in o["candidates"] for q, o in zip(queries, objs))
    # the batch (parsed and preselected together) gives what one query at a time gives
    alone = json.loads(cli("select", queries[1], "--src", "fr", "--tgt", "en", "-k", "2", "--json").stdout)
    assert (alone["candidates"], alone["selected"]) == (objs[1]["candidates"], objs[1]["selected"])
    missing = cli("select", "--file", str(tmp_path / "nope.txt"), "--src", "fr", "--tgt", "en", ok=False)
    assert missing.exit_code != 0 and "not found" in missing.stderr


def test_text_or_file_required(cli, tmp_path):
    res = cli("select", "--src", "fr", "--tgt", "en", ok=False)
    assert res.exit_code != 0 and "--file" in res.stderr


def test_table_output(cli):
    out = last_json(cli("select", QUERY, "--src", "fr", "--tgt", "en", "--json").stdout)
    table = cli("select", QUERY, "--src", "fr", "--tgt", "en").stdout
    with pytest.raises(json.JSONDecodeError):
        json.loads(table.strip().splitlines()[-1])
    assert "scoi: 4 of 100 candidates" in table
    for p in out["selected"]:
        assert str(p["pair_id"]) in table
    assert "syntax" in table and "word" in table and "preselect" in table


def test_sql_prints_the_preselection(cli):
    out = cli("select", QUERY, "--src", "fr", "--tgt", "en", "--sql").stdout
    assert "bm25_block" in out and "bm25_dir" in out and "bm25_stats" in out and "-- parameters:" in out
    assert "'canapé'" in out and "'le'" in out  # the lowercased query tokens
    assert '"selected"' not in out


def test_no_shared_token_is_not_an_error(cli):
    out = last_json(cli("select", "Xqzvw Brplk", "--src", "fr", "--tgt", "en", "--json").stdout)
    assert out["candidates"] == [] and out["selected"] == []
    table = cli("select", "Xqzvw Brplk", "--src", "fr", "--tgt", "en").stdout
    assert "0 of 0 candidates" in table


def test_english_to_french(cli, demo, extra):
    out = last_json(cli("select", EN_QUERY, "--src", "en", "--tgt", "fr", "--json").stdout)
    assert out["src_lang"] == "en" and out["tgt_lang"] == "fr"
    en_to_fr = {en: fr for fr, en in demo + extra}
    assert len(out["selected"]) == 4
    for p in out["selected"]:
        assert en_to_fr[p["src"]] == p["tgt"]


def test_corpus_option_restricts(cli, cli_db, extra):
    allowed = pairs_of_corpus(cli_db, EXTRA)
    assert len(allowed) == len(extra)
    out = last_json(cli("select", QUERY, "--src", "fr", "--tgt", "en", "--corpus", EXTRA, "--json").stdout)
    assert out["candidates"] and set(out["candidates"]) <= allowed
    assert {p["pair_id"] for p in out["selected"]} <= allowed
    assert out["params"]["corpora"] == [EXTRA]
    both = last_json(cli("select", QUERY, "--src", "fr", "--tgt", "en", "--corpus", EXTRA,
                         "--corpus", "demo.fr-en", "--json").stdout)
    assert len(both["candidates"]) == 100 and not set(both["candidates"]) <= allowed


def test_methods_and_fill_through_the_cli(cli):
    bm25 = last_json(cli("select", QUERY, "--src", "fr", "--tgt", "en", "--method", "bm25", "--json").stdout)
    assert [p["pair_id"] for p in bm25["selected"]] == bm25["candidates"][:4]
    assert {p["criterion"] for p in bm25["selected"]} == {"bm25"}
    fill = last_json(cli("select", "Xqzvw Brplk", "--src", "fr", "--tgt", "en", "--fill", "random", "--seed", "3",
                         "-k", "3", "--json").stdout)
    assert [p["criterion"] for p in fill["selected"]] == ["fill"] * 3
    bad = cli("select", QUERY, "--src", "fr", "--tgt", "en", "--method", "nope", ok=False)
    assert bad.exit_code != 0 and "nope" in bad.stderr


def test_record_through_the_cli(cli, cli_db):
    out = last_json(cli("select", QUERY, "--src", "fr", "--tgt", "en", "--record", "--json").stdout)
    sid = out["selection_id"]
    assert isinstance(sid, int)
    with psycopg.connect(cli_db) as conn:
        picks = conn.execute("SELECT pair_id FROM selection_pick WHERE selection_id = %s ORDER BY position",
                             (sid,)).fetchall()
        n_cand = conn.execute("SELECT count(*) FROM selection_candidate WHERE selection_id = %s",
                              (sid,)).fetchone()[0]
    assert [r[0] for r in picks] == [p["pair_id"] for p in out["selected"]] and n_cand == 100


def test_prompt_xglm(cli):
    picks = last_json(cli("select", QUERY, "--src", "fr", "--tgt", "en", "-k", "2", "--json").stdout)["selected"]
    assert len(picks) == 2
    query = f'French Sentence: "{QUERY}"\nEnglish Sentence: '

    def blocks(ps: list[dict]) -> str:
        return "".join(f'French Sentence: "{p["src"]}"\nEnglish Sentence: "{p["tgt"]}"\n###\n' for p in ps)

    # Default: reverse selection order (docs/method.md §6), the first pick right before the query.
    out = cli("prompt", QUERY, "--src", "fr", "--tgt", "en", "-k", "2").stdout
    assert out == blocks(picks[::-1]) + query + "\n"
    assert out.splitlines()[-1] == "English Sentence: "
    assert out.splitlines()[-5] == f'French Sentence: "{picks[0]["src"]}"'
    out = cli("prompt", QUERY, "--src", "fr", "--tgt", "en", "-k", "2", "--order", "selection").stdout
    assert out == blocks(picks) + query + "\n"
    out = cli("prompt", QUERY, "--src", "fr", "--tgt", "en", "-k", "2", "--order", "random", "--seed", "1").stdout
    assert out in (blocks(picks) + query + "\n", blocks(picks[::-1]) + query + "\n")
    bad = cli("prompt", QUERY, "--src", "fr", "--tgt", "en", "--order", "sideways", ok=False)
    assert bad.exit_code == 1 and "unknown example order 'sideways'" in bad.stderr
