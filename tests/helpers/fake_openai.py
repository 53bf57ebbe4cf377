"""The one fake OpenAI-compatible server of the tests: a real HTTP server on 127.0.0.1
(no mocked client), scripted to fail, to be slow, or to answer in a chosen way."""

from __future__ import annotations

import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable


def closed_port() -> int:
    """A localhost port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def echo_reversed(prompt: str) -> str:
    """The default /completions text: a leading newline, the answer, then a stop marker
    and more text, as a base model writes it."""
    return f'\n"{prompt[::-1]}"\n###\nmore text'


def ok_length(prompt: str) -> str:
    """``"ok <prompt length>"`` on its own line: cheap, and checkable from the prompt."""
    return f' "ok {len(prompt)}"\n'


class FakeOpenAI:
    """An OpenAI-compatible server on 127.0.0.1:``port`` (0: any free port) that fails as
    scripted, then answers.

    ``failures`` are (status, headers) served to the first calls in turn; ``always`` makes
    every call fail with that status; ``delay`` sleeps before answering; ``answer`` turns
    a /completions prompt into its text; ``tokenize`` counts a prompt's tokens at ``/tokenize``
    (as llama.cpp and vLLM serve it; without it that route is a 404). Requests are kept in
    ``calls``."""

    def __init__(self, failures=(), always: int | None = None, delay: float = 0.0, *, port: int = 0,
                 answer: Callable[[str], str] = echo_reversed,
                 tokenize: Callable[[str], int] | None = None) -> None:
        self.failures = list(failures)
        self.always = always
        self.delay = delay
        self.calls: list[dict] = []
        self.lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep test output clean
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with fake.lock:
                    fake.calls.append({"path": self.path, "headers": dict(self.headers), "body": body})
                    failure = fake.failures.pop(0) if fake.failures else None
                if fake.delay:
                    time.sleep(fake.delay)
                if fake.always is not None:
                    failure = (fake.always, {})
                if failure:
                    status, headers = failure
                    self._send(status, {"error": {"message": "boom, try later"}}, headers)
                elif self.path.endswith("/chat/completions"):
                    content = "REPLY: " + body["messages"][0]["content"]
                    self._send(200, {"choices": [{"message": {"role": "assistant", "content": content}}],
                                     "usage": {"prompt_tokens": 5, "completion_tokens": 2}})
                elif self.path == "/tokenize" and tokenize is not None:
                    self._send(200, {"count": tokenize(body["prompt"])})
                elif self.path.endswith("/completions"):
                    self._send(200, {"choices": [{"text": answer(body["prompt"])}],
                                     "usage": {"prompt_tokens": len(body["prompt"]), "completion_tokens": 9}})
                else:
                    self._send(404, {"error": "no such route"})

            def _send(self, status, payload, headers=None):
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> "FakeOpenAI":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
