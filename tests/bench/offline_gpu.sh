#!/usr/bin/env bash
# The benches on a GPU machine that reaches no network (the H100/H200
# device machines of BENCHMARKS.md), in two steps:
#
#   tests/bench/offline_gpu.sh prepare            # here, with the network
#   tests/bench/offline_gpu.sh run BENCH FLAGS... # there, from the repo root
#
# `prepare` packs into .dev/ (gitignored: the device tool carries it when a
# call names it in `carry`) what a bare machine lacks: this Deno (xz), the
# benches in one file with the WASM kernels packed in (build_bundle.ts),
# the corpus, and the Debian packages of the Vulkan loader and libglvnd,
# which the NVIDIA driver's Vulkan ICD needs. `run` unpacks them (the
# packages only where no Vulkan loader is installed) and runs the bench as
# `deno task bench BENCH FLAGS...` would, from the bundle, fetching nothing.

set -euo pipefail
cd "$(dirname "$0")/../.."
DEV=.dev
NVIDIA_ICD=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json

case "${1:-}" in
prepare)
  mkdir -p "$DEV/gl" "$DEV/cache"
  deno run -A tests/bench/build_bundle.ts --out "$DEV/bench.js"
  xz -T0 -3 -c "$(deno eval 'console.log(Deno.execPath())')" >"$DEV/deno.xz"
  deno eval "import { loadBrownCorpus } from './node/job/corpus.ts';
    await loadBrownCorpus({ cacheDir: '$DEV/cache' });"
  (cd "$DEV/gl" && apt-get download -qq libvulkan1 libglvnd0 libglx0 libgl1 \
    libegl1 libopengl0 libgles2)
  du -sh "$DEV"
  ;;
run)
  shift
  if [ ! -f "$DEV/bench.js" ] || [ ! -f "$DEV/deno.xz" ]; then
    echo "$0 run: no $DEV/bench.js or $DEV/deno.xz: run '$0 prepare' where the network is, and carry $DEV" >&2
    exit 1
  fi
  if ! ldconfig -p | grep -q 'libvulkan\.so\.1 '; then
    for deb in "$DEV"/gl/*.deb; do dpkg -x "$deb" /; done
    ldconfig
  fi
  if [ -z "${VK_DRIVER_FILES:-}" ] && [ -f "$NVIDIA_ICD" ]; then
    export VK_DRIVER_FILES="$NVIDIA_ICD"
  fi
  if [ ! -x "$DEV/deno" ]; then
    xz -dc "$DEV/deno.xz" >"$DEV/deno"
    chmod +x "$DEV/deno"
  fi
  # The benches read the corpus from the tests' cache, under TMPDIR.
  TMPDIR="${TMPDIR:-/tmp}"
  mkdir -p "$TMPDIR/zoo-test-cache"
  cp -n "$DEV"/cache/* "$TMPDIR/zoo-test-cache/"
  exec "$DEV/deno" run --cached-only -A "$DEV/bench.js" "$@"
  ;;
*)
  echo "usage: $0 prepare | run BENCH [FLAGS...]" >&2
  exit 2
  ;;
esac
