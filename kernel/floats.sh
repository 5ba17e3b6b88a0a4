#!/usr/bin/env bash
# Fails if floating point reaches a no_std build of any crate: kernels
# (Rust-for-Linux, Asterinas) forbid it, since they do not save the FPU state
# on entry. Three checks, each on every crate without features and with
# `alloc`:
# - the lints clippy::float_arithmetic, float_cmp and cast_precision_loss on
#   the build for x86_64-unknown-none, which also see the generic code and
#   the small functions that no object holds until a user instantiates them;
# - x86_64-unknown-none is soft-float: every float operation the crates'
#   own objects make is a call into compiler-builtins (`__adddf3`,
#   `__divdf3`, `__floatundidf`, `__fixdfdi`, `__extendsfdf2`, ...), so no
#   such symbol may be referenced (debug builds, so that every non-generic
#   function is in the objects);
# - riscv64gc-unknown-none-elf has the F and D extensions: no instruction
#   of theirs (`fadd.d`, `fcvt.d.lu`, `fld`, ...) may be in the objects.
# Usage: floats.sh [crate...]   (default: the four crates)
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TERM_COLOR=never
crates=("$@")
if ((${#crates[@]} == 0)); then crates=(io-traits buffer-pool uring-queue batch-reader); fi
host=$(rustc -vV | sed -n 's/^host: //p')
bin="$(rustc --print sysroot)/lib/rustlib/$host/bin"
export CARGO_TARGET_DIR=target/floats
# A compiler-builtins float routine: __<op><sf|df|tf|xf|hf><...>.
soft_float='^__[a-z]*(sf|df|tf|xf|hf)[a-z]*[0-9]*$'
# An F/D/Q/Zfh instruction: its mnemonic starts with f, as no integer one
# does but the fences.
fp_insn='^[[:space:]]*[0-9a-f]+:[[:space:]]+f[a-z]+(\.[a-z]+)*([[:space:]]|$)'
fence='^[[:space:]]*[0-9a-f]+:[[:space:]]+fence'

# The rlib of crate $1 built for target $2 with features "$3".
build() {
  cargo build -p "ncio-$1" --lib --no-default-features --features "$3" --target "$2" \
    --message-format=json-render-diagnostics |
    jq -r --arg name "${1//-/_}" \
      'select(.reason == "compiler-artifact" and .target.name == $name) | .filenames[] | select(endswith(".rlib"))'
}

ok=0
for c in "${crates[@]}"; do
  for f in "" alloc; do
    echo "::: floats: $c [$f]"
    cargo clippy -q -p "ncio-$c" --lib --no-default-features --features "$f" --target x86_64-unknown-none -- \
      -D clippy::float_arithmetic -D clippy::float_cmp -D clippy::cast_precision_loss || ok=1
    rlib=$(build "$c" x86_64-unknown-none "$f")
    calls=$("$bin/llvm-nm" -u --format=just-symbols "$rlib" 2>/dev/null | grep -E "$soft_float" | sort -u || true)
    if [[ -n $calls ]]; then
      echo "soft-float routines called by $c [$f] on x86_64-unknown-none:" $calls
      ok=1
    fi
    rlib=$(build "$c" riscv64gc-unknown-none-elf "$f")
    insns=$("$bin/llvm-objdump" -d --no-show-raw-insn "$rlib" 2>/dev/null | grep -E "$fp_insn" | grep -vE "$fence" | head -5 || true)
    if [[ -n $insns ]]; then
      echo "float instructions in $c [$f] on riscv64gc-unknown-none-elf:"
      echo "$insns"
      ok=1
    fi
  done
done
exit "$ok"
