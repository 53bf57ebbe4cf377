"""A worker batch's items at each step (claimed, prepared, generated or failed) and the
pure steps between them: the prompt rendered and fitted to the model's context, the
model's text made storable. Kept apart from the worker's loop (scoi.jobs.worker) and its
database writes (scoi.jobs.batch_pipeline) so each reads on its own."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

import psycopg

from scoi.core import defaults, inline
from scoi.core.answer import extract_answer
from scoi.core.prompt import Example, render_prompt
from scoi.core.prompt_fit import PromptTooLong, fit_prompt
from scoi.jobs.spec import Job, job_order, job_template, storable_text

MAX_ERROR_CHARS = 4000
#: What writing a value PostgreSQL cannot hold raises: DataError from the server (NUL, a
#: character the database encoding lacks), UnicodeEncodeError from psycopg (a lone surrogate).
REFUSED_VALUE = (psycopg.DataError, UnicodeEncodeError)


@dataclass
class Claimed:
    job_id: int
    idx: int
    source: str
    attempt: int
    masked: str | None = None  # the source with inline codes as placeholders (CAT files): the prompt's text
    #: the translation memory's exact match to insert instead of generating (scoi.reuse.Match),
    #: found at claim time when the job reuses (``--reuse exact``); or why looking it up failed
    reuse: Any = None
    reuse_error: str | None = None


@dataclass
class Prepared:
    """An item ready to generate: its selection and prompt (step 1 of a batch)."""

    item: Claimed
    selection: Any  # SelectionResult to record with the result, or None (zero-shot, reused)
    labels: Any     # the selector's LabelSpace, needed to record the selection
    #: None: nothing goes to the model (a blank source passes through; an exact match
    #: reuses its stored translation)
    prompt: str | None
    select_ms: float
    selection_id: int | None = None
    examples: list[Example] = field(default_factory=list)  # selection order, best first
    examples_used: int = 0  # how many of them the prompt holds (fewer when fitted to the context)
    terms: Any = None  # the glossary matches of the source (scoi.core.glossary.Match), None without a glossary


class Generated(NamedTuple):
    """An item's answer (step 2): the extracted output, the raw text, generation time, and
    what was cleaned from the text to store it (``job_item.warning``)."""

    prepared: Prepared
    output: str
    raw_output: str | None
    generate_ms: float
    warning: str | None = None
    qa: list[str] | None = None  # what the output broke of the source's inline codes (None: it has none)
    term_check: list[dict] | None = None  # [{src, tgt, found}] for a job with a glossary

    @property
    def origin(self) -> str | None:
        """Where the output came from (``job_item.origin``): ``tm``, an exact match's stored
        translation; ``llm``, the model; None, neither (a blank source passed through with
        no model call, as blank lines are at submit)."""
        if self.prepared.item.reuse is not None:
            return "tm"
        return "llm" if self.prepared.prompt is not None else None

    @property
    def origin_pair_id(self) -> int | None:
        """The pair whose stored translation is the output (``origin`` tm), or None (llm)."""
        return self.prepared.item.reuse.pair_id if self.prepared.item.reuse is not None else None


class Failed(NamedTuple):
    """An item whose attempt failed, with the error kept for ``last_error`` (and its
    prompt, if it got that far)."""

    item: Claimed
    error: str
    prepared: Prepared | None = None
    final: bool = False  # no retry can help (the prompt cannot fit the model): failed now


class PrepareResult(NamedTuple):
    job: Job | None
    prepared: list[Prepared]
    failed: list[Failed]


class GenerateResult(NamedTuple):
    done: list[Generated]
    failed: list[Failed]
    seconds: float  # wall time of the backend call (0 when the backend could not load)


def error_text(exc: BaseException) -> str:
    """The error for ``last_error``: cut, and storable (a message may quote model output)."""
    text = storable_text(f"{type(exc).__name__}: {exc}")[0]
    return text if len(text) <= MAX_ERROR_CHARS else text[:MAX_ERROR_CHARS] + " ..."


def generated_output(prepared: Prepared, gen: Any) -> Generated:
    """A backend's Generation as the database can store it: the raw text cleaned of what
    PostgreSQL refuses (storable_text), the answer extracted from it, the change noted."""
    raw, note = storable_text(gen.text)
    warning = f"output cleaned: {note}" if note else None
    answer = extract_answer(raw)
    masked = prepared.item.masked
    return Generated(prepared, answer, raw, gen.seconds * 1000, warning,
                     inline.check(masked, answer) if masked is not None else None)


def reused_output(prepared: Prepared) -> Generated:
    """An exact match's stored translation as the item's output, QA-checked against a CAT
    item's masked source like a model's answer (it has no codes: find_reuse)."""
    target, masked = prepared.item.reuse.target, prepared.item.masked
    return Generated(prepared, target, None, 0.0, None, inline.check(masked, target) if masked is not None else None)


def render_item_prompt(job: Job, source: str, examples: list[Example], terms: Any = None) -> str:
    """The item's prompt with ``examples`` (selection order) and the glossary ``terms``
    found in its source, as the job asks for it: its template is a stored text, never a
    file the job names. A prompt PostgreSQL cannot store fails this item, before any write."""
    template, template_text = job_template(job)
    prompt = render_prompt(source, examples, job.src_lang, job.tgt_lang, template=template,
                           order=job_order(job.params), seed=job.params.get("seed", defaults.SEED),
                           template_text=template_text, glossary=[m.to_dict() for m in terms or ()])
    if (problem := storable_text(prompt)[1]) is not None:
        raise ValueError(f"the prompt cannot be stored ({problem}); check the job's template")
    return prompt


def fit_context(job: Job, backend: Any, prepared: list[Prepared], max_new_tokens: int
                 ) -> tuple[list[Prepared], list[Failed]]:
    """The items whose prompt fits the backend's context (``context_length`` tokens with
    ``max_new_tokens`` of answer), their last-ranked examples dropped where needed, and
    the items that cannot fit even without examples, failed for good (docs/jobs.md).
    A backend that does not know its context gets every prompt as it is."""
    context = getattr(backend, "context_length", None)
    if not context:
        return prepared, []
    fitted: list[Prepared] = []
    too_long: list[Failed] = []
    for p in prepared:
        try:
            text = p.item.masked or p.item.source
            p.prompt, p.examples_used = fit_prompt(
                lambda ex, p=p, text=text: render_item_prompt(job, text, list(ex), p.terms),
                p.examples, backend.count_tokens, context, max_new_tokens)
        except PromptTooLong as e:
            too_long.append(Failed(p.item, f"PromptTooLong: {e}", p, final=True))
            continue
        except Exception as e:  # noqa: BLE001 - a tokenizer or /tokenize failure: retried like generation's
            too_long.append(Failed(p.item, error_text(e), p))
            continue
        fitted.append(p)
    return fitted, too_long


__all__ = ["Claimed", "Failed", "GenerateResult", "Generated", "MAX_ERROR_CHARS", "PrepareResult", "Prepared",
           "REFUSED_VALUE", "error_text", "fit_context", "generated_output", "render_item_prompt", "reused_output"]
