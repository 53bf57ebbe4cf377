#!/usr/bin/env bash
# The four-method experiment over two tiny local models, end to end (docs/jobs.md, "A real
# run with ctq"): a throwaway SCOI_HOME with its own embedded PostgreSQL, the shipped demo
# corpus, a CTQ Scorer trained on the first 5 demo test sentences, then
# zero,bm25,scoi,ctq on the other 15 with two random-weight Llamas (tests/tiny_model.py),
# the table (CLI and --json) and the chrF plot.
# Run from the repository root:  scripts/experiment_tiny_ctq.sh [OUT_DIR]
set -euo pipefail
out="${1:-$(mktemp -d)}"
mkdir -p "$out"
export SCOI_HOME="$out/home" PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
py="${PYTHON:-python}"
scoi() { "$py" -m scoi.cli.main "$@"; }

tail -n +2 scoi/data/demo_test.fr-en.tsv | head -5 | cut -f1 >"$out/dev.fr"
tail -n +2 scoi/data/demo_test.fr-en.tsv | head -5 | cut -f2 >"$out/dev.en"
tail -n +7 scoi/data/demo_test.fr-en.tsv | cut -f1 >"$out/test.fr"
tail -n +7 scoi/data/demo_test.fr-en.tsv | cut -f2 >"$out/test.en"
"$py" -c "import sys; from tests.tiny_model import build_tiny_model as b; b(sys.argv[1], 0); b(sys.argv[2], 1)" \
    "$out/tiny-a" "$out/tiny-b"

scoi ingest scoi/data/demo.fr-en.tsv --src fr --tgt en
scoi ctq train --src fr --tgt en --dev "$out/dev.fr" --dev-ref "$out/dev.en" --model "hf:$out/tiny-a" \
    --pool 8 --max-new-tokens 16 --name tiny-ctq
run=(experiment run tiny-four --input "$out/test.fr" --references "$out/test.en" --src fr --tgt en
     --model "tiny-a=hf:$out/tiny-a" --model "tiny-b=hf:$out/tiny-b" --methods zero,bm25,scoi,ctq
     --ctq-model tiny-ctq --k 2 --max-new-tokens 16)
scoi "${run[@]}" --json | tail -n 1 >"$out/tiny-four.json"
# The terminal tables, kept in a file (rich output forced, colours off, 80 columns).
FORCE_COLOR=1 NO_COLOR=1 COLUMNS=80 scoi experiment show tiny-four | sed "s/\x1b\[[0-9;]*m//g" | tee "$out/tiny-four.txt"
scoi experiment plot tiny-four -o "$out/experiment-tiny-ctq-chrf.png" --metric chrf
scoi db stop
echo "outputs in $out" >&2
