#!/usr/bin/env bash
# Runs one firmware ELF on the QEMU machine of its target, with semihosting
# (so the firmware prints to stdout and sets QEMU's exit code) and a time
# limit (so a hang fails): qemu.sh <target> <elf>. Exit code: the firmware's;
# 124 after QEMU_TIMEOUT seconds (default 120).
set -euo pipefail
target=$1 elf=$2
case $target in
  thumbv6m-none-eabi) qemu=(qemu-system-arm -machine microbit) ;;
  thumbv7em-none-eabihf) qemu=(qemu-system-arm -machine mps2-an386 -cpu cortex-m4) ;;
  riscv32imc-unknown-none-elf) qemu=(qemu-system-riscv32 -machine sifive_e) ;;
  *) echo "qemu.sh: no machine for target $target" >&2; exit 2 ;;
esac
exec timeout "${QEMU_TIMEOUT:-120}" "${qemu[@]}" -nographic \
  -semihosting-config enable=on,target=native -kernel "$elf" 2>&1
