#!/usr/bin/env bash
# Runs one firmware ELF on the QEMU machine of its target, with semihosting
# (so the firmware prints to stdout and sets QEMU's exit code) and a time
# limit (so a hang fails): qemu.sh <target> <elf>. Exit code: the firmware's;
# 124 after QEMU_TIMEOUT seconds (default 120). With QEMU_SHARED=<file>, the
# machine's RAM that holds the amp scenario's shared memory is that file,
# mapped shared, so a host process can map it too (docs/amp.md); with
# QEMU_BELL=<socket>, the first UART is that Unix socket.
set -euo pipefail
target=$1 elf=$2
shared=()
if [[ -n ${QEMU_SHARED:-} ]]; then
  shared=(-object "memory-backend-file,id=ram0,size=16M,mem-path=$QEMU_SHARED,share=on")
fi
# With QEMU_BELL=<socket>, the first UART is that Unix socket (QEMU
# listens; the amp scenario's doorbell).
bell=()
if [[ -n ${QEMU_BELL:-} ]]; then
  bell=(-chardev "socket,id=bell,path=$QEMU_BELL,server=on,wait=off" -serial chardev:bell -monitor none)
fi
case $target in
  thumbv6m-none-eabi) qemu=(qemu-system-arm -machine microbit) ;;
  thumbv7em-none-eabihf)
    # The backend replaces the machine RAM: the 16 MiB PSRAM at 0x21000000.
    qemu=(qemu-system-arm -machine "mps2-an386${shared:+,memory-backend=ram0}" -cpu cortex-m4 "${shared[@]}") ;;
  riscv32imc-unknown-none-elf) qemu=(qemu-system-riscv32 -machine sifive_e) ;;
  riscv32imac-unknown-none-elf)
    # rv32gc (with atomics); the backend replaces the RAM at 0x80000000.
    qemu=(qemu-system-riscv32 -machine "virt${shared:+,memory-backend=ram0}" -bios none -m 16M "${shared[@]}") ;;
  *) echo "qemu.sh: no machine for target $target" >&2; exit 2 ;;
esac
exec timeout "${QEMU_TIMEOUT:-120}" "${qemu[@]}" "${bell[@]}" -nographic \
  -semihosting-config enable=on,target=native -kernel "$elf" 2>&1
