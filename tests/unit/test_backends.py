"""LLM backends without a model: stop markers, backend specs, and the OpenAI-compatible
backend against the tests' local fake server (retries, Retry-After, errors, timeouts)."""

from __future__ import annotations

import time

import pytest

from scoi.backends.base import BackendError, cut_at_stop
from scoi.backends.loader import load_backend
from tests.helpers.fake_openai import FakeOpenAI, closed_port

# --------------------------------------------------------------------------- cut_at_stop


@pytest.mark.parametrize(
    ("text", "cut", "found"),
    [
        ('\n"Hello."\n###', '\n"Hello."', True),  # leading newline does not stop
        ("  \n\n Hi###x", "  \n\n Hi", True),
        ("Hi", "Hi", False),
        ("\n\n", "\n\n", False),
        ("###", "", True),  # ### as first content counts
        ("a\nb###", "a", True),  # the earliest marker wins
    ],
)
def test_cut_at_stop(text, cut, found):
    assert cut_at_stop(text, ("###", "\n")) == (cut, found)


def test_load_backend_rejects_unknown_specs(tmp_path):
    with pytest.raises(BackendError, match="accepted forms: hf:<hub id"):
        load_backend("llamacpp:model")
    with pytest.raises(BackendError, match="names no model"):
        load_backend("hf:")
    with pytest.raises(BackendError, match="accepted forms"):
        load_backend(str(tmp_path / "nothing-here"))


def test_missing_gguf_file_is_a_clear_error(tmp_path):
    with pytest.raises(BackendError, match=r"GGUF file not found: .*missing\.gguf"):
        load_backend(f"gguf:{tmp_path / 'missing.gguf'}")


# --------------------------------------------------------------------------- OpenAI-compatible


