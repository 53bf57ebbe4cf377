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

Which parser a language gets, its scheme and the loading of spaCy pipelines are in
:mod:`scoi.parsers`.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from typing import NamedTuple

import numpy as np

from scoi.core.names import base_language
from scoi.core.polynomial import ROOT, tree_terms
from scoi.core.trees import is_tree, max_spanning_tree, repair_heads
from scoi.parsers import NATASHA, NO_PARSER, ParserNotAvailable, import_spacy, load_pipeline
# Moses normalisation + tokenisation: sacremoses 0.2.0's output without importing sacremoses
# (its import compiles ~130 regexes over huge Unicode classes, ~0.3 s); see scoi/text/moses.py.
from scoi.text.moses import PunctNormalizer, moses_tokenizer

MAX_EXAMPLE_TOKENS = 120  # docs/method.md §1: longer sources are never used as examples
#: Languages written without spaces: Moses cannot split them into words, so their word
#: tokens come from spaCy's tokenizer for the language (zh: characters, offline; ja needs
#: SudachiPy, th PyThaiNLP).
SPACELESS = ("zh", "ja", "th")


@dataclass
class Analysis:
    tokens: list[str]  # W(x): Moses tokens
    terms: dict[str, int] = field(default_factory=dict)  # key -> multiplicity
    tree_tokens: int = 0  # nodes of the tree (spaCy tokens); sum(terms.values()) == tree_tokens + 1
    repaired: bool = False  # the parser's output was not a tree and was made one (docs/languages.md)


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
    """The trees of a spaCy pipeline's parses of ``texts`` (heads and relation labels): a
    token's head and ``dep_`` (or "dep" without a label), read with one ``to_array`` per
    doc rather than a Token object per token and head (about 0.1 ms of a parse worker's
    CPU per pair of fr/en sentences, measured in one process on 3,000 pairs)."""
    from spacy.attrs import DEP, HEAD

    strings = nlp.vocab.strings
    labels: dict[int, str] = {0: "dep"}
    out = []
    for doc in nlp.pipe(texts, batch_size=batch_size):
        arr = doc.to_array([HEAD, DEP]).astype(np.int64)  # HEAD: the head's offset (uint64: wraps back)
        heads = (np.arange(len(arr)) + arr[:, 0]).tolist() if len(arr) else []
        deps = arr[:, 1].tolist() if len(arr) else []
        for d in deps:
            if d not in labels:
                labels[d] = strings[d & 0xFFFFFFFFFFFFFFFF] or "dep"
        out.append(Tree(heads, [labels[d] for d in deps]))
    return out


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
        return self.analyze_timed(texts)[0]

    def analyze_timed(self, texts: list[str]) -> tuple[list[Analysis], float]:
        """:meth:`analyze`, and the CPU seconds of it spent in the parser: an ingest
        reports how much of its workers' CPU went to parsing, measured in the same
        processes at the same time (a baseline run apart follows the machine's speed)."""
        if self.trees is None:
            return [Analysis(tokens=self.tokenize(text)) for text in texts], 0.0
        stripped = [t.strip() for t in texts]
        cpu = time.process_time()
        trees = self.trees.parse([s for s in stripped if s])
        cpu = time.process_time() - cpu
        parsed = iter(trees)
        out: list[Analysis] = []
        for text, s in zip(texts, stripped):
            tree = made_tree(next(parsed)) if s else Tree([], [])
            out.append(Analysis(tokens=self.tokenize(text), terms=dict(tree_terms(tree.heads, tree.labels)),
                                tree_tokens=len(tree.heads), repaired=tree.repaired))
        return out, cpu

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
