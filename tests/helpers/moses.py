"""scoi.text.moses and sacremoses 0.2.0 side by side (the parity tests), built once per language."""

from __future__ import annotations

from functools import lru_cache

from scoi.text import moses


@lru_cache(maxsize=None)
def ours(lang):
    return moses.PunctNormalizer(lang), moses.MosesTokenizer(lang)


@lru_cache(maxsize=None)
def theirs(lang):
    from sacremoses import MosesPunctNormalizer, MosesTokenizer

    return MosesPunctNormalizer(lang=lang), MosesTokenizer(lang=lang)


def run(pair, text):
    norm, tok = pair
    normalized = norm.normalize(text)
    return normalized, tok.tokenize(normalized, escape=False)


@lru_cache(maxsize=None)
def theirs_tok(lang):
    from sacremoses import MosesTokenizer

    return MosesTokenizer(lang=lang)