@pytest.fixture()
def openai_env(monkeypatch):
    for name in ("SCOI_OPENAI_BASE_URL", "OPENAI_BASE_URL", "SCOI_OPENAI_API_KEY", "OPENAI_API_KEY",
                 "SCOI_OPENAI_ALLOWED_BASE_URLS"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_openai_retries_then_answers(openai_env):
    failures = [(503, {}), (503, {}), (429, {"Retry-After": "0"})]
    with FakeOpenAI(failures) as server:
        openai_env.setenv("SCOI_OPENAI_BASE_URL", server.url)
        openai_env.setenv("SCOI_OPENAI_API_KEY", "sekret")
        backend = load_backend("openai:tiny-model", base_delay=0.01, concurrency=3)
        assert backend.name == "openai:tiny-model"
        prompts = [f"prompt number {i}" for i in range(4)]
        gens = backend.generate(prompts, max_new_tokens=17)

    assert [g.text for g in gens] == [f'\n"{p[::-1]}"' for p in prompts]  # raw, cut at the stop
    assert [g.prompt_tokens for g in gens] == [len(p) for p in prompts]
    assert backend.retries == 3 and len(server.calls) == 4 + 3
    for call in server.calls:
        assert call["path"] == "/v1/completions"
        assert call["headers"]["Authorization"] == "Bearer sekret"
        body = call["body"]
        assert body["model"] == "tiny-model" and body["temperature"] == 0 and body["max_tokens"] == 17
        assert body["stop"] == ["###"]  # the newline is cut client-side, after the answer


def test_openai_chat_endpoint_without_key(openai_env):
    with FakeOpenAI() as server:
        backend = load_backend("openai-chat:tiny-chat", base_url=server.url)
        gens = backend.generate(["Translate: Bonjour"], stop=("###", "\n"))
    assert backend.name == "openai-chat:tiny-chat"
    assert gens[0].text == "REPLY: Translate: Bonjour"
    assert gens[0].completion_tokens == 2
    (call,) = server.calls
    assert call["path"] == "/v1/chat/completions"
    assert call["body"]["messages"] == [{"role": "user", "content": "Translate: Bonjour"}]
    assert "Authorization" not in call["headers"]


def test_openai_honours_retry_after(openai_env):
    with FakeOpenAI([(429, {"Retry-After": "0.3"})]) as server:
        backend = load_backend("openai:m", base_url=server.url, base_delay=0.01)
        started = time.monotonic()
        backend.generate(["x"])
        assert time.monotonic() - started >= 0.3
    assert len(server.calls) == 2


def test_openai_gives_up_after_max_retries(openai_env):
    with FakeOpenAI(always=500) as server:
        backend = load_backend("openai:m", base_url=server.url, base_delay=0.01, max_retries=2)
        with pytest.raises(BackendError, match=r"after 2 retries.*HTTP 500.*boom, try later"):
            backend.generate(["x"])
    assert len(server.calls) == 3


def test_openai_client_errors_are_not_retried(openai_env):
    with FakeOpenAI(always=404) as server:
        backend = load_backend("openai:m", base_url=server.url, base_delay=0.01)
        with pytest.raises(BackendError, match=r"HTTP 404"):
            backend.generate(["x"])
    assert len(server.calls) == 1


def test_openai_connection_errors_and_timeouts(openai_env):
    backend = load_backend("openai:m", base_url=f"http://127.0.0.1:{closed_port()}/v1",
                           base_delay=0.01, max_retries=1)
    with pytest.raises(BackendError, match="ConnectError"):
        backend.generate(["x"])
    with FakeOpenAI(delay=0.5) as server:
        backend = load_backend("openai:m", base_url=server.url, base_delay=0.01, max_retries=1, timeout=0.1)
        with pytest.raises(BackendError, match="ReadTimeout"):
            backend.generate(["x"])


@pytest.mark.parametrize("text,kind", [(12345, "int"), (["a", "b"], "list"), ({"t": 1}, "dict"), (1.5, "float")])
def test_non_string_model_output_is_one_clear_error(openai_env, text, kind):
    """Reliability case 37: a server answering ``{"choices": [{"text": 12345}]}`` (or a
    list) fails the request with one line, not a TypeError from deep inside."""
    with FakeOpenAI(answer=lambda prompt: text) as server:
        backend = load_backend("openai:m", base_url=server.url, max_retries=0)
        with pytest.raises(BackendError, match=rf"the server returned a non-string text: {kind}$"):
            backend.generate(["x"])


def test_a_null_text_is_an_empty_answer(openai_env):
    with FakeOpenAI(answer=lambda prompt: None) as server:
        assert load_backend("openai:m", base_url=server.url).generate(["x"])[0].text == ""


def test_errors_never_show_a_key_in_the_server_url(openai_env):
    """Errors are stored as items' errors: a base URL from the environment that carries a
    key (user info, query) is shown without it."""
    openai_env.setenv("SCOI_OPENAI_BASE_URL", f"http://KEY123@127.0.0.1:{closed_port()}/v1?api_key=KEY456")
    backend = load_backend("openai:m", base_delay=0.01, max_retries=0)
    with pytest.raises(BackendError) as info:
        backend.generate(["x"])
    assert "127.0.0.1" in str(info.value) and "KEY" not in str(info.value) and "KEY" not in repr(backend)


def test_the_env_key_may_go_only_to_the_base_urls_the_env_names(openai_env):
    from scoi.backends.openai_backend import DEFAULT_BASE_URL, key_allowed

    assert key_allowed(DEFAULT_BASE_URL) and not key_allowed("http://127.0.0.1:18002/v1")
    openai_env.setenv("SCOI_OPENAI_BASE_URL", "https://llm.internal/v1")
    openai_env.setenv("SCOI_OPENAI_ALLOWED_BASE_URLS", " http://127.0.0.1:9/v1/ ,,https://other.example/v1")
    assert key_allowed("HTTPS://LLM.internal/v1/") and key_allowed("http://127.0.0.1:9/v1")
    assert key_allowed("https://other.example/v1")
    assert not key_allowed(DEFAULT_BASE_URL)  # the default is the env's only when it names none
    for url in ("https://llm.internal/v2", "https://llm.internal.evil.example/v1", "http://llm.internal/v1",
                "https://other.example/v1/../../x"):
        assert not key_allowed(url), url


def test_a_job_base_url_the_env_does_not_allow_gets_no_key(openai_env):
    from scoi.backends.openai_backend import OpenAIBackend

    openai_env.setenv("SCOI_OPENAI_API_KEY", "sk-env")
    with FakeOpenAI() as theirs:
        backend = OpenAIBackend("m", base_url=theirs.url, max_retries=0)
        backend.generate(["p"])
        assert backend.key_withheld and "authorization" not in {k.lower() for k in theirs.calls[0]["headers"]}
        openai_env.setenv("SCOI_OPENAI_ALLOWED_BASE_URLS", theirs.url)
        OpenAIBackend("m", base_url=theirs.url, max_retries=0).generate(["p"])
        assert theirs.calls[1]["headers"]["Authorization"] == "Bearer sk-env"


def test_openai_context_counts_with_the_servers_tokenize_route(openai_env):
    with FakeOpenAI(tokenize=lambda prompt: len(prompt.split())) as server:
        backend = load_backend("openai:m", base_url=server.url, context=512)
        assert backend.context_length == 512
        assert backend.count_tokens("un deux trois") == 3
        assert [c["path"] for c in server.calls] == ["/tokenize"]


def test_openai_context_without_tokenize_route_bounds_by_utf8_bytes(openai_env):
    with FakeOpenAI() as server:  # /tokenize: 404
        backend = load_backend("openai:m", base_url=server.url, context=512)
        assert backend.count_tokens("été") == 6  # 5 bytes + a BOS: never fewer than the model's tokens
        assert backend.count_tokens("abc") == 4
        assert len(server.calls) == 1  # the missing route is asked once
    assert load_backend("openai:m", base_url=server.url).context_length is None
