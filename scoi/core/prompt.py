"""Few-shot translation prompts (docs/method.md §6): the built-in layouts and user templates.

Fitting a prompt into a model's context is scoi.core.prompt_fit; reading the answer back
is scoi.core.answer.

Everything here is pure string work, so that a prompt can be rebuilt byte for byte from a
run's stored examples; the only I/O is reading a user Jinja2 template given by path (a
job carries its template's text instead: workers render it and never open a file a job names).

Reading of the docs/method.md §6 layouts (the built-in templates reproduce them exactly):

XGLM style — one block per example, each block being the source line, the target line and
a line holding only ``###``; then the query's source line and a target line that ends with
``Sentence: `` (a trailing space, no newline)::

    French Sentence: "x_1"\\n
    English Sentence: "y_1"\\n
    ###\\n
    ...
    French Sentence: "x"\\n
    English Sentence: ␠

Alpaca style — the instruction line, one blank line, then every example as two lines with
*no* blank line between examples, then the query's two lines, the last one ending with the
colon (no trailing space, no newline)::

    Instruction: Translate the following French text into English.\\n
    \\n
    French: x_1\\n
    English: y_1\\n
    ...
    French: x\\n
    English:

the method's Alpaca block shows a blank line only after the instruction; the ``{Target
language}: {y_1}`` line is followed directly by the ``…`` placeholder and then by the query
lines, so examples are not separated by blank lines (the newline already ends each
answer, which is also where generation stops). Zero-shot prompts are the same layouts with
no example blocks.

``x_1 … x_k`` are the examples in *prompt* order. By default that is the reverse of the
selection order, as in the published runs: the example selected first (the best) is
``x_k``, the block right before the query (:func:`order_examples`).

Sentences come from line-based corpora and never hold newlines; should one slip in, the
built-in templates turn each run of line breaks into a single space, because a newline
inside a sentence would break the one-answer-per-line layout the answer extraction relies
on.

Glossary block (docs/glossary.md): when glossary terms were found in the query, the
built-in templates add one block (``Glossary:``, then a line ``- source term → target
term`` per term, `` (note)`` appended when the entry has one, then a blank line) at the
very start of an XGLM prompt, and after the instruction's blank line in Alpaca. With no
terms the prompt is exactly the layout above. User templates get the terms as
``glossary`` (a list of ``{src, tgt, note}``) and place them themselves.
"""

from __future__ import annotations

import os
import random
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Sequence

from scoi.core import defaults

__all__ = [
    "LANGUAGE_NAMES",
    "DEFAULT_ORDER",
    "ORDERS",
    "ORDER_ALIASES",
    "STOP_MARKERS",
    "TEMPLATE_NAMES",
    "Example",
    "canonical_order",
    "glossary_block",
    "language_name",
    "order_examples",
    "render_prompt",
    "stop_markers",
]

#: ISO 639-1 code -> English language name, as used in the prompts.
LANGUAGE_NAMES: dict[str, str] = {
    "ar": "Arabic",
    "bg": "Bulgarian",
    "bn": "Bengali",
    "ca": "Catalan",
    "cs": "Czech",
    "cy": "Welsh",
    "da": "Danish",
    "de": "German",
    "el": "Greek",
    "en": "English",
    "eo": "Esperanto",
    "es": "Spanish",
    "et": "Estonian",
    "eu": "Basque",
    "fa": "Persian",
    "fi": "Finnish",
    "fr": "French",
    "ga": "Irish",
    "gl": "Galician",
    "gu": "Gujarati",
    "he": "Hebrew",
    "hi": "Hindi",
    "hr": "Croatian",
    "hu": "Hungarian",
    "hy": "Armenian",
    "id": "Indonesian",
    "is": "Icelandic",
    "it": "Italian",
    "ja": "Japanese",
    "ka": "Georgian",
    "kk": "Kazakh",
    "ko": "Korean",
    "lt": "Lithuanian",
    "lv": "Latvian",
    "mk": "Macedonian",
    "ml": "Malayalam",
    "mr": "Marathi",
    "ms": "Malay",
    "mt": "Maltese",
    "nb": "Norwegian Bokmål",
    "ne": "Nepali",
    "nl": "Dutch",
    "no": "Norwegian",
    "pl": "Polish",
    "pt": "Portuguese",
    "ro": "Romanian",
    "ru": "Russian",
    "sk": "Slovak",
    "sl": "Slovenian",
    "sq": "Albanian",
    "sr": "Serbian",
    "sv": "Swedish",
    "sw": "Swahili",
    "ta": "Tamil",
    "te": "Telugu",
    "th": "Thai",
    "tl": "Tagalog",
    "tr": "Turkish",
    "uk": "Ukrainian",
    "ur": "Urdu",
    "vi": "Vietnamese",
    "zh": "Chinese",
}

