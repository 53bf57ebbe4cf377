"""Backend specs and options, read without loading anything (no torch, no transformers, no httpx).

``scoi job submit``, ``schedule add`` and ``experiment run`` check ``--model`` and
``--backend-opt`` here before anything is stored, and :func:`scoi.backends.loader.load_backend`
reads them through the same functions, so what submit accepts is what a worker can load.

Spec forms::

    hf:<hub id or local directory>      transformers, local weights
    gguf:<path to a .gguf file>         transformers, weights dequantised from GGUF
    openai:<model>                      OpenAI-compatible /completions endpoint
    openai-chat:<model>                 OpenAI-compatible /chat/completions endpoint
    <existing .gguf file> | <existing directory>   shorthand for gguf: / hf:
"""

from __future__ import annotations

import difflib
import math
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from scoi.config import ENV_TRUST_REMOTE_CODE

__all__ = ["ACCEPTED_FORMS", "KINDS", "OPTIONS", "BackendSpec", "BackendSpecError", "check_backend", "check_options",
           "parse_spec"]

KINDS = ("hf", "gguf", "openai", "openai-chat")
ACCEPTED_FORMS = (
    "hf:<hub id or local model directory>, gguf:<path to .gguf file>, "
    "openai:<model> (OpenAI-compatible /completions), openai-chat:<model> "
    "(/chat/completions), or a bare path to an existing .gguf file or model directory"
)


class BackendSpecError(ValueError):
    """A backend spec or option that no backend accepts (one line, what was expected)."""


@dataclass(frozen=True)
class BackendSpec:
    """``kind`` (one of KINDS) and ``target``: hub id or directory (hf), .gguf path (gguf),
    model name (openai, openai-chat)."""

    kind: str
    target: str

    @property
    def family(self) -> str:
        """Which constructor takes the options: ``transformers`` or ``openai``."""
        return "openai" if self.kind.startswith("openai") else "transformers"


@dataclass(frozen=True)
class Option:
    """One constructor argument a user may set: its JSON type and accepted range/values."""

    kind: type | tuple[type, ...]
    low: float | None = None
    high: float | None = None
    choices: tuple[str, ...] | None = None
    nullable: bool = False
    secret: bool = False  # taken from Python code, never from stored settings (not listed)
    #: Runs code from the model's files: a worker's own setting (SCOI_TRUST_REMOTE_CODE, ``scoi
    #: worker --trust-remote-code``) or an operator's (``scoi serve``), never a stored job's.
    runs_code: bool = False

    def describe(self) -> str:
        if self.choices:
            return "one of " + ", ".join(self.choices)
        name = {bool: "true or false", int: "an integer", float: "a number", str: "a string",
                dict: "a JSON object"}.get(self.kind if isinstance(self.kind, type) else float, "a value")
        if self.low is not None and self.high is not None:
            name += f" from {self.low:g} to {self.high:g}"
        return name


_NUMBER = (int, float)
#: The options each backend family's constructor takes (TransformersBackend, OpenAIBackend).
OPTIONS: dict[str, dict[str, Option]] = {
    "transformers": {
        "batch_size": Option(int, 1, 4096),
        "dtype": Option(str, choices=("float32", "bfloat16", "float16", "float64", "auto")),
        "device": Option(str),
        "threads": Option(int, 1, 1024, nullable=True),
        "trust_remote_code": Option(bool, runs_code=True),
        "name": Option(str),
    },
    "openai": {
        "base_url": Option(str),
        "api_key": Option(str, secret=True),  # never stored (scoi.secrets): the environment's
        "timeout": Option(_NUMBER, 0.001, 86400),
        "max_retries": Option(int, 0, 100),
        "base_delay": Option(_NUMBER, 0, 3600),
        "max_delay": Option(_NUMBER, 0, 86400),
        "concurrency": Option(int, 1, 1024),
        "extra_body": Option(dict),
        "name": Option(str),
        "context": Option(int, 1, 10_000_000, nullable=True),  # the model's context length in tokens
    },
}


def _has_control(text: str) -> bool:
    return any(unicodedata.category(c) in ("Cc", "Cs") for c in text)


