"""``scoi serve``'s configuration: the token rule and the --model / --backend-opt options."""

from __future__ import annotations

import pytest

from scoi.service.config import ConfigError, ServeConfig, is_loopback, parse_models


@pytest.mark.parametrize("host", ["127.0.0.1", "127.1.2.3", "::1", "localhost"])
def test_loopback_needs_no_token(host):
    assert is_loopback(host)
    ServeConfig(url="postgresql:///x", host=host).check()


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.5", "example.org"])
def test_other_hosts_need_a_token(host):
    assert not is_loopback(host)
    with pytest.raises(ConfigError, match="SCOI_SERVE_TOKEN"):
        ServeConfig(url="postgresql:///x", host=host).check()
    ServeConfig(url="postgresql:///x", host=host, token="t0k-0123456789abcdef").check()


def test_token_comes_from_the_environment(monkeypatch):
    from scoi.service.config import token_from_env

    monkeypatch.setenv("SCOI_SERVE_TOKEN", "")
    assert token_from_env() is None
    monkeypatch.setenv("SCOI_SERVE_TOKEN", "abc")
    assert token_from_env() == "abc"


def test_parse_models():
    models = parse_models(["gemma=gguf:/m/g.gguf", "local=openai:qwen"],
                          ["local:base_url=http://h:1/v1", "local:max_retries=2"])
    assert models["gemma"].spec == "gguf:/m/g.gguf" and models["gemma"].options == {}
    assert models["local"].options == {"base_url": "http://h:1/v1", "max_retries": 2}
    for bad in (["=x"], ["a b=x"], ["a"], ["a="], ["a=x", "a=y"]):
        with pytest.raises(ConfigError):
            parse_models(bad, [])
    with pytest.raises(ConfigError, match="no --model named"):
        parse_models([], ["x:k=v"])
    with pytest.raises(ConfigError, match="NAME:KEY=VALUE"):
        parse_models(["x=openai:m"], ["x=1"])


@pytest.mark.parametrize("token", [" ", "a", "\t", "é", "tok 0123456789abcdef", "0123456789abcde", "émoji-0123456789ab"])
def test_weak_or_unsendable_tokens_are_refused(token):
    with pytest.raises(ConfigError, match="SCOI_SERVE_TOKEN") as refused:
        ServeConfig(url="postgresql:///x", host="0.0.0.0", token=token).check()
    assert len(token.strip()) < 3 or token not in str(refused.value)  # the token is never echoed
    with pytest.raises(ConfigError):  # on loopback too: a token that is set is used
        ServeConfig(url="postgresql:///x", token=token).check()


@pytest.mark.parametrize("token", ["0123456789abcdef", "Zm9vYmFyYmF6cXV4MTIz==", "a.b_c~d+e/f-0123456789"])
def test_bearer_tokens_of_sixteen_characters_or_more_are_taken(token):
    ServeConfig(url="postgresql:///x", host="0.0.0.0", token=token).check()


@pytest.mark.parametrize("models,options,words", [
    (["bad=nonsense"], [], ["--model bad:", "cannot make a backend from 'nonsense'"]),
    (["f=openai:a"], ["f:concurency=2"], ["--model f:", "unknown backend option 'concurency'",
                                          "did you mean 'concurrency'"]),
    (["f=gguf:/nonexistent/model.gguf"], [], ["--model f:", "GGUF file not found: /nonexistent/model.gguf"]),
    (["h=hf:/nonexistent/model-dir"], [], ["--model h:", "model directory not found"]),
    (["f=openai:a"], ["f:max_retries=-1"], ["--model f:", "max_retries"]),
])
def test_model_specs_and_options_are_checked_at_start(models, options, words):
    config = ServeConfig(url="postgresql:///x", models=parse_models(models, options))
    with pytest.raises(ConfigError) as refused:
        config.check()
    for word in words:
        assert word in str(refused.value)
    assert "\n" not in str(refused.value)


def test_remote_and_hub_models_are_taken_at_start():
    ServeConfig(url="postgresql:///x", models=parse_models(
        ["o=openai:qwen", "c=openai-chat:qwen", "hub=hf:org/model"], ["o:base_url=http://127.0.0.1:1/v1"])).check()
