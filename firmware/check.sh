#!/usr/bin/env bash
# Builds every scenario (scenarios/src/bin/*.rs) for each target, runs it
# under QEMU (qemu.sh), then builds it again with the panic-never handler at
# opt-level "s" (profile release) and 3 (profile release-o3); for a build
# that does not link, lists the panic paths (panics.sh). Prints one line per
# scenario and target, and fails if any run fails or any panic-never build
# does not link. The batch reader scenario also runs and links with
# batch-reader's `small` feature.
# Usage: check.sh [target...]   (default: all three)
set -uo pipefail
cd "$(dirname "$0")"
export CARGO_TERM_COLOR=never
targets=("$@")
if ((${#targets[@]} == 0)); then
  targets=(thumbv6m-none-eabi thumbv7em-none-eabihf riscv32imc-unknown-none-elf)
fi
scenarios=()
for f in scenarios/src/bin/*.rs; do scenarios+=("$(basename "$f" .rs)"); done
# Where cargo puts the binaries: `target/` unless CARGO_TARGET_DIR (or a
# cargo config) says otherwise; cargo itself answers, as an absolute path.
tdir=$(cargo metadata --format-version 1 --no-deps | sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')
logs=$tdir/check
mkdir -p "$logs"

# Builds every scenario for target $1 with profile $2 and extra flags; the
# log names each binary that did not build.
build() {
  local target=$1 profile=$2 log=$3; shift 3
  cargo build --keep-going -p scenarios --bins --target "$target" --profile "$profile" "$@" >"$log" 2>&1
}

# Whether the build logged in $1 failed for binary $2.
failed() {
  grep -q "could not compile \`scenarios\` (bin \"$2\")" "$1"
}

ok=0
results=()
for t in "${targets[@]}"; do
  echo "::: firmware: $t"
  if ! build "$t" release "$logs/$t-run.log"; then
    grep -q 'could not compile `scenarios` (bin' "$logs/$t-run.log" || { cat "$logs/$t-run.log"; exit 1; }
  fi
  for p in release release-o3; do
    build "$t" "$p" "$logs/$t-$p-never.log" --features panic-never
  done
  for s in "${scenarios[@]}"; do
    run=failed
    if failed "$logs/$t-run.log" "$s"; then
      run="did not build"
      cat "$logs/$t-run.log"
    elif ./qemu.sh "$t" "$tdir/$t/release/$s"; then
      run=ok
    fi
    [[ $run == ok ]] || ok=1
    never=()
    for p in release release-o3; do
      if failed "$logs/$t-$p-never.log" "$s"; then
        never+=("PANICS")
        ok=1
      else
        never+=("links")
      fi
    done
    results+=("$(printf '%-28s %-20s %-14s %-13s %s' "$t" "$s" "$run" "${never[0]}" "${never[1]}")")
    if [[ ${never[0]} != links || ${never[1]} != links ]]; then
      echo "::: panic paths in $s on $t (opt-level \"s\" build; a path only opt-level 3 keeps is not listed):"
      ./panics.sh "$tdir/$t/release/$s" | sed 's/^/    /'
    fi
  done
  # The batch reader scenario again with batch-reader's `small` feature,
  # the build a firmware short of flash chooses (its own code paths in the
  # async reader): run, then the panic-never builds.
  s=batch_reader
  run=failed
  if ! build "$t" release "$logs/$t-small-run.log" --features small; then
    run="did not build"
    cat "$logs/$t-small-run.log"
  elif ./qemu.sh "$t" "$tdir/$t/release/$s"; then
    run=ok
  fi
  [[ $run == ok ]] || ok=1
  never=()
  for p in release release-o3; do
    if build "$t" "$p" "$logs/$t-$p-small-never.log" --features small,panic-never; then
      never+=("links")
    else
      never+=("PANICS")
      ok=1
    fi
  done
  results+=("$(printf '%-28s %-20s %-14s %-13s %s' "$t" "$s (small)" "$run" "${never[0]}" "${never[1]}")")
done
echo "::: firmware scenarios"
printf '%-28s %-20s %-14s %-13s %s\n' target scenario "QEMU run" "panic-never s" "panic-never 3"
printf '%s\n' "${results[@]}"
exit "$ok"
