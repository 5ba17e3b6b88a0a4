"""The client's payload allocator (uring-queue/src/uring/payload.rs
`Allocator::new`, `gap_before`, `alloc`). It lives in the client's own
memory, so the peer cannot reach its bookkeeping, but every block it
hands out is sent to the peer and sliced by both sides: its bounds are
what `entry_spans.py` assumes of an honest client.

Invariant assumed (and proven kept): the live blocks are sorted by offset,
each starts on a 64-byte boundary, ends within the usable area, and ends
before the next one starts. A candidate gap lies between a previous block
(or the area's start) and a next one (or the area's end).

Proven at usize = 64 and 32 bits:
(a) `new` rounds the area down without underflow, to a multiple of 64;
    `len.next_multiple_of(64)` does not overflow for an accepted length;
    a block placed in a gap that `fits` accepted starts 64-aligned, its
    offset and length survive the `as u32` casts, and it ends within the
    area, after the previous block and before the next one (so the live
    blocks stay sorted and disjoint);
(b) an empty allocator accepts every length from 1 to the usable area.
"""

from z3 import And, If, Implies, Not, ULE, ULT, UGE, URem

from common import USIZE_WIDTHS, bv, check_formulas, checked_next_multiple_of, const, fits, truncate, widen

PAYLOAD = "uring-queue/src/uring/payload.rs"
GRANULE = 64


def run(report):
    raw = bv("area_len_given", 32)
    area = raw - URem(raw, const(GRANULE, 32))
    report.prove("allocator new: (a) the usable area is a multiple of 64, no larger than given",
                 And(ULE(area, raw), URem(area, const(GRANULE, 32)) == 0))
    for w in USIZE_WIDTHS:
        length = bv("len", w)
        max_ = widen(area, w)
        accepted_len = And(length != 0, ULE(length, max_))
        need_ok, need = checked_next_multiple_of(length, const(GRANULE, w))
        need64 = widen(need, 64) if w < 64 else need
        report.prove(f"allocator/usize{w}: (a) need = len rounded up to 64 does not overflow, is at most the area",
                     And(need_ok, ULE(need, max_)), accepted_len)
        report.prove(f"allocator/usize{w}: (b) an empty allocator accepts every len in 1..=area",
                     UGE(widen(area, 64) - 0, need64), accepted_len, need_ok)

        # One candidate gap, between `prev` (if any) and `next` (if any).
        has_prev, has_next = bv("has_prev", 1), bv("has_next", 1)
        po, pl, no = bv("prev_offset", 32), bv("prev_len", 32), bv("next_offset", 32)
        prev_end = widen(po, 64) + widen(pl, 64)
        a64 = widen(area, 64)
        live = And(
            URem(po, const(GRANULE, 32)) == 0, URem(no, const(GRANULE, 32)) == 0,
            ULE(prev_end, a64), ULE(widen(no, 64), a64),
            Implies(And(has_prev == 1, has_next == 1), ULE(prev_end, widen(no, 64))),
        )
        r_ok, rounded = checked_next_multiple_of(prev_end, const(GRANULE, 64))
        start = If(has_prev == 1, rounded, const(0, 64))
        end = If(has_next == 1, widen(no, 64), a64)
        fits_ok = And(ULE(start, end), UGE(end - start, need64))
        off32, len32 = truncate(start, 32), truncate(length, 32) if w > 32 else length
        report.prove(f"allocator/usize{w}: (a) a placed block is aligned, in the area, between its neighbours",
                     And(r_ok, URem(start, const(GRANULE, 64)) == 0,
                         fits(start, 32), widen(off32, 64) == start, widen(len32, w) == length,
                         ULE(start + widen(length, 64) if w < 64 else start + length, a64),
                         Implies(has_prev == 1, ULE(prev_end, start)),
                         Implies(has_next == 1, ULE(start + need64, widen(no, 64)))),
                     live, accepted_len, need_ok, fits_ok)
        report.satisfiable(f"allocator/usize{w}: a block between two others can be placed",
                           live, accepted_len, need_ok, fits_ok, has_prev == 1, has_next == 1, pl != 0)

    drift(report)


def drift(report):
    """The checks that tie this model to the Rust source."""
    check_formulas(report, PAYLOAD, "new(area_len: u32)", ["area_len: area_len - area_len % BLOCK_ALIGN as u32,"])
    check_formulas(report, PAYLOAD, "gap_before", [
        "Some(prev) => prev.end().next_multiple_of(BLOCK_ALIGN as u64),",
        "None => 0,",
        "Some(next) => u64::from(next.offset),",
        "None => u64::from(self.area_len),",
    ])
    check_formulas(report, PAYLOAD, "alloc", [
        "if len == 0 { return Ok(Span::default()); }",
        "let max = self.area_len as usize;",
        "if len > max { return Err(Error::TooLarge { max }); }",
        "let need = len.next_multiple_of(BLOCK_ALIGN) as u64;",
        "end.checked_sub(start).is_some_and(|gap| gap >= need)",
        "let (start, _) = self.gap_before(live, i);",
        "offset: start as u32, len: len as u32,",
    ])
