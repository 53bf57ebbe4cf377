"""What "exact match" means when a job reuses the translation memory, and the metadata
filter (``--where key=value``) that restricts selection, lookup and reuse to some pairs.

Exact match is a CAT tool's 100% match: two sentences match when they are equal after
:func:`normalize`, which takes Unicode NFC and collapses every run of whitespace
(:data:`WHITESPACE`) to one space, trimmed; case, punctuation and digits stay significant.
The database applies the same rule in SQL (``exact_text`` / ``exact_sha``, migration 0031);
tests check that the two agree. Pure: no I/O.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata

__all__ = ["REUSE_MODES", "WHERE_KEY", "WHITESPACE", "check_where", "exact_sha", "normalize", "parse_where",
           "where_part"]

#: ``--reuse``: ``exact`` reuses the stored translation of an exact match; ``off`` never does.
REUSE_MODES = ("exact", "off")
#: Unicode White_Space: the characters a run of which :func:`normalize` makes one space
#: (tab, newlines, no-break and typographic spaces, ideographic space).
WHITESPACE = ("\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
              "\u2028\u2029\u202f\u205f\u3000")
_RUN = re.compile(f"[{re.escape(WHITESPACE)}]+")
#: A metadata key in ``--where``: letters, digits and ``_ . : -``.
WHERE_KEY = re.compile(r"[A-Za-z0-9_.:-]+")


def normalize(text: str) -> str:
    """``text`` as exact matching compares it: NFC, whitespace runs as one space, trimmed.
    Only differences no reader sees are dropped (a decomposed é, a double space, a
    trailing tab); a changed letter, case or punctuation mark is a different sentence."""
    return _RUN.sub(" ", unicodedata.normalize("NFC", text)).strip(" ")


def exact_sha(text: str) -> bytes:
    """SHA-256 of the normalised text: the key the database looks exact matches up by
    (equal to ``sentence.text_sha`` when the stored text is already normalised)."""
    return hashlib.sha256(normalize(text).encode("utf-8")).digest()


def parse_where(items: list[str] | tuple[str, ...] | None) -> dict[str, str] | None:
    """``--where key=value`` options as one metadata filter: every pair must hold each key
    with that value (string comparison, all keys ANDed); None when none is given. A
    malformed item raises ValueError naming it and the expected form."""
    if not items:
        return None
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not WHERE_KEY.fullmatch(key):
            raise ValueError(f"--where {item!r}: expected KEY=VALUE, the key made of letters, digits and _ . : - "
                             "(for example --where domain=legal)")
        if key in out and out[key] != value:
            raise ValueError(f"--where {key}: given twice with different values ({out[key]!r}, {value!r}); "
                             "a pair has one value per key")
        out[key] = value
    return out


def check_where(where: object) -> dict[str, str] | None:
    """A filter given as data (the API's ``"where": {"domain": "legal"}``, a stored job's
    params) as :func:`parse_where` returns it: a flat object of string values under
    valid keys, or None when empty. Anything else raises ValueError saying what was expected."""
    if where is None or where == {}:
        return None
    if not isinstance(where, dict):
        raise ValueError(f"where: expected an object of key: value strings, not {type(where).__name__}")
    for key, value in where.items():
        if not isinstance(key, str) or not WHERE_KEY.fullmatch(key):
            raise ValueError(f"where: bad key {key!r}; expected letters, digits and _ . : -")
        if not isinstance(value, str):
            raise ValueError(f"where.{key}: expected a string value, not {type(value).__name__}")
    return dict(where)


def where_part(where: dict[str, str] | None) -> str | None:
    """The filter as a signature part (``domain=legal,client=acme``, keys sorted), or None."""
    if not where:
        return None
    return ",".join(f"{k}={v}" for k, v in sorted(where.items()))
