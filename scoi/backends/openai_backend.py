"""Generation through an OpenAI-compatible HTTP server (vLLM, llama.cpp, TGI, OpenAI...).

Requests are sent ``concurrency`` at a time from a thread pool; transient failures (429,
5xx, connection errors and timeouts) are retried by tenacity with exponential backoff and
jitter, honouring ``Retry-After``. Anything else, or a failure that outlasts the retries,
raises BackendError with the status and the start of the response body.

Stop strings: only those that are not pure whitespace are sent to the server. A server
applies ``stop`` from the first generated character, so a ``"\\n"`` stop would end the
answer of a model that starts with a newline (docs/method.md §6) before it began; the newline cut
is applied here instead, after the answer's first non-whitespace character.

Context: the server does not say how long a prompt may be, so the ``context`` option gives
it (the model's context length in tokens); prompts are then counted with the server's
``/tokenize`` (llama.cpp and vLLM serve one beside ``/v1``), or, where it has none, bounded
by their UTF-8 bytes + 1 (no tokenizer makes more tokens than bytes, plus a BOS).
"""

from __future__ import annotations

import email.utils
import random
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Sequence
from urllib.parse import urlsplit, urlunsplit

from tenacity import RetryCallState, Retrying, retry_if_exception_type, stop_after_attempt, wait_exponential

from scoi.config import (ENV_OPENAI_ALLOWED_BASE_URLS, ENV_OPENAI_BASE_URL, openai_allowed_base_urls, openai_api_key,
                         openai_base_url)
from scoi.core.prompt import DEFAULT_STOP_MARKERS
from scoi.secrets import redact_url

from .base import BackendError, Generation, cut_at_stop

__all__ = ["OpenAIBackend", "DEFAULT_BASE_URL", "key_allowed"]

DEFAULT_BASE_URL = "http://127.0.0.1:8000/v1"
RETRY_STATUSES = frozenset({408, 409, 425, 429}) | frozenset(range(500, 600))
MAX_SERVER_STOPS = 4  # the OpenAI API accepts at most four stop sequences
BODY_EXCERPT = 300


class _Transient(Exception):
    """A failure worth retrying: what went wrong, and the server's Retry-After if any."""

    def __init__(self, problem: str, retry_after: float | None = None) -> None:
        super().__init__(problem)
        self.problem = problem
        self.retry_after = retry_after


