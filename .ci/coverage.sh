#!/usr/bin/env bash
# Line coverage of each crate's library code by its tests, and which unsafe
# blocks the tests reach (cargo-llvm-cov on nightly, native, doctests
# included). Two runs per crate, on the default build's code (every feature
# but those that fork code paths):
#   all   every unit, integration and doc test;
#   miri  the tests Miri runs: the same minus those Miri skips
#         (`#[cfg_attr(miri, ignore)]`, read from the Miri logs of
#         `.ci/run miri` in target/miri-logs), with the doctests built with
#         `--cfg miri` so that the bodies they gate on `not(miri)` (system
#         calls) drop out as they do under Miri. Its unsafe-block list is
#         what the Miri runs reach.
# Writes target/coverage/<run>.lcov, <run>-summary.txt and <run>-unsafe.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
source <(sed -n '/^has_feature()/,/^}/p;/^features_but()/,/^}/p;/^builds()/,/^}/p' .ci/run)
CRATES=(io-traits buffer-pool uring-queue batch-reader)
out=target/coverage
mkdir -p "$out"
if ! cargo llvm-cov --version >/dev/null 2>&1; then cargo install --locked cargo-llvm-cov; fi
rustup +nightly component add llvm-tools

# Test names Miri reported ignored for crate $1 (in any build: a test is
# ignored under `cfg(miri)`, whatever the features), as `--skip NAME` pairs.
miri_skips() {
  local name
  cat target/miri-logs/stacked-"$1"-*.log 2>/dev/null |
    sed -n 's/^test \(.*\) \.\.\. ignored.*/\1/p' | sort -u |
    while read -r name; do printf -- '--skip\n%s\n' "$name"; done
}

for run in all miri; do
  cargo +nightly llvm-cov clean --workspace
  for c in "${CRATES[@]}"; do
    read -ra features < <(builds "$c" small portable-atomic | tail -n 1)
    skips=()
    if [[ $run == miri ]]; then
      if ! ls target/miri-logs/stacked-"$c"-*.log >/dev/null 2>&1; then
        echo "no Miri logs for $c in target/miri-logs: run .ci/run miri first" >&2
        exit 1
      fi
      mapfile -t skips < <(miri_skips "$c")
    fi
    cargo +nightly llvm-cov --no-report -p "ncio-$c" "${features[@]}" --lib --tests \
      -- --exact "${skips[@]}" </dev/null
    docflags=""
    [[ $run == miri ]] && docflags="--cfg miri"
    RUSTDOCFLAGS="$docflags" cargo +nightly llvm-cov --no-report -p "ncio-$c" "${features[@]}" --doc </dev/null
  done
  cargo +nightly llvm-cov report --doctests --lcov --output-path "$out/$run.lcov" \
    --ignore-filename-regex '(/tests/|/benches/|/fuzz/|/\.cargo/|/rustc/)'
  cargo +nightly llvm-cov report --doctests --summary-only \
    --ignore-filename-regex '(/tests/|/benches/|/fuzz/|/\.cargo/|/rustc/)' > "$out/$run-summary.txt"
  python3 .ci/unsafe-reach.py "$out/$run.lcov" "${CRATES[@]}" > "$out/$run-unsafe.txt" || true
  tail -n 1 "$out/$run-unsafe.txt"
done
