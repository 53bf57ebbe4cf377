"""Readers for parallel corpora, streamed in constant memory.

Every reader yields :class:`Record` objects whose ``line`` points at the place in the
file a person would look (line number; for TMX the line of the ``<tu>``). Problems are
reported as :class:`InputError` with file, line and what was expected; the pipeline
decides whether to stop or, with ``--skip-bad``, to skip and list them.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import shutil
import stat
import tempfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from scoi.formats import DocumentError, po, xliff
from scoi.formats.tmx import JSON_PROP
from scoi.formats.xmlsafe import SAFE, doctype_problem
from scoi.text.textfile import TextFileError, decode_line, raw_lines

FORMATS = ("tsv", "moses", "tmx", "jsonl", "xliff", "po")

# What the database can store and index, checked before anything is written:
# to_tsvector(text) (the sentence_search view) is at most 1 MB; bm25_doc.dl and tfs are smallint (at
# most 32,767 tokens per sentence); vocab (lang,
# token) is a unique btree, whose rows must stay under ~2,700 bytes. A side of at most
# MAX_SIDE_CHARS characters (<= 40 KB of UTF-8, <= 10,000 tokens) and words of at most
# MAX_WORD_CHARS characters (a Moses token escapes a character to at most 6 bytes:
# <= 1,800 bytes, under the btree limit and tsvector's 2 KB per word) stay far within them.
MAX_SIDE_CHARS = 10_000
MAX_WORD_CHARS = 300


@dataclass(frozen=True)
class Record:
    file: str
    line: int
    src: str | None  # None when the record is bad (see problem)
    tgt: str | None
    problem: str | None = None
    meta: dict[str, Any] | None = None  # stored as pair.meta (docs/ingest.md, "Metadata")
    note: str | None = None  # something the run should report about a good record (TMX variants dropped)


class InputError(TextFileError):
    """A problem in an input file, located by file and line."""


class SpooledFile(str):
    """A file name as the user gave it (``/dev/fd/63``, a FIFO), which messages show, whose
    content is read from ``path``: a regular-file copy made once by :func:`read_once`."""

    path: str

    def __new__(cls, name: str, path: str) -> "SpooledFile":
        obj = super().__new__(cls, name)
        obj.path = path
        return obj


def rereadable(path: str | Path) -> bool:
    """Whether ``path`` can be read twice with the same content: a regular file (or a
    missing or odd one, which open_text reports). Pipes, FIFOs, ``/dev/stdin``, process
    substitutions and devices cannot: the second read finds nothing, or other bytes."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return True
    return stat.S_ISREG(mode) or stat.S_ISDIR(mode)


@contextmanager
def read_once(files: list[str]) -> Iterator[list[str]]:
    """``files``, each that cannot be read twice copied once to a temporary regular file
    (a :class:`SpooledFile`; removed on exit), so validation and writing read the same
    bytes. Lines are bounded while copying: ``/dev/zero`` stops at its first MiB."""
    if all(rereadable(f) for f in files):
        yield files
        return
    with tempfile.TemporaryDirectory(prefix="scoi-ingest-") as tmp:
        out = []
        for i, name in enumerate(files):
            if rereadable(name):
                out.append(name)
                continue
            copy = os.path.join(tmp, f"{i}.spool")
            _spool(name, copy)
            out.append(SpooledFile(name, copy))
        yield out


def _spool(name: str, copy: str) -> None:
    """Copy ``name`` (read once) to ``copy``; an over-long line of a text stream stops it."""
    try:
        with open(name, "rb") as src, open(copy, "wb") as dst:
            if name.lower().endswith(".gz"):  # compressed bytes have no lines; decompression checks them
                shutil.copyfileobj(src, dst)
                return
            for _, raw in raw_lines(src, name):
                dst.write(raw + b"\n")
    except TextFileError as e:
        raise InputError(e.file, e.line, e.problem) from None
    except OSError as e:
        raise InputError(name, None, f"cannot be read once into a temporary file: {e.strerror or e}") from None


