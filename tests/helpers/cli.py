"""Running the ``scoi`` command: in this process (typer's CliRunner; spaCy and the
parsers are imported once per session) or as a real subprocess, the way a user runs it
(for exit codes, signals, ``kill -9`` and a fresh process's start-up)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from typing import Any


def ctrl_c_as_in_a_terminal() -> None:
    """``preexec_fn`` of a subprocess a test stops with Ctrl-C (SIGINT): its default
    action, as a shell gives it. A test run started in the background (``cmd &`` without
    job control, nohup) passes SIGINT on as ignored, and Python then never raises
    KeyboardInterrupt: the test would check how it was launched, not scoi."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def scoi_env(db_url: str, **extra: str) -> dict[str, str]:
    """Environment for running the ``scoi`` CLI as a subprocess against ``db_url``."""
    env = dict(os.environ)
    env["SCOI_DATABASE_URL"] = db_url
    env.update(extra)
    return env


def run_scoi(args: list[str], db_url: str, *, check: bool = False, timeout: float = 300,
             **kwargs) -> subprocess.CompletedProcess:
    """Run ``python -m scoi.cli.main ARGS`` in a new process, the way a user runs ``scoi``."""
    proc = subprocess.run([sys.executable, "-m", "scoi.cli.main", *args], env=scoi_env(db_url),
                          capture_output=True, text=True, timeout=timeout, **kwargs)
    if check and proc.returncode != 0:
        raise AssertionError(f"scoi {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc


def cli(args: list[str], db_url: str):
    """Run the ``scoi`` CLI in this process (typer's CliRunner): exit code, stdout and stderr
    as a user sees them, without paying spaCy's import for every run. An exception other
    than the command's own exit is raised here (a user would have seen a traceback)."""
    from typer.testing import CliRunner

    from scoi.cli.main import app

    result = CliRunner().invoke(app, args, env={"SCOI_DATABASE_URL": db_url, "SCOI_PARSERS": ""})
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result


def cli_json(args: list[str], db_url: str) -> dict:
    """``scoi ARGS --json`` in process; the last line of stdout is one JSON object."""
    result = cli([*args, "--json"], db_url)
    assert result.exit_code == 0, f"scoi {args} failed ({result.exit_code}):\n{result.stdout}\n{result.stderr}"
    return last_json(result)


def last_json(out: Any, *, ok: bool = True) -> Any:
    """The JSON value on the last line of a ``--json`` command's stdout (its summary).

    ``out``: a CompletedProcess, a CliRunner result, or the stdout text; with ``ok`` the
    command must have exited 0 (the message shows what it printed)."""
    if isinstance(out, str):
        text = out
    else:
        text = out.stdout
        code = getattr(out, "returncode", getattr(out, "exit_code", 0))
        assert not ok or code == 0, f"exit {code}\nstdout:\n{out.stdout}\nstderr:\n{out.stderr}"
    return json.loads(text.strip().splitlines()[-1])


def scoi_cli(args: list[str], url: str) -> subprocess.CompletedProcess:
    """``scoi ARGS`` in this process, returned as ``run_scoi`` returns it (exit code,
    stdout, stderr): for tests where a separate process is not the point."""
    result = cli(args, url)
    return subprocess.CompletedProcess(args, result.exit_code, result.stdout, result.stderr)


def refused(proc: subprocess.CompletedProcess, *words: str) -> str:
    """The command failed (exit 1) with exactly one line on stderr, no traceback, holding
    every one of ``words``; that line."""
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    for w in words:
        assert w in lines[0], lines[0]
    return lines[0]
