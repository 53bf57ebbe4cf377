"""Refuse a job that could never run before any of it is stored: languages, limits,
method, order, fill, template, backend spec and options, and the corpus, trees and
embeddings the method needs. Above the queue (scoi.jobs.store), since it asks the
selector and the backends.
"""

from __future__ import annotations

from pathlib import Path

import psycopg

from scoi.jobs.spec import JobError, JobSpec, check_backend_options


def validate(conn: psycopg.Connection, spec: JobSpec) -> None:
    """Reject a job that could never run, or that would store a secret, before any item is stored."""
    from scoi.backends.spec import BackendSpecError, check_options, parse_spec
    from scoi.core.exact import REUSE_MODES, check_where
    from scoi.core.limits import check_range
    from scoi.core.methods import RBM25_VARIANTS, method
    from scoi.core.names import check_name
    from scoi.core.prompt import ORDERS, TEMPLATE_NAMES, language_name
    from scoi.selector import FILLS

    try:
        language_name(spec.src)
        language_name(spec.tgt)
        for limit, option in (("k", "-k"), ("max_attempts", None), ("pool", None), ("max_new_tokens", None),
                              ("seed", None)):
            check_range(limit, getattr(spec, limit), option)
        if spec.name is not None:
            check_name("job", spec.name)
    except ValueError as e:
        raise JobError(str(e)) from None
    try:
        entry = method(spec.method)
    except ValueError as e:
        raise JobError(str(e)) from None
    if spec.reuse not in REUSE_MODES:
        raise JobError(f"unknown --reuse {spec.reuse!r}; expected one of {', '.join(REUSE_MODES)}")
    try:
        spec.where = check_where(spec.where)
    except ValueError as e:
        raise JobError(str(e)) from None
    if spec.order not in ORDERS:
        raise JobError(f"unknown example order {spec.order!r}; expected one of {', '.join(ORDERS)}")
    if spec.fill not in FILLS:
        raise JobError(f"unknown fill {spec.fill!r}; expected one of {', '.join(FILLS)}")
    if spec.template not in TEMPLATE_NAMES and not Path(spec.template).expanduser().is_file():
        raise JobError(f"template {spec.template!r} is neither {' nor '.join(TEMPLATE_NAMES)} nor an existing file")
    check_template(spec.template, spec.src, spec.tgt)
    if spec.name is not None and spec.name.isdigit():
        raise JobError(f"job name {spec.name!r} must be non-empty and not a number (numbers are job ids)")
    check_backend_options(spec.backend_options)  # a secret first: its message says where keys go
    try:
        parsed = parse_spec(spec.model)
    except BackendSpecError as e:
        raise JobError(f"--model: {e}") from None
    try:
        check_options(parsed, spec.backend_options)
    except BackendSpecError as e:
        raise JobError(f"--backend-opt: {e}") from None
    if entry.examples and spec.k > 0:
        from scoi.selector import direction_exists, trees_missing

        if not direction_exists(conn, spec.src, spec.tgt):
            raise JobError(f"no corpus holds {spec.src}-{spec.tgt} pairs to pick examples from; load one first: "
                           f"scoi ingest FILE --src {spec.src} --tgt {spec.tgt} (or use --method zero)")
        if problem := trees_missing(conn, spec.src, spec.method):
            raise JobError(problem)
    if "rbm25_variant" in entry.settings and spec.rbm25_variant not in RBM25_VARIANTS:
        raise JobError(f"unknown R-BM25 variant {spec.rbm25_variant!r}; expected one of {', '.join(RBM25_VARIANTS)}")
    embedder = spec.params().get("embedder")
    if embedder is not None:
        from scoi.embeddings import find_embedder

        if find_embedder(conn, embedder) is None:
            raise JobError(f"method {spec.method} needs sentence embeddings, and none is stored for {embedder}: "
                           f"scoi embed --model {embedder} first (or pass --embedder with the model you embedded with)")


def check_template(template: str, src_lang: str, tgt_lang: str) -> None:
    """Render a template file once on a sample example, so a template the sandbox refuses
    (or that does not render) is refused at submit, not by every item in the worker."""
    from scoi.core.prompt import TEMPLATE_NAMES, Example, render_prompt

    if template in TEMPLATE_NAMES:
        return

    try:
        render_prompt("Sample sentence.", [Example("Example source.", "Example target.")], src_lang, tgt_lang,
                      template=template)
    except ValueError as e:
        raise JobError(str(e)) from None


__all__ = ["check_template", "validate"]
