"""The tokenizer of a Gemma GGUF file, rebuilt as the byte-fallback BPE it is.

transformers before 5.0 (and unbabel-comet caps it below 5.0) converts the vocabulary of a
Gemma/Gemma 2/Gemma 3 GGUF file into a *Unigram* tokenizer fed with the file's scores. Those
scores are sentencepiece BPE merge ranks (``-(id - offset)``: the later a piece was merged,
the lower its score), so a Unigram, which maximises the summed score, prefers the *earliest*
merged pieces and cuts words into fragments: ``Hello world`` becomes ``Hello ▁w or ld``
instead of ``Hello ▁world``, ``Translate`` becomes ``Tr ans la te``. The weights load
correctly, but the model reads text it never saw in training and writes degenerate output
(gemma-3-270m, 4-shot fr->en Europarl: chrF 17 instead of the mid 40s; see
benchmarks/bench_gemma_chrf.py).

:func:`gemma_tokenizer` rebuilds what sentencepiece does with the same vocabulary:

* the text is normalised by writing each space as ``▁`` (no dummy prefix: the file says
  ``add_space_prefix = false``);
* user-defined pieces (token type 4: runs of newlines, spaces and tabs, HTML tags) are cut
  out first and never merged, like sentencepiece's frozen prefix matches; control pieces
  (type 3: ``<bos>``, ``<start_of_turn>``, the ``<unused…>`` ids) are special tokens;
* the rest is merged pairwise, the pair whose merged piece comes first in the vocabulary
  (= highest score) first; characters outside the vocabulary fall back to ``<0xNN>`` bytes;
* ``<bos>`` is prepended (``add_bos_token``), nothing appended.

tests/integration/test_gguf_tokenizer.py checks the result against sentencepiece itself run on a model
built from the same GGUF vocabulary.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["GEMMA_ARCHITECTURES", "gemma_tokenizer", "needs_gemma_tokenizer", "read_gguf_vocab"]

# llama.cpp architecture names whose GGUF tokenizer transformers 4.x reads as a Unigram.
GEMMA_ARCHITECTURES = frozenset({"gemma", "gemma2", "gemma3"})

NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6  # llama.cpp token types
SPACE = "\u2581"


def _field(reader: Any, key: str) -> Any:
    """A GGUF metadata value: a scalar, a string, or a list of them (gguf >= 0.10 API)."""
    import numpy as np

    field = reader.fields.get(key)
    if field is None:
        return None
    values = []
    for index in field.data:
        part = field.parts[index]
        if field.types and field.types[-1].name == "STRING":
            values.append(bytes(part).decode("utf-8"))
        else:
            values.append(part.tolist()[0] if isinstance(part, np.ndarray) else part)
    if field.types and field.types[0].name == "ARRAY":
        return values
    return values[0] if values else None


def read_gguf_vocab(path: str | Path) -> dict[str, Any]:
    """Architecture, tokenizer model and vocabulary of a GGUF file (metadata only; the
    tensors are memory-mapped, not read)."""
    from gguf import GGUFReader

    reader = GGUFReader(str(path))
    return {
        "architecture": _field(reader, "general.architecture"),
        "model": _field(reader, "tokenizer.ggml.model"),
        "tokens": _field(reader, "tokenizer.ggml.tokens") or [],
        "scores": _field(reader, "tokenizer.ggml.scores") or [],
        "types": _field(reader, "tokenizer.ggml.token_type") or [],
        "bos": _field(reader, "tokenizer.ggml.bos_token_id"),
        "eos": _field(reader, "tokenizer.ggml.eos_token_id"),
        "unk": _field(reader, "tokenizer.ggml.unknown_token_id"),
        "pad": _field(reader, "tokenizer.ggml.padding_token_id"),
        "add_bos": _field(reader, "tokenizer.ggml.add_bos_token"),
        "add_eos": _field(reader, "tokenizer.ggml.add_eos_token"),
        "add_space_prefix": _field(reader, "tokenizer.ggml.add_space_prefix"),
    }


def needs_gemma_tokenizer(vocab: dict[str, Any]) -> bool:
    """Whether the file is a Gemma-family GGUF with a sentencepiece ('llama') vocabulary:
    the case transformers 4.x mistokenizes."""
    return vocab.get("architecture") in GEMMA_ARCHITECTURES and vocab.get("model") == "llama" and bool(vocab.get("tokens"))


def spelled(token: str) -> str:
    """A token as the normalised text spells it: llama.cpp writes the user-defined runs of
    spaces with real spaces, the text they must match has ``▁``."""
    if token and not token.strip(" "):
        return SPACE * len(token)
    return token


def _merges(tokens: list[str], types: list[int]) -> list[tuple[str, str]]:
    """BPE merges in priority order: every split of a normal piece into two pieces of the
    vocabulary, ranked by the merged piece's position (sentencepiece merges the adjacent pair
    whose result scores highest, and Gemma's scores fall with the id)."""
    index = {tok: i for i, tok in enumerate(tokens)}
    # Only normal pieces merge: sentencepiece freezes user-defined ones (cut out before BPE
    # here, as added tokens), and control and byte pieces are never a merge's half.
    mergeable = {tok for tok, kind in zip(tokens, types) if kind == NORMAL}
    merges: list[tuple[int, int, int, tuple[str, str]]] = []
    for rank, (tok, kind) in enumerate(zip(tokens, types)):
        if kind != NORMAL or len(tok) < 2:
            continue
        for cut in range(1, len(tok)):
            left, right = tok[:cut], tok[cut:]
            if left in mergeable and right in mergeable:
                merges.append((rank, index[left], index[right], (left, right)))
    merges.sort()
    return [pair for *_, pair in merges]


