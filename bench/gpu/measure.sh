#!/usr/bin/env bash
# Measure the bundled workloads on a real NVIDIA GPU, and record what the real nvidia-smi prints.
#
#     OUT=/path/to/results bash bench/gpu/measure.sh        # from the repository root; about 6 minutes
#
# Needs nvidia-smi and a CUDA build of PyTorch in python3 (or $PYTHON); nothing is installed, nothing is fetched.
# Writes $OUT/results.json, $OUT/summary.md and the raw files (logs, nvidia-smi captures, a profile).
# Every part runs under its own time limit inside one overall limit (GPULAB_GPU_BUDGET_S; by default what is left of
# 7 minutes after the checks, less a margin), so a part that hangs costs only its own share; results.json and
# summary.md are rewritten after every part.
#
# GPULAB_GPU_QUICK=1 is the rehearsal on a machine without a GPU: the tiny model on the CPU for a few steps, short
# nvidia-smi captures (put the repository's stand-in, scripts/fixtures/nvidia-smi, on PATH), same code paths.
# GPULAB_GPU_INPROCESS=1 measures the inference engine in-process even where FastAPI and uvicorn are installed.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
: "${OUT:?set OUT to the folder the results go to}"
mkdir -p "$OUT"
PY=${PYTHON:-python3}
QUICK=${GPULAB_GPU_QUICK:-0}
export PYTHONUNBUFFERED=1
[ "$QUICK" = 1 ] && export OMP_NUM_THREADS=1  # the rehearsal's tiny model on a shared CPU
log() { echo "[measure $(date -u +%H:%M:%S)] $*"; }

log "repository $(git rev-parse --short HEAD 2>/dev/null || echo '?'), python $PY, quick=$QUICK"
if ! command -v nvidia-smi >/dev/null 2>&1; then
  log "nvidia-smi is not on PATH: run this on a machine with an NVIDIA GPU (or put the stand-in on PATH with GPULAB_GPU_QUICK=1)"
  exit 2
fi
log "nvidia-smi: $(command -v nvidia-smi)"
log "C compiler (Triton builds its launcher with it under torch.compile): $(command -v cc || command -v gcc || echo none)"
timeout 15 nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | tee "$OUT/gpu-name.txt"
if ! timeout 45 "$PY" - "$QUICK" <<'EOF' 2>&1 | tee "$OUT/torch-cuda.txt"; then
import sys

import torch

quick = sys.argv[1] == "1"
print(f"torch {torch.__version__}, CUDA build {torch.version.cuda}, cuda available: {torch.cuda.is_available()}")
if torch.cuda.is_available():
    props = torch.cuda.get_device_properties(0)
    print(f"GPU 0: {props.name}, {props.total_memory / 2**30:.1f} GiB, compute capability {props.major}.{props.minor}, "
          f"{props.multi_processor_count} SMs, bf16 supported: {torch.cuda.is_bf16_supported()}")
elif not quick:
    sys.exit("PyTorch sees no CUDA device: check the driver (nvidia-smi above) and that python3 has a CUDA build")
else:
    print("no CUDA: quick rehearsal on the CPU")
EOF
  log "stopping: no usable CUDA in $PY"
  exit 3
fi
# 420 s in all: what the checks took, the parts' budget, 15 s for the last part's ending, 10 s to kill, 10 s spare
export GPULAB_GPU_BUDGET_S=${GPULAB_GPU_BUDGET_S:-$((420 - SECONDS - 35))}
log "measuring for at most ${GPULAB_GPU_BUDGET_S} s; progress follows"
timeout -k 10 $((GPULAB_GPU_BUDGET_S + 15)) "$PY" -u bench/gpu/measure.py
status=$?
log "done (exit $status); results in $OUT/summary.md and $OUT/results.json"
exit $status
