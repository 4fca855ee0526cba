#!/usr/bin/env bash
# The whole GPU measurement in one run, for a lent H200 (about 6-8 minutes of device time):
#   1. step times t(b, q, L) of the llama-3.2-1b and llama-3.1-8b shapes in bf16 with CUDA graphs, the
#      engine-grade pass (fused norm, grouped-query SDPA, no dense mask), b = 1..128, q = 1, 2, 4, 5,
#      L = 512, 2048, 8192 (configurations that do not fit are skipped); for the 8B (FLOOR_MODELS) each
#      pass's GEMMs and attention are also timed alone, so every row reports its own kernel floor;
#   2. a calibrated profile fitted to them, with held-out error and a residual plot;
#   3. the end-to-end speculative loop (8B target, 1B draft) at a few batch sizes;
#   4. measured step times beside specsim's predictions (and, where aiconfigurator-core is installed,
#      the kernel database on the same grid, including t(b, q, L) / t(b, 1, L); on a bare GPU box rerun
#      scripts/compare_measured.py on the development machine with the measured CSV that comes back).
# Everything lands in $OUT (at most 8 files, as the device tool brings back).
#
# On the device machine (its python3 has torch, numpy, scipy, pandas, pyyaml, matplotlib):
#   bash scripts/gpu_measure.sh
# Rehearsal on a CPU with tiny shapes (what the test suite checks):
#   DEVICE=cpu DTYPE=fp32 MODELS="tiny-5m tiny-28m" FLOOR_MODELS=tiny-5m LOOP_TARGET=tiny-28m LOOP_DRAFT=tiny-5m BASE=cpu-epyc-2vcpu \
#   BATCH=1,2 Q=1,3 CTX=64,128 REPEATS=2 LOOP_BATCH=1 LOOP_TOKENS=8 OUT=/tmp/out bash scripts/gpu_measure.sh
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:?set OUT to an empty output folder}
mkdir -p "$OUT"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
PY=${PYTHON:-python3}
DEVICE=${DEVICE:-cuda}
DTYPE=${DTYPE:-bf16}
MODELS=${MODELS:-llama-3.2-1b llama-3.1-8b}
BATCH=${BATCH:-1,4,8,16,32,64,128}
Q=${Q:-1,2,4,5}
CTX=${CTX:-512,2048,8192}
FLOOR_MODELS=${FLOOR_MODELS:-llama-3.1-8b}
COMPILE=${COMPILE:-}  # set to --compile to fuse each layer with torch.compile (adds compile time per shape)
REPEATS=${REPEATS:-10}
BASE=${BASE:-h200}
LOOP_TARGET=${LOOP_TARGET:-llama-3.1-8b}
LOOP_DRAFT=${LOOP_DRAFT:-llama-3.2-1b}
LOOP_BATCH=${LOOP_BATCH:-1,16,64}
LOOP_TOKENS=${LOOP_TOKENS:-64}
LOG="$OUT/log.txt"
GRAPHS=$([ "$DEVICE" = cuda ] && echo --cuda-graphs || true)

{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  # torch's versions read from its version.py without importing torch (2 s of CPU, which measure pays again)
  $PY -c "import importlib.util as u, os, runpy, sys; v = runpy.run_path(os.path.join(u.find_spec('torch').submodule_search_locations[0], 'version.py')); print('python', sys.version.split()[0], 'torch', v['__version__'], 'cuda', v['cuda'])"
  if [ "$DEVICE" = cuda ]; then nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv || true; fi
} >> "$LOG" 2>&1

first=1
for model in $MODELS; do
  FLOOR=$(case " $FLOOR_MODELS " in *" $model "*) echo --floor;; esac)
  $PY -m specsim measure --model "$model" --device "$DEVICE" --dtype "$DTYPE" --batch "$BATCH" --tokens-per-seq "$Q" \
      --context "$CTX" --repeats "$REPEATS" $GRAPHS $FLOOR $COMPILE --out "$OUT/part.csv" >> "$LOG" 2>&1
  if [ $first = 1 ]; then cat "$OUT/part.csv" > "$OUT/measured.csv"; first=0; else tail -n +2 "$OUT/part.csv" >> "$OUT/measured.csv"; fi
  rm -f "$OUT/part.csv"
done

$PY -m specsim calibrate "$OUT/measured.csv" --hardware "$BASE" --out "$OUT/$BASE-measured.yaml" >> "$LOG" 2>&1
$PY -m specsim measure-loop --target "$LOOP_TARGET" --draft "$LOOP_DRAFT" --dtype "$DTYPE" --device "$DEVICE" \
    --batch "$LOOP_BATCH" --context 1024 --tokens "$LOOP_TOKENS" --gamma 4 --alpha 0.8 \
    --hardware "$OUT/$BASE-measured.yaml" --json > "$OUT/loop.json" 2>> "$LOG"
$PY scripts/compare_measured.py "$OUT/measured.csv" --base "$BASE" --calibrated "$OUT/$BASE-measured.yaml" \
    --out "$OUT/comparison.csv" >> "$LOG" 2>&1
echo "done: $(date -u +%Y-%m-%dT%H:%M:%SZ)" >> "$LOG"
cat "$LOG" | tail -40
