"""The ``scoi`` command end to end: in this process (typer's CliRunner) or, where a real
process is the point (exit codes, signals, kill -9, start-up), as a subprocess."""
