"""What an ingest run is asked to do (IngestOptions) and what it reports (IngestSummary,
the rows it rejected, IngestError for run-level problems): the pipeline's interface for the
CLI, the demo, benchmarks and tests.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field

from scoi.core.defaults import ON_CONFLICT_CORPUS, ON_CONFLICT_TMX

# A batch is what one transaction writes: 2,048 pairs by default. Measured on the same
# 16k parsed pairs, writing them 2,048 at a time took 15-20% less CPU than 512 at a time
# (fewer statements; fewer df updates, as a batch's tokens repeat).
DEFAULT_BATCH = 2048


@dataclass
class IngestOptions:
    files: list[str]
    src: str
    tgt: str
    corpus: str | None = None
    fmt: str | None = None
    workers: int = 1
    skip_bad: bool = False
    header: bool | None = None  # TSV first line: True = a header, False = a pair, None = by docs/ingest.md's rule
    batch_size: int = DEFAULT_BATCH  # pairs per transaction
    parsers: dict[str, str] = field(default_factory=dict)  # lang -> parser override
    require_parser: bool = False  # refuse a language without a parser (default: store it without trees)
    embed: str | None = None  # sentence-transformers model: embed the two languages' new sentences after the pairs
    tmx_keep_codes: bool = False  # TMX: keep inline codes (<bpt>, <ph>...) in the text instead of dropping them
    on_conflict: str | None = None  # add | replace | keep; None: on_conflict_default(format)
    no_trees: bool = False  # tokens and index only (scheme "none"); `scoi reanalyze` adds the trees later


@dataclass
class Rejected:
    file: str
    line: int
    reason: str


@dataclass
class IngestSummary:
    corpus: str
    run_id: int
    read: int = 0
    inserted: int = 0
    duplicates: int = 0
    rejected: int = 0
    seconds: float = 0.0
    parsed_sentences: int = 0
    parse_seconds: float = 0.0   # summed over workers: time spent in Moses + spaCy + terms
    parse_cpu_seconds: float = 0.0   # the workers' CPU time on it
    parser_cpu_seconds: float = 0.0  # of which in the parser itself (spaCy, natasha)
    write_seconds: float = 0.0   # main process: building rows, COPY and SQL per batch
    parsers: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    rejected_rows: list[Rejected] = field(default_factory=list)
    embedder: str | None = None  # --embed: the model's stored name
    embedded: int = 0            # sentences it embedded (the two languages' sentences that had none)
    # lang -> new sentences whose parse was not a tree and was made one (docs/languages.md, "Trees")
    repaired_trees: dict[str, int] = field(default_factory=dict)
    on_conflict: str = ON_CONFLICT_CORPUS
    replaced: int = 0            # --on-conflict replace: stored pairs of the same sources deleted
    kept_out: int = 0            # --on-conflict keep: input pairs not inserted (their source was stored)
    removed_sentences: int = 0   # sentences the replaced pairs left unused, deleted with them
    warnings: list[str] = field(default_factory=list)  # always shown (e.g. TMX variants dropped)

    @property
    def pairs_per_second(self) -> float:
        return self.read / self.seconds if self.seconds else 0.0

    def to_json(self) -> str:
        d = asdict(self)
        d["pairs_per_second"] = round(self.pairs_per_second, 1)
        for key in ("seconds", "parse_seconds", "parse_cpu_seconds", "parser_cpu_seconds", "write_seconds"):
            d[key] = round(d[key], 3)
        return json.dumps(d, ensure_ascii=False)


class IngestError(RuntimeError):
    """A run-level problem (languages, corpus mismatch) with a message for the user."""


def on_conflict_default(fmt: str) -> str:
    """``--on-conflict`` when not given: ``replace`` for a TMX, ``add`` for the other formats
    (why: scoi.core.defaults)."""
    return ON_CONFLICT_TMX if fmt == "tmx" else ON_CONFLICT_CORPUS
