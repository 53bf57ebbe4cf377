"""The one check for secrets in what scoi stores: backend options, URLs, database conninfo.

Job and schedule settings (``job.params``, ``schedule.spec``, ``experiment.grid``,
``job_source.url``, ``job_destination.url``) are plain text that every database user,
dump and backup can read, so a credential must never reach them. Secrets hide in many
places, and each is looked at here, and only here:

* option names that read like a credential (``api_key``, ``apikeys``, ``hf_token``,
  ``pwd``, ``pass``, ``sk``, ``Authorization``, ``bearer``, ``credential`` ...), at any
  depth of nested JSON (dicts inside lists inside dicts);
* values that look like a token (``sk-...``, ``hf_...``, ``ghp_...``, ``Bearer ...``, a JWT);
* URLs with user info (``http://KEY@host``, ``http://user:pass@host``) or with a
  credential in their query string (``?api_key=...``);
* PostgreSQL URLs and conninfo strings with ``password``, ``sslpassword`` or ``passfile``
  (in ``key=value`` form or as URL parameters).

A refusal is one line that names the option and the key, never the value, and says
where the secret goes instead (the workers' environment, ``~/.pgpass``). Pure: no I/O,
no database (psycopg's conninfo parser is libpq's, which reads nothing).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qsl, urlsplit

__all__ = ["SecretError", "check_database_url", "check_options", "check_value", "database_hint",
           "describe_database_url", "is_secret_name", "options_hint", "redact_url"]


class SecretError(ValueError):
    """A value that would store a credential; the message never holds the credential."""


# --------------------------------------------------------------------------- what a secret looks like
#: Parts of a name (separators and camelCase removed, lower case) that always mark a credential.
_SECRET_PARTS = ("password", "passwd", "passphrase", "secret", "apikey", "credential", "authorization", "bearer",
                 "privatekey", "accesskey", "accesstoken", "authtoken", "sessiontoken", "refreshtoken", "hftoken",
                 "passfile")
#: Whole words of a name that mark a credential wherever they stand (``db_pwd``, ``sk``).
_SECRET_WORDS = frozenset({"pwd", "pw", "pass", "sk", "auth", "cookie", "cookies", "jwt", "pat"})
#: Last words that mark one (``hf_token``, ``openai_key``, ``api_keys``), but not elsewhere:
#: ``stop_token_ids`` is a sampling parameter, ``max_tokens`` a length.
_SECRET_LAST_WORDS = frozenset({"token", "key", "keys"})
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_WORD_SPLIT = re.compile(r"[^a-z0-9]+")
#: Values that look like a credential whatever their key: OpenAI/Stripe (sk-, sk_live_),
#: Hugging Face (hf_), GitHub (ghp_, github_pat_), Slack (xox?-), AWS access keys, HTTP
#: authorization values and JWTs.
_TOKEN_VALUE = re.compile(
    r"^\s*(?:sk-[A-Za-z0-9_-]{6,}|sk_(?:live|test)_\w+|hf_[A-Za-z0-9]{16,}|gh[pousr]_[A-Za-z0-9]{16,}"
    r"|github_pat_\w+|xox[abprs]-[\w-]+|AKIA[0-9A-Z]{16}|(?:Bearer|Basic|Token)\s+\S{6,}|eyJ[\w-]{8,}\.[\w-]+)")
#: ``password=...`` inside a free-form string (a conninfo pasted into an option).
_CONNINFO_SECRET = re.compile(r"(?i)(?:^|[\s;&?])(password|sslpassword|passfile)\s*=")
#: libpq parameters that hold (or point at) a password.
DATABASE_SECRET_KEYS = ("password", "sslpassword", "passfile")


def is_secret_name(name: str) -> bool:
    """Whether an option or parameter name reads like a credential (``api_key``, ``pwd``...)."""
    words = [w for w in _WORD_SPLIT.split(_CAMEL.sub("_", str(name)).lower()) if w]
    if not words:
        return False
    joined = "".join(words)
    return (any(part in joined for part in _SECRET_PARTS) or any(w in _SECRET_WORDS for w in words)
            or words[-1] in _SECRET_LAST_WORDS or joined in {"apikeys", "pwd", "passwd"})


def _looks_like_token(text: str) -> bool:
    return bool(_TOKEN_VALUE.match(text))


def _show(name: Any) -> str:
    """A key for a message: quoted, control characters escaped; a key that itself looks
    like a token is not shown."""
    text = str(name)
    if _looks_like_token(text):
        return "(a key that looks like a token)"
    return repr(text[:60])


# --------------------------------------------------------------------------- generic values (backend options)
def _url_problem(text: str) -> str | None:
    """What in a URL string is a credential: its user info, or a query parameter."""
    try:
        parts = urlsplit(text.strip())
        netloc = parts.netloc
    except ValueError:
        return None
    if not parts.scheme or not netloc:
        return None
    if "@" in netloc:
        return "user info in a URL, USER@ or USER:PASSWORD@ before the host"
    for key, value in parse_qsl(parts.query, keep_blank_values=True) + parse_qsl(parts.fragment,
                                                                                 keep_blank_values=True):
        if is_secret_name(key) or key.lower() in DATABASE_SECRET_KEYS:
            return f"query parameter {_show(key)} of a URL"
        if _looks_like_token(value):
            return f"a token in query parameter {_show(key)} of a URL"
    return None


#: Nesting deeper than this is refused rather than searched (no option needs it).
MAX_DEPTH = 32
_TOO_DEEP = "too deep"


def _find(value: Any, path: str, depth: int = 0) -> str | None:
    """Where in ``value`` (nested dicts and lists) a secret is, described without it; None if nowhere."""
    if depth > MAX_DEPTH and isinstance(value, (Mapping, list, tuple)):
        return _TOO_DEEP
    if isinstance(value, Mapping):
        for key, item in value.items():
            where = f"{path}.{key}" if path else str(key)
            if is_secret_name(str(key)) or _looks_like_token(str(key)):
                return f"key {_show(key)}" + (f" at {path}" if path else "")
            found = _find(item, where, depth + 1)
            if found:
                return found
        return None
    if isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            found = _find(item, f"{path}[{i}]", depth + 1)
            if found:
                return found
        return None
    if isinstance(value, str):
        at = f" at {path}" if path else ""
        if _looks_like_token(value):
            return f"a value that looks like a token{at}"
        problem = _url_problem(value)
        if problem:
            return problem + at
        match = _CONNINFO_SECRET.search(value)
        if match:
            return f"a {match.group(1).lower()}= setting{at}"
    return None


def redact_url(url: str) -> str:
    """An HTTP URL for messages: scheme, host, port and path only (user info, query and
    fragment dropped: a URL from the environment may carry a key there)."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return "(an unreadable URL)"
    if not parts.scheme or not parts.netloc:
        return url.split("?", 1)[0].split("#", 1)[0].rsplit("@", 1)[-1]
    host = f"[{host}]" if ":" in host else host
    return f"{parts.scheme}://{host}{port}{parts.path}"


