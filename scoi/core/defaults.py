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
BM25_SPAN = 1 << 22           # ... sentence ids scored at once: a query's sums stay <= 32 MB at any size
BM25_CACHE_POSTINGS = 16_000_000  # ... postings of common tokens' lists kept decoded per process (<= 288 MB)
BM25_CACHE_MIN_DF = 10_000    # ... the shortest list kept there
DPP_THETA = 0.5               # dpp: the quality/diversity trade-off of the kernel (docs/method.md §7.2)
DPP_BM25_K1 = 1.2             # dpp: its BM25 weights over the pool alone (the paper's k1 and b)
DPP_BM25_B = 0.75
TEMPLATE = "xglm"             # prompt template
ORDER = "reverse"             # example order in the prompt: the published one
MAX_NEW_TOKENS = 128          # generation limit per item
REUSE = "exact"              # jobs: insert the stored translation of an exact match (exact | off)
MAX_ATTEMPTS = 3              # attempts per job item before it fails
WORKER_BATCH = 8              # items a worker claims and generates together
STALL_TIMEOUT = 300.0         # seconds without heartbeat before a stuck worker's item is claimed again
POLL_SECONDS = 2.0            # a worker's idle wait between claims (LISTEN wakes it earlier)
RECONNECT_MAX_SECONDS = 10.0  # a worker that lost the database retries at most this far apart
REPLICA_RETRY_SECONDS = 30.0  # an unreachable read replica is tried again after this long
#: scoi ingest --on-conflict, for a source the corpus already holds (from an earlier run)
#: with another target. A TMX is a translation memory as it stands: re-importing it after
#: correcting an entry must replace the old translation, not leave it a candidate. TSV,
#: Moses and JSONL files are corpora, where one sentence's several translations are all
#: data, and a corpus loaded in parts must not lose the first part's: they add.
ON_CONFLICT_TMX = "replace"
ON_CONFLICT_CORPUS = "add"
LOOKUP_N = 5                  # scoi lookup: matches shown
#: scoi lookup: lowest match % shown. 70, the CAT tools' fuzzy-match threshold (Trados
#: Studio 70 %, translate-toolkit / Weblate 75 %): below it a segment is not a TM match
LOOKUP_MIN_MATCH = 70.0
LOOKUP_COUNT_FLOOR = 50.0     # scoi lookup: from this --min-match on, every stored sentence that can reach it is checked
LOOKUP_COUNT_LIMIT = 5000     # scoi lookup: sentences the count filter may keep; more: the BM25 pool instead
LOOKUP_POOL = 1000            # scoi lookup: exact BM25 pool the match % is computed on (docs/method.md §8)
LOOKUP_FIRST_POOL = 200       # scoi lookup: pool read first; the full pool only when it may miss a match
INGEST_RUNS_SHOWN = 20        # scoi ingest runs: runs listed, newest first
SCHEDULE_RUNS_SHOWN = 10      # scoi schedule show: recent runs listed
RANDOM_SEEDS = 3              # scoi experiment: seeds of the random method (it varies with the seed)
SCHEDULE_TIMEZONE = "UTC"     # scoi schedule add: the zone its cron fields are read in
BOOTSTRAP_SAMPLES = 1000      # paired bootstrap resamples (sacreBLEU's default)
EMBED_BATCH = 256             # scoi embed: sentences encoded per batch
GAPS_LIMIT = 50               # coverage gaps (scoi.gaps, /api/gaps): rows per kind (words, terms)
SOURCE_TIMEOUT = 30.0         # schedules and jobs reading an SQL source: seconds its query may run
#: scoi serve: where it listens, and its bounds on one request (scoi.service.config.Limits)
SERVE_HOST = "127.0.0.1"
SERVE_PORT = 8765
SERVE_TIMEOUT = 30.0          # seconds one request may work (and any one statement it runs)
SERVE_MAX_BODY = 1_000_000    # bytes of a request body
SERVE_MAX_CHARS = 2_000       # characters of one sentence
SERVE_MAX_SENTENCES = 1_000   # sentences of one batch job or gap analysis
SERVE_MAX_K = 16              # examples per prompt a request may ask for
SERVE_ITEMS_PAGE = 100        # GET /api/jobs/{ref}: items per page unless asked
SERVE_MAX_ITEMS_PAGE = 500    # ... and at most
#: scoi db check: work_mem of each of its sessions (SET LOCAL), so its grouped statements
#: (sentence_term by sentence, forward rows beside sentences) hash and sort in memory.
DB_CHECK_WORK_MEM = "256MB"
