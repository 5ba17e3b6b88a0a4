#!/usr/bin/env bash
# Fuzzes one target from a scratch copy of its committed corpus, so that the
# inputs libFuzzer adds never land in fuzz/corpus/. Needs nightly and
# cargo-fuzz (cargo install --locked cargo-fuzz).
#
# Usage: fuzz/run.sh TARGET [SECONDS] [LIBFUZZER_ARG...]
#   SECONDS defaults to 60. Set FUZZ_KEEP=DIR to keep the grown corpus in DIR
#   (for minimising it with `cargo fuzz cmin` afterwards).
set -euo pipefail
cd "$(dirname "$0")"
target=${1:?usage: fuzz/run.sh TARGET [SECONDS] [LIBFUZZER_ARG...]}
seconds=${2:-60}
shift $(($# < 2 ? $# : 2))
if [[ ! -f "fuzz_targets/$target.rs" ]]; then
  echo "no fuzz target named $target (see fuzz/fuzz_targets/)" >&2
  exit 2
fi
work=${FUZZ_KEEP:-$(mktemp -d)}
mkdir -p "$work"
if [[ -d "corpus/$target" ]]; then cp -r "corpus/$target/." "$work/"; fi
[[ -n "${FUZZ_KEEP:-}" ]] || trap 'rm -rf "$work"' EXIT
cargo +nightly fuzz run "$target" "$work" -- \
  -max_total_time="$seconds" -rss_limit_mb=4096 "$@"
