"""``scoi eval``: BLEU/chrF equal to sacrebleu's own, scores stored, the comparison table
with paired significance, COMET from a local checkpoint, and clear errors (unfinished
job, no references, COMET checkpoint missing)."""

from __future__ import annotations

import csv
import io
import re
import subprocess
import sys

import psycopg
import pytest
from sacrebleu.metrics import BLEU, CHRF

from scoi.jobs.create import submit
from scoi.jobs.spec import JobSpec
from tests.helpers.cli import last_json, scoi_cli, scoi_env
from tests.helpers.jobs import demo_test_pairs


def _finished_job(url: str, name: str, method: str, outputs: list[str], refs: list[str], srcs: list[str]) -> int:
    """A job whose items are done with the given outputs (no model needed to score)."""
    with psycopg.connect(url, autocommit=True) as conn:
        job_id = submit(conn, JobSpec("fr", "en", model="openai:none", method=method, k=0, name=name), srcs, refs)
        conn.execute("UPDATE job_item SET status = 'done', output = (%s::text[])[idx + 1] WHERE job_id = %s",
                     (outputs, job_id))
    return job_id


@pytest.fixture()
def two_jobs(db_url):
    pairs = demo_test_pairs()
    srcs, refs = [fr for fr, _ in pairs], [en for _, en in pairs]
    # "good": the references with a few words dropped; "bad": the references reversed
    good = [" ".join(r.split()[:-1]) if i % 3 == 0 else r for i, r in enumerate(refs)]
    bad = [" ".join(reversed(r.split())) for r in refs]
    a = _finished_job(db_url, "good", "zero", good, refs, srcs)
    b = _finished_job(db_url, "bad", "random", bad, refs, srcs)
    return db_url, (a, good), (b, bad), refs


def test_bleu_chrf_equal_sacrebleu_and_are_stored(two_jobs):
    url, (a, good), _, refs = two_jobs
    out = last_json(scoi_cli(["eval", "good", "--json"], url))
    scores = {s["metric"]: s for s in out["scores"]}
    bleu, chrf = BLEU(trg_lang="en"), CHRF()
    assert scores["bleu"]["score"] == pytest.approx(bleu.corpus_score(good, [refs]).score, abs=1e-4)
    assert scores["chrf"]["score"] == pytest.approx(chrf.corpus_score(good, [refs]).score, abs=1e-4)
    assert scores["bleu"]["signature"] == bleu.get_signature().format()
    assert scores["bleu"]["n_items"] == len(refs)
    with psycopg.connect(url) as conn:
        stored = dict(conn.execute("SELECT metric, score FROM job_score WHERE job_id = %s", (a,)).fetchall())
    assert stored == {"bleu": scores["bleu"]["score"], "chrf": scores["chrf"]["score"]}
    st = last_json(scoi_cli(["job", "status", "good", "--json"], url))
    assert {s["metric"] for s in st["scores"]} == {"bleu", "chrf"}


def test_compare_table(two_jobs):
    url, (a, _), (b, _), _ = two_jobs
    out = last_json(scoi_cli(["eval", "--compare", "good", str(b), "--json"], url))
    assert out["columns"] == ["bleu", "chrf"]
    rows = {r["name"]: r for r in out["rows"]}
    assert [r["job_id"] for r in out["rows"]] == [a, b]
    assert rows["good"]["method"] == "zero" and rows["bad"]["method"] == "random"
    assert rows["good"]["bleu"] > rows["bad"]["bleu"] and rows["good"]["chrf"] > rows["bad"]["chrf"]
    table = scoi_cli(["eval", "--compare", "good", "bad"], url).stdout
    assert "method" in table and "bleu" in table and "random" in table


def test_unfinished_job_and_missing_references_are_clear_errors(db_url, tmp_path):
    with psycopg.connect(db_url, autocommit=True) as conn:
        submit(conn, JobSpec("fr", "en", model="openai:none", method="zero", k=0, name="norefs"), ["Un."])
        job = submit(conn, JobSpec("fr", "en", model="openai:none", method="zero", k=0, name="half"),
                     ["Un.", "Deux."], ["One.", "Two."])
        conn.execute("UPDATE job_item SET status = 'done', output = 'One.' WHERE job_id = %s AND idx = 0", (job,))
    proc = scoi_cli(["eval", "norefs"], db_url)
    assert proc.returncode == 1 and "has no references" in proc.stderr
    proc = scoi_cli(["eval", "half"], db_url)
    assert proc.returncode == 1 and "not finished (1 queued of 2" in proc.stderr
    out = last_json(scoi_cli(["eval", "half", "--partial", "--json"], db_url))
    assert out["scores"][0]["n_items"] == 1