def open_text(path: str | Path) -> IO[bytes]:
    """Open a file for reading bytes, decompressing ``.gz`` transparently."""
    p = Path(path.path if isinstance(path, SpooledFile) else path)
    if not p.exists():
        raise InputError(str(path), None, "file not found")
    if p.is_dir():
        raise InputError(str(path), None, "is a directory, not a corpus file")
    try:
        raw = open(p, "rb")
    except OSError as e:
        raise InputError(str(path), None, f"cannot be opened: {e.strerror or e}") from None
    if Path(path).suffix == ".gz":
        return _Checked(gzip.GzipFile(fileobj=raw, mode="rb"), str(path), raw)
    return _Checked(raw, str(path))


class _Checked:
    """A binary file whose read errors (not gzip, truncated or corrupt .gz, I/O errors)
    become one InputError naming the file, instead of a traceback."""

    def __init__(self, fh: IO[bytes], file: str, raw: IO[bytes] | None = None) -> None:
        self.fh, self.file, self.raw = fh, file, raw

    def _fail(self, e: BaseException) -> InputError:
        if isinstance(e, gzip.BadGzipFile):
            why = "is not a gzip file (a .gz name, but not gzip content)"
        elif isinstance(e, EOFError):
            why = "is a truncated gzip file (it ends before the end of the compressed data)"
        elif isinstance(e, zlib.error):
            why = f"is a corrupt gzip file ({e})"
        else:
            why = f"cannot be read: {getattr(e, 'strerror', None) or e}"
        return InputError(self.file, None, why)

    def read(self, n: int = -1) -> bytes:
        try:
            return self.fh.read(n)
        except (OSError, EOFError, zlib.error) as e:
            raise self._fail(e) from None

    def readline(self, n: int = -1) -> bytes:
        try:
            return self.fh.readline(n)
        except (OSError, EOFError, zlib.error) as e:
            raise self._fail(e) from None

    def lines(self) -> Iterator[tuple[int, bytes]]:
        """(line number, bytes without the line break): scoi.text.textfile's lines (``\\n``
        only, CRLF accepted, at most MAX_LINE_BYTES each, else an InputError)."""
        try:
            yield from raw_lines(self, self.file)
        except TextFileError as e:
            raise InputError(e.file, e.line, e.problem) from None

    def close(self) -> None:
        self.fh.close()
        if self.raw is not None:
            self.raw.close()

    def __enter__(self) -> "_Checked":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_SURROGATE = re.compile("[\ud800-\udfff]")


def _check(file: str, line: int, src: str, tgt: str, meta: dict[str, Any] | None = None,
           note: str | None = None) -> Record:
    src, tgt = src.strip(), tgt.strip()
    if "\x00" in src or "\x00" in tgt:
        return Record(file, line, None, None, "contains a NUL character (U+0000), which PostgreSQL text cannot store")
    for side, text in (("source", src), ("target", tgt)):
        if m := _SURROGATE.search(text):  # JSON's "\ud800" without its pair: no UTF-8 encoding exists
            return Record(file, line, None, None,
                          f"{side} side holds a lone surrogate U+{ord(m.group()):04X} at column {m.start() + 1} "
                          "(half of a UTF-16 pair), which neither UTF-8 nor PostgreSQL can store")
    if not src and not tgt:
        return Record(file, line, None, None, "both sides are empty")
    if not src:
        return Record(file, line, None, None, "source side is empty")
    if not tgt:
        return Record(file, line, None, None, "target side is empty")
    for side, text in (("source", src), ("target", tgt)):
        if len(text) > MAX_SIDE_CHARS:
            return Record(file, line, None, None,
                          f"{side} side is {len(text):,} characters long; expected at most {MAX_SIDE_CHARS:,} "
                          "characters per side (one sentence or segment, not a document)")
        if len(text) > MAX_WORD_CHARS:
            word = max(text.split(), key=len)
            if len(word) > MAX_WORD_CHARS:
                return Record(file, line, None, None,
                              f"{side} side has a word of {len(word):,} characters ({word[:20]!r}...); expected "
                              f"words of at most {MAX_WORD_CHARS} characters (longer ones cannot be indexed)")
    if meta and (bad := _unstorable(meta)):
        return Record(file, line, None, None, f"metadata {bad}, which PostgreSQL jsonb cannot store")
    return Record(file, line, src, tgt, meta=meta or None, note=note)


