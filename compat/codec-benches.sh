#!/usr/bin/env bash
# codec_sv2 7.0.0's own benchmarks, from its published package, run twice, one
# after the other: over the buffer_sv2 shim of this directory (buffer-pool and
# io-traits) and over the published buffer_sv2 3.0.1 (the control). Both use
# the package's own Cargo.lock and its `with_buffer_pool` feature, so the
# decoder decodes into `BufferPool` in both.
#
#   bash compat/codec-benches.sh                 # pool_lifecycle, buffer_exhaustion, decoder
#   BENCHES="decoder" bash compat/codec-benches.sh
#   CRITERION_ARGS="--warm-up-time 1 --measurement-time 1 --sample-size 10" bash compat/codec-benches.sh
#
# Writes compat/target/codec-benches/{shim,buffer_sv2}.log (criterion's output
# and the counting allocator's lines) and prints two tables: criterion's
# middle estimate per benchmark with the ratio shim / buffer_sv2, beside the
# median of its samples (which a few preempted samples do not move), and the heap
# allocations per run that pool_lifecycle's allocator counts (deterministic,
# unlike the times).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out="$here/target/codec-benches"
BENCHES=${BENCHES:-"pool_lifecycle buffer_exhaustion decoder"}
CRITERION_ARGS=${CRITERION_ARGS:-"--warm-up-time 1 --measurement-time 2"} # whole seconds (criterion 0.3)

(cd "$here" && cargo fetch -q)
src=$(find "${CARGO_HOME:-$HOME/.cargo}/registry/src" -maxdepth 2 -type d -name codec_sv2-7.0.0 -print -quit)
if [[ -z "$src" ]]; then
  echo "codec_sv2 7.0.0 was not fetched"
  exit 1
fi

# A copy of the package as a workspace of its own; `patch` is the manifest
# text appended after `[workspace]`.
prepare() { # dir patch
  rm -rf "$1"
  cp -r "$src" "$1"
  chmod -R u+w "$1"
  printf '\n[workspace]\n%s' "$2" >> "$1/Cargo.toml"
}

# Runs the benches in `dir`, checking which buffer_sv2 it builds with first.
run() { # dir expected-first-line-of-cargo-tree log
  local bench_args=() b
  for b in $BENCHES; do bench_args+=(--bench "$b"); done
  (
    cd "$1"
    local tree
    tree=$(cargo tree -e normal -i buffer_sv2 --features with_buffer_pool | head -n 1)
    if [[ "$tree" != "$2" ]]; then
      echo "$1 builds with $tree, not $2"
      exit 1
    fi
    echo "::: $tree"
    # shellcheck disable=SC2086 # CRITERION_ARGS is a list of arguments
    CARGO_TARGET_DIR="$out/target" cargo bench --features with_buffer_pool "${bench_args[@]}" \
      -- --noplot --verbose $CRITERION_ARGS
  ) > "$3" 2>&1
}

mkdir -p "$out"
prepare "$out/shim" "$(printf '\n[patch.crates-io]\nbuffer_sv2 = { path = "%s" }\n' "$here/buffer_sv2")"
prepare "$out/buffer_sv2" ""
echo "::: codec_sv2 benches over the shim"
run "$out/shim" "buffer_sv2 v3.0.1 ($here/buffer_sv2)" "$out/shim.log"
echo "::: codec_sv2 benches over buffer_sv2 3.0.1"
run "$out/buffer_sv2" "buffer_sv2 v3.0.1" "$out/buffer_sv2.log"
python3 "$here/codec-benches-table.py" "$out/shim.log" "$out/buffer_sv2.log"
