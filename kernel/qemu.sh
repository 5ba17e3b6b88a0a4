#!/usr/bin/env bash
# Boots one kernel image on the QEMU machine of its target, with semihosting
# (the image prints to stdout and sets QEMU's exit code) and a time limit (so
# a hang, or a trap with no handler, fails): qemu.sh <target> <elf>. Exit
# code: the image's; 124 after QEMU_TIMEOUT seconds (default 60).
set -euo pipefail
target=$1 elf=$2
case $target in
  riscv64gc-unknown-none-elf) qemu=(qemu-system-riscv64 -machine virt -bios none) ;;
  aarch64-unknown-none) qemu=(qemu-system-aarch64 -machine virt -cpu cortex-a53) ;;
  *) echo "qemu.sh: no machine for target $target" >&2; exit 2 ;;
esac
exec timeout "${QEMU_TIMEOUT:-60}" "${qemu[@]}" -nographic -nic none \
  -semihosting-config enable=on,target=native -kernel "$elf" 2>&1