def _unstorable(value: Any) -> str | None:
    """Why a metadata value cannot be stored as jsonb (a NUL or a lone surrogate in a key
    or string), or None."""
    if isinstance(value, str):
        if "\x00" in value:
            return "contains a NUL character (U+0000)"
        if _SURROGATE.search(value):
            return "holds a lone surrogate (half of a UTF-16 pair)"
        return None
    if isinstance(value, float) and (value != value or value in (float("inf"), float("-inf"))):
        return f"holds {value} (not a JSON number)"
    if isinstance(value, dict):
        return next((why for k, v in value.items() if (why := _unstorable(k) or _unstorable(v))), None)
    if isinstance(value, list):
        return next((why for v in value if (why := _unstorable(v))), None)
    return None


def detect_format(files: list[str]) -> str:
    """Guess the format from the file names: two files -> moses, else by extension."""
    if len(files) == 2:
        return "moses"
    name = files[0].lower().removesuffix(".gz")
    for ext, fmt in ((".tsv", "tsv"), (".txt", "tsv"), (".tmx", "tmx"), (".jsonl", "jsonl"), (".json", "jsonl"),
                     (".xlf", "xliff"), (".xliff", "xliff"), (".po", "po")):
        if name.endswith(ext):
            return fmt
    raise InputError(files[0], None, "cannot tell the format from the file name; pass --format "
                     "tsv|moses|tmx|jsonl|xliff|po")


def read_records(files: list[str], fmt: str, *, src_lang: str = "", tgt_lang: str = "",
                 header: bool | None = None, tmx_keep_codes: bool = False) -> Iterator[Record]:
    """Yield records of ``files`` in format ``fmt``; raises InputError only for whole-file problems."""
    if fmt == "moses":
        if len(files) != 2:
            raise InputError(files[0], None, "the moses format takes two aligned files: SRC_FILE TGT_FILE")
        yield from read_moses(files[0], files[1])
        return
    if len(files) != 1:
        raise InputError(files[1], None, f"the {fmt} format takes one file")
    if fmt == "tsv":
        yield from read_tsv(files[0], src_lang, tgt_lang, header)
    elif fmt == "jsonl":
        yield from read_jsonl(files[0])
    elif fmt == "tmx":
        yield from read_tmx(files[0], src_lang, tgt_lang, keep_codes=tmx_keep_codes)
    elif fmt in ("xliff", "po"):
        yield from read_cat(files[0], fmt, src_lang, tgt_lang)
    else:
        raise InputError(files[0], None, f"unknown format {fmt!r}; expected one of {', '.join(FORMATS)}")


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
        yield _check(file, n, cols[0], cols[1], meta)


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
            yield _check(src_file, n, sa, sb)


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
        yield _check(file, n, obj["src"], obj["tgt"], {k: v for k, v in obj.items() if k not in ("src", "tgt")})


# TMX 1.4 inline elements whose content is native code of the original document (the
# ``<b>`` of ``<bpt>&lt;b&gt;</bpt>``), not text of the sentence; ``<sub>`` (text inside
# such code, e.g. an alt text) goes with its code. ``<hi>`` marks text and keeps it.
TMX_CODES = frozenset({"bpt", "ept", "it", "ph", "ut"})


def segment_text(seg, keep_codes: bool = False) -> str:
    """The plain text of a TMX ``<seg>``: ``Il a <bpt i="1">&lt;b&gt;</bpt>vraiment<ept
    i="1">&lt;/b&gt;</ept> faim.`` is ``Il a vraiment faim.`` (``keep_codes``: every text
    node, codes included, as ``itertext``)."""
    if keep_codes:
        return "".join(seg.itertext())
    parts = [seg.text or ""]
    for child in seg:
        if isinstance(child.tag, str) and child.tag not in TMX_CODES:  # <hi>, unknown markup: its text
            parts.append(segment_text(child))
        parts.append(child.tail or "")
    return "".join(parts)


# <tu> (and <tuv>) attributes kept as metadata, under the same names; usagecount as a number.
TMX_ATTRIBUTES = ("tuid", "creationdate", "creationid", "changedate", "changeid", "usagecount", "lastusagedate")
XML_LANG = "{http://www.w3.org/XML/1998/namespace}lang"


