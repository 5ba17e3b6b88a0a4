"""The connection's header (uring-queue/src/uring/layout.rs `Layout::read`
and `Layout::canonical`, uring/connection.rs `attach_with`, `init` and
`carve`).

The peer writes every header word (u32). The region starts at an address
B aligned to URING_ALIGN (`layout::header` checks it) and B + len does
not wrap.

Proven at usize = 64 and 32 bits:
(a) an accepted header puts the header and link (bytes 0..640), both ring
    regions and the payload area inside the region, apart from each other;
    each ring region starts 128-aligned in memory (more than a shared
    ring's `region_align` of 8 for `Sqe`/`Cqe`, whose own headers are then
    proven in shared_ring_layout.py), and the payload length `carve` takes
    is the header's;
(a') `init`: for every configuration `canonical` accepts, on a region of at
    least `total()` bytes, the same holds for the layout init carves;
(b) for every configuration `canonical` accepts, the header `write` stores
    is accepted by `read` on the region the creator initialised.
"""

from z3 import And, If, ULE, UGE

from common import (
    USIZE_WIDTHS,
    bv,
    check_consts,
    check_formulas,
    check_pattern,
    checked_add,
    checked_next_multiple_of,
    const,
    fits,
    is_power_of_two,
    truncate,
    umax,
    widen,
)
from parts import check_part_spans, parts_sound
from shared_ring_layout import aligned, in_bounds, store_word

SRC = "uring-queue/src/uring/layout.rs"
CONN = "uring-queue/src/uring/connection.rs"
PAYLOAD = "uring-queue/src/uring/payload.rs"
ENTRY = "uring-queue/src/uring/entry.rs"

MAGIC = int.from_bytes(b"URQU", "little")
VERSION = 3
LINK_OFFSET = 128
LINK_SIZE = 512
RINGS_OFFSET = 640
RING_ALIGN = 128
PAYLOAD_ALIGN = 4096
URING_ALIGN = 128
BLOCK_ALIGN = 64
HEADER_SIZE = 64
SQE_SIZE, CQE_SIZE, ENTRY_ALIGN = 40, 24, 8
SHARED_RING_DATA_OFFSET = 384
MAX_CAPACITY = 1 << 31
WORDS = ["sq_offset", "sq_size", "cq_offset", "cq_size", "payload_offset", "payload_size"]


def read(words, length, w):
    """`Layout::read` after the stamp, and the `layout::header` check
    before it: (accepted, parts)."""
    z = lambda k: widen(words[k], w)
    parts = [
        (const(0, w), const(RINGS_OFFSET, w), const(1, w)),
        (z("sq_offset"), z("sq_size"), const(RING_ALIGN, w)),
        (z("cq_offset"), z("cq_size"), const(RING_ALIGN, w)),
        (z("payload_offset"), z("payload_size"), const(BLOCK_ALIGN, w)),
    ]
    spans_ok, end = check_part_spans(parts, w)
    aligns_ok = And(*[aligned(s, a) for s, _, a in parts])
    accepted = And(ULE(const(HEADER_SIZE, w), length), spans_ok, aligns_ok, ULE(end, length))
    return accepted, parts, end


def sound(parts, base, length, w):
    """What `carve` and the parts' users need."""
    (_, _, _), sq, cq, pay = parts
    payload_len = If(fits(pay[1], 32), truncate(pay[1], 32), const(0, 32))
    return And(
        in_bounds(const(LINK_OFFSET, w), const(LINK_SIZE, w), length),
        in_bounds(sq[0], sq[1], length),
        in_bounds(cq[0], cq[1], length),
        in_bounds(pay[0], pay[1], length),
        aligned(base + sq[0], const(RING_ALIGN, w)),
        aligned(base + cq[0], const(RING_ALIGN, w)),
        # `carve`'s `u32::try_from(layout.payload.1).unwrap_or(0)` is the length.
        pay[1] == widen(payload_len, w),
    )


