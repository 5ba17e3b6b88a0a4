#!/usr/bin/env bash
# Flash and RAM each crate adds to a firmware, per target: builds the size
# binaries (size/src/bin/*.rs: each does one crate's named work, with inputs
# the optimiser cannot see through) at the firmware profile (opt-level "s",
# LTO, one codegen unit, panic = "abort", a panic handler that does not
# format), and prints, as a Markdown table, the sections each adds over
# `empty` (the same runtime skeleton with no work). `flash` is
# .text + .rodata + .data (the initial values of .data are stored in flash),
# `RAM` is .data + .bss. Each row also checks that its crate's code is in the
# binary (its source lines appear in the line table), so a row cannot pass
# because the work was optimised away.
#
# A row that sits on a floor (a row measuring what no implementation of the
# same work can go below) also says how far above that floor it is.
#
# Usage: size.sh [--check] [target...]   (default: all three targets)
# --check also gates the budgets on thumbv7em-none-eabihf and fails above
# any of them, except that a row with a proposed restatement (a row over its
# budget whose entry in docs/firmware.md shows the evidence and proposes a
# figure) is gated on the proposed figure instead; its verdict still says
# `OVER` its budget.
set -euo pipefail
cd "$(dirname "$0")"
export CARGO_TERM_COLOR=never
check=0
if [[ ${1:-} == --check ]]; then check=1; shift; fi
targets=("$@")
if ((${#targets[@]} == 0)); then
  targets=(thumbv7em-none-eabihf thumbv6m-none-eabi riscv32imc-unknown-none-elf)
fi
host=$(rustc -vV | sed -n 's/^host: //p')
tools="$(rustc --print sysroot)/lib/rustlib/$host/bin"

# The rows: a key, the binary, the build it comes from (`default`: every
# crate with its default features; `small`: batch-reader with its `small`
# feature), what it measures, the source folder and the crate its code
# comes from, what it is measured against (`empty`, or another row's key for
# "on top"), and the floor row it sits on, if any.
rows=(
  "io_traits|io_traits|default|io-traits FixedBuffer<64>: write, refuse, hand out|io-traits/src|io_traits|empty|mem_floor"
  "ring|ring|default|uring-queue Ring<u32, 16>: push + pop|uring-queue/src|uring_queue|empty|"
  "heapless_spsc|heapless_spsc|default|heapless::spsc::Queue<u32, 16>: the same|heapless-|heapless|empty|"
  "bbqueue|bbqueue|default|bbqueue, 64 bytes: the same through a grant|bbqueue-|bbqueue|empty|"
  "mem_floor|mem_floor|default|floor: memcpy + memset + a cleared struct, lengths unknown|compiler_builtins|compiler_builtins|empty|"
  "pool|pool|default|buffer-pool PoolStorage<256>: claim, write, hand out, drop|buffer-pool/src|buffer_pool|empty|mem_floor"
  "uring|uring|default|uring-queue uring client + server, Spin: one request|uring-queue/src|uring_queue|empty|uring_rings"
  "uring_server|uring_server|default|uring-queue uring server half alone, region at a fixed address (AMP): init, recv, buffers, complete|uring-queue/src|uring_queue|empty|"
  "uring_client|uring_client|default|uring-queue uring client half alone, region at a fixed address (AMP): init, alloc, submit, wait, response|uring-queue/src|uring_queue|empty|"
  "uring_rings|uring_rings|default|floor: the uring's two SharedRings, one entry each|uring-queue/src|uring_queue|empty|"
  "reader|reader|default|batch-reader Reader + MemoryBackend: read_many (3 ops) + read_val|batch-reader/src|batch_reader|empty|memory_backend"
  "reader_small|reader|small|the same, feature small|batch-reader/src|batch_reader|empty|memory_backend"
  "memory_backend|memory_backend|default|floor: MemoryBackend::read_batch alone, same reads|batch-reader/src|batch_reader|empty|"
  "async_reader|async_reader|default|batch-reader AsyncReader on top: two joined reads|batch-reader/src|batch_reader|reader|"
  "async_reader_small|async_reader|small|the same, feature small|batch-reader/src|batch_reader|reader_small|"
)
# The builds: cargo features and target directory of each.
declare -A features=([default]="" [small]="--features small")
# `target/` unless CARGO_TARGET_DIR (or a cargo config) says otherwise;
# cargo itself answers, as an absolute path.
tdir=$(cargo metadata --format-version 1 --no-deps | sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')
declare -A target_dir=([default]="$tdir" [small]="$tdir/small")
# Budgets (bytes of flash) on thumbv7em-none-eabihf, by row key. The reader's
# are gated on the `small` rows: the configuration a firmware short of flash
# chooses (same results, counters and backend calls; fewer ops per
# instruction on the host). The uring server half's is RPMsg-Lite's static
# build (2,926 bytes of flash; docs/amp.md).
declare -A budget=([ring]=1024 [pool]=2048 [uring]=4096 [uring_server]=2926 [reader_small]=5120 [async_reader_small]=4096)
# Proposed restatements (docs/firmware.md, "Floors, and the restatements
# they call for"): the measured flash plus 5 %, rounded up to a multiple of
# 64 bytes, either of the row itself or, with a floor row's key, of what the
# row adds above that floor.
declare -A proposed=([uring]="5184")

# "text rodata data bss" of an ELF, from its section headers.
sections() {
  "$tools/llvm-size" -A "$1" | awk '
    $1 ~ /^\.(vector_table|text|init|trap)/ { t += $2 }
    $1 ~ /^\.s?rodata/ { r += $2 }
    $1 ~ /^\.s?data/ { d += $2 }
    $1 ~ /^\.(s?bss|uninit)/ { b += $2 }
    END { print t + 0, r + 0, d + 0, b + 0 }'
}

# Whether ELF $1 holds code of crate $3: a symbol of the crate, or a line of
# its sources (folder $2) in the line table (code inlined into `main` leaves
# no symbol of its own).
has_code_from() {
  "$tools/llvm-nm" -C "$1" | awk -v crate="$3::" 'index($0, crate) { found = 1 } END { exit !found }' ||
    "$tools/llvm-objdump" -d -l --no-show-raw-insn "$1" |
    awk -v folder="/$2" '/^; / && index($0, folder) { found = 1 } END { exit !found }'
}

# Flash $1 less the flash row $2 adds over `empty` (of the target in hand).
flash_over() {
  local tf rf df te re de
  read -r tf rf df _ <<<"${sec[$2]}"
  read -r te re de _ <<<"${sec[empty]}"
  echo $(($1 - (tf - te) - (rf - re) - (df - de)))
}

ok=0
echo "| target | work | .text | .rodata | .data | .bss | flash | RAM | budget |"
echo "|---|---|---:|---:|---:|---:|---:|---:|---|"
for t in "${targets[@]}"; do
  declare -A sec=() elf=()
  for build in default small; do
    # shellcheck disable=SC2086 # the features are words
    cargo build -q --release --target "$t" -p size --bins --target-dir "${target_dir[$build]}" ${features[$build]}
  done
  sec[empty]=$(sections "$tdir/$t/release/empty")
  for r in "${rows[@]}"; do
    IFS='|' read -r key bin build _ <<<"$r"
    elf[$key]="${target_dir[$build]}/$t/release/$bin"
    sec[$key]=$(sections "${elf[$key]}")
  done
  for r in "${rows[@]}"; do
    IFS='|' read -r key bin build what folder crate base floor <<<"$r"
    read -r t1 r1 d1 b1 <<<"${sec[$key]}"
    read -r t0 r0 d0 b0 <<<"${sec[$base]}"
    dt=$((t1 - t0)) dr=$((r1 - r0)) dd=$((d1 - d0)) db=$((b1 - b0))
    flash=$((dt + dr + dd)) ram=$((dd + db))
    verdict=""
    if ! has_code_from "${elf[$key]}" "$folder" "$crate"; then
      verdict="NO CODE FROM $folder"
      ok=1
    elif [[ $t == thumbv7em-none-eabihf && -n ${budget[$key]:-} ]]; then
      if ((flash <= budget[$key])); then
        verdict="<= ${budget[$key]}: ok"
      else
        verdict="<= ${budget[$key]}: OVER"
        if [[ -n ${proposed[$key]:-} ]]; then
          read -r limit over <<<"${proposed[$key]}"
          measured=$flash
          [[ -z $over ]] || measured=$(flash_over "$flash" "$over")
          if ((measured <= limit)); then
            verdict="$verdict; within proposed $limit${over:+ over $over}"
          else
            verdict="$verdict; OVER proposed $limit${over:+ over $over}"
            ((check)) && ok=1
          fi
        elif ((check)); then
          ok=1
        fi
      fi
    fi
    if [[ -n $floor ]]; then
      verdict="${verdict:+$verdict; }$(flash_over "$flash" "$floor") over $floor"
    fi
    [[ $base == empty ]] || what="$what (over $base)"
    echo "| $t | $what | $dt | $dr | $dd | $db | $flash | $ram | $verdict |"
  done
  unset sec elf
done
exit "$ok"
