"""Near-duplicates of a token list, the CAT case of the lookup tests and benchmark."""

from __future__ import annotations

import random


def edited(rng: random.Random, tokens: list[str], vocab: list[str], *, shortest: int = 1) -> list[str]:
    """``tokens`` with one to three tokens replaced, deleted (never below ``shortest``
    tokens) or inserted, the new ones drawn from ``vocab``."""
    toks = list(tokens)
    for _ in range(rng.randint(1, 3)):
        i = rng.randrange(len(toks))
        op = rng.choice(("replace", "delete", "insert"))
        if op == "replace":
            toks[i] = rng.choice(vocab)
        elif op == "delete" and len(toks) > shortest:
            del toks[i]
        else:
            toks.insert(i, rng.choice(vocab))
    return toks
