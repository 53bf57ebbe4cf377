"""Live progress of long commands, as a user at a terminal sees it: ``scoi worker`` and
``scoi experiment run`` keep a line of items done/failed on stderr when it is a terminal
(run here under a pseudo-terminal), nothing with --quiet or when stderr is a pipe."""

from __future__ import annotations

import os
import pty
import re
import select
import subprocess
import sys

from tests.helpers.cli import scoi_env
from tests.helpers.jobs import demo_pairs, demo_test_pairs, ok_server, stub_model_args, submit_lines, write_lines

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def run_on_terminal(args: list[str], url: str, timeout: float = 240) -> tuple[int, str, str]:
    """``scoi ARGS`` with stderr on a pseudo-terminal: exit code, stdout, and what the
    terminal showed on stderr (escape sequences removed)."""
    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "scoi.cli.main", *args], env=scoi_env(url, COLUMNS="160"),
                            stdout=subprocess.PIPE, stderr=slave, text=True)
    os.close(slave)
    shown = b""
    while True:
        ready, _, _ = select.select([master], [], [], timeout)
        if not ready:
            proc.kill()
            raise AssertionError(f"scoi {args} timed out")
        try:
            chunk = os.read(master, 65536)
        except OSError:  # the terminal's other end closed: the process exited
            break
        if not chunk:
            break
        shown += chunk
    out = proc.stdout.read()
    code = proc.wait(timeout=30)
    os.close(master)
    return code, out, ANSI.sub("", shown.decode(errors="replace"))


def test_worker_shows_items_done_and_failed_on_a_terminal_unless_quiet(job_db, tmp_path):
    sources = [fr for fr, _ in demo_pairs()[:8]]
    with ok_server(delay=0.3) as stub:
        args = [*stub_model_args(stub.url), "--backend-opt", "concurrency=1"]
        submit_lines(job_db, tmp_path / "a.fr", sources, "openai:stub", *args)
        code, out, shown = run_on_terminal(["worker", "--burst", "--batch-size", "2", "--json"], job_db)
        assert code == 0, shown
        assert re.search(r"\d+ done, 0 failed, 0 requeued", shown), shown
        assert out.strip().splitlines()[-1].startswith("{")  # stdout keeps only the summary

        submit_lines(job_db, tmp_path / "b.fr", sources, "openai:stub", *args)
        code, _, quiet = run_on_terminal(["worker", "--burst", "--batch-size", "2", "--quiet"], job_db)
        assert code == 0 and "requeued" not in quiet, quiet

        submit_lines(job_db, tmp_path / "c.fr", sources, "openai:stub", *args)
        piped = subprocess.run([sys.executable, "-m", "scoi.cli.main", "worker", "--burst", "--batch-size", "2"],
                               env=scoi_env(job_db), capture_output=True, text=True, timeout=240)
    assert piped.returncode == 0 and "requeued" not in piped.stderr, piped.stderr


def test_experiment_run_shows_which_job_it_is_on(job_db, tmp_path):
    pairs = demo_test_pairs()[:6]
    with ok_server(delay=0.2) as stub:
        code, _, shown = run_on_terminal(
            ["experiment", "run", "progress-exp", "--input", str(write_lines(tmp_path / "t.fr", [f for f, _ in pairs])),
             "--references", str(write_lines(tmp_path / "t.en", [e for _, e in pairs])), "--src", "fr", "--tgt", "en",
             "--model", "openai:stub", "--backend-opt", "max_retries=0", "--backend-opt", "concurrency=1",
             "--backend-opt", f"base_url={stub.url}", "--methods", "zero,bm25", "--k", "2", "--max-new-tokens", "8",
             "--samples", "100", "--json"], job_db)
    assert code == 0, shown
    assert re.search(r"job 1 of 2 \(progress-exp[^)]*\): \d+ done, 0 failed", shown), shown
    assert re.search(r"job 2 of 2 \(progress-exp[^)]*\)", shown), shown


def test_a_worker_pool_shows_the_processes_counts_summed(job_db, tmp_path):
    sources = [fr for fr, _ in demo_pairs()[20:32]]
    with ok_server(delay=0.3) as stub:
        submit_lines(job_db, tmp_path / "p.fr", sources, "openai:stub", *stub_model_args(stub.url))
        code, out, shown = run_on_terminal(["worker", "--burst", "--concurrency", "2", "--batch-size", "2", "--json"],
                                           job_db)
    assert code == 0, shown
    assert re.search(r"2 processes: \d+ done, 0 failed, 0 requeued", shown), shown
    assert out.strip().splitlines()[-1].startswith("{")
