"""``scoi embed``: sentence embeddings for the fuzzy methods."""

from __future__ import annotations

import sys
from collections.abc import Callable

import typer

from scoi.cli.common import console, database_url, emit_json, run_batches
from scoi.core import defaults
from scoi.core.limits import LIMITS

MODEL_HELP = ("sentence-transformers model: a local directory (SentenceTransformer.save) or a Hugging Face "
              "name (needs the hub or its cache; with HF_HUB_OFFLINE=1 only a cached model or a directory works).")


def embed(
    model: str = typer.Option(defaults.EMBEDDER, "--model", help=MODEL_HELP),
    lang: list[str] = typer.Option([], "--lang", help="Only sentences of this language (repeatable; default: all)."),
    batch_size: int = typer.Option(defaults.EMBED_BATCH, "--batch-size", min=1, max=LIMITS["batch_size"][1],
                                   help="Sentences per encode call and transaction."),
    json_out: bool = typer.Option(False, "--json", help="Last line of stdout: one JSON summary object."),
) -> None:
    """Embed the stored sentences that have no embedding by MODEL yet (for --method fuzzy / fuzzy-ann).

    Incremental and safe to interrupt: each batch is committed, and a rerun embeds only
    the sentences still missing. The model's HNSW index (cosine) is built after the first run.
    """
    url = database_url()
    summary = run_embedding(url, model, lang, batch_size, show_bar=not json_out and sys.stdout.isatty())
    if json_out:
        emit_json(__import__("json").loads(summary.to_json()))
        return
    if not summary.todo:
        console.print(f"nothing to embed: every sentence has an embedding by {summary.model}",
                      highlight=False, soft_wrap=True, markup=False)
        return
    console.print(f"{summary.embedded} sentences embedded with {summary.model} (dim {summary.dim}) in "
                  f"{summary.seconds:.1f}s, {summary.sentences_per_second:.0f} sentences/s; index {summary.index}",
                  highlight=False, soft_wrap=True, markup=False)


def run_embedding(url: str, model: str, langs: list[str], batch_size: int, *, show_bar: bool):
    """Load ``model`` and embed what is missing under a progress bar (shared with
    ``scoi ingest --embed``); a bad model or Ctrl-C: a clear message, non-zero exit."""
    from scoi.embedding.embedder import Embedder, EmbedderError
    from scoi.embedding.embeddings import EmbeddingError, embed_missing

    def work(advance, set_total):
        embedder = Embedder(model)
        return embed_missing(url, embedder, langs=langs or None, batch_size=batch_size,
                             progress=advance, on_start=set_total,
                             index_progress=index_lines() if show_bar else None)

    return run_batches("embed", "sentences", show_bar, (EmbedderError, EmbeddingError), work)


def index_lines() -> Callable[[str, int, int], None]:
    """The HNSW build's progress as lines above the bar: one per phase, and one each
    further tenth of the tuples loaded (not one per second)."""
    last: list[tuple[str, int]] = []

    def report(phase: str, done: int, total: int) -> None:
        tenth = done * 10 // total if total else 0
        if last and last[0] == (phase, tenth):
            return
        last[:] = [(phase, tenth)]
        share = f" {done}/{total} ({100 * done // total}%)" if total else ""
        console.print(f"HNSW index: {phase}{share}", highlight=False, soft_wrap=True, markup=False)

    return report
