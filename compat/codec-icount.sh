#!/usr/bin/env bash
# Instructions per timed region of codec_sv2 7.0.0's benchmarks, over the
# buffer_sv2 shim of this directory and over the published buffer_sv2 3.0.1:
# `codec-icount/` replays each benchmark's timed region (the package's own
# `benches/common.rs` is copied in) and callgrind counts only inside it.
# Unlike the times of codec-benches.sh, the counts do not depend on the
# machine's load; they are not times either (a cache miss or a page fault
# counts as one instruction), so they say where the work is, not how long
# it takes.
#
#   bash compat/codec-icount.sh                  # the paths below
#   PATHS="decoder/plain" ITERS=2000 bash compat/codec-icount.sh
#
# Needs valgrind. Writes compat/target/codec-icount/{shim,buffer_sv2}/ and
# the callgrind outputs beside them (callgrind_annotate shows where the
# instructions of one path go).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out="$here/target/codec-icount"
ITERS=${ITERS:-1000}
PATHS=${PATHS:-"decoder/plain
decoder/pool_exhaustion/back_mode
decoder/pool_exhaustion/alloc_mode_after_pool_exhausted
decoder/zerocopy_pool_exhaustion/back_mode
decoder/zerocopy_pool_exhaustion/alloc_mode_8_zc_frames_held
encoder/pool_exhaustion/back_mode
encoder/pool_exhaustion/alloc_mode_after_pool_exhausted
encoder/pool_exhaustion/recovery_after_full_release
pool_lifecycle/throughput/zc_hold/total_messages/1
pool_lifecycle/throughput/zc_hold/total_messages/8
pool_lifecycle/throughput/zc_hold/total_messages/9
pool_lifecycle/throughput/zc_hold/total_messages/100
pool_lifecycle/throughput/owned_release/total_messages/100
pool_lifecycle/sliding_window/zc/window_size/8"}

command -v valgrind > /dev/null || { echo "codec-icount.sh needs valgrind"; exit 1; }
(cd "$here/codec-icount" && cargo fetch -q)
src=$(find "${CARGO_HOME:-$HOME/.cargo}/registry/src" -maxdepth 2 -type d -name codec_sv2-7.0.0 -print -quit)
[[ -n "$src" ]] || { echo "codec_sv2 7.0.0 was not fetched"; exit 1; }

# A copy of the driver with the package's `common.rs`; `patch` is appended.
prepare() { # dir patch
  rm -rf "$1"
  mkdir -p "$1"
  cp -r "$here/codec-icount/Cargo.toml" "$here/codec-icount/src" "$1/"
  cp "$src/benches/common.rs" "$1/src/common.rs"
  [[ ! -f "$here/codec-icount/Cargo.lock" ]] || cp "$here/codec-icount/Cargo.lock" "$1/"
  printf '%s' "$2" >> "$1/Cargo.toml"
}

build() { # dir expected-first-line-of-cargo-tree
  local tree
  tree=$(cd "$1" && cargo tree -q -e normal -i buffer_sv2 | head -n 1)
  if [[ "$tree" != "$2" ]]; then
    echo "$1 builds with $tree, not $2"
    exit 1
  fi
  (cd "$1" && cargo build -q --release)
}

# Instructions per region of `path` in the binary of `dir`, those of them
# that are the buffer's own (`pool`: a regular expression matching its
# source files and function names; code of theirs inlined into the codec
# and allocator calls they make are not counted, so this is a lower bound),
# and the allocations per region.
count() { # dir path pool
  local file="$1.$(echo "$2" | tr / _).cg" line regions allocs ir own
  line=$(valgrind -q --tool=callgrind --callgrind-out-file="$file" \
    --toggle-collect='codec_icount::timed_*' "$1/target/release/codec-icount" "$2" "$ITERS")
  regions=$(awk '{print $2}' <<< "$line")
  allocs=$(awk '{print $4}' <<< "$line")
  ir=$(awk '/^summary:/ {print $2}' "$file")
  own=$(callgrind_annotate --inclusive=no --threshold=100 --auto=no --show-percs=no "$file" |
    awk -v pool="$3" '$2 ~ pool {gsub(",", "", $1); s += $1} END {print s + 0}')
  awk -v ir="$ir" -v own="$own" -v r="$regions" -v a="$allocs" \
    'BEGIN {printf "%.1f %.1f %.2f", ir / r, own / r, a / r}'
}

mkdir -p "$out"
prepare "$out/shim" "$(printf '\n[patch.crates-io]\nbuffer_sv2 = { path = "%s" }\n' "$here/buffer_sv2")"
prepare "$out/buffer_sv2" ""
build "$out/shim" "buffer_sv2 v3.0.1 ($here/buffer_sv2)"
build "$out/buffer_sv2" "buffer_sv2 v3.0.1"

printf '%-60s %9s %9s %5s %7s %7s %5s %6s %6s\n' "instructions per timed region" shim buffer_sv2 ratio \
  "shim:" "sv2:" floor "allocs" "allocs"
printf '%-60s %9s %9s %5s %7s %7s %5s %6s %6s\n' "" "" "" "" "pool" "pool" "ratio" shim sv2
shim_pool='buffer-pool/src|io-traits/src|(^|[:<])buffer_pool::|(^|[:<])io_traits::'
sv2_pool='buffer_sv2-3[.]0[.]1/src|(^|[:<])buffer_sv2::'
while read -r path; do
  [[ -n "$path" ]] || continue
  read -r shim_ir shim_own shim_al <<< "$(count "$out/shim" "$path" "$shim_pool")"
  read -r sv2_ir sv2_own sv2_al <<< "$(count "$out/buffer_sv2" "$path" "$sv2_pool")"
  # floor ratio: the shim's count without its pool's own instructions,
  # against buffer_sv2's whole count: the best ratio a pool that cost
  # nothing could reach on this path.
  awk -v p="$path" -v a="$shim_ir" -v b="$sv2_ir" -v oa="$shim_own" -v ob="$sv2_own" \
    -v c="$shim_al" -v d="$sv2_al" \
    'BEGIN {printf "%-60s %9.1f %9.1f %5.2f %7.1f %7.1f %5.2f %6.2f %6.2f\n", p, a, b, a / b, oa, ob, (a - oa) / b, c, d}'
done <<< "$PATHS"
