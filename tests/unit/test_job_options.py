"""The job options shared by ``scoi job submit``, ``scoi schedule add`` and ``scoi experiment run``."""

from __future__ import annotations


def test_job_options_are_declared_once_for_submit_schedule_and_experiment():
    """Every job option of ``job submit`` is an option of ``schedule add`` too, and
    ``experiment run`` takes the shared ones it uses (one declaration, no drift)."""
    import typer.main

    from scoi.cli.main import app

    def options(*path: str) -> set[str]:
        command = typer.main.get_command(app)
        for part in path:
            command = command.commands[part]
        return {o for p in command.params for o in p.opts if o.startswith("--")}

    submit, schedule, experiment = options("job", "submit"), options("schedule", "add"), options("experiment", "run")
    shared = {"--src", "--tgt", "--model", "--method", "--k", "--template", "--max-attempts", "--pool", "--corpus",
              "--fill", "--order", "--seed", "--max-new-tokens", "--backend-opt", "--embedder", "--rbm25-variant",
              "--parser"}
    assert shared <= submit and shared <= schedule
    assert {"--src", "--tgt", "--model", "--pool", "--max-new-tokens", "--backend-opt", "--embedder"} <= experiment
