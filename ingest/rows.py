"""The rows a batch writes: a parsed sentence with its analysis, a pair by its two
sentences' hashes, and the hash that identifies a sentence within its language.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from scoi.analysis import Analysis


def sha(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8")).digest()


@dataclass
class ParsedSentence:
    lang: str
    text: str
    sha: bytes
    analysis: Analysis


@dataclass
class PairRow:
    line: int
    a_sha: bytes
    b_sha: bytes
    meta: str = "{}"  # pair.meta, as JSON text