def parse_spec(spec: str) -> BackendSpec:
    """The backend ``spec`` names (forms in the module docstring), or BackendSpecError.

    An explicit ``kind:`` is taken as it is (the file or model may live on the workers'
    machines only); a bare spec must be an existing .gguf file or directory here."""
    if not isinstance(spec, str) or _has_control(spec):
        raise BackendSpecError(f"backend spec {spec!r} holds control characters; accepted forms: {ACCEPTED_FORMS}")
    text = spec.strip()
    if not text:
        raise BackendSpecError(f"the backend spec is empty; accepted forms: {ACCEPTED_FORMS}")
    kind, sep, rest = text.partition(":")
    if sep and kind in KINDS:
        rest = rest.strip()
        if not rest:
            raise BackendSpecError(f"backend spec {spec!r} names no model; accepted forms: {ACCEPTED_FORMS}")
        return BackendSpec(kind, rest)
    path = Path(text).expanduser()
    try:
        if path.is_file() and path.suffix.lower() == ".gguf":
            return BackendSpec("gguf", text)
        if path.is_dir():
            return BackendSpec("hf", text)
    except (OSError, ValueError):  # a name too long for a path, a NUL
        pass
    if sep and kind.replace("-", "").replace("_", "").isalnum() and "/" not in kind:
        close = difflib.get_close_matches(kind, KINDS, n=1)
        hint = f" (did you mean {close[0]}:?)" if close else ""
        raise BackendSpecError(f"unknown backend kind {kind!r} in {spec!r}{hint}; accepted forms: {ACCEPTED_FORMS}")
    raise BackendSpecError(f"cannot make a backend from {spec!r}: not a known kind, nor an existing .gguf file "
                           f"or directory; accepted forms: {ACCEPTED_FORMS}")


def _check_value(name: str, rule: Option, value: Any, family: str) -> None:
    if value is None and rule.nullable:
        return
    kinds = rule.kind if isinstance(rule.kind, tuple) else (rule.kind,)
    ok = isinstance(value, kinds) and not (isinstance(value, bool) and bool not in kinds)
    if ok and isinstance(value, float) and not math.isfinite(value):
        ok = False
    if ok and rule.choices is not None:
        ok = value in rule.choices
    if ok and isinstance(value, (int, float)) and not isinstance(value, bool):
        ok = (rule.low is None or value >= rule.low) and (rule.high is None or value <= rule.high)
    if not ok:
        shown = repr(value) if isinstance(value, (bool, int, float)) or value is None else type(value).__name__
        raise BackendSpecError(f"backend option {name!r} of the {family} backend must be {rule.describe()}, "
                               f"not {shown}")


def check_options(spec: BackendSpec, options: Mapping[str, Any], *, stored: bool = False) -> None:
    """Refuse an option the backend's constructor does not take (``pwd``, ``concurency``)
    or a value of the wrong type or out of range; the message lists what is accepted.
    ``stored``: the options of a job or schedule, which may not hold an option that runs
    code (whoever may insert a job is not the worker's owner)."""
    accepted = OPTIONS[spec.family]
    for name, value in options.items():
        rule = accepted.get(name)
        if stored and rule is not None and rule.runs_code:
            raise BackendSpecError(f"backend option {name!r} runs code from the model's files, so a job or schedule "
                                   f"cannot carry it; a worker enables it for itself: {ENV_TRUST_REMOTE_CODE}=1 or "
                                   "`scoi worker --trust-remote-code`")
        if rule is None:
            close = difflib.get_close_matches(str(name), list(accepted), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            offered = sorted(n for n, o in accepted.items() if not o.secret and not (stored and o.runs_code))
            raise BackendSpecError(f"unknown backend option {str(name)[:60]!r} for {spec.kind}{hint}; accepted: "
                                   f"{', '.join(offered)}")
        _check_value(name, rule, value, spec.family)


def check_backend(spec: str, options: Mapping[str, Any], *, stored: bool = False) -> BackendSpec:
    """:func:`parse_spec` and :func:`check_options` together: what submit calls."""
    parsed = parse_spec(spec)
    check_options(parsed, options, stored=stored)
    return parsed