def options_hint() -> str:
    """Where API keys go instead of a stored option."""
    from scoi.config import ENV_OPENAI_API_KEY

    return (f"set {ENV_OPENAI_API_KEY[0]} (or {ENV_OPENAI_API_KEY[1]}) in the workers' environment for an "
            "OpenAI-compatible server (HF_TOKEN for the Hugging Face hub)")


def check_value(value: Any, where: str) -> None:
    """Refuse ``value`` (a string, or nested JSON) if it holds a secret anywhere."""
    found = _find(value, "")
    if found == _TOO_DEEP:
        raise SecretError(f"{where} is nested deeper than {MAX_DEPTH} levels; every level is checked for secrets, "
                          "so deeper values are refused")
    if found:
        raise SecretError(f"{where} holds a secret ({found}), and secrets are never stored with a job (its settings "
                          f"are plain text any database user can read): {options_hint()}")


def check_options(options: Mapping[str, Any], where: str = "backend option") -> None:
    """Refuse backend options (``--backend-opt``) that hold a secret: a credential-like
    name, or a value holding one at any depth. The message names the option, not the value."""
    for name, value in options.items():
        if is_secret_name(str(name)) or _looks_like_token(str(name)):
            raise SecretError(f"{where} {_show(name)} looks like a secret, and secrets are never stored with a job "
                              f"(its settings are plain text any database user can read): {options_hint()}")
        check_value(value, f"{where} {_show(name)}")


# --------------------------------------------------------------------------- PostgreSQL URLs and conninfo
def database_hint(option: str) -> str:
    """Where a database password goes instead of ``option``."""
    return (f"drop it and set PGPASSWORD or ~/.pgpass for the workers, use a libpq service (service=NAME), or give "
            f"{option} env:VAR with the URL in the environment variable VAR")


def _conninfo(url: str, option: str) -> dict[str, str]:
    """libpq's reading of a URL or conninfo; a string it cannot read is refused without
    showing it (libpq's own message quotes the text, which may hold a password)."""
    from psycopg import ProgrammingError
    from psycopg.conninfo import conninfo_to_dict

    try:
        return {k: str(v) for k, v in conninfo_to_dict(url).items()}
    except ProgrammingError:
        raise SecretError(f"{option} is not a PostgreSQL URL (postgresql://USER@HOST/DB) or conninfo "
                          "(host=H dbname=D user=U); it is not shown here, as it may hold a password") from None


def check_database_url(url: str, option: str) -> None:
    """Refuse a PostgreSQL URL or conninfo holding ``password``, ``sslpassword`` or
    ``passfile`` (as ``key=value``, URL user info or URL parameter), or any other
    parameter that reads like a credential."""
    params = _conninfo(url, option)
    for key in DATABASE_SECRET_KEYS:
        if params.get(key):
            what = {"password": "a password", "sslpassword": "an SSL key password (sslpassword)",
                    "passfile": "a password file (passfile)"}[key]
            raise SecretError(f"{option} holds {what}, and secrets are never stored with a job: "
                              f"{database_hint(option)}")
    for key, value in params.items():
        if is_secret_name(key) or _looks_like_token(value):
            raise SecretError(f"{option} holds a secret (parameter {_show(key)}), and secrets are never stored "
                              f"with a job: {database_hint(option)}")


def describe_database_url(url: str) -> str:
    """A database for messages: host, port, database and user only (never a password,
    whatever the URL holds), e.g. ``host=/srv/pg port=5432 dbname=scoi user=scoi``."""
    try:
        params = _conninfo(url, "URL")
    except SecretError:
        return "(an unreadable database URL)"
    shown = [f"{k}={params[k]}" for k in ("host", "hostaddr", "port", "dbname", "user", "service") if params.get(k)]
    return " ".join(shown) or "the default database (libpq defaults)"
