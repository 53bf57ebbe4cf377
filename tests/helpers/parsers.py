"""A tiny German dependency parser, trained offline from a handful of hand-annotated
sentences: ``spacy.blank("de")`` plus a parser component, a few iterations, saved with
``nlp.to_disk``. It proves that any spaCy pipeline directory plugs in (``--parser
de=DIR``), not German parsing quality."""

from __future__ import annotations

from pathlib import Path

import pytest

# (text, heads as absolute token indices, Universal Dependencies labels); spaCy's German
# tokenizer splits these into exactly the tokens annotated.
GERMAN = [
    ("Ein Mann spielt Gitarre.", [1, 2, 2, 2, 2], ["det", "nsubj", "ROOT", "obj", "punct"]),
    ("Zwei Hunde rennen über eine grüne Wiese.", [1, 2, 2, 6, 6, 6, 2, 2],
     ["nummod", "nsubj", "ROOT", "case", "det", "amod", "obl", "punct"]),
    ("Eine Frau tanzt.", [1, 2, 2, 2], ["det", "nsubj", "ROOT", "punct"]),
    ("Kinder spielen im Park Fußball.", [1, 1, 3, 1, 1, 1], ["nsubj", "ROOT", "case", "obl", "obj", "punct"]),
    ("Ein Hund fängt einen Ball.", [1, 2, 2, 4, 2, 2], ["det", "nsubj", "ROOT", "det", "obj", "punct"]),
    ("Ein alter Mann liest eine Zeitung.", [2, 2, 3, 3, 5, 3, 3],
     ["det", "amod", "nsubj", "ROOT", "det", "obj", "punct"]),
]
VERSION = "0.0.1"


def train_german_parser(directory: Path, iterations: int = 30) -> str:
    """Train and save the tiny parser in ``directory``; returns its path."""
    import spacy
    from spacy.training import Example
    from spacy.util import fix_random_seed

    fix_random_seed(0)
    nlp = spacy.blank("de")
    nlp.add_pipe("parser", config={"min_action_freq": 1})  # keep every label of six sentences
    examples = []
    for text, heads, deps in GERMAN:
        doc = nlp.make_doc(text)
        assert len(doc) == len(heads), [t.text for t in doc]
        examples.append(Example.from_dict(doc, {"words": [t.text for t in doc], "heads": heads, "deps": deps}))
    optimizer = nlp.initialize(lambda: examples)
    for _ in range(iterations):
        nlp.update(examples, sgd=optimizer)
    nlp.meta.update({"name": "tiny_parser", "version": VERSION})
    path = directory / "de_tiny_parser"
    nlp.to_disk(path)
    return str(path)


TRAINED: list[str] = []  # the directory the fixture trained, for tiny_german


@pytest.fixture(scope="session")
def german_parser(tmp_path_factory) -> str:
    """The tiny German parser's directory, trained once per test session."""
    TRAINED[:] = [train_german_parser(tmp_path_factory.mktemp("parsers"))]
    return TRAINED[0]


def tiny_german():
    """A ``module:function`` parser (``--parser de=tests.helpers.parsers:tiny_german``), the
    way a spacy-stanza or spacy-udpipe pipeline plugs in: built in code, not loaded by name."""
    import spacy

    return spacy.load(TRAINED[0])