class OpenAIBackend:
    """``/completions`` (or ``/chat/completions`` with ``chat=True``, the prompt as one
    user message) at temperature 0.

    ``base_url`` defaults to ``$SCOI_OPENAI_BASE_URL``, ``$OPENAI_BASE_URL`` or
    http://127.0.0.1:8000/v1; ``api_key`` to ``$SCOI_OPENAI_API_KEY`` or
    ``$OPENAI_API_KEY`` (no Authorization header without one), sent only when ``base_url``
    is the environment's or one of ``$SCOI_OPENAI_ALLOWED_BASE_URLS`` (:func:`key_allowed`).
    ``max_retries`` counts retries after the first attempt; the n-th retry waits about
    ``base_delay * 2**n`` seconds (at most ``max_delay``, with jitter) unless the server
    sends Retry-After.
    """

    def __init__(
        self,
        model: str,
        *,
        chat: bool = False,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = 60.0,
        max_retries: int = 5,
        base_delay: float = 1.0,
        max_delay: float = 60.0,
        concurrency: int = 4,
        extra_body: dict[str, Any] | None = None,
        name: str | None = None,
        context: int | None = None,
    ) -> None:
        import httpx

        if concurrency < 1:
            raise BackendError(f"concurrency must be at least 1, not {concurrency}")
        if max_retries < 0:
            raise BackendError(f"max_retries must be 0 or more, not {max_retries}")
        self.model = model
        self.chat = chat
        self.name = name or f"{'openai-chat' if chat else 'openai'}:{model}"
        self.base_url = (base_url or openai_base_url() or DEFAULT_BASE_URL).rstrip("/")
        # What messages (stored as items' errors) show: no user info or query, where a URL
        # from the environment may carry a key.
        self.shown_url = redact_url(self.base_url)
        # The environment's key goes only where the environment says (its base URL, the
        # allow-list): a job's stored base_url is the submitter's choice, not the key owner's.
        env_key = openai_api_key()
        self.key_withheld = api_key is None and env_key is not None and not key_allowed(self.base_url)
        key = api_key if api_key is not None else (None if self.key_withheld else env_key)
        self.timeout = timeout
        self.max_retries = max_retries
        self.base_delay = base_delay
        self.max_delay = max_delay
        self.concurrency = concurrency
        self.extra_body = dict(extra_body or {})
        self.retries = 0  # retries made so far, for logs and tests
        #: the model's context length in tokens (the ``context`` option), None: unknown
        self.context_length = context
        self._tokenize: bool | None = None  # whether the server's /tokenize answers (None: not tried)
        self._lock = threading.Lock()
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        self._client = httpx.Client(
            base_url=self.base_url,
            headers=headers,
            timeout=httpx.Timeout(timeout),
            limits=httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency),
        )

    # -- public ----------------------------------------------------------------------------

    def generate(
        self,
        prompts: Sequence[str],
        *,
        max_new_tokens: int = 128,
        stop: Sequence[str] = DEFAULT_STOP_MARKERS,
    ) -> list[Generation]:
        """One request per prompt, up to ``concurrency`` in flight; results in order."""
        prompts = list(prompts)
        if not prompts:
            return []
        stop = tuple(stop)
        if len(prompts) == 1 or self.concurrency == 1:
            return [self._one(p, max_new_tokens, stop) for p in prompts]
        with ThreadPoolExecutor(max_workers=min(self.concurrency, len(prompts))) as pool:
            return list(pool.map(lambda p: self._one(p, max_new_tokens, stop), prompts))

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text``: the server's ``/tokenize`` count, or, when the server has no
        such route, UTF-8 bytes + 1, an upper bound (so a prompt counted to fit does fit)."""
        if self._tokenize is not False:
            count = self._server_count(text)
            self._tokenize = count is not None
            if count is not None:
                return count
        return len(text.encode("utf-8")) + 1

    def _server_count(self, text: str) -> int | None:
        """``/tokenize`` at the server's root (llama.cpp reads ``content``, vLLM ``prompt``),
        or None when it does not answer with a count."""
        import httpx

        root = self.base_url[: -len("/v1")] if self.base_url.endswith("/v1") else self.base_url
        try:
            response = self._client.post(f"{root}/tokenize", json={"model": self.model, "prompt": text,
                                                                   "content": text})
            data = response.json() if response.status_code == 200 else None
        except (httpx.HTTPError, ValueError):
            return None
        if isinstance(data, dict):
            if isinstance(data.get("count"), int):
                return data["count"]
            if isinstance(data.get("tokens"), list):
                return len(data["tokens"])
        return None

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> "OpenAIBackend":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"OpenAIBackend({self.name!r}, base_url={self.shown_url!r})"

    # -- one request -----------------------------------------------------------------------

    def _payload(self, prompt: str, max_new_tokens: int, stop: tuple[str, ...]) -> tuple[str, dict[str, Any]]:
        body: dict[str, Any] = {"model": self.model, "max_tokens": max_new_tokens, "temperature": 0}
        server_stop = [s for s in stop if s.strip()][:MAX_SERVER_STOPS]
        if server_stop:
            body["stop"] = server_stop
        if self.chat:
            body["messages"] = [{"role": "user", "content": prompt}]
            path = "/chat/completions"
        else:
            body["prompt"] = prompt
            path = "/completions"
        body.update(self.extra_body)
        return path, body

    def _one(self, prompt: str, max_new_tokens: int, stop: tuple[str, ...]) -> Generation:
        path, body = self._payload(prompt, max_new_tokens, stop)
        started = time.perf_counter()
        data = self._post(path, body)
        seconds = time.perf_counter() - started
        try:
            choice = data["choices"][0]
            text = choice["message"]["content"] if self.chat else choice["text"]
        except (KeyError, IndexError, TypeError):
            raise BackendError(
                f"unexpected response from {self.shown_url}{path}: {str(data)[:BODY_EXCERPT]}"
            ) from None
        if text is None:  # a chat message without content (e.g. a refusal): an empty answer
            text = ""
        if not isinstance(text, str):  # a number or a list: not a translation, and not ours to guess
            raise BackendError(f"{self.shown_url}{path}: the server returned a non-string text: "
                               f"{type(text).__name__}")
        usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
        return Generation(
            text=cut_at_stop(text, stop)[0],
            seconds=seconds,
            prompt_tokens=_count(usage.get("prompt_tokens")),
            completion_tokens=_count(usage.get("completion_tokens")),
        )

    def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        """POST with retries of transient failures; the final error names the last one."""
        retrying = Retrying(retry=retry_if_exception_type(_Transient), stop=stop_after_attempt(self.max_retries + 1),
                            wait=self._wait, before_sleep=self._count_retry, reraise=True)
        try:
            return retrying(self._post_once, path, body)
        except _Transient as exc:
            raise BackendError(f"{self.shown_url}{path} still failing after {self.max_retries} retries; "
                               f"last: {exc.problem}") from None

    def _post_once(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        import httpx

        url = f"{self.shown_url}{path}"
        try:
            response = self._client.post(path, json=body)
        except httpx.TransportError as exc:  # connection refused, timeouts, resets
            raise _Transient(f"{type(exc).__name__}: {exc}") from None
        if response.status_code >= 400:
            problem = f"HTTP {response.status_code}: {response.text[:BODY_EXCERPT]!r}"
            if response.status_code in (401, 403) and self.key_withheld:
                problem += (f" (this worker sends its API key only to {ENV_OPENAI_BASE_URL[0]} and "
                            f"{ENV_OPENAI_ALLOWED_BASE_URLS}; this base URL is in neither)")
            if response.status_code not in RETRY_STATUSES:
                raise BackendError(f"{url} failed with {problem}")
            raise _Transient(problem, _retry_after(response.headers.get("retry-after")))
        try:
            return response.json()
        except ValueError:
            raise BackendError(f"{url} answered {response.status_code} with a body that is not JSON: "
                               f"{response.text[:BODY_EXCERPT]!r}") from None

    def _wait(self, state: RetryCallState) -> float:
        """The server's Retry-After (capped at ``max_delay``), else exponential backoff
        (``base_delay * 2**n``, at most ``max_delay``) with jitter that keeps parallel
        workers apart."""
        exc = state.outcome.exception() if state.outcome else None
        if isinstance(exc, _Transient) and exc.retry_after is not None:
            return min(exc.retry_after, max(self.max_delay, 0.0))
        ceiling = wait_exponential(multiplier=self.base_delay, max=self.max_delay)(state)
        return ceiling * random.uniform(0.5, 1.0)

    def _count_retry(self, state: RetryCallState) -> None:
        with self._lock:
            self.retries += 1


def _normal_url(url: str) -> str:
    """A base URL as compared with the allow-list: scheme and host lower-case, no trailing slash."""
    parts = urlsplit(url.strip())
    return urlunsplit((parts.scheme.lower(), parts.netloc.lower(), parts.path.rstrip("/"), parts.query, ""))


def key_allowed(base_url: str) -> bool:
    """Whether the environment's API key may be sent to ``base_url``: the environment's base
    URL (default: DEFAULT_BASE_URL) or one of ``SCOI_OPENAI_ALLOWED_BASE_URLS``."""
    allowed = {_normal_url(u) for u in (openai_base_url() or DEFAULT_BASE_URL, *openai_allowed_base_urls())}
    return _normal_url(base_url) in allowed


def _count(value: Any) -> int | None:
    """A token count from the server's ``usage``, or None when it sent something else."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _retry_after(value: str | None) -> float | None:
    """Seconds to wait from a Retry-After header (delta-seconds or an HTTP date)."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - time.time())
