"""Runs every proof and drift check; exits non-zero on any failure. The
models run side by side, one process per core."""

import contextlib
import importlib
import io
import multiprocessing
import os
import sys
import time

# The slowest first, so that the processes finish together.
MODULES = [
    "shared_ring_layout",
    "shared_ring_indices",
    "parts",
    "uring_layout",
    "entry_spans",
    "credits",
    "payload_allocator",
    "drift_selftest",
]


def run_one(name):
    """Runs one model; returns its output, pass count and failures."""
    from common import Report

    report = Report()
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        print(f"== {name}")
        importlib.import_module(name).run(report)
    return out.getvalue(), report.passed, report.failures


def main():
    t0 = time.time()
    names = [n for n in MODULES if not sys.argv[1:] or n in sys.argv[1:]]
    with multiprocessing.Pool(min(len(names), os.cpu_count() or 1)) as pool:
        results = pool.map(run_one, names, chunksize=1)
    passed, failures = 0, []
    for out, p, f in results:
        print(out, end="")
        passed += p
        failures += f
    print(f"{passed} passed, {len(failures)} failed in {time.time() - t0:.1f} s")
    for f in failures:
        print(f"failed: {f}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
