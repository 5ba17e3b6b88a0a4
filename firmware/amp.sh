#!/usr/bin/env bash
# The amp scenario (docs/amp.md): firmware under QEMU and a Linux process
# (amp-host/) that share the memory QEMU backs the machine's RAM with (a
# file in /dev/shm). Per target: builds the two firmware binaries and the
# host program, links the firmware with the panic-never handler at
# opt-level "s" and 3, then runs
#   server  the firmware serves the host's echo requests (4 B to 8 KiB
#           each, every byte checked on both sides), then both stream
#           through the two SharedRings;
#   client  the same with the firmware as the client;
#   hostile the host scribbles over the region while the firmware serves
#           (the firmware reports errors, takes no fault, serves fresh
#           connections right), then the firmware scribbles while the host
#           calls (the host gets errors, no crash): amp-host/src/hostile.rs;
#   restart QEMU killed mid-stream (the host gets PeerGone), then booted
#           again on the same file: the host attaches the new boot's
#           connection, which serves exactly the requests sent to it:
#           amp-host/src/restart.rs;
#   host-restart  the host process killed (SIGKILL) mid-stream while the
#           firmware serves, with requests of it answered and unread and
#           others not yet taken, and another started in its place: the
#           new host submits nothing on the old connection, whose epoch
#           tells it a client used it, and attaches the next one the
#           firmware lays out once it sees the new epoch; the firmware's
#           per-connection report must show that no request of the old
#           host was taken or answered after the restart:
#           amp-host/src/rehost.rs;
#   bell    both sides park and wake each other through a doorbell, the
#           firmware's UART wired to a Unix socket; then the
#           64-byte round trip against the same exchange over the UART
#           alone, printed, never checked: amp-host/src/bell.rs.
# Prints one line per run and fails if any fails.
# Usage: amp.sh [--requests N] [--only RUN] [target...]
#   N: echo requests per run (default 100000, the full run; CI runs fewer).
#   RUN: run that one alone (for example bell, for the latency figures).
#   target: thumbv7em-none-eabihf (mps2-an386, the default) and/or
#   riscv32imac-unknown-none-elf (virt, rv32gc).
set -uo pipefail
cd "$(dirname "$0")"
export CARGO_TERM_COLOR=never
requests=100000
only=
if [[ ${1:-} == --requests ]]; then requests=$2; shift 2; fi
if [[ ${1:-} == --only ]]; then only=$2; shift 2; fi
targets=("$@")
if ((${#targets[@]} == 0)); then targets=(thumbv7em-none-eabihf); fi
# QEMU's time limit (qemu.sh) grows with the requests: 100,000 take minutes.
export QEMU_TIMEOUT=${QEMU_TIMEOUT:-$((120 + requests / 50))}

# Cargo's target directories (CARGO_TARGET_DIR honoured), as absolute paths.
target_dir() {
  cargo metadata --format-version 1 --no-deps "$@" | sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p'
}
tdir=$(target_dir)
host_dir=$(target_dir --manifest-path amp-host/Cargo.toml)
logs=$tdir/amp
mkdir -p "$logs"
cargo build -q --release --manifest-path amp-host/Cargo.toml || exit 1
host=$host_dir/release/amp-host
# Where each machine's `AMP` memory (board/memory/<target>.x) starts in the
# file that backs its RAM.
declare -A offset=([thumbv7em-none-eabihf]=0 [riscv32imac-unknown-none-elf]=$((1 << 20)))

# Runs firmware $2 of target $1 under QEMU beside `amp-host $3`, sharing a
# fresh file; both must succeed. Logs in $logs/$1-$4.*.log.
pair() {
  local t=$1 elf=$2 role=$3 name=$4
  local file=/dev/shm/amp-$$-$name qemu_rc host_rc qpid bell=
  rm -f "$file" "$file.bell"
  [[ $name == bell ]] && bell=$file.bell
  QEMU_SHARED=$file QEMU_BELL=$bell ./qemu.sh "$t" "$elf" >"$logs/$t-$name.qemu.log" 2>&1 &
  qpid=$!
  "$host" "$role" "$file" "$requests" "${offset[$t]}" >"$logs/$t-$name.host.log" 2>&1
  host_rc=$?
  if ((host_rc != 0)); then kill "$qpid" 2>/dev/null; fi
  wait "$qpid"
  qemu_rc=$?
  rm -f "$file" "$file.bell"
  grep -h 'round trip' "$logs/$t-$name.host.log" | sed "s/^/$t: /"
  if ((qemu_rc == 0 && host_rc == 0)); then return 0; fi
  echo "::: amp $name on $t: QEMU exit $qemu_rc, host exit $host_rc"
  sed 's/^/    firmware: /' "$logs/$t-$name.qemu.log"
  sed 's/^/    host: /' "$logs/$t-$name.host.log"
  return 1
}

# The restart run on target $1, firmware $2: see the header.
restart() {
  local t=$1 elf=$2 q1 q2 h rc=0 host_rc qemu_rc
  local file=/dev/shm/amp-$$-restart log=$logs/$t-restart
  rm -f "$file" "$file.pid"
  QEMU_SHARED=$file ./qemu.sh "$t" "$elf" >"$log.qemu1.log" 2>&1 &
  q1=$!
  echo "$q1" >"$file.pid"
  # Emptied first: the background host's own redirection may come after
  # the first look for READY below, which must not find an earlier run's.
  : >"$log.host.log"
  "$host" restart "$file" "$requests" "${offset[$t]}" >"$log.host.log" 2>&1 &
  h=$!
  # Kill the first boot once the host has had its requests answered.
  until grep -q '^READY$' "$log.host.log"; do
    kill -0 "$h" 2>/dev/null && kill -0 "$q1" 2>/dev/null || break
    sleep 0.1
  done
  kill -TERM "$q1" 2>/dev/null
  wait "$q1"
  QEMU_SHARED=$file ./qemu.sh "$t" "$elf" >"$log.qemu2.log" 2>&1 &
  q2=$!
  echo "$q2" >"$file.pid"
  wait "$h"
  host_rc=$?
  if ((host_rc != 0)); then kill "$q2" 2>/dev/null; fi
  wait "$q2"
  qemu_rc=$?
  rm -f "$file" "$file.pid"
  # The second boot served exactly the requests the host sent it.
  grep -q "^amp_server: requests served and checked: $requests\$" "$log.qemu2.log" || rc=1
  if ((qemu_rc == 0 && host_rc == 0 && rc == 0)); then return 0; fi
  echo "::: amp restart on $t: second QEMU exit $qemu_rc, host exit $host_rc"
  sed 's/^/    first boot: /' "$log.qemu1.log"
  sed 's/^/    second boot: /' "$log.qemu2.log"
  sed 's/^/    host: /' "$log.host.log"
  return 1
}

# The host-restart run on target $1, firmware $2: see the header.
host_restart() {
  local t=$1 elf=$2 q h host_rc qemu_rc rc=0 n=$requests line
  # amp_proto::SECOND_HOST_FIRST: the second host's first request number.
  local second=$((1 << 24))
  local file=/dev/shm/amp-$$-host-restart log=$logs/$t-host-restart
  rm -f "$file"
  QEMU_SHARED=$file ./qemu.sh "$t" "$elf" >"$log.qemu.log" 2>&1 &
  q=$!
  : >"$log.host1.log" # as in `restart`
  "$host" host-first "$file" "$n" "${offset[$t]}" >"$log.host1.log" 2>&1 &
  h=$!
  until grep -q '^READY$' "$log.host1.log"; do
    kill -0 "$h" 2>/dev/null && kill -0 "$q" 2>/dev/null || break
    sleep 0.1
  done
  grep -q '^READY$' "$log.host1.log" || rc=1
  # Killed outright: nothing in the region says it is gone.
  kill -KILL "$h" 2>/dev/null
  wait "$h" 2>/dev/null
  # Bounded: a firmware that never lays out a new connection, or never
  # answers, must fail the run, not hang it.
  timeout "$QEMU_TIMEOUT" "$host" host-second "$file" "$n" "${offset[$t]}" >"$log.host2.log" 2>&1
  host_rc=$?
  if ((host_rc != 0)); then kill "$q" 2>/dev/null; fi
  wait "$q"
  qemu_rc=$?
  rm -f "$file"
  # The old host's connection answered its requests up to the two left
  # unread, and not the two left in the ring; the new host's answered
  # exactly its own.
  for line in "connection 1 (host gone): $((n + 2)) answered, numbers 0 to $((n + 1))" \
    "connection 2 (stop): $n answered, numbers $second to $((second + n - 1))" \
    "requests served and checked: $((2 * n + 2))"; do
    grep -qxF "amp_server: $line" "$log.qemu.log" || { rc=1; echo "::: missing: amp_server: $line"; }
  done
  if ((qemu_rc == 0 && host_rc == 0 && rc == 0)); then return 0; fi
  echo "::: amp host-restart on $t: QEMU exit $qemu_rc, second host exit $host_rc"
  sed 's/^/    firmware: /' "$log.qemu.log"
  sed 's/^/    first host: /' "$log.host1.log"
  sed 's/^/    second host: /' "$log.host2.log"
  return 1
}

ok=0
results=()
for t in "${targets[@]}"; do
  echo "::: amp: $t"
  if ! cargo build --release --target "$t" -p amp --bins >"$logs/$t-build.log" 2>&1; then
    cat "$logs/$t-build.log"
    exit 1
  fi
  never=()
  for p in release release-o3; do
    if cargo build --target "$t" -p amp --bins --profile "$p" --features panic-never \
      >"$logs/$t-$p-never.log" 2>&1; then
      never+=(links)
    else
      never+=(PANICS)
      ok=1
    fi
  done
  for run in "server amp_server client" "client amp_client server" "hostile amp_server hostile" \
    "restart amp_server -" "host-restart amp_server -" "bell amp_bell bell"; do
    read -r name bin role <<<"$run"
    [[ -n $only && $name != "$only" ]] && continue
    verdict=ok
    if [[ $name == restart ]]; then
      restart "$t" "$tdir/$t/release/$bin" || { verdict=failed; ok=1; }
    elif [[ $name == host-restart ]]; then
      host_restart "$t" "$tdir/$t/release/$bin" || { verdict=failed; ok=1; }
    else
      pair "$t" "$tdir/$t/release/$bin" "$role" "$name" || { verdict=failed; ok=1; }
    fi
    label="$name ($requests)"
    [[ $name == hostile ]] && label=$name
    results+=("$(printf '%-28s %-20s %-10s %-13s %s' "$t" "$label" "$verdict" "${never[0]}" "${never[1]}")")
  done
done
echo "::: amp scenario"
printf '%-28s %-20s %-10s %-13s %s\n' target "firmware role" run "panic-never s" "panic-never 3"
printf '%s\n' "${results[@]}"
exit "$ok"
