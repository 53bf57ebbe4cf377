"""The one signature builder: every setting that changes a result, sacrebleu style
(``fr-en|method:scoi|k:4|pool:100|...|scoi:0.1.0``). A selection's and a job's signatures
are both written here, so the parts they share are spelled alike and come in one order;
stored signatures are compared as text, so the spelling and order below are fixed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from scoi import __version__

#: Every part a signature may hold, in the order written (a part given as None is left
#: out): the method and the settings only it reads, the selection's settings, then a
#: job's generation settings.
PARTS = ("method", "rbm25", "embedder", "hnsw", "ctq", "parsers", "k", "pool", "match", "sim", "words", "fill", "seed",
         "bm25", "corpora", "where", "parser", "model", "template", "order", "max_new_tokens", "glossary")


def method_parts(settings: Mapping[str, str | int]) -> dict[str, str]:
    """The parts that name a method's own settings (scoi.core.methods.method_settings)."""
    names = {"rbm25_variant": ("rbm25", "{}"), "embedder": ("embedder", "{}"),
             "ef_search": ("hnsw", "cosine,ef_search={}"), "ctq_model": ("ctq", "{}")}
    return {names[s][0]: names[s][1].format(v) for s, v in settings.items()}


def corpora_part(corpora: Sequence[str] | None) -> str:
    return ",".join(corpora) if corpora else "all"


def signature(src: str, tgt: str, parts: Mapping[str, object]) -> str:
    """The signature of a result in direction ``src``-``tgt`` with these ``parts`` (keys
    from :data:`PARTS`; None values left out), ending with scoi's version."""
    unknown = set(parts) - set(PARTS)
    if unknown:
        raise ValueError(f"unknown signature part(s) {', '.join(sorted(unknown))}; expected some of {PARTS}")
    return "|".join([f"{src}-{tgt}", *(f"{p}:{parts[p]}" for p in PARTS if parts.get(p) is not None),
                     f"scoi:{__version__}"])


__all__ = ["PARTS", "corpora_part", "method_parts", "signature"]
