"""`scoi demo`, the README's main job, end to end on a real database."""

import pytest

from tests.helpers.cli import last_json, run_scoi


@pytest.mark.slow
def test_demo_selects_prompts_and_translates(db_url, tmp_path):
    from tests.tiny_model import build_tiny_model

    model = build_tiny_model(tmp_path / "tiny")
    proc = run_scoi(["demo", "--json", "--model", f"hf:{model}"], db_url, timeout=600)
    assert proc.returncode == 0, proc.stderr
    report = last_json(proc)
    assert report["ingested"]["corpus"] == "demo" and report["ingested"]["inserted"] > 250
    assert set(report["coverage"]) == {"scoi", "bm25"}
    # SCOI optimises coverage: its example sets cover the test sentences' syntax at least as well as BM25's
    assert report["coverage"]["scoi"]["syntax"] >= report["coverage"]["bm25"]["syntax"]
    assert report["example_prompt"].endswith("English Sentence: ")
    assert [row["method"] for row in report["scores"]] == ["scoi", "bm25"]
    assert all("bleu" in row and "chrf" in row for row in report["scores"])

    again = run_scoi(["demo", "--json"], db_url, timeout=600)  # rerun: nothing new to ingest
    assert last_json(again)["ingested"]["inserted"] == 0
