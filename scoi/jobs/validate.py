"""Refuse a job that could never run before any of it is stored: languages, limits,
method, order, fill, template (a file's text is read here, at submit, and stored with the
job), parser overrides, backend spec and options (none that runs code: scoi.backends.spec),
and the corpus, trees and embeddings the method needs. Above the queue (scoi.jobs.store),
since it asks the selector and the backends.
"""

from __future__ import annotations

import psycopg

from scoi.jobs.spec import JobError, JobSpec, check_backend_options, read_template, storable_text


def validate(conn: psycopg.Connection, spec: JobSpec) -> None:
    """Reject a job that could never run, or that would store a secret, before any item is
    stored. A user template's file is read here into ``spec.template_text`` (the submitter's
    machine): what is stored is its text, which workers render without opening any file."""
    from scoi.backends.spec import BackendSpecError, check_options, parse_spec
    from scoi.core.exact import REUSE_MODES, check_where
    from scoi.core.match import check_min_match
    from scoi.core.limits import check_range
    from scoi.core.methods import RBM25_VARIANTS, method
    from scoi.core.names import check_name
    from scoi.core.prompt import ORDERS, TEMPLATE_NAMES, language_name
    from scoi.selection.options import FILLS

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
        spec.min_match = check_min_match(spec.min_match)
    except ValueError as e:
        raise JobError(str(e)) from None
    if spec.order not in ORDERS:
        raise JobError(f"unknown example order {spec.order!r}; expected one of {', '.join(ORDERS)}")
    if spec.fill not in FILLS:
        raise JobError(f"unknown fill {spec.fill!r}; expected one of {', '.join(FILLS)}")
    if spec.template in TEMPLATE_NAMES:
        if spec.template_text is not None:
            raise JobError(f"template {spec.template!r} is built in; a template text goes with a template file")
    elif spec.template_text is None:  # read here, on the submitter's machine: workers never open it
        spec.template_text = read_template(spec.template)
    check_template(spec.template, spec.src, spec.tgt, spec.template_text)
    check_parsers(conn, spec)
    if spec.glossary:  # a glossary with no entry for the pair would do nothing, silently
        from scoi.glossary import GlossaryError, entries

        try:
            entries(conn, spec.glossary, spec.src, spec.tgt)
        except GlossaryError as e:
            raise JobError(f"--glossary: {e}") from None
    if spec.name is not None and spec.name.isdigit():
        raise JobError(f"job name {spec.name!r} must be non-empty and not a number (numbers are job ids)")
    check_backend_options(spec.backend_options)  # a secret first: its message says where keys go
    try:
        parsed = parse_spec(spec.model)
    except BackendSpecError as e:
        raise JobError(f"--model: {e}") from None
    try:
        check_options(parsed, spec.backend_options, stored=True)
    except BackendSpecError as e:
        raise JobError(f"--backend-opt: {e}") from None
    if entry.examples and spec.k > 0:
        from scoi.selection.scheme import direction_exists, trees_missing

        if not direction_exists(conn, spec.src, spec.tgt):
            raise JobError(f"no corpus holds {spec.src}-{spec.tgt} pairs to pick examples from; load one first: "
                           f"scoi ingest FILE --src {spec.src} --tgt {spec.tgt} (or use --method zero)")
        if problem := trees_missing(conn, spec.src, spec.method):
            raise JobError(problem)
    if "rbm25_variant" in entry.settings and spec.rbm25_variant not in RBM25_VARIANTS:
        raise JobError(f"unknown R-BM25 variant {spec.rbm25_variant!r}; expected one of {', '.join(RBM25_VARIANTS)}")
    if spec.method == "ctq":  # the model named now (default: the direction's newest), so the job keeps it
        from scoi.ctq import CtqError, find_model

        try:
            spec.ctq_model = find_model(conn, spec.ctq_model, spec.src, spec.tgt).signature
        except CtqError as e:
            raise JobError(str(e)) from None
    embedder = spec.params().get("embedder")
    if embedder is not None:
        from scoi.embedding.embeddings import find_embedder

        if find_embedder(conn, embedder) is None:
            raise JobError(f"method {spec.method} needs sentence embeddings, and none is stored for {embedder}: "
                           f"scoi embed --model {embedder} first (or pass --embedder with the model you embedded with)")


def check_template(template: str, src_lang: str, tgt_lang: str, text: str | None = None) -> None:
    """Render a user template (its ``text``, else the file) once on a sample example, so a
    template the sandbox refuses, that does not render, that is too long, or that holds or
    renders what PostgreSQL text cannot store (NUL) is refused at submit, not by every item
    in the worker."""
    from scoi.core.limits import LIMITS
    from scoi.core.prompt import TEMPLATE_NAMES, Example, render_prompt

    if template in TEMPLATE_NAMES:
        return
    if text is not None:
        if len(text) > LIMITS["template_chars"][1]:
            raise JobError(f"template {template!r} has {len(text)} characters; at most "
                           f"{LIMITS['template_chars'][1]} are accepted")
        if (problem := storable_text(text)[1]) is not None:
            raise JobError(f"template {template!r} cannot be stored with the job: {problem}")
    try:
        sample = render_prompt("Sample sentence.", [Example("Example source.", "Example target.")], src_lang,
                               tgt_lang, template=template, template_text=text)
    except ValueError as e:
        raise JobError(str(e)) from None
    if (problem := storable_text(sample)[1]) is not None:
        raise JobError(f"template {template!r} renders prompts PostgreSQL cannot store: {problem}")


def check_parsers(conn: psycopg.Connection, spec: JobSpec) -> None:
    """Refuse a ``--parser`` override a worker would refuse for every item: one for another
    language than the job's source (the only one a job parses), or one other than the
    parser the stored source sentences were analysed with. Compared by name only, so
    nothing is imported at submit (a ``module:function`` parser runs code when loaded)."""
    from scoi.db.queries import load
    from scoi.parsers import parser_name

    for lang, override in spec.parsers.items():
        if lang != spec.src:
            raise JobError(f"--parser {lang}={override}: a job parses only its source language "
                           f"({spec.src}); drop it, or use --parser {spec.src}=NAME")
        stored = [(name, version) for _, name, version, _ in
                  conn.execute(load("select")["lang_schemes"], {"lang": lang}).fetchall()]
        if stored and parser_name(override) not in {name for name, _ in stored}:
            schemes = ", ".join(f"{name}=={version}" for name, version in stored)
            raise JobError(f"--parser {lang}={override}: the stored {lang} sentences were analysed with {schemes}; "
                           f"drop --parser, or re-analyse them first: scoi reanalyze --lang {lang} "
                           f"--parser {lang}={override}")


__all__ = ["check_parsers", "check_template", "validate"]
