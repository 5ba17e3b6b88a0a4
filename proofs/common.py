"""What every proof shares: bit-vector helpers that mirror Rust's integer
operations at their real widths, the prover, and the drift checks that tie
each model to the Rust source it models.

Each proof module defines `run(report)`; `report` collects the results.
"""

import os
import re
import sys
import time

from z3 import (
    And,
    BitVec,
    BitVecVal,
    BVAddNoOverflow,
    BVMulNoOverflow,
    Extract,
    If,
    Implies,
    Not,
    Or,
    Solver,
    SolverFor,
    ULE,
    ULT,
    UGT,
    URem,
    ZeroExt,
    sat,
    unsat,
)

# The source tree the drift checks read (`drift_selftest.py` points it at a
# mutated copy).
ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

# `usize` on the targets the crate builds for: 64-bit hosts, 32-bit
# microcontrollers (thumbv6m, thumbv7em, riscv32imc).
USIZE_WIDTHS = (64, 32)


class Report:
    """Collects proof and drift-check outcomes; any failure fails the run."""

    def __init__(self):
        self.failures = []
        self.passed = 0

    def ok(self, name):
        self.passed += 1
        print(f"  ok    {name}")

    def fail(self, name, detail):
        self.failures.append(name)
        print(f"  FAIL  {name}\n        {detail}")

    def prove(self, name, claim, *assumptions):
        """Proves `assumptions => claim` for every value of the free
        variables; on failure prints a counterexample."""
        t0 = time.time()
        s = SolverFor("QF_BV")
        s.set("timeout", 60_000)
        s.add(*assumptions)
        s.add(Not(claim))
        r = s.check()
        if r == unsat:
            self.ok(f"{name} ({time.time() - t0:.1f} s)")
        elif r == sat:
            m = s.model()
            cex = ", ".join(f"{d.name()}={m[d]}" for d in sorted(m.decls(), key=str))
            self.fail(name, f"counterexample: {cex}")
        else:
            self.fail(name, f"solver gave up: {s.reason_unknown()}")

    def satisfiable(self, name, *constraints):
        """Checks that the assumptions of a proof can hold at all, so that a
        proof is not vacuous."""
        s = SolverFor("QF_BV")
        s.add(*constraints)
        if s.check() == sat:
            self.ok(name)
        else:
            self.fail(name, "assumptions are contradictory: the proof above would be vacuous")


# ---- Rust integer operations, unsigned, at a given width ----


def bv(name, width):
    return BitVec(name, width)


def const(value, width):
    return BitVecVal(value, width)


def umax(width):
    return BitVecVal((1 << width) - 1, width)


def widen(x, width):
    """`x as usize` / `u64::from(x)` for an unsigned `x` no wider."""
    extra = width - x.size()
    assert extra >= 0
    return ZeroExt(extra, x) if extra else x


def truncate(x, width):
    """`x as uN` for a narrower `uN`."""
    return Extract(width - 1, 0, x) if x.size() > width else x


def fits(x, width):
    """Whether `uN::try_from(x)` succeeds for an unsigned `x`."""
    if x.size() <= width:
        return True
    return ULE(x, widen(umax(width), x.size()))


def checked_add(a, b):
    """`a.checked_add(b)`: (is Some, value)."""
    return BVAddNoOverflow(a, b, False), a + b


def checked_mul(a, b):
    return BVMulNoOverflow(a, b, False), a * b


def saturating_add(a, b):
    return If(BVAddNoOverflow(a, b, False), a + b, umax(a.size()))


def is_multiple_of(a, b):
    """Whether `a` is a multiple of `b`; for b == 0, whether a == 0 (as
    `usize::is_multiple_of` and uring-queue's `layout::is_multiple_of`)."""
    return If(b == 0, a == 0, URem(a, b) == 0)


def is_power_of_two(a):
    return And(a != 0, a & (a - 1) == 0)


def checked_next_multiple_of(a, b):
    """`a.checked_next_multiple_of(b)` for b != 0: (is Some, value)."""
    r = URem(a, b)
    up = b - r
    return Or(r == 0, BVAddNoOverflow(a, up, False)), If(r == 0, a, a + up)


def umin(a, b):
    return If(ULE(a, b), a, b)


def umax2(a, b):
    return If(ULE(a, b), b, a)


# ---- drift checks: the model against the Rust source ----


def read_source(rel):
    with open(os.path.join(sys.modules[__name__].ROOT, rel), encoding="utf-8") as f:
        return f.read()


def normalise(text):
    """Whitespace collapsed, line comments dropped, so that reformatting
    does not count as a change but any token does."""
    text = re.sub(r"//[^\n]*", "", text)
    text = re.sub(r"\s+", " ", text)
    # rustfmt may break a chain or argument list anywhere.
    text = re.sub(r" ?([().,;\[\]{}]) ?", r"\1", text)
    return text.strip()


def fn_body(source, name):
    """The text of the first `fn name` (signature and body, braces
    balanced). `name` may go on into the signature, as `user_data(self)`,
    to pick one of several functions of that name."""
    tail = r"\b" if re.match(r"\w", name[-1]) else ""
    m = re.search(r"\bfn " + re.escape(name) + tail, source)
    if not m:
        return None
    i = source.index("{", m.end())
    depth = 0
    for j in range(i, len(source)):
        if source[j] == "{":
            depth += 1
        elif source[j] == "}":
            depth -= 1
            if depth == 0:
                return source[m.start() : j + 1]
    return None


def check_formulas(report, rel, function, expressions):
    """Each modelled expression must still appear, verbatim up to
    whitespace, in the Rust function it models."""
    body = fn_body(read_source(rel), function)
    if body is None:
        report.fail(f"drift: {rel}: fn {function}", "function not found")
        return
    body = normalise(body)
    for e in expressions:
        name = f"drift: {rel}: fn {function}: `{e}`"
        if normalise(e) in body:
            report.ok(name)
        else:
            report.fail(name, "expression not found: the model no longer matches the source")


def rust_const(rel, name):
    """The value of `const NAME: type = expr;` in a Rust file, for the
    expression forms the crate uses: decimal, `a << b`,
    `u32::from_ne_bytes(*b"....")`."""
    src = read_source(rel)
    m = re.search(r"\bconst " + re.escape(name) + r"\s*:\s*\w+\s*=\s*([^;]+);", src)
    if not m:
        return None
    expr = m.group(1).strip()
    if re.fullmatch(r"[0-9_]+", expr):
        return int(expr.replace("_", ""))
    shift = re.fullmatch(r"([0-9_]+)\s*<<\s*([0-9_]+)", expr)
    if shift:
        return int(shift.group(1)) << int(shift.group(2))
    magic = re.fullmatch(r'u32::from_ne_bytes\(\*b"(....)"\)', expr)
    if magic:
        return int.from_bytes(magic.group(1).encode(), sys.byteorder)
    raise ValueError(f"{rel}: const {name} = {expr}: form not understood")


def check_consts(report, rel, expected):
    for name, value in expected.items():
        found = rust_const(rel, name)
        label = f"drift: {rel}: const {name} == {value}"
        if found == value:
            report.ok(label)
        else:
            report.fail(label, f"the source says {found}")


def check_pattern(report, rel, pattern, what):
    """A fact the model relies on, written as a regex over the normalised
    source (for `const _: () = assert!(...)` lines and the like)."""
    label = f"drift: {rel}: {what}"
    if re.search(pattern, re.sub(r"\s+", " ", read_source(rel))):
        report.ok(label)
    else:
        report.fail(label, f"pattern not found: {pattern}")
