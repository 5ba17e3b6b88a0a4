#!/usr/bin/env bash
# A long fuzzing run of one target, as docs/verification.md's "Fuzzing at
# depth" table records it: fuzz for SECONDS from a scratch copy of the
# committed corpus, minimise what it grew (`cargo fuzz cmin`), then measure
# the line coverage of the crate the target checks with `cargo fuzz coverage`
# and llvm-cov. Prints one table row:
#   | target | hours | CPU hours | executions | corpus (committed -> minimised) | lines covered | findings |
# "hours" is libFuzzer's wall-clock budget; "CPU hours" is what the fuzzing
# process was given of it (less when the machine was shared).
# and leaves the minimised corpus in target/fuzz-depth/<target>/corpus (copy
# it over fuzz/corpus/<target> to commit it) and libFuzzer's log beside it.
#
# Usage: fuzz/depth.sh TARGET SECONDS
set -euo pipefail
cd "$(dirname "$0")"
target=${1:?usage: fuzz/depth.sh TARGET SECONDS}
seconds=${2:?usage: fuzz/depth.sh TARGET SECONDS}
out=../target/fuzz-depth/$target
rm -rf "$out"
mkdir -p "$out/grown" "$out/corpus"
# A target may have no committed corpus yet (it starts from nothing).
committed=0
if [[ -d "corpus/$target" ]]; then committed=$(find "corpus/$target" -type f | wc -l); fi

findings=none
# Build first, so that the CPU time measured below is fuzzing alone.
cargo +nightly fuzz build "$target" > "$out/build.log" 2>&1
if ! FUZZ_KEEP="$out/grown" /usr/bin/time -f '%U %S' -o "$out/cpu" ./run.sh "$target" "$seconds" -print_final_stats=1 > "$out/fuzz.log" 2>&1; then
  findings="crash: see $out/fuzz.log and fuzz/artifacts/$target"
fi
cpu_hours=$(awk 'END { printf "%.2f", ($1 + $2) / 3600 }' "$out/cpu")
runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$out/fuzz.log" | tail -n 1)

# cmin keeps the inputs that add coverage; it writes into the corpus it is
# given, so it runs on the scratch copy.
cargo +nightly fuzz cmin "$target" "$out/grown" > "$out/cmin.log" 2>&1
cp -r "$out/grown/." "$out/corpus/"
minimised=$(find "$out/corpus" -type f | wc -l)

# Which crate's source the target checks: the first workspace crate it uses.
crate=$(grep -o -m1 -E '\b(io_traits|buffer_pool|uring_queue|batch_reader)::' "fuzz_targets/$target.rs" | head -n 1 | tr -d ':' | tr _ -)
cargo +nightly fuzz coverage "$target" "$out/corpus" > "$out/coverage.log" 2>&1
llvm_cov=$(rustc +nightly --print sysroot)/lib/rustlib/x86_64-unknown-linux-gnu/bin/llvm-cov
[[ -x $llvm_cov ]] || rustup +nightly component add llvm-tools
profdata=coverage/$target/coverage.profdata
binary=$(find target -path "*/coverage/*/release/$target" -type f | head -n 1)
# Lines of the crate's src/ that the binary holds, and how many ran.
lines=$("$llvm_cov" export "$binary" -instr-profile="$profdata" -summary-only |
  python3 -c '
import json, sys
crate = sys.argv[1]
total = covered = 0
for f in json.load(sys.stdin)["data"][0]["files"]:
    if f"/{crate}/src/" in f["filename"]:
        total += f["summary"]["lines"]["count"]
        covered += f["summary"]["lines"]["covered"]
print(f"{100 * covered / total:.1f} % of {total} lines" if total else "?")
' "$crate")

printf '| %s | %.2f | %s | %s | %s -> %s | %s (%s) | %s |\n' "$target" "$(echo "$seconds / 3600" | bc -l)" \
  "$cpu_hours" "${runs:-?}" "$committed" "$minimised" "${lines:-?}" "$crate" "$findings"
