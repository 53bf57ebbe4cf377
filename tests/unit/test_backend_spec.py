"""The pure backend-spec parser (scoi.backends.spec): what ``job submit`` accepts is what
``load_backend`` loads, read by the same functions, without torch or transformers.
Numbers in test names are those of the reliability run of 2026-11-24."""

from __future__ import annotations

import subprocess
import sys

import pytest

from scoi.backends.base import BackendError
from scoi.backends.loader import load_backend
from scoi.backends.spec import BackendSpec, BackendSpecError, check_backend, check_options, parse_spec


@pytest.mark.parametrize("spec,kind,target", [
    ("gguf:/models/m.gguf", "gguf", "/models/m.gguf"),
    ("hf:google/gemma-3-270m", "hf", "google/gemma-3-270m"),
    ("openai:fake", "openai", "fake"),
    ("openai-chat: llama ", "openai-chat", "llama"),
    ("openai:[m]", "openai", "[m]"),
])
def test_accepted_forms(spec, kind, target):
    assert parse_spec(spec) == BackendSpec(kind, target)


def test_bare_paths_must_exist(tmp_path):
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF")
    assert parse_spec(str(model)) == BackendSpec("gguf", str(model))
    assert parse_spec(str(tmp_path)) == BackendSpec("hf", str(tmp_path))


@pytest.mark.parametrize("spec,message", [
    ("nonsense", "cannot make a backend from 'nonsense'"),
    ("ggfu:x", "unknown backend kind 'ggfu' in 'ggfu:x' (did you mean gguf:?)"),
    ("llamacpp:model", "unknown backend kind 'llamacpp'"),
    ("hf:", "names no model"),
    ("openai:  ", "names no model"),
    ("", "is empty"),
    ("openai:a\x1bb", "control characters"),
])
def test_bad_specs_are_one_line(spec, message):
    with pytest.raises(BackendSpecError, match="accepted forms") as info:
        parse_spec(spec)
    assert message in str(info.value) and "\n" not in str(info.value)


@pytest.mark.parametrize("spec,options,message", [
    ("openai:m", {"pwd": "x"}, "unknown backend option 'pwd' for openai; accepted: base_delay, base_url"),
    ("openai:m", {"concurency": 2}, "unknown backend option 'concurency' for openai (did you mean 'concurrency'?)"),
    ("hf:x", {"concurrency": 2}, "unknown backend option 'concurrency' for hf"),
    ("gguf:x.gguf", {"base_url": "http://h/v1"}, "unknown backend option 'base_url' for gguf"),
    ("openai:m", {"concurrency": 0}, "'concurrency' of the openai backend must be an integer from 1 to 1024, not 0"),
    ("openai:m", {"concurrency": "4"}, "must be an integer from 1 to 1024, not str"),
    ("openai:m", {"max_retries": True}, "must be an integer"),
    ("openai:m", {"timeout": -1}, "'timeout' of the openai backend must be a number"),
    ("openai:m", {"extra_body": [1]}, "'extra_body' of the openai backend must be a JSON object, not list"),
    ("hf:x", {"dtype": "float8"}, "must be one of float32, bfloat16"),
    ("hf:x", {"batch_size": 10**9}, "must be an integer from 1 to 4096"),
])
def test_unknown_or_bad_options_are_one_line(spec, options, message):
    with pytest.raises(BackendSpecError) as info:
        check_backend(spec, options)
    assert message in str(info.value), str(info.value)


def test_good_options_pass():
    check_options(parse_spec("openai:m"), {"base_url": "http://h/v1", "timeout": 5, "max_retries": 0,
                                           "base_delay": 0.01, "concurrency": 3, "extra_body": {"top_k": 1}})
    check_options(parse_spec("hf:x"), {"batch_size": 4, "dtype": "bfloat16", "threads": None,
                                       "trust_remote_code": False, "device": "cpu"})


def test_the_loader_reads_specs_and_options_as_submit_does():
    """load_backend refuses exactly what check_backend refuses, with the same words."""
    for spec, options in (("nonsense", {}), ("ggfu:x", {}), ("openai:m", {"pwd": "x"}),
                          ("openai:m", {"concurency": 2})):
        with pytest.raises(BackendSpecError) as parsed:
            check_backend(spec, options)
        with pytest.raises(BackendError) as loaded:
            load_backend(spec, **options)
        assert str(loaded.value) == str(parsed.value)


def test_the_parser_imports_no_model_library():
    code = ("import sys, scoi.backends.spec as s; s.check_backend('hf:x', {'batch_size': 2}); "
            "print(sorted(m for m in ('torch', 'transformers', 'httpx') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_an_option_that_runs_code_is_refused_in_stored_settings_only():
    """trust_remote_code runs the model directory's Python: an operator's own setting
    (``scoi serve --backend-opt``) may hold it, a job's or schedule's never."""
    hf = parse_spec("hf:/models/m")
    check_options(hf, {"trust_remote_code": True})
    with pytest.raises(BackendSpecError, match="runs code from the model's files.*SCOI_TRUST_REMOTE_CODE=1"):
        check_options(hf, {"trust_remote_code": False}, stored=True)
    with pytest.raises(BackendSpecError) as refused:
        check_options(hf, {"trust_remote_cod": True}, stored=True)
    assert "trust_remote_code" not in str(refused.value).split("accepted:")[1]  # not offered to a job
