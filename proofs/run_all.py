"""Runs every proof and drift check; exits non-zero on any failure."""

import importlib
import sys
import time

MODULES = [
    "parts",
    "shared_ring_layout",
    "shared_ring_indices",
    "uring_layout",
    "entry_spans",
    "credits",
    "payload_allocator",
    "drift_selftest",
]


def main():
    from common import Report

    report = Report()
    t0 = time.time()
    only = sys.argv[1:]
    for name in MODULES:
        if only and name not in only:
            continue
        print(f"== {name}")
        importlib.import_module(name).run(report)
    print(f"{report.passed} passed, {len(report.failures)} failed in {time.time() - t0:.1f} s")
    for f in report.failures:
        print(f"failed: {f}")
    return 1 if report.failures else 0


if __name__ == "__main__":
    sys.exit(main())