def ring_size(entries, entry_size, w):
    """`SharedRing::<E>::required_size(entries)`: (accepted, size)."""
    from common import checked_mul
    cap_ok = And(is_power_of_two(entries), ULE(entries, const(MAX_CAPACITY, w)))
    mul_ok, slots = checked_mul(const(entry_size, w), entries)
    add_ok, total = checked_add(slots, const(SHARED_RING_DATA_OFFSET, w))
    return And(cap_ok, mul_ok, add_ok, fits(total, 32)), total


def canonical(sq_entries, cq_entries, payload_bytes, w):
    """`Layout::canonical` (release intervals aside: they do not enter the
    arithmetic): (accepted, parts, total, total_overflows)."""
    sq_ok, sq_size = ring_size(sq_entries, SQE_SIZE, w)
    cq_ok, cq_size = ring_size(cq_entries, CQE_SIZE, w)
    pay_ok = ULE(payload_bytes, const((1 << 32) - 1, w))
    end_ok, sq_end = checked_add(const(RINGS_OFFSET, w), sq_size)
    cq_off_ok, cq_offset = checked_next_multiple_of(sq_end, const(RING_ALIGN, w))
    cq_end_ok, cq_end = checked_add(cq_offset, cq_size)
    p_ok, payload_offset = checked_next_multiple_of(cq_end, const(PAYLOAD_ALIGN, w))
    total_ok, total = checked_add(payload_offset, payload_bytes)
    accepted = And(sq_ok, cq_ok, pay_ok, end_ok, cq_off_ok, cq_end_ok, p_ok,
                   ULE(payload_offset, const((1 << 32) - 1, w)), total_ok)
    parts = [
        (const(0, w), const(RINGS_OFFSET, w), const(1, w)),
        (const(RINGS_OFFSET, w), sq_size, const(RING_ALIGN, w)),
        (cq_offset, cq_size, const(RING_ALIGN, w)),
        (payload_offset, payload_bytes, const(BLOCK_ALIGN, w)),
    ]
    return accepted, parts, total, total_ok


def run(report):
    for w in USIZE_WIDTHS:
        base, length = bv("base", w), bv("region_len", w)
        no_wrap, _ = checked_add(base, length)
        r_facts = [aligned(base, const(URING_ALIGN, w)), no_wrap]
        words = {k: bv(k, 32) for k in WORDS}
        accepted, parts, end = read(words, length, w)
        report.prove(f"uring header/usize{w}: (a) accepted => link, rings, payload in bounds, rings aligned",
                     sound(parts, base, length, w), accepted, *r_facts)
        report.prove(f"uring header/usize{w}: (a) accepted => the four parts are disjoint",
                     parts_sound(parts, end), accepted, *r_facts)
        report.satisfiable(f"uring header/usize{w}: some header is accepted", accepted, *r_facts)

        sq, cq, pay = bv("sq_entries", w), bv("cq_entries", w), bv("payload_bytes", w)
        ok, c_parts, total, total_ok = canonical(sq, cq, pay, w)
        # `init` checks the region against `total()` (which wraps in a release
        # build if it overflows) and carves the canonical parts.
        report.prove(f"uring init/usize{w}: (a') the layout init carves lies in a region of total() bytes",
                     sound(c_parts, base, length, w), ok, UGE(length, total), UGE(length, const(HEADER_SIZE, w)), *r_facts)
        written = {
            "sq_offset": store_word(c_parts[1][0]), "sq_size": store_word(c_parts[1][1]),
            "cq_offset": store_word(c_parts[2][0]), "cq_size": store_word(c_parts[2][1]),
            "payload_offset": store_word(c_parts[3][0]), "payload_size": store_word(c_parts[3][1]),
        }
        honest, _, _ = read(written, length, w)
        report.prove(f"uring header/usize{w}: (b) every canonical header is accepted on its region",
                     honest, ok, total_ok, UGE(length, total), *r_facts)
        report.satisfiable(f"uring header/usize{w}: some configuration is canonical", ok, total_ok, UGE(length, total), *r_facts)

    drift(report)


