"""Prompt templates and answer extraction (docs/method.md §6), checked against literal strings."""

from __future__ import annotations

import pytest

from scoi.core.answer import extract_answer
from scoi.core.prompt import (
    DEFAULT_ORDER,
    LANGUAGE_NAMES,
    ORDERS,
    STOP_MARKERS,
    TEMPLATE_NAMES,
    Example,
    canonical_order,
    language_name,
    order_examples,
    render_prompt,
    stop_markers,
)
from scoi.core.prompt_fit import PromptTooLong, fit_prompt

EXAMPLES = [
    Example("Je mange une pomme.", "I eat an apple."),
    Example("Il pleut.", "It is raining."),
]


def test_language_names():
    assert language_name("fr") == "French"
    assert language_name("EN") == "English"
    assert language_name("pt-BR") == "Portuguese"
    assert language_name("zh") == "Chinese"
    assert {"fr", "en", "de", "ru", "es", "it", "pt", "nl", "zh", "ja"} <= set(LANGUAGE_NAMES)
    with pytest.raises(ValueError, match=r"unknown language code 'xx'.*known ISO 639-1 codes: .*fr"):
        language_name("xx")


def test_xglm_exact():
    """Default order is reverse selection order (docs/method.md §6): EXAMPLES[0], the first pick,
    is the last block, right before the query."""
    expected = (
        'French Sentence: "Il pleut."\n'
        'English Sentence: "It is raining."\n'
        "###\n"
        'French Sentence: "Je mange une pomme."\n'
        'English Sentence: "I eat an apple."\n'
        "###\n"
        'French Sentence: "Le chat dort."\n'
        "English Sentence: "
    )
    assert render_prompt("Le chat dort.", EXAMPLES, "fr", "en") == expected
    assert render_prompt("Le chat dort.", EXAMPLES, "fr", "en", template="xglm") == expected
    assert render_prompt("Le chat dort.", EXAMPLES, "fr", "en", order="reverse") == expected
    assert render_prompt("Le chat dort.", EXAMPLES, "fr", "en", order="reversed") == expected  # old spelling


def test_xglm_selection_order():
    expected = (
        'French Sentence: "Je mange une pomme."\n'
        'English Sentence: "I eat an apple."\n'
        "###\n"
        'French Sentence: "Il pleut."\n'
        'English Sentence: "It is raining."\n'
        "###\n"
        'French Sentence: "Le chat dort."\n'
        "English Sentence: "
    )
    assert render_prompt("Le chat dort.", EXAMPLES, "fr", "en", order="selection") == expected


def test_xglm_zero_shot():
    assert render_prompt("Hallo.", [], "de", "en") == 'German Sentence: "Hallo."\nEnglish Sentence: '


def test_alpaca_exact():
    """Default order: the first pick (EXAMPLES[0]) comes last, next to the query."""
    expected = (
        "Instruction: Translate the following French text into English.\n"
        "\n"
        "French: Il pleut.\n"
        "English: It is raining.\n"
        "French: Je mange une pomme.\n"
        "English: I eat an apple.\n"
        "French: Le chat dort.\n"
        "English:"
    )
    assert render_prompt("Le chat dort.", EXAMPLES, "fr", "en", template="alpaca") == expected
    selection = (
        "Instruction: Translate the following French text into English.\n"
        "\n"
        "French: Je mange une pomme.\n"
        "English: I eat an apple.\n"
        "French: Il pleut.\n"
        "English: It is raining.\n"
        "French: Le chat dort.\n"
        "English:"
    )
    assert render_prompt("Le chat dort.", EXAMPLES, "fr", "en", template="alpaca", order="selection") == selection


def test_alpaca_zero_shot():
    expected = "Instruction: Translate the following English text into Russian.\n\nEnglish: Hi.\nRussian:"
    assert render_prompt("Hi.", [], "en", "ru", template="alpaca") == expected


def test_newlines_inside_sentences_become_spaces():
    prompt = render_prompt("a\nb", [Example("c\r\nd", "e")], "fr", "en")
    assert prompt == 'French Sentence: "c d"\nEnglish Sentence: "e"\n###\nFrench Sentence: "a b"\nEnglish Sentence: '


