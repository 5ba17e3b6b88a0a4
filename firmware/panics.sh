#!/usr/bin/env bash
# Lists the panic paths left in a firmware ELF: for every call of (or jump
# to) one of core's panic entry points, the last source line outside the
# Rust standard library before the call (for an index, the indexing line; for
# a call into `core` that panics, the line that called it), the function the
# call was compiled into, the entry point, and how many such calls.
# Usage: panics.sh <elf>; prints nothing for a binary without panic paths.
# Uses llvm-objdump from rustup's llvm-tools and the ELF's line tables (the
# firmware profiles keep debug info).
set -euo pipefail
elf=$1
host=$(rustc -vV | sed -n 's/^host: //p')
objdump="$(rustc --print sysroot)/lib/rustlib/$host/bin/llvm-objdump"
"$objdump" -d -l --demangle --no-show-raw-insn "$elf" | awk '
  function is_panic(name) {
    return name ~ /^core::panicking::|^core::slice::index::|_fail(::h[0-9a-f]+)?$|^core::option::(unwrap|expect)_failed|^core::result::unwrap_failed|^rust_begin_unwind$|^core::cell::panic_already/
  }
  function clean(name) {
    sub(/::h[0-9a-f]+$/, "", name)
    gsub(/\$LT\$/, "<", name); gsub(/\$GT\$/, ">", name); gsub(/\$C\$/, ",", name)
    gsub(/\$RF\$/, "\\&", name); gsub(/\$u20\$/, " ", name); gsub(/\$u5b\$/, "[", name)
    gsub(/\$u5d\$/, "]", name); gsub(/\.\./, "::", name)
    return name
  }
  # A path from the last crate folder on: "batch-reader/src/reader.rs:12",
  # "embassy-futures-0.1.2/src/join.rs:38".
  function short(path,    n, parts, i, out) {
    n = split(path, parts, "/")
    for (i = n; i > 1; i--)
      if (parts[i] ~ /^(io-traits|buffer-pool|uring-queue|batch-reader|firmware)$/ || parts[i - 1] ~ /^index\.crates\.io-/) break
    out = parts[i]
    for (i = i + 1; i <= n; i++) out = out "/" parts[i]
    return out
  }
  /^[0-9a-f]+ <.*>:$/ {
    fn = $0; sub(/^[0-9a-f]+ </, "", fn); sub(/>:$/, "", fn); user = "?"; next
  }
  /^; \// {
    loc = $2
    if (loc !~ /^\/rustc\//) user = short(loc)
    next
  }
  /<[^>]+>/ {
    callee = $0; sub(/.*</, "", callee); sub(/>.*/, "", callee)
    if (callee ~ /\+0x[0-9a-f]+$/ || !is_panic(callee) || is_panic(fn)) next
    sites[user "  in " clean(fn) "  -> " clean(callee)]++
  }
  END { for (s in sites) printf "%s (%d)\n", s, sites[s] }
' | sort
