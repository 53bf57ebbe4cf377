"""Job settings are declared once, by ``JobSpec`` (scoi/jobs/spec.py): the CLI's job options
(scoi/cli/job_options.py) and the service's ``JobRequest`` are checked against it here, so a
new setting or a changed default cannot reach one of them and miss another."""

from __future__ import annotations

import inspect
from dataclasses import MISSING, fields

import pytest
from pydantic_core import PydanticUndefined

from scoi.cli.job_options import JobOptions, job_options
from scoi.jobs.spec import JobSpec
from scoi.service.config import ModelConfig
from scoi.service.models import JobRequest

SPEC = {f.name: f for f in fields(JobSpec)}
#: CLI option -> JobSpec field, where the CLI takes the raw repeated option.
CLI_NAMES = {"corpus": "corpora", "backend_opt": "backend_options", "parser": "parsers"}
#: JobSpec fields no job option sets: the job's name is each command's own argument, and a
#: template file's text is read from --template's file at submit.
NOT_OPTIONS = {"name", "template_text", "ctq_train"}  # ctq_train: set by `scoi ctq train`
#: JobRequest fields that are inputs, not settings.
INPUTS = {"sentences", "references"}
REQUIRED = object()


def spec_default(name: str) -> object:
    f = SPEC[name]
    if f.default is not MISSING:
        return f.default
    return f.default_factory() if f.default_factory is not MISSING else REQUIRED


def test_every_job_setting_but_the_name_and_template_text_is_a_cli_option() -> None:
    options = {CLI_NAMES.get(f.name, f.name) for f in fields(JobOptions)}
    assert options == set(SPEC) - NOT_OPTIONS


@pytest.mark.parametrize("name", [f.name for f in fields(JobOptions)])
def test_each_cli_job_option_defaults_to_the_specs_default(name: str) -> None:
    command = job_options()(lambda opts: opts)
    option = inspect.signature(command).parameters[name].default  # the typer.Option
    spec_name = CLI_NAMES.get(name, name)
    if spec_default(spec_name) is REQUIRED:
        assert option.default is ...  # required on the command line too
    elif name in CLI_NAMES or spec_name == "where":
        assert not option.default and not spec_default(spec_name)  # nothing given: none
    else:
        assert option.default == spec_default(spec_name)


def test_cli_options_left_at_their_defaults_make_the_default_job() -> None:
    assert JobOptions(src="fr", tgt="en", model="m").spec() == JobSpec(src="fr", tgt="en", model="m")


def test_each_job_request_setting_is_a_spec_setting_with_the_same_default() -> None:
    settings = set(JobRequest.model_fields) - INPUTS
    assert settings <= set(SPEC), settings - set(SPEC)
    for name in settings:
        declared = JobRequest.model_fields[name].default
        expected = spec_default(name)
        assert (declared is PydanticUndefined) == (expected is REQUIRED), name
        if expected is not REQUIRED:
            assert declared == expected, name


def test_a_job_request_carries_every_setting_into_its_job() -> None:
    chosen = {"name": "nightly", "method": "bm25", "k": 2, "template": "alpaca", "order": "selection",
              "max_new_tokens": 64, "reuse": "off", "where": {"domain": "legal"}, "glossary": "terms",
              "min_match": 70.0}
    assert set(chosen) == set(JobRequest.model_fields) - INPUTS - {"src", "tgt", "model"}  # every choice tried
    body = JobRequest(sentences=["Bonjour."], src="fr", tgt="en", model="local", **chosen)
    spec = body.spec(ModelConfig("local", "openai:qwen", {"base_url": "http://127.0.0.1:8000/v1"}))
    assert spec == JobSpec(src="fr", tgt="en", model="openai:qwen",
                           backend_options={"base_url": "http://127.0.0.1:8000/v1"}, **chosen)
