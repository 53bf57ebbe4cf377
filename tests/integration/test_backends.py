"""LLM backends with real model libraries: a tiny local transformers model and a tiny GGUF
file, both built inside the tests (no network, no downloaded weights), and hub ids that
fail fast offline."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from scoi.backends.base import Backend, BackendError, Generation
from scoi.backends.loader import load_backend
from tests.helpers.fake_openai import closed_port
from tests.tiny_model import byte_level_tokenizer, random_llama

# --------------------------------------------------------------------------- cut_at_stop


# --------------------------------------------------------------------------- tiny local models

def _byte_level_tokenizer(vocab_size: int):
    """No pad token, so the backend must fall back to eos (vocab_size 258 = one token per character)."""
    return byte_level_tokenizer(vocab_size)


def _llama(tokenizer, seed: int):
    return random_llama(tokenizer, seed, max_positions=512)


@pytest.fixture(scope="module")
def random_model_dir(tmp_path_factory) -> Path:
    """A random-weight 2-layer Llama with a trained byte-level BPE tokenizer."""
    out = tmp_path_factory.mktemp("random_llama")
    tokenizer = _byte_level_tokenizer(320)
    tokenizer.save_pretrained(out)
    _llama(tokenizer, seed=0).save_pretrained(out)
    return out


SCRIPT = "\nThe cat.\n"  # the scripted model cycles through these characters


@pytest.fixture(scope="module")
def scripted_model_dir(tmp_path_factory) -> Path:
    """A Llama whose greedy output is scripted: its layers add nothing to the residual
    stream, so the next token depends only on the current one, and the output head maps
    ':' -> '\\n' -> 'T' -> 'h' -> ... -> '.' -> '\\n' (a cycle). After a prompt ending in
    ':' it writes "\\nThe cat.\\nThe cat.\\n..." — an answer that starts with a newline."""
    import torch

    out = tmp_path_factory.mktemp("scripted_llama")
    tokenizer = _byte_level_tokenizer(258)  # bytes + 2 specials: one token per character
    model = _llama(tokenizer, seed=1)
    with torch.no_grad():
        for layer in model.model.layers:
            layer.self_attn.o_proj.weight.zero_()
            layer.mlp.down_proj.weight.zero_()
        hidden = model.model.norm(model.model.embed_tokens.weight)  # what the head sees
        head = torch.zeros_like(model.lm_head.weight)
        chain = ":" + SCRIPT + "T"  # the final '\n' -> 'T' closes the cycle
        for cur, nxt in zip(chain, chain[1:]):
            (cur_id,), (nxt_id,) = tokenizer.encode(cur), tokenizer.encode(nxt)
            head[nxt_id] = hidden[cur_id] * 10  # Cauchy-Schwarz: nxt_id has the top logit
        model.lm_head.weight.copy_(head)
    tokenizer.save_pretrained(out)
    model.save_pretrained(out)
    return out


@pytest.fixture(scope="module")
def random_backend(random_model_dir):
    return load_backend("hf:" + str(random_model_dir), batch_size=4)


PROMPTS = [
    'French Sentence: "Il pleut."\nEnglish Sentence: ',
    "I eat",
    'French Sentence: "Je mange une pomme."\nEnglish Sentence: "I eat an apple."\n###\n'
    'French Sentence: "Le chat dort."\nEnglish Sentence: ',
]


def test_hf_backend_batched_greedy(random_backend, random_model_dir):
    backend = random_backend
    assert isinstance(backend, Backend)
    assert backend.name == f"hf:{random_model_dir.resolve()}"
    assert backend.tokenizer.padding_side == "left"
    assert backend.tokenizer.pad_token_id == backend.tokenizer.eos_token_id  # eos fallback

    first = backend.generate(PROMPTS, max_new_tokens=12, stop=())
    assert len(first) == len(PROMPTS)
    assert all(isinstance(g, Generation) and g.seconds > 0 for g in first)
    assert [g.prompt_tokens for g in first] == [len(backend.tokenizer(p)["input_ids"]) for p in PROMPTS]
    assert all(1 <= g.completion_tokens <= 12 for g in first)
    assert any(g.text.strip() for g in first)

    # deterministic, and left padding changes nothing: each prompt alone gives the same text
    assert [g.text for g in backend.generate(PROMPTS, max_new_tokens=12, stop=())] == [g.text for g in first]
    alone = [backend.generate([p], max_new_tokens=12, stop=())[0].text for p in PROMPTS]
    assert alone == [g.text for g in first]

    short = backend.generate(PROMPTS, max_new_tokens=3, stop=())
    assert all(g.completion_tokens <= 3 for g in short)
    assert backend.generate([], max_new_tokens=3) == []


def test_hf_backend_stops_after_the_answer_not_at_a_leading_newline(scripted_model_dir):
    backend = load_backend(str(scripted_model_dir))  # a bare directory means hf:
    assert backend.name.startswith("hf:")
    prompt = 'French Sentence: "Le chat dort."\nEnglish:'

    raw = backend.generate([prompt], max_new_tokens=14, stop=())[0]
    assert raw.text == "\nThe cat.\nThe "  # exactly max_new_tokens one-character tokens
    assert raw.completion_tokens == 14

    # the leading newline does not stop decoding; the newline after the answer does
    gen = backend.generate([prompt, prompt + " x:"], max_new_tokens=40)
    assert [g.text for g in gen] == ["\nThe cat.", "\nThe cat."]
    assert gen[0].completion_tokens == len("\nThe cat.\n")
    assert backend.generate([prompt], max_new_tokens=40, stop=("cat",))[0].text == "\nThe "


# --------------------------------------------------------------------------- GGUF


def _write_tiny_llama_gguf(path: Path) -> None:
    """A random-weight llama GGUF with a SentencePiece-style ('llama') vocabulary: the
    control tokens, 256 byte-fallback tokens and single characters, as llama.cpp writes."""
    import gguf
    import numpy as np

    pieces = ["\u2581"] + list("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.,:\"'#") + ["\u2581S", "en"]
    tokens = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)] + pieces
    types = [2, 3, 3] + [6] * 256 + [1] * len(pieces)  # unknown, control, byte, normal
    scores = [0.0] * 259 + [-float(i) for i in range(len(pieces))]
    hidden, inter, layers, heads, kv_heads = 32, 64, 2, 4, 2
    head_dim = hidden // heads
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_name("scoi-tiny")
    writer.add_context_length(256)
    writer.add_embedding_length(hidden)
    writer.add_block_count(layers)
    writer.add_feed_forward_length(inter)
    writer.add_head_count(heads)
    writer.add_head_count_kv(kv_heads)
    writer.add_rope_dimension_count(head_dim)
    writer.add_rope_freq_base(10000.0)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_tokenizer_model("llama")
    writer.add_token_list(tokens)
    writer.add_token_scores(scores)
    writer.add_token_types(types)
    writer.add_bos_token_id(1)
    writer.add_eos_token_id(2)
    writer.add_unk_token_id(0)
    rng = np.random.default_rng(0)

    def rand(name: str, *shape: int) -> None:
        writer.add_tensor(name, (rng.standard_normal(shape) * 0.5).astype(np.float32))

    rand("token_embd.weight", len(tokens), hidden)
    for i in range(layers):
        writer.add_tensor(f"blk.{i}.attn_norm.weight", np.ones(hidden, np.float32))
        rand(f"blk.{i}.attn_q.weight", hidden, hidden)
        rand(f"blk.{i}.attn_k.weight", kv_heads * head_dim, hidden)
        rand(f"blk.{i}.attn_v.weight", kv_heads * head_dim, hidden)
        rand(f"blk.{i}.attn_output.weight", hidden, hidden)
        writer.add_tensor(f"blk.{i}.ffn_norm.weight", np.ones(hidden, np.float32))
        rand(f"blk.{i}.ffn_gate.weight", inter, hidden)
        rand(f"blk.{i}.ffn_up.weight", inter, hidden)
        rand(f"blk.{i}.ffn_down.weight", hidden, inter)
    writer.add_tensor("output_norm.weight", np.ones(hidden, np.float32))
    rand("output.weight", len(tokens), hidden)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def test_gguf_backend_loads_and_generates(tmp_path):
    pytest.importorskip("gguf")
    pytest.importorskip("accelerate")  # transformers needs it to load GGUF weights
    path = tmp_path / "tiny.gguf"
    _write_tiny_llama_gguf(path)

    backend = load_backend(f"gguf:{path}")
    assert backend.name == f"gguf:{path.resolve()}"
    assert backend.context_length == 256  # the file's context_length: prompts are fitted to it
    assert backend.count_tokens("ab") == len(backend.tokenizer("ab")["input_ids"]) > 0
    gens = backend.generate(['French Sentence: "Il pleut."\nEnglish Sentence: ', "ab"], max_new_tokens=6, stop=())
    assert len(gens) == 2 and all(1 <= g.completion_tokens <= 6 for g in gens)
    assert [g.text for g in backend.generate(["ab"], max_new_tokens=6, stop=())] == [gens[1].text]

    assert load_backend(str(path)).name == backend.name  # a bare .gguf path means gguf:


def test_a_model_transformers_cannot_read_is_one_line_without_escaped_newlines(tmp_path):
    """transformers explains an unknown architecture in paragraphs; the worker's log, ``job
    status`` and the API print errors on one line, where a newline would show as ``\\n``."""
    (tmp_path / "config.json").write_text('{"model_type": "no-such-architecture"}', encoding="utf-8")
    with pytest.raises(BackendError) as err:
        load_backend(f"hf:{tmp_path}")
    message = str(err.value)
    from transformers import AutoTokenizer

    with pytest.raises(Exception) as said:  # what transformers itself says, in paragraphs
        AutoTokenizer.from_pretrained(str(tmp_path.resolve()), local_files_only=True)
    assert "\n" in str(said.value)
    assert message == f"cannot load the tokenizer of {tmp_path.resolve()}: {' '.join(str(said.value).split())}"
    assert "\n" not in message and "\\n" not in message


# --------------------------------------------------------------------------- offline hub ids


def test_offline_hub_id_fails_without_touching_the_network(monkeypatch):
    """With HF_HUB_OFFLINE set the hub is not even probed: a hub endpoint that listens
    here receives no connection."""
    with socket.socket() as hub:
        hub.bind(("127.0.0.1", 0))
        hub.listen()
        hub.setblocking(False)
        monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{hub.getsockname()[1]}")
        monkeypatch.setenv("HF_HUB_OFFLINE", "1")
        with pytest.raises(BackendError, match=r"not available offline.*HF_HUB_OFFLINE.*gguf:"):
            load_backend("hf:scoi-tests/no-such-model-anywhere")
        with pytest.raises(BlockingIOError):
            hub.accept()


def test_unreachable_hub_fails_fast(monkeypatch):
    import transformers  # noqa: F401

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{closed_port()}")
    with pytest.raises(BackendError, match="hub cannot be reached"):  # the probe's answer, no download tried
        load_backend("hf:scoi-tests/no-such-model-anywhere")