def test_orders():
    three = EXAMPLES + [Example("Oui.", "Yes.")]

    def sources(prompt: str) -> list[str]:
        return [line.split('"')[1] for line in prompt.splitlines() if line.startswith("French")][:-1]

    assert DEFAULT_ORDER == "reverse" and ORDERS == ("reverse", "selection", "random")
    assert sources(render_prompt("q", three, "fr", "en")) == ["Oui.", "Il pleut.", "Je mange une pomme."]
    assert sources(render_prompt("q", three, "fr", "en", order="selection")) == [
        "Je mange une pomme.", "Il pleut.", "Oui."]
    assert sources(render_prompt("q", three, "fr", "en", order="reversed")) == [
        "Oui.", "Il pleut.", "Je mange une pomme."]
    assert order_examples(three) == three[::-1]
    assert canonical_order("reversed") == "reverse" and canonical_order("random") == "random"
    shuffled = [render_prompt("q", three, "fr", "en", order="random", seed=s) for s in range(6)]
    assert shuffled[0] == render_prompt("q", three, "fr", "en", order="random", seed=0)  # seeded
    assert len(set(shuffled)) > 1  # different seeds, different orders
    for prompt in shuffled:
        assert sorted(sources(prompt)) == sorted(e.src for e in three)
    with pytest.raises(ValueError, match="unknown example order 'sideways'; expected one of reverse, selection"):
        render_prompt("q", three, "fr", "en", order="sideways")


def test_job_order_stored_explicitly():
    """New jobs store their order (default reverse, old spelling normalised); rows stored
    without one keep meaning selection order, scoi's default when they were submitted."""
    from scoi.jobs.spec import job_order, JobSpec, LEGACY_ORDER

    assert JobSpec("fr", "en", model="m").params()["order"] == "reverse"
    assert "order:reverse" in JobSpec("fr", "en", model="m").signature()
    assert JobSpec("fr", "en", model="m", order="reversed").params()["order"] == "reverse"
    assert JobSpec("fr", "en", model="m", order="selection").params()["order"] == "selection"
    assert job_order({"seed": 0}) == LEGACY_ORDER == "selection"
    assert job_order({"order": "reversed"}) == "reversed"  # accepted by render_prompt
    assert order_examples(EXAMPLES, job_order({"order": "reversed"})) == EXAMPLES[::-1]


def test_user_template(tmp_path):
    path = tmp_path / "mine.j2"
    path.write_text(
        "Translate {{ src_lang_name }} ({{ src_lang }}) to {{ tgt_lang_name }} ({{ tgt_lang }}).\n"
        "{% for ex in examples %}{{ ex.src }} => {{ ex.tgt }}\n{% endfor %}"
        "{{ query }} =>\n",  # the file's final newline is dropped (Jinja2 default)
        encoding="utf-8",
    )
    prompt = render_prompt("Le chat dort.", EXAMPLES, "fr", "en", template=str(path), order="reversed")
    assert prompt == (
        "Translate French (fr) to English (en).\n"
        "Il pleut. => It is raining.\n"
        "Je mange une pomme. => I eat an apple.\n"
        "Le chat dort. =>"
    )
    assert stop_markers(str(path)) == ("###", "\n")


def test_user_template_errors(tmp_path):
    with pytest.raises(ValueError, match=r"'nope\.j2' is neither a built-in template \(xglm, alpaca\)"):
        render_prompt("q", [], "fr", "en", template="nope.j2")
    bad = tmp_path / "bad.j2"
    bad.write_text("line one\n{% for ex in examples %}\n{{ ex.src }\n", encoding="utf-8")
    with pytest.raises(ValueError, match=rf"{bad}, line 3"):
        render_prompt("q", EXAMPLES, "fr", "en", template=str(bad))
    undefined = tmp_path / "undefined.j2"
    undefined.write_text("ok\n{{ no_such_variable }}", encoding="utf-8")
    with pytest.raises(ValueError, match=rf"{undefined}, line 2: 'no_such_variable' is undefined"):
        render_prompt("q", EXAMPLES, "fr", "en", template=str(undefined))


def test_user_template_reloaded_after_edit(tmp_path):
    import os

    path = tmp_path / "t.j2"
    path.write_text("A {{ query }}", encoding="utf-8")
    assert render_prompt("q", [], "fr", "en", template=str(path)) == "A q"
    path.write_text("B {{ query }}", encoding="utf-8")
    os.utime(path, ns=(1, 10**18))  # make sure the mtime differs even on coarse clocks
    assert render_prompt("q", [], "fr", "en", template=str(path)) == "B q"


