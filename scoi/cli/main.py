"""The ``scoi`` command: registers the subcommands of each module."""

from __future__ import annotations

import typer

from scoi.cli import (ctq_cmd, db, delete_cmd, demo_cmd, embed_cmd, eval_cmd, experiment_cmd, gaps_cmd, glossary_cmd,
                      ingest_cmd, jobs_cmd, lookup_cmd, reanalyze_cmd, schedule_cmd, select_cmd, serve_cmd, worker_cmd)

app = typer.Typer(
    help="SCOI in-context example selection for LLM translation, backed by PostgreSQL.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
app.add_typer(db.app, name="db")
app.command("ingest")(ingest_cmd.ingest)
app.add_typer(delete_cmd.corpora_app, name="corpora")
app.add_typer(delete_cmd.pairs_app, name="pairs")
app.command("ingest-runs")(ingest_cmd.ingest_runs)
app.command("reanalyze")(reanalyze_cmd.reanalyze)
app.command("embed")(embed_cmd.embed)
app.command("select")(select_cmd.select)
app.command("prompt")(select_cmd.prompt)
app.command("lookup")(lookup_cmd.lookup)
app.command("demo")(demo_cmd.demo)
app.add_typer(jobs_cmd.job_app, name="job")
app.command("worker")(worker_cmd.worker)
app.command("eval")(eval_cmd.eval_jobs)
app.add_typer(schedule_cmd.schedule_app, name="schedule")
app.add_typer(experiment_cmd.experiment_app, name="experiment")
app.command("serve")(serve_cmd.serve)
app.command("gaps")(gaps_cmd.gaps)
app.add_typer(glossary_cmd.glossary_app, name="glossary")
app.add_typer(ctq_cmd.ctq_app, name="ctq")


if __name__ == "__main__":
    app()
