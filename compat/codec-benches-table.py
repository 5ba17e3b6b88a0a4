"""Tables of two codec_sv2 bench logs (compat/codec-benches.sh): criterion's
middle time estimate per benchmark and, from its verbose output, the median
of the samples, and pool_lifecycle's allocation counts.

The middle estimate is the slope or mean of the samples, so a sample that
the scheduler preempted (a few in a hundred on a shared machine) can move it
by 10x where the timed region is tens of nanoseconds; the median is not moved
by a few such samples."""
import re
import sys

UNITS = {"ps": 1e-3, "ns": 1.0, "µs": 1e3, "us": 1e3, "ms": 1e6, "s": 1e9}
TIME = re.compile(r"time:\s+\[\S+ \S+ (\S+) (\S+) \S+ \S+\]")
MEDIAN = re.compile(r"^median\s+\[(\S+) (\S+) (\S+) (\S+)\]")
ALLOCS = re.compile(r"\[(.+?)\] allocs/run=(\S+)\s+bytes/run=(\S+)")


def parse(path):
    """Bench name -> middle time in ns; bench name -> median in ns (the
    middle of its confidence interval); allocation label -> (allocs, bytes)."""
    times, medians, allocs, name, last = {}, {}, {}, None, None
    for line in open(path, encoding="utf-8", errors="replace"):
        line = line.rstrip("\n")
        m = TIME.search(line)
        if m:
            head = line[: line.index("time:")].strip()
            last = head or name
            times[last] = float(m.group(1)) * UNITS[m.group(2)]
            continue
        m = MEDIAN.search(line)
        if m and last is not None:
            lo = float(m.group(1)) * UNITS[m.group(2)]
            hi = float(m.group(3)) * UNITS[m.group(4)]
            medians[last] = (lo + hi) / 2
            continue
        m = ALLOCS.search(line)
        if m:
            # Every criterion sample prints the same counts; keep the last.
            allocs[m.group(1)] = (float(m.group(2)), float(m.group(3)))
            continue
        if line and not line.startswith(
            (" ", "Benchmarking", "Found", "Warning", "slope", "mean", "median")
        ):
            name = line.strip()
    return times, medians, allocs


def frames(label):
    m = re.search(r"n=\s*(\d+)", label)
    return int(m.group(1)) if m else None


def main(shim_log, control_log):
    shim_t, shim_m, shim_a = parse(shim_log)
    ctl_t, ctl_m, ctl_a = parse(control_log)
    print(f"{'benchmark':<72} {'shim ns':>12} {'buffer_sv2 ns':>14} {'ratio':>6}"
          f" {'median: shim':>13} {'buffer_sv2':>11} {'ratio':>6}")
    for name in shim_t:
        if name in ctl_t:
            s, c = shim_t[name], ctl_t[name]
            line = f"{name:<72} {s:>12.1f} {c:>14.1f} {s / c:>6.2f}"
            if name in shim_m and name in ctl_m:
                sm, cm = shim_m[name], ctl_m[name]
                line += f" {sm:>13.1f} {cm:>11.1f} {sm / cm:>6.2f}"
            print(line)
    print()
    print(f"{'pool_lifecycle allocations':<28} {'shim/run':>9} {'/frame':>7} "
          f"{'buffer_sv2/run':>15} {'/frame':>7} {'shim B/run':>11} {'buffer_sv2 B/run':>17}")
    for label in shim_a:
        if label in ctl_a:
            (sa, sb), (ca, cb) = shim_a[label], ctl_a[label]
            n = frames(label) or 1
            print(f"{label:<28} {sa:>9.1f} {sa / n:>7.2f} {ca:>15.1f} {ca / n:>7.2f} "
                  f"{sb:>11.0f} {cb:>17.0f}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
