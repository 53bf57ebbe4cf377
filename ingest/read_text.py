"""Readers of line-based corpora: TSV (with a header rule and metadata columns), Moses
(two aligned files) and JSON Lines, streamed in constant memory.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

from ingest.input_files import open_text
from ingest.records import InputError, Record, checked_record
from scoi.text.textfile import decode_line


def _text_lines(file: str) -> Iterator[tuple[int, str] | Record]:
    """Numbered, decoded, non-blank lines of a one-record-per-line file; undecodable
    lines come as bad Records (blank lines carry no pair and are skipped)."""
    with open_text(file) as fh:
        for n, raw in fh.lines():
            text, err = decode_line(raw, n)
            if err:
                yield Record(file, n, None, None, err)
            elif text.strip():
                yield n, text


def read_tsv(file: str, src_lang: str = "", tgt_lang: str = "", header: bool | None = None) -> Iterator[Record]:
    """Two tab-separated columns, then, when a header names them, extra columns kept as
    metadata under their names. The first non-blank line is a header, and skipped, when
    ``header`` is True, or when ``header`` is None and :func:`looks_like_header` says so
    of its first two cells."""
    first = True
    extra: list[str] = []  # names of the columns after source and target (from the header)
    for item in _text_lines(file):
        if isinstance(item, Record):
            first = False
            yield item
            continue
        n, text = item
        cols = text.split("\t")
        if first:
            first = False
            if header or (header is None and len(cols) >= 2 and looks_like_header(cols[:2], src_lang, tgt_lang)):
                extra = [c.strip() for c in cols[2:]]
                if any(not c for c in extra) or len(set(extra)) < len(extra):
                    raise InputError(file, n, "the header's extra columns need distinct, non-empty names "
                                              f"(found {', '.join(repr(c) for c in extra)}); they name pair metadata")
                continue
        if len(cols) != 2 + len(extra):
            what = "no tab" if len(cols) == 1 else f"{len(cols)} columns"
            want = ("2 tab-separated columns (source<TAB>target)" if not extra
                    else f"{2 + len(extra)} tab-separated columns (source, target, {', '.join(extra)})")
            yield Record(file, n, None, None, f"expected {want}, found {what}")
            continue
        meta = {name: v for name, v in zip(extra, (c.strip() for c in cols[2:])) if v}
        yield checked_record(file, n, cols[0], cols[1], meta)


# Column names of a header row, besides the languages' codes and names.
_GENERIC = {"src", "tgt", "source", "target", "trg", "source text", "target text", "source_text", "target_text"}
# code -> names a header may use for the language (English and native, lower case).
LANGUAGE_NAMES: dict[str, tuple[str, ...]] = {
    "ar": ("arabic", "العربية"), "bg": ("bulgarian", "български"), "ca": ("catalan", "català"),
    "cs": ("czech", "čeština"), "da": ("danish", "dansk"), "de": ("german", "deutsch"),
    "el": ("greek", "ελληνικά"), "en": ("english",), "es": ("spanish", "español", "castellano"),
    "et": ("estonian", "eesti"), "fi": ("finnish", "suomi"), "fr": ("french", "français", "francais"),
    "he": ("hebrew", "עברית"), "hi": ("hindi", "हिन्दी"), "hr": ("croatian", "hrvatski"),
    "hu": ("hungarian", "magyar"), "it": ("italian", "italiano"), "ja": ("japanese", "日本語"),
    "ko": ("korean", "한국어"), "lt": ("lithuanian", "lietuvių"), "lv": ("latvian", "latviešu"),
    "mk": ("macedonian", "македонски"), "nb": ("norwegian", "norsk", "norsk bokmål"),
    "nl": ("dutch", "nederlands"), "pl": ("polish", "polski"), "pt": ("portuguese", "português"),
    "ro": ("romanian", "română"), "ru": ("russian", "русский"), "sk": ("slovak", "slovenčina"),
    "sl": ("slovenian", "slovenščina"), "sv": ("swedish", "svenska"), "tr": ("turkish", "türkçe"),
    "uk": ("ukrainian", "українська"), "zh": ("chinese", "中文"),
}


def _names(lang: str) -> set[str]:
    base = lang.split("-")[0].split("_")[0].lower()
    return {lang.lower(), base, *LANGUAGE_NAMES.get(base, ())} if base else set()


def looks_like_header(cols: list[str], src_lang: str = "", tgt_lang: str = "") -> bool:
    """The header rule (docs/ingest.md): both cells are column names (src, tgt, source,
    target) or name the run's languages, by code (fr) or by English or native name
    (French, Français), case-insensitive: ``French<TAB>English`` for --src fr --tgt en."""
    allowed = _GENERIC | _names(src_lang) | _names(tgt_lang)
    if not (src_lang or tgt_lang):  # no languages given: the codes of the languages known here
        allowed |= set(LANGUAGE_NAMES)
    return len(cols) == 2 and all(c.strip().lower() in allowed for c in cols)


def read_moses(src_file: str, tgt_file: str) -> Iterator[Record]:
    """Two files aligned line by line (``corpus.fr`` / ``corpus.en``)."""
    with open_text(src_file) as fs, open_text(tgt_file) as ft:
        a_lines, b_lines = fs.lines(), ft.lines()
        n = 0
        last: dict[str, bytes] = {}  # file -> its last line read (for the CR hint below)
        while True:
            a, b = next(a_lines, None), next(b_lines, None)
            if a is None and b is None:
                return
            n += 1
            if a is None or b is None:
                short, longer = (src_file, tgt_file) if a is None else (tgt_file, src_file)
                # A file with CR-only line endings (classic Mac) reads as one long line.
                cr = [f for f in (src_file, tgt_file) if b"\r" in last.get(f, b"")]
                hint = (f"; {cr[0]} has CR-only line endings (\\r without \\n), read as one line: "
                        "convert them to \\n (e.g. tr '\\r' '\\n')") if cr else ""
                raise InputError(short, n, f"ends at line {n - 1} but {longer} has more lines: "
                                           f"the two files of a Moses pair must have the same number of lines{hint}")
            last = {src_file: a[1], tgt_file: b[1]}
            sa, ea = decode_line(a[1], n)
            sb, eb = decode_line(b[1], n)
            if ea or eb:
                yield Record(src_file if ea else tgt_file, n, None, None, ea or eb)
                continue
            yield checked_record(src_file, n, sa, sb)


def read_jsonl(file: str) -> Iterator[Record]:
    """One JSON object per line: ``{"src": ..., "tgt": ...}``; its other keys are kept as
    metadata."""
    for item in _text_lines(file):
        if isinstance(item, Record):
            yield item
            continue
        n, text = item
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as e:
            yield Record(file, n, None, None, f"invalid JSON ({e.msg} at column {e.colno}); expected {{\"src\": ..., \"tgt\": ...}}")
            continue
        except RecursionError:
            yield Record(file, n, None, None, 'JSON nested too deeply to read; expected {"src": ..., "tgt": ...}')
            continue
        if not isinstance(obj, dict) or not isinstance(obj.get("src"), str) or not isinstance(obj.get("tgt"), str):
            yield Record(file, n, None, None, 'expected an object with string fields "src" and "tgt"')
            continue
        yield checked_record(file, n, obj["src"], obj["tgt"], {k: v for k, v in obj.items() if k not in ("src", "tgt")})


# TMX 1.4 inline elements whose content is native code of the original document (the
