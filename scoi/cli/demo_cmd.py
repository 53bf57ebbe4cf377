"""``scoi demo``."""

from __future__ import annotations

import os

import typer

from scoi.cli.common import console, database_url, emit_json
from scoi.core import defaults
from scoi.core.limits import LIMITS


def demo(
    model: str | None = typer.Option(None, "--model", envvar="SCOI_MODEL",
                                     help="Translate too: gguf:FILE, hf:DIR, openai:NAME (default: $SCOI_MODEL)."),
    k: int = typer.Option(defaults.K, "-k", "--k", min=1, max=LIMITS["k"][1], help="Examples per prompt."),
    json_out: bool = typer.Option(False, "--json", help="Last line of stdout: a JSON report."),
) -> None:
    """Run the whole chain offline on the demo corpus: ingest, select (SCOI vs BM25), prompt, translate, score."""
    from dataclasses import asdict

    from scoi.cli.demo import run_demo

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    url = database_url()
    report = run_demo(url, model=model, k=k, say=(lambda _msg: None) if json_out else
                      (lambda msg: console.print(msg, highlight=False, markup=False, soft_wrap=True)))
    if json_out:
        emit_json(asdict(report))