def lang_matches(code: str, wanted: str) -> int:
    """How well a ``<tuv>``'s language ``code`` matches the run's ``wanted`` language:
    2 the same code (case-insensitive, ``_`` read as ``-``), 1 the same language with
    another or no region (``fr-CA`` for ``fr``, ``fr`` for ``fr-FR``), 0 another language."""
    code, wanted = code.lower().replace("_", "-"), wanted.lower().replace("_", "-")
    if code == wanted:
        return 2
    return int(bool(code) and code.split("-")[0] == wanted.split("-")[0])


def tmx_meta(el, prefix: str = "", attributes: bool = True) -> dict[str, Any]:
    """The metadata of a TMX ``<header>``, ``<tu>`` or ``<tuv>``: its ``<prop type="x">``
    as ``x`` (a list when repeated), its ``<note>`` as ``note`` (a list when several), and
    its attributes of :data:`TMX_ATTRIBUTES` (``usagecount`` as an int), the entries of an
    ``x-scoi-json`` prop's JSON object (scoi's export: values TMX cannot hold), each key after
    ``prefix`` (``fr-fr:`` for a ``<tuv>``). The header's attributes describe the file, not
    its units: read with ``attributes=False``."""
    out: dict[str, Any] = {}
    for child in el:
        if child.tag not in ("prop", "note"):
            continue
        key = prefix + (child.get("type") or "prop" if child.tag == "prop" else "note")
        value = "".join(child.itertext()).strip()
        if child.tag == "prop" and child.get("type") == JSON_PROP and isinstance(kept := _json_object(value), dict):
            out.update({prefix + k: v for k, v in kept.items()})  # what scoi's TMX export could not write as props
            continue
        if key in out:
            out[key] = (out[key] if isinstance(out[key], list) else [out[key]]) + [value]
        else:
            out[key] = value
    for name in TMX_ATTRIBUTES if attributes else ():
        value = el.get(name)
        if value is not None:
            out[prefix + name] = int(value) if name == "usagecount" and value.strip().isdigit() else value
    return out


def _json_object(text: str) -> Any:
    """The JSON value of an ``x-scoi-json`` prop, or None when it is not JSON."""
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


def _pick_tuv(tuvs: list[tuple[str, object]], wanted: str) -> tuple[object | None, list[str]]:
    """The ``<tuv>`` of language ``wanted`` among (code, tuv): the first of the same code,
    else the first of the same language in another region; and, in that second case, the
    codes of all that matched (the variants the pick dropped a note about)."""
    ranked = [(lang_matches(code, wanted), i) for i, (code, _) in enumerate(tuvs)]
    best = max(ranked, key=lambda r: (r[0], -r[1]), default=(0, -1))
    # only a choice the run made needs saying: an exact code was what the user asked for
    matching = [tuvs[i][0] for score, i in ranked if score] if best[0] == 1 else []
    return (tuvs[best[1]][1] if best[0] else None), matching


def read_tmx(file: str, src_lang: str, tgt_lang: str, *, keep_codes: bool = False) -> Iterator[Record]:
    """TMX 1.4: each ``<tu>`` with a ``<tuv xml:lang=...>`` per language, matched as
    :func:`lang_matches` says (several of one language: the exact code, else the first,
    with a note); inline codes are dropped from the text unless ``keep_codes``; header,
    ``<tu>`` and the two ``<tuv>``'s properties, notes and attributes kept as metadata."""
    from lxml import etree

    _check_root(file)
    with open_text(file) as fh:
        # scoi.formats.xmlsafe's settings: no DTD loaded, no entity resolved, nothing fetched,
        # and libxml2's limits (a text node of at most 10 MB, nesting of at most 256 levels),
        # so one segment never takes more memory than that; an internal DTD subset is refused.
        parser = etree.iterparse(fh, events=("end",), tag=("tu", "body", "header"), recover=False, **SAFE)
        saw_body = checked = False
        header: dict[str, Any] = {}
        try:
            for _, el in parser:
                if not checked:
                    checked = True
                    problem = doctype_problem(el.getroottree().docinfo)
                    if problem:
                        raise InputError(file, 1, problem)
                if el.tag == "header":
                    header = tmx_meta(el, attributes=False)
                    continue
                if el.tag == "body":
                    saw_body = True
                    continue
                line = el.sourceline or 0
                tuvs = [(tuv.get(XML_LANG) or tuv.get("lang") or "", tuv) for tuv in el.iterfind("tuv")]
                (src_tuv, src_all), (tgt_tuv, tgt_all) = _pick_tuv(tuvs, src_lang), _pick_tuv(tuvs, tgt_lang)
                rec = _tmx_record(file, line, el, src_lang, tgt_lang, (src_tuv, src_all), (tgt_tuv, tgt_all),
                                  [code for code, _ in tuvs], header, keep_codes)
                el.clear()
                while el.getprevious() is not None:  # constant memory on huge TMX files
                    del el.getparent()[0]
                yield rec
        except etree.XMLSyntaxError as e:
            raise InputError(file, e.lineno, f"malformed TMX: {e.msg}") from None
        if not saw_body:
            raise InputError(file, None, "not a TMX file: no <body> element")


