"""What the operator of ``scoi serve`` decides; requests pick among these names only.

Backends are configured when the server starts (``--model NAME=SPEC``): a request names
a model, never a spec, path or URL. The token comes from the environment and is never
written anywhere.
"""

from __future__ import annotations

import ipaddress
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scoi.backends.spec import BackendSpecError, check_backend
from scoi.core import defaults
from scoi.core.prompt import TEMPLATE_NAMES

TOKEN_ENV = "SCOI_SERVE_TOKEN"
DEFAULT_HOST = defaults.SERVE_HOST
DEFAULT_PORT = defaults.SERVE_PORT
#: Prompt templates a request may choose (never a template file: those are the operator's).
TEMPLATES = TEMPLATE_NAMES  # the built-in templates the service offers
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
#: A bearer token as RFC 6750 spells it (what a client can send in the header), long
#: enough not to be guessed: ``openssl rand -hex 24`` gives 48 characters.
MIN_TOKEN_CHARS = 16
_TOKEN = re.compile(r"^[A-Za-z0-9._~+/-]+=*$")


class ConfigError(ValueError):
    """A server setting that cannot work (bad --model, missing token)."""


@dataclass(frozen=True)
class ModelConfig:
    """A backend a request may name: its spec and constructor options stay on the server."""

    name: str
    spec: str
    options: dict[str, Any] = field(default_factory=dict)


@dataclass
class Limits:
    """Bounds on what one request may ask for."""

    max_body_bytes: int = defaults.SERVE_MAX_BODY        # request body size
    max_chars: int = defaults.SERVE_MAX_CHARS            # one sentence
    max_sentences: int = defaults.SERVE_MAX_SENTENCES    # one batch job or gap analysis
    timeout_s: float = defaults.SERVE_TIMEOUT            # one request's work (selection, prompt, translation)
    max_k: int = defaults.SERVE_MAX_K
    max_items_page: int = defaults.SERVE_MAX_ITEMS_PAGE


@dataclass
class ServeConfig:
    url: str
    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    token: str | None = None
    models: dict[str, ModelConfig] = field(default_factory=dict)
    limits: Limits = field(default_factory=Limits)
    pool: int = defaults.POOL
    embedder: str | None = None  # the fuzzy methods' stored embedder (None: the default's)

    def check(self) -> None:
        """Refuse to listen beyond this machine without a token, a token a client cannot
        send or could guess, and a model no request could use (checked now, not per request)."""
        if self.token is not None:
            check_token(self.token)
        if not is_loopback(self.host) and not self.token:
            raise ConfigError(f"listening on {self.host} (not a loopback address) requires a token: set "
                              f"{TOKEN_ENV} in the server's environment; clients send it as "
                              "'Authorization: Bearer TOKEN'")
        for model in self.models.values():
            check_model(model)


def check_token(token: str) -> None:
    """A token of at least MIN_TOKEN_CHARS characters a client can send as a bearer token
    (letters, digits, ``-._~+/``, trailing ``=``); the message never shows the token."""
    if not _TOKEN.match(token):
        raise ConfigError(f"{TOKEN_ENV} holds characters a client cannot send as a bearer token (spaces, "
                          "control or non-ASCII characters); use letters, digits and -._~+/, e.g. "
                          "$(openssl rand -hex 24)")
    if len(token) < MIN_TOKEN_CHARS:
        raise ConfigError(f"{TOKEN_ENV} has {len(token)} character{'s' if len(token) != 1 else ''}; at least "
                          f"{MIN_TOKEN_CHARS} are needed, "
                          "e.g. $(openssl rand -hex 24)")


def check_model(model: ModelConfig) -> None:
    """The spec and options as ``scoi job submit`` checks them, and, since this server
    loads the model itself, a local model's file or folder present here."""
    try:
        spec = check_backend(model.spec, model.options)
    except BackendSpecError as e:
        raise ConfigError(f"--model {model.name}: {e}") from None
    if spec.kind in ("gguf", "hf"):
        path = Path(spec.target).expanduser()
        looks_local = spec.kind == "gguf" or spec.target.startswith(("/", ".", "~"))
        if spec.kind == "gguf" and not path.is_file():
            raise ConfigError(f"--model {model.name}: GGUF file not found: {spec.target} (give the path of an "
                              "existing .gguf file on this machine)")
        if spec.kind == "hf" and looks_local and not path.is_dir():
            raise ConfigError(f"--model {model.name}: model directory not found: {spec.target}")


def is_loopback(host: str) -> bool:
    """Whether ``host`` is reachable from this machine only (127.0.0.0/8, ::1, localhost)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def token_from_env() -> str | None:
    """The bearer token from the environment (empty counts as none)."""
    return os.environ.get(TOKEN_ENV) or None


def parse_models(items: list[str], options: list[str]) -> dict[str, ModelConfig]:
    """``--model NAME=SPEC`` and ``--backend-opt NAME:KEY=VALUE`` options as ModelConfigs
    (a VALUE that parses as JSON is taken as such)."""
    import json

    models: dict[str, dict[str, Any]] = {}
    for item in items:
        name, sep, spec = item.partition("=")
        if not sep or not _NAME.match(name) or not spec.strip():
            raise ConfigError(f"--model {item!r}: expected NAME=SPEC, e.g. gemma=gguf:/models/gemma.gguf "
                              "(NAME: letters, digits, '_', '.', '-')")
        if name in models:
            raise ConfigError(f"--model {name!r} given twice")
        models[name] = {"spec": spec.strip(), "options": {}}
    for item in options:
        name, sep, rest = item.partition(":")
        key, sep2, value = rest.partition("=")
        if not sep or not sep2 or not key.strip():
            raise ConfigError(f"--backend-opt {item!r}: expected NAME:KEY=VALUE, e.g. gemma:batch_size=4")
        if name not in models:
            raise ConfigError(f"--backend-opt {item!r}: no --model named {name!r}")
        try:
            models[name]["options"][key.strip()] = json.loads(value)
        except json.JSONDecodeError:
            models[name]["options"][key.strip()] = value
    return {n: ModelConfig(n, m["spec"], m["options"]) for n, m in models.items()}