#: The built-in templates; any other ``template`` value is taken as a Jinja2 file path.
TEMPLATE_NAMES: tuple[str, ...] = ("xglm", "alpaca")

#: Example orders ``render_prompt`` accepts. ``reverse``: the first example selected comes
#: last, right before the query (docs/method.md §6: what the published runs did, so the default);
#: ``selection``: first selected first; ``random``: shuffled with the run's seed.
ORDERS: tuple[str, ...] = ("reverse", "selection", "random")

#: The order used when none is given: the published one.
DEFAULT_ORDER = defaults.ORDER

#: Older spellings still accepted (jobs stored before the rename hold ``reversed``).
ORDER_ALIASES: dict[str, str] = {"reversed": "reverse"}

#: Strings that end an answer, per template. Both layouts put each answer on one line; XGLM
#: also closes every example with ``###``. A backend must not stop on a newline that comes
#: before any answer text (see :func:`scoi.backends.base.cut_at_stop`).
DEFAULT_STOP_MARKERS: tuple[str, ...] = ("###", "\n")

#: Per template (user templates, whose layout we cannot know, get the default).
STOP_MARKERS: dict[str, tuple[str, ...]] = {"xglm": DEFAULT_STOP_MARKERS, "alpaca": DEFAULT_STOP_MARKERS}


def language_name(code: str) -> str:
    """English name of an ISO 639-1 ``code`` (case-insensitive; a region such as
    ``pt-BR`` / ``pt_BR`` is ignored). Raises ValueError listing the known codes."""
    key = code.strip().lower().replace("_", "-").split("-", 1)[0]
    try:
        return LANGUAGE_NAMES[key]
    except KeyError:
        known = ", ".join(sorted(LANGUAGE_NAMES))
        raise ValueError(
            f"unknown language code {code!r}; known ISO 639-1 codes: {known}"
        ) from None


@dataclass(frozen=True)
class Example:
    """One in-context example: a source sentence and its reference translation."""

    src: str
    tgt: str


def stop_markers(template: str) -> tuple[str, ...]:
    """Stop strings for ``template`` (a built-in name or a user template path)."""
    return STOP_MARKERS.get(template, DEFAULT_STOP_MARKERS)


def canonical_order(order: str) -> str:
    """The name in :data:`ORDERS` for ``order`` (an alias such as ``reversed`` maps to
    ``reverse``), so stored jobs and signatures use one spelling. Raises ValueError."""
    name = ORDER_ALIASES.get(order, order)
    if name not in ORDERS:
        raise ValueError(f"unknown example order {order!r}; expected one of {', '.join(ORDERS)}")
    return name


def order_examples(examples: Sequence[Example], order: str = DEFAULT_ORDER, seed: int = 0) -> list[Example]:
    """Examples in prompt order, from ``examples`` in selection order (best first).

    ``reverse`` (default, as published): the first selected comes last, next to the query;
    ``selection``: first selected first; ``random``: shuffled with ``random.Random(seed)``
    so a run is reproducible from its seed.
    """
    items = list(examples)
    name = canonical_order(order)
    if name == "reverse":
        return items[::-1]
    if name == "random":
        random.Random(seed).shuffle(items)
    return items


_LINE_BREAKS = re.compile(r"[\r\n\u2028\u2029\x0b\x0c\x85]+")


def _one_line(text: str) -> str:
    return _LINE_BREAKS.sub(" ", text)


def glossary_block(terms: Sequence[dict]) -> str:
    """The built-in templates' glossary block (empty without terms)."""
    if not terms:
        return ""
    lines = [f"- {_one_line(t['src'])} \u2192 {_one_line(t['tgt'])}"
             + (f" ({_one_line(t['note'])})" if t.get("note") else "") for t in terms]
    return "Glossary:\n" + "\n".join(lines) + "\n\n"


def _render_xglm(query: str, examples: Sequence[Example], src: str, tgt: str, terms: Sequence[dict] = ()) -> str:
    parts = [glossary_block(terms)] + [
        f'{src} Sentence: "{_one_line(ex.src)}"\n{tgt} Sentence: "{_one_line(ex.tgt)}"\n###\n'
        for ex in examples
    ]
    parts.append(f'{src} Sentence: "{_one_line(query)}"\n{tgt} Sentence: ')
    return "".join(parts)


def _render_alpaca(query: str, examples: Sequence[Example], src: str, tgt: str, terms: Sequence[dict] = ()) -> str:
    parts = [f"Instruction: Translate the following {src} text into {tgt}.\n\n", glossary_block(terms)]
    parts.extend(f"{src}: {_one_line(ex.src)}\n{tgt}: {_one_line(ex.tgt)}\n" for ex in examples)
    parts.append(f"{src}: {_one_line(query)}\n{tgt}:")
    return "".join(parts)


