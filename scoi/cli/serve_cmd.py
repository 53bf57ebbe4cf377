"""``scoi serve``: the HTTP API and the coverage page (scoi.service)."""

from __future__ import annotations

import typer

from scoi.cli.common import EMBEDDER_HELP, database_url, err_console, fail
from scoi.core import defaults

MODEL_HELP = ("A model requests may name: NAME=SPEC (repeatable), SPEC as for `scoi job submit --model`, "
              "e.g. gemma=gguf:/models/gemma.gguf or local=openai:qwen.")
BACKEND_OPT_HELP = "A model's backend option NAME:KEY=VALUE (repeatable), e.g. local:base_url=http://127.0.0.1:8000/v1."


def serve(
    host: str = typer.Option(defaults.SERVE_HOST, "--host", help="Address to listen on; other than loopback needs "
                                                          "SCOI_SERVE_TOKEN set."),
    port: int = typer.Option(defaults.SERVE_PORT, "--port", min=1, max=65535, help="TCP port."),
    model: list[str] = typer.Option([], "--model", "-m", help=MODEL_HELP + " Checked at start and loaded in the "
                                    "background (GET /api/models shows when each is ready)."),
    backend_opt: list[str] = typer.Option([], "--backend-opt", help=BACKEND_OPT_HELP),
    warm: list[str] = typer.Option([], "--warm", help="Load this direction's selector at start (SRC-TGT, "
                                                      "repeatable; default: every direction of the corpora)."),
    timeout: float = typer.Option(defaults.SERVE_TIMEOUT, "--timeout", min=0.1,
                                  help="Seconds one request may work."),
    max_body: int = typer.Option(defaults.SERVE_MAX_BODY, "--max-body", min=1024,
                                 help="Largest request body, in bytes."),
    max_chars: int = typer.Option(defaults.SERVE_MAX_CHARS, "--max-chars", min=1,
                                  help="Longest sentence, in characters."),
    max_sentences: int = typer.Option(defaults.SERVE_MAX_SENTENCES, "--max-sentences", min=1,
                                      help="Most sentences in one request."),
    embedder: str | None = typer.Option(None, "--embedder", help=EMBEDDER_HELP),
) -> None:
    """Serve the HTTP API (OpenAPI docs at /docs) and the coverage page at http://HOST:PORT/."""
    import uvicorn

    from scoi.service.app import create_app
    from scoi.service.config import ConfigError, Limits, ServeConfig, parse_models, token_from_env

    try:
        config = ServeConfig(url=database_url(), host=host, port=port, token=token_from_env(),
                             models=parse_models(model, backend_opt), embedder=embedder,
                             limits=Limits(max_body_bytes=max_body, max_chars=max_chars,
                                           max_sentences=max_sentences, timeout_s=timeout))
        config.check()
    except ConfigError as e:
        fail(str(e))
    directions = [_direction(d) for d in warm] if warm else _corpus_directions(config.url)
    app = create_app(config, warm=directions)
    err_console.print(f"scoi serve: http://{host}:{port}/ (API docs: /docs; token "
                      f"{'required' if config.token else 'not set'})", highlight=False, markup=False)
    uvicorn.run(app, host=host, port=port, log_level="info", timeout_graceful_shutdown=5)


def _direction(text: str) -> tuple[str, str]:
    src, sep, tgt = text.partition("-")
    if not sep or not src or not tgt:
        fail(f"--warm {text!r}: expected SRC-TGT, e.g. fr-en")
    return src.lower(), tgt.lower()


def _corpus_directions(url: str) -> list[tuple[str, str]]:
    """The stored corpora's directions (as ingested; the reverse loads on first use)."""
    from scoi.db import connect
    from scoi.db.queries import load

    with connect(url) as conn:
        return [tuple(r) for r in conn.execute(load("serve")["corpus_directions"])]
