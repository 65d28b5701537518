#!/usr/bin/env bash
# The main job: install everything, build, trace a real PyTorch training
# (examples/pytorch: a CNN on generated PNG images, DataLoader with 2 worker
# processes, a checkpoint per epoch) under `strata run`, then analyze it.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
TARGETS=strata_user bash scripts/build.sh  # the tools only: the tests build with scripts/test.sh
OUT=${OUT:-/tmp/strata-demo}
mkdir -p "$OUT"
STRATA=build/bin/strata
# Generate the data set first (untraced) so the trace shows the training job.
/usr/bin/python3 examples/pytorch/train.py --data "$OUT/data" --generate-only ${DEMO_ARGS:-}
rm -rf "$OUT/trace"
$STRATA run -o "$OUT/trace" -- /usr/bin/python3 examples/pytorch/train.py --data "$OUT/data" --epochs 3 ${DEMO_ARGS:-}
echo
$STRATA info "$OUT/trace"
echo
$STRATA analyze "$OUT/trace" --by epoch --stage-capacity 64MiB
$STRATA analyze "$OUT/trace" --html "$OUT/report.html" >/dev/null
$STRATA convert "$OUT/trace" --to chrome -o "$OUT/trace.json"
echo
echo "report: $OUT/report.html   Perfetto/chrome://tracing: $OUT/trace.json"
