"""What a job is: its settings (``JobSpec``, with the signature that names its outputs), its
stored row (``Job``), and the checks on its inputs that need nothing but the text: lines
read from a file, backend options free of secrets, outputs PostgreSQL can store.

The lowest jobs module: no database, selector, embeddings or backends.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from scoi.core import defaults
from scoi.core.prompt import ORDER_ALIASES, TEMPLATE_NAMES as BUILTIN_TEMPLATES


#: The example order of a job whose ``params`` hold no ``order``: scoi's default before it
#: became ``reverse`` (new jobs always store their order, so this only reads old rows).
LEGACY_ORDER = "selection"


class JobError(RuntimeError):
    """A job operation that cannot be done (unknown job, bad option, bad input)."""


@dataclass
class JobSpec:
    """How a job translates; stored in ``job`` (columns and ``params``)."""

    src: str
    tgt: str
    model: str
    method: str = defaults.METHOD
    k: int = defaults.K
    template: str = defaults.TEMPLATE
    name: str | None = None
    max_attempts: int = defaults.MAX_ATTEMPTS
    pool: int = defaults.POOL
    fill: str = defaults.FILL
    corpora: list[str] | None = None
    order: str = defaults.ORDER
    seed: int = defaults.SEED
    max_new_tokens: int = defaults.MAX_NEW_TOKENS
    backend_options: dict[str, Any] = field(default_factory=dict)
    embedder: str | None = None  # fuzzy / fuzzy-ann: the embedding model (default: the paper's)
    rbm25_variant: str = defaults.RBM25_VARIANT  # rbm25: moses (scoi's), ctq (as published) or agrawal
    parsers: dict[str, str] = field(default_factory=dict)  # --parser LANG=NAME: the parser the source must be on
    reuse: str = defaults.REUSE  # exact: an exact match's stored translation instead of the model (scoi.reuse)
    where: dict[str, str] | None = None  # --where KEY=VALUE: only pairs whose metadata holds these
    min_match: float | None = None  # --min-match P: only examples whose match % is at least P (docs/method.md §8)
    #: A template file's text, read at submit (validate): workers render it and never open
    #: the file ``template`` names (a stored job must not make a worker read a file).
    template_text: str | None = None
    #: A glossary's name (scoi.glossary): its terms found in each source go into the prompt,
    #: and each output is checked for the required target terms (job_item.term_check).
    glossary: str | None = None
    #: --method ctq: the CTQ Scorer model's name (None: the direction's newest); at submit,
    #: its signature (``NAME@...``), so the job names the exact model its selections use
    ctq_model: str | None = None
    #: a CTQ Scorer training job (scoi.ctq): the model it makes data for; each item's one
    #: example is the candidate fixed in ctq_train_item, not a selection
    ctq_train: str | None = None

    def __post_init__(self) -> None:
        # One spelling in params and signatures (an unknown order is rejected by validate()).
        self.order = ORDER_ALIASES.get(self.order, self.order)

    def params(self) -> dict[str, Any]:
        """The settings that have no column of their own (the order always, explicitly,
        so a later change of the default never changes what a stored job means)."""
        return {"pool": self.pool, "fill": self.fill, "corpora": self.corpora, "order": self.order,
                "seed": self.seed, "max_new_tokens": self.max_new_tokens,
                "backend_options": self.backend_options, **self._method_params(),
                **({"parsers": self.parsers} if self.parsers else {}), "reuse": self.reuse,
                **({"where": self.where} if self.where else {}),
                **({"min_match": self.min_match} if self.min_match is not None else {}),
                **({"template_text": self.template_text} if self.template_text is not None else {}),
                **({"glossary": self.glossary} if self.glossary else {}),
                **({"ctq_train": self.ctq_train} if self.ctq_train else {})}

    def _method_params(self) -> dict[str, str | int]:
        """The settings only this job's method reads (scoi.core.methods): ``embedder``
        (stored name) for the embedding methods, ``rbm25_variant`` for rbm25; nothing for
        the others, so their params and signatures stay as they were. No ``ef_search``:
        a job's selections search with the default (each one's signature names it)."""
        from scoi.core.methods import REGISTRY, method_settings
        from scoi.hub import model_name

        if self.method not in REGISTRY:  # refused by validate(); named as given until then
            return {}
        return method_settings(self.method, rbm25_variant=self.rbm25_variant,
                               embedder=model_name(self.embedder or defaults.EMBEDDER), ctq_model=self.ctq_model)

    def signature(self) -> str:
        """Every setting that changes the outputs (scoi.core.signature). The analysis
        scheme is known only when a worker runs the job: each item's recorded selection
        signature names it (``parser:fr_core_news_sm==3.8.0/spacy-tokens``). ``reuse`` is
        not in it: it never changes what the model writes, only which items it writes
        (each item's ``origin`` says), while ``where`` changes the examples, so it is."""
        from scoi.core.exact import where_part
        from scoi.core.signature import corpora_part, method_parts, signature

        parsers = ",".join(f"{k}={v}" for k, v in sorted(self.parsers.items())) or None
        return signature(self.src, self.tgt, {
            "method": self.method, **method_parts(self._method_params()), "parsers": parsers, "k": self.k,
            "pool": self.pool, "fill": self.fill, "seed": self.seed, "corpora": corpora_part(self.corpora),
            "where": where_part(self.where),
            "match": None if self.min_match is None else f"{self.min_match:g}", "model": self.model,
            "template": template_label(self.template, self.template_text), "order": self.order,
            "max_new_tokens": self.max_new_tokens, "glossary": self.glossary or None,
            **({"ctq": f"train={self.ctq_train}"} if self.ctq_train else {})})


@dataclass
class Job:
    """A row of ``job``."""

    id: int
    name: str | None
    created_at: Any
    src_lang: str
    tgt_lang: str
    method: str
    k: int
    model: str
    template: str
    params: dict[str, Any]
    signature: str
    status: str
    input_path: str | None
    references_path: str | None
    max_attempts: int

    @property
    def label(self) -> str:
        return self.name or f"job {self.id}"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def job_order(params: dict[str, Any]) -> str:
    """The example order a stored job's prompts use (``LEGACY_ORDER`` for rows without one)."""
    return params.get("order", LEGACY_ORDER)


def job_reuse(params: dict[str, Any]) -> str:
    """A stored job's ``--reuse`` (``off`` for rows stored before reuse existed: they never did)."""
    return params.get("reuse", "off")


def template_label(template: str, text: str | None) -> str:
    """How a signature names a template: a built-in by its name, a user template by its
    name and a hash of its text (the text, not the file, is what prompts are made of)."""
    if text is None:
        return template
    return f"{template}#sha256:{hashlib.sha256(text.encode('utf-8')).hexdigest()[:16]}"


def read_template(path: str) -> str:
    """The text of a template file, read at submit on the submitter's machine (a BOM
    dropped); a JobError names the file and why it cannot be used."""
    try:
        return Path(path).expanduser().read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise JobError(f"template {path!r} is neither {' nor '.join(BUILTIN_TEMPLATES)} nor an existing file") from None
    except IsADirectoryError:
        raise JobError(f"template {path!r} is a directory; give a Jinja2 template file") from None
    except (OSError, UnicodeDecodeError) as e:
        raise JobError(f"template {path!r} cannot be read as UTF-8 text: {e}") from None


def job_template(job: "Job") -> tuple[str, str | None]:
    """The template a worker renders for ``job``: (name, stored text or None for a built-in).

    A user template is rendered from the text stored at submit only. A row naming a file
    without its text (stored before templates were, or inserted by hand) is refused with
    a JobError: a worker never reads a file a job names."""
    if job.template in BUILTIN_TEMPLATES:
        return job.template, None
    text = job.params.get("template_text")
    if not isinstance(text, str):
        raise JobError(f"{job.label} names the template file {job.template!r} without its text; workers never "
                       "read a file a job names: submit the job again (`scoi job submit --template FILE` stores "
                       "the file's text)")
    return job.template, text


def source_hash(text: str) -> str:
    """Content hash of an input line (``scoi job sync`` adds lines whose hash is new)."""
    return hashlib.md5(text.encode("utf-8")).hexdigest()


def read_lines(path: str | Path) -> list[str]:
    """The lines of a UTF-8 text file (scoi.text.textfile: lines end at ``\\n``, CRLF accepted, a
    BOM dropped), surrounding whitespace stripped (blank lines kept, so line i of the file
    is item i of the job). Read once, so a pipe works; bad text is a JobError at file:line."""
    from scoi.text.textfile import TextFileError, read_lines as read_text_lines

    try:
        return [line.strip() for line in read_text_lines(path)]
    except TextFileError as e:
        raise JobError(str(e)) from None


def check_backend_options(options: dict[str, Any], where: str = "backend option") -> None:
    """Refuse options that would store a secret with the job (scoi.secrets: credential-like
    names at any depth, URLs with user info or a key in their query, token-like values).
    Backends read keys from the environment instead (scoi.config.openai_api_key)."""
    from scoi.secrets import SecretError, check_options

    try:
        check_options(options, where)
    except SecretError as e:
        raise JobError(str(e)) from None


_SURROGATE = re.compile("[\ud800-\udfff]")


def storable_text(text: str) -> tuple[str, str | None]:
    """``text`` as a PostgreSQL text value can hold it, and what had to change (None: nothing).

    Models do write what text columns refuse: NUL (0x00; random-weight and small models
    emit it, servers relay it) and lone UTF-16 surrogates (a JSON ``\\ud800`` without its
    pair), which no UTF-8 encoder accepts. One of them among a batch's parameters fails the
    whole statement, so the worker cleans each text first: NUL is removed, a lone surrogate
    becomes U+FFFD, and the note says how many, for the item's ``warning``.
    """
    nul = text.count("\x00")
    text, surrogates = _SURROGATE.subn("\ufffd", text.replace("\x00", ""))
    changes = []
    if nul:
        changes.append(f"removed {nul} NUL character{'s' if nul > 1 else ''} (PostgreSQL text cannot hold 0x00)")
    if surrogates:
        changes.append(f"replaced {surrogates} lone surrogate{'s' if surrogates > 1 else ''} with U+FFFD "
                       "(not encodable as UTF-8)")
    return text, "; ".join(changes) or None


__all__ = ["Job", "JobError", "JobSpec", "LEGACY_ORDER", "check_backend_options", "job_order", "job_reuse",
           "job_template", "read_lines", "read_template", "source_hash", "storable_text", "template_label"]
