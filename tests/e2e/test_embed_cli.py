"""``scoi embed``, ``scoi ingest --embed`` and ``scoi select --method fuzzy / fuzzy-ann`` end to
end (in process), with a tiny random-weight sentence-transformers model in a temp dir; and
the errors a user meets: a model not on disk offline, nothing embedded yet."""

from __future__ import annotations

import pytest

from tests.helpers.cli import cli, cli_json
from tests.helpers.database import scalar, scratch_database
from tests.helpers.ingest import DEMO, DEMO_TEST, demo_pairs, write_tsv
from tests.tiny_model import build_tiny_sentence_transformer

QUERY = "Le chat dort sur le canapé du salon."


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(build_tiny_sentence_transformer(tmp_path_factory.mktemp("st") / "tiny-st"))


def test_embed_then_select_fuzzy(server_url, template_url, model_dir, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with scratch_database(server_url) as url:
        assert cli(["ingest", str(DEMO), "--src", "fr", "--tgt", "en", "--workers", "0"], url).exit_code == 0
        # nothing embedded yet: a clear error naming the command that fixes it
        bad = cli(["select", QUERY, "--src", "fr", "--tgt", "en", "--method", "fuzzy", "--embedder", model_dir], url)
        assert bad.exit_code == 1 and f"scoi embed --model {model_dir}" in bad.stderr
        first = cli_json(["embed", "--model", model_dir, "--lang", "fr", "--batch-size", "64"], url)
        n_fr = scalar(url, "SELECT count(*) FROM sentence WHERE lang = 'fr'")
        assert (first["todo"], first["embedded"], first["model"], first["langs"]) == (n_fr, n_fr, model_dir, ["fr"])
        assert first["dim"] == 32 and first["index"].startswith("sentence_embedding_hnsw_")
        again = cli_json(["embed", "--model", model_dir, "--lang", "fr"], url)
        assert (again["todo"], again["embedded"]) == (0, 0)
        for method in ("fuzzy", "fuzzy-ann"):
            out = cli_json(["select", QUERY, "--src", "fr", "--tgt", "en", "--method", method, "--embedder",
                            model_dir, "-k", "3", "--explain"], url)
            assert len(out["selected"]) == 3 and {p["criterion"] for p in out["selected"]} == {"fuzzy"}
            cos = [p["coverage"] for p in out["selected"]]
            assert cos == sorted(cos, reverse=True) and all(-1.0 <= c <= 1.0 + 1e-6 for c in cos)
            assert out["params"]["embedder"] == model_dir
        assert len(out["candidates"]) == 3  # fuzzy-ann: the k nearest over the whole database
        sql = cli(["select", QUERY, "--src", "fr", "--tgt", "en", "--method", "fuzzy-ann", "--embedder", model_dir,
                   "--sql"], url)
        assert sql.exit_code == 0 and "<=>" in sql.stdout and "vector(32)" in sql.stdout
        # ingest --embed: the new corpus's sentences of both languages are embedded after the pairs
        extra = write_tsv(tmp_path / "extra.tsv", demo_pairs(DEMO_TEST))
        res = cli_json(["ingest", str(extra), "--src", "fr", "--tgt", "en", "--workers", "0", "--corpus", "extra",
                        "--embed", model_dir], url)
        assert res["embedder"] == model_dir and res["embedded"] > 0
        assert scalar(url, """SELECT count(*) FROM sentence s WHERE NOT EXISTS
                              (SELECT 1 FROM sentence_embedding se WHERE se.sentence_id = s.id)""") == 0


def test_a_model_not_on_disk_fails_before_anything_is_written(server_url, template_url, monkeypatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with scratch_database(server_url) as url:
        out = cli(["ingest", str(DEMO), "--src", "fr", "--tgt", "en", "--workers", "0", "--embed", "nobody/no-model"],
                  url)
        assert out.exit_code == 1 and "'nobody/no-model' is not available offline" in out.stderr
        assert "local directory" in out.stderr
        assert scalar(url, "SELECT count(*) FROM pair") == 0
        bad = cli(["embed", "--model", "nobody/no-model"], url)
        assert bad.exit_code == 1 and "not available offline" in bad.stderr
        assert scalar(url, "SELECT count(*) FROM embedder") == 0