def test_template_names_and_stop_markers():
    assert TEMPLATE_NAMES == ("xglm", "alpaca")
    assert STOP_MARKERS["xglm"] == ("###", "\n")
    assert "\n" in STOP_MARKERS["alpaca"]


@pytest.mark.parametrize(
    ("raw", "answer"),
    [
        ('\n"I eat an apple."\n###\nFrench Sentence:', "I eat an apple."),  # leading newline
        (' "The cat sleeps."\n', "The cat sleeps."),
        ("\n\n  It rains.###French", "It rains."),  # ### on the same line
        ("It rains.\nFrench: Oui.", "It rains."),  # cut at the newline (alpaca)
        ("  It rains.  ", "It rains."),  # no delimiter at all
        ("Hello", "Hello"),
        ("", ""),
        ("\n\n", ""),
        ("###\nsomething", ""),
        ("\u201cHello there.\u201d", "Hello there."),  # “ ”
        ("\u00ab Bonjour. \u00bb", "Bonjour."),  # « » with French spacing
        ("\u201eHallo.\u201c", "Hallo."),  # „ “
        ("'Hi.'", "Hi."),
        ('"Unclosed quote.', '"Unclosed quote.'),  # only matching pairs are stripped
        ('He said "yes"', 'He said "yes"'),
        ('"', '"'),
        ('""', ""),
        ('"He said "yes""', 'He said "yes"'),  # one layer only
    ],
)
def test_extract_answer(raw, answer):
    assert extract_answer(raw) == answer


def test_user_templates_are_sandboxed(tmp_path):
    """Reliability case 40: a template reaching Python internals (``cycler.__init__.
    __globals__.os``) is a one-line error, and nothing runs; the same for changing its inputs."""
    marker = tmp_path / "ran"
    attack = tmp_path / "ssti.j2"
    attack.write_text(f"{{{{ cycler.__init__.__globals__.os.popen('id > {marker}').read() }}}}{{{{ query }}}}\n",
                      encoding="utf-8")
    with pytest.raises(ValueError, match=rf"prompt template {attack}, line 1: access to attribute '__init__' .* "
                                         "is unsafe") as info:
        render_prompt("Le chat dort.", EXAMPLES, "fr", "en", template=str(attack))
    assert "\n" not in str(info.value) and not marker.exists()
    mutate = tmp_path / "mutate.j2"
    mutate.write_text("{{ examples.append(1) }}{{ query }}", encoding="utf-8")
    with pytest.raises(ValueError, match="unsafe"):
        render_prompt("q", EXAMPLES, "fr", "en", template=str(mutate))


def _words(text: str) -> int:
    return len(text.split())


RANKED = [Example(f"source {i} " * 3, f"target {i} " * 3) for i in range(4)]  # best first


def test_fit_prompt_drops_last_ranked_examples_until_the_prompt_fits():
    def render(ex):
        return render_prompt("Le chat dort.", ex, "fr", "en")

    full = _words(render(RANKED))
    two = _words(render(RANKED[:2]))
    prompt, used = fit_prompt(render, RANKED, _words, context=two + 10, max_new_tokens=10)
    assert used == 2 and prompt == render(RANKED[:2]) and full > two
    # The default reverse order shows the lowest-ranked example first: that is what went.
    assert "source 3" not in prompt and "source 2" not in prompt
    assert prompt.index("source 1") < prompt.index("source 0")
    assert fit_prompt(render, RANKED, _words, context=full + 10, max_new_tokens=10) == (render(RANKED), 4)
    assert fit_prompt(render, RANKED, _words, context=two + 9, max_new_tokens=10)[1] == 1


def test_fit_prompt_refuses_a_query_that_does_not_fit_even_alone():
    def render(ex):
        return render_prompt("Le chat dort.", ex, "fr", "en")

    alone = _words(render([]))
    assert fit_prompt(render, RANKED, _words, context=alone + 5, max_new_tokens=5) == (render([]), 0)
    with pytest.raises(PromptTooLong, match=rf"needs {alone} tokens without any example.*context of {alone + 4} "):
        fit_prompt(render, RANKED, _words, context=alone + 4, max_new_tokens=5)
