#!/usr/bin/env bash
# The runs issue 45 asks of a GPU machine, prepared to go in one device
# call each (a session's device time is short: run the parts one call at
# a time, each under its timeout). From the repo root, with .dev prepared
# (`tests/bench/offline_gpu.sh prepare`) and carried:
#
#   tests/bench/gpu_session.sh PART...
#
#   kernels  the WGSL matmul (f32, and f16 storage) and the GPU trainer
#            against PyTorch where one is found            (kernels.json)
#   live     a 124M GPT-2 job (12 layers, d_model 768, context 512, vocab
#            50257) in live rounds: 2 WebGPU peers sharing the GPU, an
#            anvil, audits on                               (live.json)
#   quality  DiLoCo against data-parallel at 25.3M parameters (the xl
#            model): 4 peers, H = 100, Muon, sign deltas    (quality.json)
#
# Each part writes its JSON and log under $OUT (the device call's output
# folder), else ./gpu-out. Sizes and lengths come from the environment
# where a part's defaults would not fit a call: LIVE_ROUNDS (2),
# LIVE_STEPS (10), LIVE_BATCH (4), LIVE_LAYERS (12), LIVE_D_MODEL (768),
# LIVE_HEADS (12), LIVE_CONTEXT (512), LIVE_VOCAB (50257), LIVE_PEERS (2),
# QUALITY_ROUNDS (8), QUALITY_STEPS (100), QUALITY_MODEL (xl), BACKEND
# (webgpu), PART_TIMEOUT (540 s).

set -uo pipefail
cd "$(dirname "$0")/../.."
OUT_DIR="${OUT:-gpu-out}"
mkdir -p "$OUT_DIR"
RUN=tests/bench/offline_gpu.sh
BACKEND="${BACKEND:-webgpu}"
LIMIT="${PART_TIMEOUT:-540}"

part() {
  local name="$1"
  shift
  echo "== $name: $*" >&2
  nvidia-smi --query-gpu=name,driver_version,memory.total \
    --format=csv,noheader >"$OUT_DIR/$name.gpu.txt" 2>/dev/null || true
  timeout "$LIMIT" bash "$RUN" run "$@" --json \
    >"$OUT_DIR/$name.json" 2>"$OUT_DIR/$name.log"
  local rc=$?
  echo "== $name: exit $rc" >&2
  tail -3 "$OUT_DIR/$name.log" >&2
  return $rc
}

if [ "$#" -eq 0 ]; then
  echo "usage: $0 kernels|live|quality..." >&2
  exit 2
fi
status=0
for name in "$@"; do
  case "$name" in
  kernels)
    part kernels kernels --backend "$BACKEND" || status=1
    ;;
  live)
    part live live --backend "$BACKEND" --peers "${LIVE_PEERS:-2}" \
      --rounds "${LIVE_ROUNDS:-2}" --inner-steps "${LIVE_STEPS:-10}" \
      --layers "${LIVE_LAYERS:-12}" --d-model "${LIVE_D_MODEL:-768}" \
      --heads "${LIVE_HEADS:-12}" --context "${LIVE_CONTEXT:-512}" \
      --vocab "${LIVE_VOCAB:-50257}" --batch "${LIVE_BATCH:-4}" \
      --deadline 600 || status=1
    ;;
  quality)
    part quality quality --backend "$BACKEND" \
      --model "${QUALITY_MODEL:-xl}" --peers 4 \
      --rounds "${QUALITY_ROUNDS:-8}" --inner-steps "${QUALITY_STEPS:-100}" \
      --optimizer muon --compression sign --alone false || status=1
    ;;
  *)
    echo "$0: unknown part $name (kernels, live, quality)" >&2
    exit 2
    ;;
  esac
done
exit $status
