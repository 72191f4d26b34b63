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
# zoo-node in one file (node/build_bundle.ts) and anvil (xz) for the live
# rounds of `bench live`, the corpus, and the Debian packages of the
# Vulkan loader and libglvnd, which the NVIDIA driver's Vulkan ICD needs. `run` unpacks them (the
# packages only where no Vulkan loader is installed) and runs the bench as
# `deno task bench BENCH FLAGS...` would, from the bundle, fetching nothing.
# Several `run` calls may go side by side. OFFLINE_DEV names another folder
# than .dev (a test's).

set -euo pipefail
cd "$(dirname "$0")/../.."
DEV="${OFFLINE_DEV:-.dev}"
NVIDIA_ICD=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json

case "${1:-}" in
prepare)
  mkdir -p "$DEV/gl" "$DEV/cache"
  # What a run unpacked here would not fit in a carry (64 MiB in all).
  rm -f "$DEV/deno" "$DEV/anvil"
  deno run -A tests/bench/build_bundle.ts --out "$DEV/bench.js"
  deno run -A node/build_bundle.ts --out "$DEV/zoo-node.js"
  xz -T0 -6 -c "$(deno eval "import { anvilBinary } from './chain/anvil.ts';
    console.log(anvilBinary());")" >"$DEV/anvil.xz"
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
  # Several runs may start at once (benches side by side): one unpacks,
  # the others wait for it, and what is unpacked lands whole (a binary
  # written in place while another run executes it is "Text file busy").
  exec 9>"$DEV/.unpack.lock"
  flock 9
  if ! ldconfig -p | grep -q 'libvulkan\.so\.1 '; then
    for deb in "$DEV"/gl/*.deb; do
      if [ -e "$deb" ]; then dpkg -x "$deb" /; fi
    done
    ldconfig
  fi
  for exe in deno anvil; do
    if [ ! -x "$DEV/$exe" ] && [ -f "$DEV/$exe.xz" ]; then
      xz -dc "$DEV/$exe.xz" >"$DEV/$exe.partial"
      chmod +x "$DEV/$exe.partial"
      mv -f "$DEV/$exe.partial" "$DEV/$exe"
    fi
  done
  # bench live's peers run the zoo-node bundle on the packed anvil.
  DEV_ABS="$(cd "$DEV" && pwd)"
  export ZOO_ANVIL="${ZOO_ANVIL:-$DEV_ABS/anvil}"
  export ZOO_NODE_ENTRY="${ZOO_NODE_ENTRY:-$DEV_ABS/zoo-node.js}"
  # The corpus where every bench reads it: the tests' cache under TMPDIR
  # (the cluster benches), its cache/ folder (bench quality), and the data
  # dir's cache/ (the kernels benches), which is that same folder unless
  # ZOO_DATA_DIR is set.
  TMPDIR="${TMPDIR:-/tmp}"
  export ZOO_DATA_DIR="${ZOO_DATA_DIR:-$TMPDIR/zoo-test-cache}"
  for dir in "$TMPDIR/zoo-test-cache" "$TMPDIR/zoo-test-cache/cache" \
    "$ZOO_DATA_DIR/cache"; do
    mkdir -p "$dir"
    for file in "$DEV"/cache/*; do
      [ -f "$dir/${file##*/}" ] && continue
      cp "$file" "$dir/${file##*/}.partial"
      mv -f "$dir/${file##*/}.partial" "$dir/${file##*/}"
    done
  done
  flock -u 9
  if [ -z "${VK_DRIVER_FILES:-}" ] && [ -f "$NVIDIA_ICD" ]; then
    export VK_DRIVER_FILES="$NVIDIA_ICD"
  fi
  exec 9>&-
  exec "$DEV/deno" run --cached-only -A "$DEV/bench.js" "$@"
  ;;
*)
  echo "usage: $0 prepare | run BENCH [FLAGS...]" >&2
  exit 2
  ;;
esac
