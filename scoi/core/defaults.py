"""The default of every selection, job and worker setting, declared once: the CLI options,
the service's request models, ``JobSpec``, ``Selector``, ``Bm25Params`` and the worker
(reading a stored job's params, and its own options) all take them from here, so a default
cannot drift between them.

Plain constants, importable without numpy (the CLI builds its options from them). A
changed default changes what a new job or selection means, and its signature shows it.
"""

from __future__ import annotations

METHOD = "scoi"               # the selection method (scoi.core.methods)
K = 4                         # examples per prompt
POOL = 100                    # pairs preselected by BM25 per sentence
FILL = "none"                 # with fewer than k picks: none | random
SEED = 0                      # random selection, random fills, random example order
SIMILARITY = "distance"       # term similarity of the coverage criteria
WORD_OVERLAP = "set"          # word coverage: set | multiset
RBM25_VARIANT = "moses"       # rbm25: scoi's variant (docs/method.md, R-BM25)
#: fuzzy / fuzzy-ann: the paper's Fuzzy embedder
EMBEDDER = "sentence-transformers/paraphrase-multilingual-MiniLM-L12-v2"
#: scoi ctq train: the one-shot translations' score the CTQ Scorer learns (chrf | bleu |
#: comet); chrF runs offline anywhere (the released code's COMET needs a checkpoint)
CTQ_METRIC = "chrf"
EF_SEARCH = 40                # fuzzy-ann: HNSW candidates searched per query (pgvector's default)
BM25_K1 = 1.5                 # BM25 preselection: term-frequency saturation
BM25_B = 0.75                 # ... and length normalisation
TEMPLATE = "xglm"             # prompt template
ORDER = "reverse"             # example order in the prompt: the published one
MAX_NEW_TOKENS = 128          # generation limit per item
REUSE = "exact"              # jobs: insert the stored translation of an exact match (exact | off)
MAX_ATTEMPTS = 3              # attempts per job item before it fails
WORKER_BATCH = 8              # items a worker claims and generates together
STALL_TIMEOUT = 300.0         # seconds without heartbeat before a stuck worker's item is claimed again
POLL_SECONDS = 2.0            # a worker's idle wait between claims (LISTEN wakes it earlier)
RECONNECT_MAX_SECONDS = 10.0  # a worker that lost the database retries at most this far apart
#: scoi ingest --on-conflict, for a source the corpus already holds (from an earlier run)
#: with another target. A TMX is a translation memory as it stands: re-importing it after
#: correcting an entry must replace the old translation, not leave it a candidate. TSV,
#: Moses and JSONL files are corpora, where one sentence's several translations are all
#: data, and a corpus loaded in parts must not lose the first part's: they add.
ON_CONFLICT_TMX = "replace"
ON_CONFLICT_CORPUS = "add"
LOOKUP_N = 5                  # scoi lookup: matches shown
LOOKUP_MIN_MATCH = 0.0        # scoi lookup: lowest match % shown (CAT tools often use 70)
LOOKUP_POOL = 1000            # scoi lookup: exact BM25 pool the match % is computed on (docs/method.md §8)
LOOKUP_FIRST_POOL = 200       # scoi lookup: pool read first; the full pool only when it may miss a match
#: scoi db check: work_mem of each of its sessions (SET LOCAL), so the grouped passes over
#: posting hash and sort in memory (at 1M pairs a per-sentence hash holds ~200 MB).
DB_CHECK_WORK_MEM = "256MB"
