"""The perplexity features' inputs: token log-likelihoods from a local model (a tiny random
Llama), batched and padded, equal to scoring each text alone token by token."""

from __future__ import annotations

import math

import pytest

from scoi.backends.loader import load_backend
from scoi.core.ctq_features import perplexity
from scoi.ctq import NLL_BATCH, token_nlls


def _alone(backend, text: str) -> list[float]:
    """The literal definition: BOS then the text's tokens; each token's -log p given its prefix."""
    import torch

    tok = backend.tokenizer
    ids = [tok.bos_token_id] + tok(text, add_special_tokens=False)["input_ids"]
    out = []
    with torch.no_grad():
        for i in range(1, len(ids)):
            logits = backend.model(torch.tensor([ids[:i]])).logits[0, -1].double()
            out.append(-(logits[ids[i]] - torch.logsumexp(logits, dim=0)).item())
    return out


def test_token_nlls_of_a_batch_equal_each_text_scored_alone(tiny_model):
    backend = load_backend(tiny_model)
    texts = ["Je mange une pomme. I eat an apple.", "Il pleut.", "", "Le chat dort. The cat sleeps. Il pleut."]
    texts += [f"Il pleut {i} fois." for i in range(NLL_BATCH)]  # a second batch
    got = token_nlls(backend, texts)
    assert [len(g) for g in got] == [len(backend.tokenizer(t, add_special_tokens=False)["input_ids"]) for t in texts]
    for text, nll in zip(texts, got):
        assert nll == pytest.approx(_alone(backend, text), abs=1e-4)
    assert perplexity(got[2]) == 999999.0  # no token: the released NaN placeholder
    assert perplexity(got[1]) == round(2 ** (math.fsum(got[1]) / len(got[1])), 2)
