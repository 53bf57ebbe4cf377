"""``scoi ctq train`` then ``--method ctq``, end to end: a tiny local LLM translates the
one-shot prompts on a worker, the regressor is fitted and stored, ``scoi select`` and a job
rank their pools with it; a training left half done resumes without translating twice."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

import psycopg
import pytest

from scoi.core.ctq_features import FEATURES
from scoi.ctq import CRITERION, CtqRanker, find_model
from tests.helpers.cli import last_json, refused, scoi_cli, scoi_env
from tests.helpers.jobs import demo_test_pairs, ok_server, write_lines


def _train_args(tmp_path, model: str, n: int = 3, *extra: str) -> list[str]:
    pairs = demo_test_pairs()[:n]
    return ["ctq", "train", "--src", "fr", "--tgt", "en",
            "--dev", str(write_lines(tmp_path / "dev.fr", [fr for fr, _ in pairs])),
            "--dev-ref", str(write_lines(tmp_path / "dev.en", [en for _, en in pairs])),
            "--model", model, "--pool", "4", "--max-new-tokens", "8", *extra]


@pytest.mark.slow  # a local model loads twice (training, selection) and translates
def test_ctq_trains_on_one_shot_translations_then_selects_and_runs_a_job(job_db, tiny_model, tmp_path):
    from tests.tiny_model import build_tiny_sentence_transformer

    embedder = str(build_tiny_sentence_transformer(tmp_path / "emb"))
    trained = last_json(scoi_cli([*_train_args(tmp_path, tiny_model), "--name", "demo-ctq", "--embedder", embedder,
                                  "--json"], job_db))
    assert trained["status"] == "fitted" and trained["name"] == "demo-ctq"
    # The local model gives likelihoods and the embedder similarities; COMET-QE is left out.
    assert "src_dst_ppl" in trained["features"] and "labse_score_query_src" in trained["features"]
    assert set(trained["omitted"]) == {"comet_qe_query_src_score", "comet_qe_query_dst_score",
                                       "comet_qe_src_dst_score"}
    assert set(trained["features"]) | set(trained["omitted"]) == set(FEATURES)
    assert trained["signature"].startswith("demo-ctq@f:")
    assert trained["regressor"]["estimator"] == "MLPRegressor"

    with psycopg.connect(job_db) as conn:
        tuples = conn.execute(
            "SELECT i.prompt, i.status, s.text FROM ctq_train_item t JOIN job_item i USING (job_id, idx) "
            "JOIN pair p ON p.id = t.pair_id JOIN sentence s ON s.id = CASE WHEN p.a_lang = 'fr' THEN p.a_id "
            "ELSE p.b_id END WHERE t.job_id = %s ORDER BY t.idx", (trained["job_id"],)).fetchall()
        model = find_model(conn, None, "fr", "en")  # the direction's newest: this one
    assert len(tuples) == trained["n_rows"] > 3
    # Each item's prompt is one-shot: its candidate's source, then the development sentence.
    assert all(status == "done" and prompt.count("French Sentence:") == 2 and example in prompt
               for prompt, status, example in tuples)

    query = demo_test_pairs()[5][0]
    out = last_json(scoi_cli(["select", query, "--src", "fr", "--tgt", "en", "--method", "ctq", "-k", "2",
                              "--explain", "--json"], job_db))
    assert out["params"]["ctq_model"] == trained["signature"]
    assert f"|ctq:{trained['signature']}|" in out["signature"]
    picks = out["selected"]
    assert len(picks) == 2 and {p["criterion"] for p in picks} == {CRITERION}
    # The picks are the pool's best two by the stored model's prediction, best first.
    pool = out["candidates"]
    predicted = CtqRanker(model).model.regressor.predict(CtqRanker(model).source.matrix(
        query, [c["src"] for c in pool], [c["tgt"] for c in pool], [c["score"] for c in pool]))
    best = sorted(range(len(pool)), key=lambda i: -round(float(predicted[i]), 4))[:2]
    assert [p["pair_id"] for p in picks] == [pool[i]["pair_id"] for i in best]
    assert [p["value"] for p in picks] == [{"kind": "predicted_quality", "value": round(float(predicted[i]), 4)}
                                           for i in best]

    src = write_lines(tmp_path / "job.fr", [query, demo_test_pairs()[6][0]])
    job = last_json(scoi_cli(["job", "submit", "--input", str(src), "--src", "fr", "--tgt", "en", "--model",
                              tiny_model, "--method", "ctq", "-k", "2", "--max-new-tokens", "8", "--reuse", "off",
                              "--json"], job_db))
    done = last_json(scoi_cli(["worker", "--burst", "--job", str(job["job_id"]), "--json"], job_db))
    assert done["done"] == 2 and done["failed"] == 0
    with psycopg.connect(job_db) as conn:
        params, sig = conn.execute("SELECT params, signature FROM job WHERE id = %s", (job["job_id"],)).fetchone()
        recorded = conn.execute(
            "SELECT s.signature, count(*) FROM job_item i JOIN selection s ON s.id = i.selection_id "
            "WHERE i.job_id = %s GROUP BY 1", (job["job_id"],)).fetchall()
    assert params["ctq_model"] == trained["signature"] and f"|ctq:{trained['signature']}|" in sig
    assert len(recorded) == 1 and f"|ctq:{trained['signature']}|" in recorded[0][0] and recorded[0][1] == 2


def _count(url: str, name: str, status: str) -> int:
    with psycopg.connect(url) as conn:
        return conn.execute("SELECT count(*) FROM job_item i JOIN job j ON j.id = i.job_id WHERE j.name = %s "
                            "AND i.status = %s", (name, status)).fetchone()[0]


@pytest.mark.slow  # a training process killed mid-job, then run again
def test_ctq_training_killed_mid_job_resumes_without_translating_twice(job_db, tmp_path):
    with ok_server(delay=0.3) as stub:
        args = [*_train_args(tmp_path, "openai:stub", 3), "--name", "resumed", "--batch-size", "1",
                "--backend-opt", "max_retries=0", "--backend-opt", f"base_url={stub.url}"]
        proc = subprocess.Popen([sys.executable, "-m", "scoi.cli.main", *args], env=scoi_env(job_db),
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 180
            while _count(job_db, "ctq-train:resumed", "done") < 3:
                assert proc.poll() is None and time.monotonic() < deadline, "no one-shot translation got done"
                time.sleep(0.1)
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
        done_before = _count(job_db, "ctq-train:resumed", "done")
        early = last_json(scoi_cli(["ctq", "list", "--json"], job_db))
        assert early["status"] == "translating" and early["signature"] is None

        fitted = last_json(scoi_cli([*args, "--json"], job_db))
        with psycopg.connect(job_db) as conn:
            attempts = conn.execute("SELECT attempts FROM job_item WHERE job_id = %s ORDER BY idx",
                                    (fitted["job_id"],)).fetchall()
        assert fitted["status"] == "fitted" and fitted["n_rows"] == len(attempts) > done_before
        assert set(fitted["omitted"]) >= {"src_dst_ppl", "src_dst_query_ppl", "labse_score_query_src"}
        # Only the prompts in flight at the kill (its batch and the prefetched one) went out twice.
        assert len(attempts) <= len(stub.calls) <= len(attempts) + 2
        assert sum(a == 1 for (a,) in attempts) >= len(attempts) - 2

        other = scoi_cli([*_train_args(tmp_path, "openai:stub", 1), "--name", "resumed"], job_db)
    refused(other, "resumed", "other inputs")


def test_ctq_train_with_no_workers_only_queues_the_job(job_db, tmp_path):
    queued = last_json(scoi_cli([*_train_args(tmp_path, "openai:stub", 1), "--workers", "0", "--json"], job_db))
    assert queued["status"] == "translating" and queued["name"].startswith("ctq-fr-en-chrf-")
    status = last_json(scoi_cli(["job", "status", str(queued["job_id"]), "--json"], job_db))
    assert status["total"] == 4 and status["queued"] == 4  # one item per pool candidate


def test_select_and_jobs_with_ctq_but_no_model_say_how_to_train_one(job_db, tmp_path):
    out = scoi_cli(["select", "Le chat dort.", "--src", "fr", "--tgt", "en", "--method", "ctq"], job_db)
    refused(out, "no fitted CTQ Scorer model for fr-en", "scoi ctq train")
    src = write_lines(tmp_path / "in.fr", ["Le chat dort."])
    job = scoi_cli(["job", "submit", "--input", str(src), "--src", "fr", "--tgt", "en", "--model", "openai:m",
                    "--method", "ctq"], job_db)
    refused(job, "no fitted CTQ Scorer model for fr-en")
    named = scoi_cli(["select", "Le chat dort.", "--src", "fr", "--tgt", "en", "--method", "ctq", "--ctq-model",
                      "nope"], job_db)
    refused(named, "no CTQ Scorer model named 'nope'", "scoi ctq list")


def test_ctq_train_refuses_bad_input_with_one_line_and_stores_nothing(job_db, tmp_path):
    dev = write_lines(tmp_path / "d.fr", ["Le chat dort.", "Il pleut."])
    base = ["ctq", "train", "--src", "fr", "--tgt", "en", "--dev", str(dev), "--model", "openai:stub"]
    short = write_lines(tmp_path / "short.en", ["The cat sleeps."])
    refused(scoi_cli([*base, "--dev-ref", str(short)], job_db), "1 lines", "2", "aligned line by line")
    refs = write_lines(tmp_path / "d.en", ["The cat sleeps.", "It rains."])
    refused(scoi_cli([*base, "--dev-ref", str(refs), "--metric", "meteor"], job_db), "unknown metric 'meteor'")
    refused(scoi_cli([*base, "--dev-ref", str(refs), "--metric", "comet"], job_db), "--comet PATH")
    blank = write_lines(tmp_path / "blank.fr", ["Le chat dort.", "  "])
    refused(scoi_cli([*base[:7], str(blank), *base[8:], "--dev-ref", str(refs)], job_db),
            "development sentence 2 is blank")
    refused(scoi_cli([*base, "--dev-ref", str(refs), "--src", "xx"], job_db), "xx")
    with psycopg.connect(job_db) as conn:
        assert conn.execute("SELECT (SELECT count(*) FROM job) + (SELECT count(*) FROM ctq_model)").fetchone()[0] == 0
