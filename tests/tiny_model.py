"""A tiny random-weight causal LM saved in a directory, for tests and benchmarks.

Built from nothing (a byte-level BPE tokenizer trained on a few sentences, a 2-layer
Llama with random weights), so no weights are ever downloaded; load it with the backend
spec ``hf:<directory>``. Its outputs are gibberish, but generation is real: the same
code path, tokenizer, batching and stopping as with a real model.
"""

from __future__ import annotations

import shutil
from pathlib import Path

CORPUS = [
    "Je mange une pomme.", "I eat an apple.", "Il pleut.", "It is raining.",
    'French Sentence: "Le chat dort."\nEnglish Sentence: "The cat sleeps."\n###\n',
] * 3


def byte_level_tokenizer(vocab_size: int = 320):
    """A byte-level BPE tokenizer trained on CORPUS, wrapped for transformers (no pad token)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=["<s>", "</s>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False,
    )
    tok.train_from_iterator(CORPUS, trainer)
    return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>")


def random_llama(tokenizer, seed: int = 0, *, hidden: int = 32, layers: int = 2, max_positions: int = 2048):
    """A small Llama with random weights (large init: well-separated logits, no greedy ties)."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        vocab_size=len(tokenizer), hidden_size=hidden, intermediate_size=2 * hidden, num_hidden_layers=layers,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=max_positions,
        bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
        initializer_range=0.5, tie_word_embeddings=False,
    )
    torch.manual_seed(seed)
    return LlamaForCausalLM(config).float()


def build_tiny_model(out: str | Path, seed: int = 0) -> Path:
    """Write tokenizer + random model to ``out``; returns the directory (spec: ``hf:<out>``)."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    tokenizer = byte_level_tokenizer()
    tokenizer.save_pretrained(out)
    random_llama(tokenizer, seed=seed).save_pretrained(out)
    return out


def build_tiny_gpt2(out: str | Path, n_positions: int, seed: int = 0) -> Path:
    """A tiny random GPT-2 with learned position embeddings for ``n_positions`` tokens, saved
    with the byte-level tokenizer (spec ``hf:<out>``): a prompt past its positions fails
    inside the model with ``IndexError``, as a real 2,048-position model does."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    tokenizer = byte_level_tokenizer()
    tokenizer.save_pretrained(out)
    config = GPT2Config(vocab_size=len(tokenizer), n_positions=n_positions, n_embd=32, n_layer=2, n_head=2,
                        bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
                        initializer_range=0.5)
    torch.manual_seed(seed)
    GPT2LMHeadModel(config).float().save_pretrained(out)
    return out


def build_tiny_comet(out: str | Path, seed: int = 0) -> Path:
    """A COMET regression-metric model directory (``hparams.yaml`` +
    ``checkpoints/model.ckpt``) over a tiny random XLM-R encoder saved beside it, for
    ``scoi eval --comet DIR``: unbabel-comet's own loading and scoring path runs, offline.
    Its scores mean nothing; their plumbing is what the tests check."""
    import pytorch_lightning as pl
    import torch
    import yaml
    from comet.models import RegressionMetric
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers
    from transformers import XLMRobertaConfig, XLMRobertaModel, XLMRobertaTokenizerFast

    out = Path(out)
    encoder = out / "encoder"
    tok = Tokenizer(models.Unigram())
    tok.normalizer = normalizers.NFKC()
    tok.pre_tokenizer = pre_tokenizers.Metaspace()
    special = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
    tok.train_from_iterator(CORPUS, trainers.UnigramTrainer(vocab_size=80, special_tokens=special, unk_token="<unk>",
                                                            show_progress=False))
    fast = XLMRobertaTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>", sep_token="</s>",
                                   cls_token="<s>", unk_token="<unk>", pad_token="<pad>", mask_token="<mask>")
    fast.save_pretrained(encoder)
    torch.manual_seed(seed)
    config = XLMRobertaConfig(vocab_size=len(fast), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                              intermediate_size=37, max_position_embeddings=260, pad_token_id=fast.pad_token_id,
                              bos_token_id=fast.bos_token_id, eos_token_id=fast.eos_token_id)
    XLMRobertaModel(config, add_pooling_layer=False).save_pretrained(encoder)
    hparams = dict(pretrained_model=str(encoder), encoder_model="XLM-RoBERTa", layer="mix", hidden_sizes=[16],
                   pool="avg", activations="Tanh", final_activation=None, nr_frozen_epochs=0.3,
                   keep_embeddings_frozen=True, optimizer="AdamW", encoder_learning_rate=1e-6, learning_rate=1.5e-5,
                   layerwise_decay=0.95, dropout=0.1, batch_size=4, train_data=[], validation_data=[], loss="mse",
                   layer_transformation="sparsemax", layer_norm=False, load_pretrained_weights=True)
    model = RegressionMetric(**hparams)
    (out / "checkpoints").mkdir(parents=True, exist_ok=True)
    torch.save({"state_dict": model.state_dict(), "hyper_parameters": hparams, "epoch": 0, "global_step": 0,
                "pytorch-lightning_version": pl.__version__}, out / "checkpoints" / "model.ckpt")
    (out / "hparams.yaml").write_text(yaml.safe_dump({**hparams, "class_identifier": "regression_metric"}))
    return out


def build_tiny_sentence_transformer(out: str | Path, seed: int = 0, *, corpus: list[str] | None = None,
                                    vocab_size: int = 120, hidden: int = 32) -> Path:
    """A sentence-transformers model directory (``SentenceTransformer.save``): a tiny random
    XLM-R encoder (as paraphrase-multilingual-MiniLM's tokenizer family) + mean pooling, for
    ``scoi embed --model DIR``. The real loading and encoding path runs, offline; the
    vectors mean little (random weights) but are deterministic for a seed. ``corpus``: text
    to train the tokenizer on (default: CORPUS), so a benchmark's sentences are not all <unk>."""
    import torch
    from sentence_transformers import SentenceTransformer, models as st_models
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers
    from transformers import XLMRobertaConfig, XLMRobertaModel, XLMRobertaTokenizerFast

    out = Path(out)
    encoder = out.parent / f"{out.name}-encoder"
    tok = Tokenizer(models.Unigram())
    tok.normalizer = normalizers.NFKC()
    tok.pre_tokenizer = pre_tokenizers.Metaspace()
    special = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
    tok.train_from_iterator(corpus or CORPUS, trainers.UnigramTrainer(
        vocab_size=vocab_size, special_tokens=special, unk_token="<unk>", show_progress=False))
    fast = XLMRobertaTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>", sep_token="</s>",
                                   cls_token="<s>", unk_token="<unk>", pad_token="<pad>", mask_token="<mask>",
                                   model_max_length=128)
    fast.save_pretrained(encoder)
    torch.manual_seed(seed)
    config = XLMRobertaConfig(vocab_size=len(fast), hidden_size=hidden, num_hidden_layers=2, num_attention_heads=2,
                              intermediate_size=2 * hidden, max_position_embeddings=132,
                              pad_token_id=fast.pad_token_id, bos_token_id=fast.bos_token_id,
                              eos_token_id=fast.eos_token_id)
    XLMRobertaModel(config, add_pooling_layer=False).save_pretrained(encoder)
    word = st_models.Transformer(str(encoder), max_seq_length=128)
    pooling = st_models.Pooling(word.get_word_embedding_dimension(), pooling_mode="mean")
    SentenceTransformer(modules=[word, pooling], device="cpu").save(str(out))
    shutil.rmtree(encoder)  # the saved model holds its own copy of the encoder
    return out