def _tmx_record(file: str, line: int, tu, src_lang: str, tgt_lang: str, src: tuple, tgt: tuple,
                codes: list[str], header: dict[str, Any], keep_codes: bool) -> Record:
    """The record of one ``<tu>``: its two segments, metadata, and a note when a language
    had several variants."""
    segs = {}
    for lang, (tuv, _) in ((src_lang, src), (tgt_lang, tgt)):
        seg = tuv.find("seg") if tuv is not None else None
        if seg is None:
            found = ", ".join(sorted({c for c in codes if c})) or "none"
            return Record(file, line, None, None, f"<tu> lacks a <tuv> with a <seg> for {lang} (languages found: {found})")
        segs[lang] = segment_text(seg, keep_codes)
    meta = {**header, **tmx_meta(tu)}
    for tuv, _ in (src, tgt):
        meta.update(tmx_meta(tuv, (tuv.get(XML_LANG) or tuv.get("lang") or "").lower() + ":"))
    notes = [f"{len(found)} {lang} variants ({', '.join(found)}): used {tuv.get(XML_LANG) or tuv.get('lang')}"
             for lang, (tuv, found) in ((src_lang, src), (tgt_lang, tgt)) if len(found) > 1]
    return _check(file, line, segs[src_lang], segs[tgt_lang], meta, "; ".join(notes) or None)


def _check_root(file: str) -> None:
    """Refuse a file whose root element is not ``<tmx>`` (an XLIFF file given as
    ``--format tmx``), before reading it through."""
    from lxml import etree

    with open_text(file) as fh:
        try:
            for _, el in etree.iterparse(fh, events=("start",), recover=False, **SAFE):
                tag = etree.QName(el).localname if isinstance(el.tag, str) else str(el.tag)
                if tag != "tmx":
                    raise InputError(file, el.sourceline, f"not a TMX file (root element <{tag}>); "
                                                          "expected <tmx> (TMX 1.4)")
                return
        except etree.XMLSyntaxError as e:
            if "Document is empty" in e.msg:
                return  # an empty file: nothing to ingest, said by the run
            raise InputError(file, e.lineno, f"malformed TMX: {e.msg}") from None


def read_cat(file: str, fmt: str, src_lang: str, tgt_lang: str) -> Iterator[Record]:
    """A bilingual CAT file (XLIFF 1.2/2.x, PO: scoi.formats): each segment or message that
    has a translation is a pair; inline codes around text keep their text, the others are
    dropped. Read whole, with the XML safety of scoi.formats.xmlsafe."""
    with open_text(file) as fh:
        data = fh.read()
    try:
        for line, src, tgt in (xliff if fmt == "xliff" else po).pairs(data, file, src_lang, tgt_lang):
            yield _check(file, line, src, tgt)
    except DocumentError as e:  # "FILE:LINE: problem" or "FILE: problem"
        m = re.match(rf"{re.escape(str(file))}(?::(\d+))?: (.*)", str(e), re.DOTALL)
        if m is None:
            raise InputError(file, None, str(e)) from None
        raise InputError(file, int(m.group(1)) if m.group(1) else None, m.group(2)) from None


__all__ = ["FORMATS", "Record", "InputError", "read_records", "detect_format", "open_text", "lang_matches"]
