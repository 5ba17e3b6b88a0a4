#!/usr/bin/env bash
# Builds the kernel image (boot/) for each kernel target, boots it under QEMU
# where the target has a machine here (riscv64gc, aarch64; x86_64 is linked
# only), then links it again with the panic-never handler at opt-level "s"
# (profile release) and 3 (profile release-o3). Prints one line per target;
# fails if a build, a boot or a panic-never link fails.
# Usage: check.sh [target...]   (default: all three)
set -uo pipefail
cd "$(dirname "$0")"
export CARGO_TERM_COLOR=never
targets=("$@")
if ((${#targets[@]} == 0)); then
  targets=(riscv64gc-unknown-none-elf aarch64-unknown-none x86_64-unknown-none)
fi
logs=target/check
mkdir -p "$logs"

ok=0
results=()
for t in "${targets[@]}"; do
  echo "::: kernel: $t"
  if ! cargo build -p boot --release --target "$t" >"$logs/$t.log" 2>&1; then
    run="did not build"
    cat "$logs/$t.log"
  elif [[ $t == x86_64-* ]]; then
    run="links (not booted)"
  elif ./qemu.sh "$t" "target/$t/release/boot"; then
    run=ok
  else
    run=failed
  fi
  [[ $run == ok || $run == "links (not booted)" ]] || ok=1
  never=()
  for p in release release-o3; do
    if cargo build -p boot --profile "$p" --features panic-never --target "$t" >"$logs/$t-$p-never.log" 2>&1; then
      never+=(links)
    else
      never+=(PANICS)
      grep -E '^error|undefined symbol' "$logs/$t-$p-never.log"
      ok=1
    fi
  done
  results+=("$(printf '%-28s %-20s %-13s %s' "$t" "$run" "${never[0]}" "${never[1]}")")
done
echo "::: kernel images"
printf '%-28s %-20s %-13s %s\n' target "QEMU boot" "panic-never s" "panic-never 3"
printf '%s\n' "${results[@]}"
exit "$ok"
