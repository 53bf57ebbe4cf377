"""Names people give things (corpora, jobs, schedules, experiments), language codes, and
text printed back from the database: what may be stored, and how it is shown.

A name is stored once and printed by every listing after, so it is checked at creation:
no control characters (an ESC sequence in a corpus name would clear the terminal of
whoever runs ``scoi corpora``; a newline splits a TSV row), no line or paragraph
separators or bidirectional overrides (they disguise text), and nothing that cannot be
encoded (a lone surrogate: the bytes of an undecodable argument). Text already stored
(older names, error messages) is printed through :func:`printable`, which escapes the same
characters. Pure: no I/O.
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["BadName", "MAX_NAME_CHARS", "base_language", "check_language_code", "check_name", "is_language_code",
           "printable"]

MAX_NAME_CHARS = 1000
#: Bidirectional embeddings, overrides and isolates (U+202A..U+202E, U+2066..U+2069).
_BIDI = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
#: ISO 639 code with optional subtags: fr, fra, pt-BR, zh_Hant, sr-Latn-RS.
_LANGUAGE_CODE = re.compile(r"[A-Za-z]{2,3}(?:[-_][A-Za-z0-9]{1,8})*")


class BadName(ValueError):
    """A name or code that cannot be stored; the message shows it escaped."""


def _unsafe(ch: str) -> bool:
    """Characters never stored in a name and escaped when printed."""
    return unicodedata.category(ch) in ("Cc", "Cs", "Zl", "Zp") or ch in _BIDI


def printable(text: str) -> str:
    """``text`` with control characters, line/paragraph separators, bidi overrides and
    lone surrogates escaped (``\\x1b``, ``\\n``, ``\\u2028``, ``\\udcff``): safe to print on a
    terminal and to paste. Other text, brackets included, is left as it is."""
    if not any(_unsafe(ch) for ch in text):
        return text
    out = []
    for ch in text:
        if not _unsafe(ch):
            out.append(ch)
        elif ch in "\n\t\r":
            out.append({"\n": "\\n", "\t": "\\t", "\r": "\\r"}[ch])
        elif ord(ch) < 0x100:
            out.append(f"\\x{ord(ch):02x}")
        else:
            out.append(f"\\u{ord(ch):04x}")
    return "".join(out)


def check_name(kind: str, name: str, *, max_chars: int = MAX_NAME_CHARS) -> str:
    """``name`` if it can name a ``kind`` (corpus, job, schedule, experiment), else BadName:
    non-blank, at most ``max_chars`` characters, no control characters, separators, bidi
    overrides or undecodable bytes (lone surrogates)."""
    if not name.strip():
        raise BadName(f"{kind} name is empty")
    bad = next((ch for ch in name if _unsafe(ch)), None)
    if bad is not None:
        what = ("an undecodable byte" if unicodedata.category(bad) == "Cs"
                else f"the control character {printable(bad)}")
        raise BadName(f"{kind} name '{printable(name[:max_chars])}' holds {what}; names are printed by every "
                      "listing, so use letters, digits and punctuation")
    if len(name) > max_chars:
        raise BadName(f"{kind} name '{printable(name[:40])}...' is {len(name)} characters long; at most {max_chars}")
    return name


def is_language_code(code: str) -> bool:
    """Whether ``code`` has the shape of a language code (fr, fra, pt-BR, zh_Hant)."""
    return bool(_LANGUAGE_CODE.fullmatch(code))


def check_language_code(code: str, option: str = "language") -> str:
    """``code`` if it has the shape of a language code, else BadName (shown escaped), so no
    message ever pastes a raw ``--src`` value into a command to copy."""
    if not is_language_code(code):
        raise BadName(f"{option} '{printable(code[:40])}' is not a language code; expected an ISO 639 code "
                      "such as fr, en or pt-BR")
    return code


def base_language(code: str) -> str:
    """The primary language subtag of ``code``, lowercased: ``fr-FR`` and ``fr_CA`` -> ``fr``.

    Memories keep regional codes (a TMX's ``xml:lang="fr-FR"``) and they are stored as given,
    so en-US and en-GB stay apart; parsers, Moses rules and word tokenizers exist per
    language, so they are chosen by this subtag."""
    return re.split(r"[-_]", code, maxsplit=1)[0].lower()

