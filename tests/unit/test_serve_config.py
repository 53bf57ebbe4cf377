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
    ServeConfig(url="postgresql:///x", host=host, token="t0k").check()


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