def test_comet_without_a_local_checkpoint_is_a_clear_quick_error(two_jobs, tmp_path):
    url = two_jobs[0]
    proc = scoi_cli(["eval", "good", "--comet", str(tmp_path / "wmt22-comet-da" / "checkpoints" / "model.ckpt")], url)
    assert proc.returncode == 1 and "COMET checkpoint not found" in proc.stderr
    (tmp_path / "empty-model").mkdir()
    proc = scoi_cli(["eval", "good", "--comet", str(tmp_path / "empty-model")], url)
    assert proc.returncode == 1 and "no COMET checkpoint in" in proc.stderr
    with psycopg.connect(url) as conn:  # a failed eval stores nothing
        assert conn.execute("SELECT count(*) FROM job_score").fetchone()[0] == 0


def test_comet_runs_from_a_local_checkpoint_and_keeps_item_scores(two_jobs, tmp_path):
    """unbabel-comet's real loading and scoring path, on a tiny random checkpoint built
    here: the system score is stored, and so is each item's score (their mean)."""
    from tests.tiny_model import build_tiny_comet

    url, (a, good), _, refs = two_jobs
    model = build_tiny_comet(tmp_path / "tiny-comet")
    out = last_json(scoi_cli(["eval", "good", "--comet", str(model), "--json"], url))
    comet = next(s for s in out["scores"] if s["metric"] == "comet")
    assert comet["n_items"] == len(refs) and "ckpt:model.ckpt" in comet["signature"]
    with psycopg.connect(url) as conn:
        rows = conn.execute("SELECT idx, score FROM job_item_scores WHERE job_id = %s AND metric = 'comet' "
                            "ORDER BY idx", (a,)).fetchall()
    assert [i for i, _ in rows] == list(range(len(refs)))
    assert sum(s for _, s in rows) / len(rows) == pytest.approx(comet["score"], abs=1e-3)


def test_compare_marks_significance_like_sacrebleu(two_jobs):
    """Paired bootstrap against the first job: BLEU/chrF equal sacreBLEU's own PairedTest,
    the baseline has no p-value, a far worse system is significant."""
    from sacrebleu.significance import PairedTest

    url, (a, good), (b, bad), refs = two_jobs
    out = last_json(scoi_cli(["eval", "--compare", "good", "bad", "--json"], url))
    base, other = out["rows"]
    assert base["baseline"] and base["significance"]["bleu"]["p_value"] is None
    assert not other["baseline"] and other["significance"]["bleu"]["p_value"] < 0.05
    _, res = PairedTest([("good", good), ("bad", bad)], {"bleu": BLEU(trg_lang="en")}, [refs], test_type="bs",
                        n_samples=1000)()
    sb = next(v for k, v in res.items() if k != "System")[1]
    assert other["significance"]["bleu"]["p_value"] == pytest.approx(sb.p_value, abs=1e-4)
    assert other["significance"]["bleu"]["mean"] == pytest.approx(sb.mean, abs=1e-3)
    assert other["significance"]["bleu"]["n_items"] == len(refs)
    piped = scoi_cli(["eval", "--compare", "good", "bad", "--baseline", "bad"], url).stdout
    table = list(csv.reader(io.StringIO(piped), delimiter="\t"))  # piped: long TSV, a number per field
    assert table[0] == ["job_id", "job", "method", "k", "model", "template", "metric", "score", "mean", "ci",
                        "p_value", "items"]
    fields = {(r[1], r[6]): dict(zip(table[0], r)) for r in table[1:]}
    assert len(table) == 1 + 2 * 2 and fields["bad", "bleu"]["p_value"] == ""
    assert float(fields["good", "bleu"]["p_value"]) < 0.05 and fields["good", "bleu"]["model"] == "openai:none"


def test_compare_table_on_a_terminal_names_models_by_label_within_80_columns(db_url):
    pairs = demo_test_pairs()[:5]
    srcs, refs = [fr for fr, _ in pairs], [en for _, en in pairs]
    with psycopg.connect(db_url, autocommit=True) as conn:
        for name, model in [("one", "hf:/models/very/long/path/to/xglm-564M"), ("two", "gguf:/m/alpaca-7b.gguf")]:
            job = submit(conn, JobSpec("fr", "en", model=model, method="zero", k=0, name=name), srcs, refs)
            conn.execute("UPDATE job_item SET status = 'done', output = reference WHERE job_id = %s", (job,))
    proc = subprocess.run([sys.executable, "-m", "scoi.cli.main", "eval", "--compare", "one", "two"],
                          env=scoi_env(db_url, FORCE_COLOR="1", NO_COLOR="1", COLUMNS="80"), capture_output=True,
                          text=True, timeout=300)
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", proc.stdout)
    assert proc.returncode == 0 and max(len(line) for line in text.splitlines()) <= 80, text
    assert "xglm-564M" in text and "alpaca-7b" in text and "paired bootstrap" in text
    assert "models: xglm-564M = hf:/models/very/long/path/to/xglm-564M" in " ".join(text.split())