@lru_cache(maxsize=32)
def _load_user_template(path: str, mtime_ns: int):  # mtime_ns: re-read an edited file
    try:
        source = Path(path).read_text(encoding="utf-8-sig")  # a BOM is not template text
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"cannot read prompt template {path}: {exc}") from None
    return _compile_template(source, path)


@lru_cache(maxsize=32)
def _compile_template(source: str, label: str):
    import jinja2

    # Default Jinja2 settings: a single trailing newline at the end of the file (which
    # editors add) is dropped, so a template can end its prompt with "Sentence: " or ":".
    # Sandboxed and immutable: a template (a worker renders the text stored with a job)
    # may read its variables, never reach Python internals (``cycler.__init__.
    # __globals__.os``) nor change what it is given; a try is a SecurityError, one line.
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    env = ImmutableSandboxedEnvironment(undefined=jinja2.StrictUndefined, autoescape=False)
    try:
        return env.from_string(source)
    except jinja2.TemplateSyntaxError as exc:
        raise ValueError(f"prompt template {label}, line {exc.lineno}: {exc.message}") from None


def _render_user(path: str, query: str, examples: Sequence[Example], src_lang: str, tgt_lang: str,
                 text: str | None = None, terms: Sequence[dict] = ()) -> str:
    import jinja2

    if text is not None:  # a job's stored template text: no file is read
        template = _compile_template(text, path)
    else:
        p = Path(path).expanduser()
        if not p.is_file():
            raise ValueError(
                f"prompt template {path!r} is neither a built-in template "
                f"({', '.join(TEMPLATE_NAMES)}) nor an existing file"
            )
        resolved = str(p.resolve())
        template = _load_user_template(resolved, os.stat(resolved).st_mtime_ns)
    try:
        return template.render(
            examples=list(examples),
            query=query,
            src_lang=src_lang,
            tgt_lang=tgt_lang,
            src_lang_name=language_name(src_lang),
            tgt_lang_name=language_name(tgt_lang),
            glossary=[{"src": t["src"], "tgt": t["tgt"], "note": t.get("note")} for t in terms],
        )
    except jinja2.TemplateError as exc:
        line = _template_error_line(exc)
        where = f", line {line}" if line else ""
        raise ValueError(f"prompt template {path}{where}: {exc}") from None


def _template_error_line(exc: BaseException) -> int | None:
    """Line of the template where a render-time error happened, from the traceback
    (Jinja2 rewrites frames so template code reports template line numbers)."""
    lineno = getattr(exc, "lineno", None)
    if lineno:
        return lineno
    tb = exc.__traceback__
    line = None
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == "<template>":
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


def render_prompt(
    query: str,
    examples: Sequence[Example],
    src_lang: str,
    tgt_lang: str,
    template: str = defaults.TEMPLATE,
    order: str = DEFAULT_ORDER,
    seed: int = 0,
    template_text: str | None = None,
    glossary: Sequence[dict] = (),
) -> str:
    """The few-shot prompt for translating ``query`` from ``src_lang`` to ``tgt_lang``.

    ``template`` is ``"xglm"`` or ``"alpaca"`` (layouts in the module docstring, exactly
    docs/method.md §6) or the path of a Jinja2 template file, rendered with ``examples`` (objects with
    ``src`` and ``tgt``), ``query``, ``src_lang``/``tgt_lang`` (codes) and
    ``src_lang_name``/``tgt_lang_name`` (English names). ``examples`` come in selection
    order (best first); ``order`` is ``"reverse"`` (default: the first selected is the last
    example, right before the query, as in the published runs, docs/method.md §6), ``"selection"``
    or ``"random"`` (seeded by ``seed``); ``"reversed"`` is accepted for ``"reverse"``.
    With ``template_text`` the user template is that text (``template`` only names it in
    messages) and no file is read: how a worker renders a job's template.
    ``glossary``: the terms found in ``query`` (``{src, tgt, note}``), rendered as the
    glossary block of the module docstring, or given to a user template as ``glossary``.
    Raises ValueError for unknown languages, orders or templates.
    """
    src_name = language_name(src_lang)
    tgt_name = language_name(tgt_lang)
    ordered = order_examples(examples, order, seed)
    if template == "xglm":
        return _render_xglm(query, ordered, src_name, tgt_name, glossary)
    if template == "alpaca":
        return _render_alpaca(query, ordered, src_name, tgt_name, glossary)
    return _render_user(template, query, ordered, src_lang, tgt_lang, template_text, glossary)
