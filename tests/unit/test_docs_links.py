"""Every relative link in README.md and docs/*.md points at a file of the repo and, with
``#anchor``, at a heading of that file (GitHub's anchor rules); and no page points at
files outside the repository."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"(?<!\!)\[[^\]]*\]\(([^)\s]+)\)|!\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^(```|~~~)")


def _outside_fences(text: str) -> list[str]:
    """The page's lines outside fenced code blocks (a '# comment' there is no heading)."""
    out, in_code = [], False
    for line in text.splitlines():
        if FENCE.match(line.lstrip()):
            in_code = not in_code
        elif not in_code:
            out.append(line)
    return out


def _prose(text: str) -> str:
    """The page without code, where brackets are not links."""
    return "\n".join(re.sub(r"`[^`]*`", "", line) for line in _outside_fences(text))


def anchor(heading: str) -> str:
    """GitHub's anchor for a heading: lowercased, punctuation dropped, spaces to '-'."""
    text = re.sub(r"`", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """The anchors of a page's headings, with GitHub's -1, -2 suffixes for repeats."""
    seen: dict[str, int] = {}
    found: set[str] = set()
    for line in _outside_fences(path.read_text(encoding="utf-8")):
        m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not m:
            continue
        a = anchor(m.group(1))
        n = seen.get(a, 0)
        seen[a] = n + 1
        found.add(a if n == 0 else f"{a}-{n}")
    return found


def links(path: Path) -> list[str]:
    """The relative links of a page (web addresses and mail links left out)."""
    targets = [a or b for a, b in LINK.findall(_prose(path.read_text(encoding="utf-8")))]
    return [t for t in targets if not re.match(r"^[a-z][a-z0-9+.-]*:", t)]


def test_anchor_rules() -> None:
    assert anchor("Using a llama.cpp / vLLM server") == "using-a-llamacpp--vllm-server"
    assert anchor("Sentence embeddings (`scoi embed`)") == "sentence-embeddings-scoi-embed"
    assert anchor("1. Analysis of a sentence") == "1-analysis-of-a-sentence"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_relative_links_resolve(page: Path) -> None:
    bad = []
    for target in links(page):
        file_part, _, frag = target.partition("#")
        dest = (page.parent / file_part).resolve() if file_part else page
        if not dest.exists():
            bad.append(f"{target}: no file {dest}")
        elif not dest.is_relative_to(ROOT):
            bad.append(f"{target}: outside the repository")
        elif frag and dest.suffix == ".md" and frag not in anchors(dest):
            bad.append(f"{target}: no heading #{frag} in {dest.relative_to(ROOT)}")
    assert not bad, f"{page.relative_to(ROOT)}:\n" + "\n".join(bad)