def drift(report):
    """The checks that tie this model to the Rust source."""
    check_consts(report, SRC, dict(URING_MAGIC=MAGIC, URING_VERSION=VERSION, LINK_OFFSET=LINK_OFFSET,
                                   RINGS_OFFSET=RINGS_OFFSET, RING_ALIGN=RING_ALIGN, PAYLOAD_ALIGN=PAYLOAD_ALIGN))
    check_consts(report, CONN, dict(URING_ALIGN=URING_ALIGN))
    check_consts(report, PAYLOAD, dict(BLOCK_ALIGN=BLOCK_ALIGN))
    check_pattern(report, SRC, r"assert!\(size_of::<Header>\(\) == 64\)", "header is 64 bytes")
    check_pattern(report, SRC, r"assert!\(size_of::<Link>\(\) == 512 ", "the link is 512 bytes")
    check_pattern(report, SRC, r"assert!\(LINK_OFFSET \+ size_of::<Link>\(\) == RINGS_OFFSET\)", "the link ends where the rings start")
    check_pattern(report, ENTRY, r"assert!\(core::mem::size_of::<Sqe>\(\) == 40 && core::mem::align_of::<Sqe>\(\) == 8\)", "Sqe is 40 bytes, aligned to 8")
    check_pattern(report, ENTRY, r"assert!\(core::mem::size_of::<Cqe>\(\) == 24 && core::mem::align_of::<Cqe>\(\) == 8\)", "Cqe is 24 bytes, aligned to 8")
    check_formulas(report, SRC, "read", [
        "let word = |w: &AtomicU32| w.load(Ordering::Relaxed) as usize;",
        "sq: (word(&h.sq_offset), word(&h.sq_size)),",
        "cq: (word(&h.cq_offset), word(&h.cq_size)),",
        "payload: (word(&h.payload_offset), word(&h.payload_size)),",
        "part((0, RINGS_OFFSET), 1), part(layout.sq, RING_ALIGN), part(layout.cq, RING_ALIGN), part(layout.payload, BLOCK_ALIGN),",
        "layout::check_region_len(end, len)?;",
    ])
    check_formulas(report, SRC, "canonical", [
        "let sq_size = SharedRing::<Sqe>::required_size(config.sq_entries)?;",
        "let cq_size = SharedRing::<Cqe>::required_size(config.cq_entries)?;",
        "if config.payload_bytes > max {",
        "let sq_end = RINGS_OFFSET.checked_add(sq_size);",
        "let cq_offset = sq_end.and_then(|e| e.checked_next_multiple_of(RING_ALIGN));",
        "let payload_offset = cq_offset.and_then(|o| o.checked_add(cq_size)).and_then(|e| e.checked_next_multiple_of(PAYLOAD_ALIGN)).filter(|&o| o <= max);",
        "sq: (RINGS_OFFSET, sq_size),",
        "cq: (cq_offset, cq_size),",
        "payload: (payload_offset, config.payload_bytes),",
        "if payload_offset.checked_add(config.payload_bytes).is_none() {",
    ])
    check_formulas(report, SRC, "total", ["self.payload.0 + self.payload.1"])
    check_formulas(report, CONN, "init", [
        "let header = layout::header::<Header>(&region, layout.total(), URING_ALIGN)?;",
    ])
    check_formulas(report, CONN, "attach_with", [
        "let header = layout::header::<Header>(&region, 0, URING_ALIGN)?;",
        "let layout = Layout::read(header, region.len())?;",
    ])
    check_formulas(report, CONN, "carve", [
        "let link = &*base.add(LINK_OFFSET).cast::<Link>();",
        "let sq = region.part(layout.sq.0, layout.sq.1);",
        "let cq = region.part(layout.cq.0, layout.cq.1);",
        "let payload_len = u32::try_from(layout.payload.1).unwrap_or(0);",
        "NonNull::new_unchecked(base.add(layout.payload.0)),",
    ])