def gemma_tokenizer(path: str | Path, vocab: dict[str, Any] | None = None) -> Any:
    """A ``PreTrainedTokenizerFast`` for the Gemma GGUF at ``path``, tokenizing as
    sentencepiece does (see the module docstring)."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, normalizers, processors
    from transformers import PreTrainedTokenizerFast

    vocab = vocab or read_gguf_vocab(path)
    tokens = [spelled(t) for t in vocab["tokens"]]
    types = [int(t) for t in vocab["types"]] or [NORMAL] * len(tokens)
    if len(set(tokens)) != len(tokens):
        raise ValueError(f"{path}: the GGUF vocabulary has duplicate tokens")
    if vocab.get("add_space_prefix"):
        raise ValueError(f"{path}: add_space_prefix = true is not a Gemma vocabulary")

    def name(key: str, default: str) -> str:
        idx = vocab.get(key)
        return tokens[idx] if isinstance(idx, int) and 0 <= idx < len(tokens) else default

    unk, bos, eos, pad = name("unk", "<unk>"), name("bos", "<bos>"), name("eos", "<eos>"), name("pad", "<pad>")

    model = models.BPE(
        {tok: i for i, tok in enumerate(tokens)},
        _merges(tokens, types),
        unk_token=unk,
        fuse_unk=True,
        byte_fallback=True,
    )
    tok = Tokenizer(model)
    tok.normalizer = normalizers.Replace(" ", SPACE)
    tok.decoder = decoders.Sequence([decoders.Replace(SPACE, " "), decoders.ByteFallback(), decoders.Fuse()])
    # Order matters: added tokens keep the ids they have in the vocabulary.
    added = []
    for token, kind in zip(tokens, types):
        if kind in (CONTROL, UNKNOWN):
            added.append(AddedToken(token, special=True, normalized=False))
        elif kind == USER_DEFINED:
            added.append(AddedToken(token, special=False, normalized=True))
    tok.add_tokens(added)

    add_bos = vocab.get("add_bos") is not False
    add_eos = bool(vocab.get("add_eos"))
    single = ([f"{bos}:0"] if add_bos else []) + ["$A:0"] + ([f"{eos}:0"] if add_eos else [])
    pair = single + ([f"{bos}:1"] if add_bos else []) + ["$B:1"] + ([f"{eos}:1"] if add_eos else [])
    special = [(t, tokens.index(t)) for t in {bos, eos} if t in tokens]
    tok.post_processor = processors.TemplateProcessing(single=single, pair=pair, special_tokens=special)

    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token=bos,
        eos_token=eos,
        unk_token=unk,
        pad_token=pad,
        clean_up_tokenization_spaces=False,
        model_input_names=["input_ids", "attention_mask"],  # no token_type_ids: generate() rejects them
        model_max_length=1_000_000,
    )
