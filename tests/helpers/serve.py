"""``scoi serve`` as a user starts it: a real process on a free localhost port."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time

import httpx

from tests.helpers.cli import ctrl_c_as_in_a_terminal


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_serve(port: int, env: dict[str, str], *args: str, wait_s: float = 180) -> subprocess.Popen:
    """``scoi serve --port PORT ARGS``, returned once it answers /api/health."""
    proc = subprocess.Popen([sys.executable, "-m", "scoi.cli.main", "serve", "--port", str(port), *args],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            preexec_fn=ctrl_c_as_in_a_terminal)  # stop_serve's Ctrl-C
    deadline = time.monotonic() + wait_s
    while True:
        assert proc.poll() is None, proc.stdout.read()
        try:
            if httpx.get(f"http://127.0.0.1:{port}/api/health", timeout=2).status_code == 200:
                return proc
        except httpx.TransportError:
            pass
        assert time.monotonic() < deadline, "scoi serve did not answer"
        time.sleep(0.2)


def stop_serve(proc: subprocess.Popen) -> str:
    """Ctrl-C, as a user stops it; what it printed."""
    proc.send_signal(signal.SIGINT)
    try:
        out, _ = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
    return out
