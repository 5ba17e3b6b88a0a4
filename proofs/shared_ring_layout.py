"""The shared ring's header (uring-queue/src/shared_ring/layout.rs,
`Layout::read` / `Layout::check` / `Layout::canonical`, and the region
checks of uring-queue/src/layout.rs that `SharedRing::attach` runs first).

The peer writes every header word (u32). The element type `T` is
symbolic: any size S and power-of-two alignment A <= 2^29 (Rust's largest)
with S a multiple of A. The region starts at address B, aligned as
`region_align::<T>()` demands (`layout::header` checks it), and
B + len does not wrap (it is an allocation).

Proven at usize = 64 and 32 bits:
(a) an accepted header puts the header, both index lines, and the
    `capacity` slots of S bytes from `data` inside the region, without
    overflow, each line and slot aligned for its type in memory; the
    capacity is a power of two <= MAX_CAPACITY (the ring's mask relies on
    it) and the release interval lies in 1..=capacity;
(b) for every `T`, capacity and release interval `canonical` accepts, the
    header `write` stores is accepted by `read` on a region of at least
    `total` bytes (the one the creator initialised), and the creator's own
    view (`build` on the canonical layout) is in bounds too.
"""

from z3 import And, If, Not, ULE, ULT, UGE, URem

from common import (
    USIZE_WIDTHS,
    bv,
    check_consts,
    check_formulas,
    check_pattern,
    checked_add,
    checked_mul,
    checked_next_multiple_of,
    const,
    fits,
    is_power_of_two,
    truncate,
    umax,
    umax2,
    widen,
)
from parts import check_part_spans, check_region_len

SRC = "uring-queue/src/shared_ring/layout.rs"
MOD = "uring-queue/src/shared_ring/mod.rs"
RAW = "uring-queue/src/raw.rs"
COMMON = "uring-queue/src/layout.rs"

MAGIC = int.from_bytes(b"URQR", "little")
VERSION = 2
HEADER_SIZE = 64
PRODUCER_OFFSET = 128
CONSUMER_OFFSET = 256
DATA_OFFSET = 384
MAX_CAPACITY = 1 << 31
SHARED_RING_ALIGN = 8
LINE_SIZE, LINE_ALIGN = 8, 4
MAX_ALIGN_LOG2 = 29


def aligned(x, a):
    """`x` is a multiple of the power of two `a` (see `pow2_lemma`)."""
    return x & (a - 1) == 0


def element(w):
    """A symbolic `T`: (size, align, assumptions)."""
    size, align = bv("size_of_T", w), bv("align_of_T", w)
    facts = [
        is_power_of_two(align),
        ULE(align, const(1 << MAX_ALIGN_LOG2, w)),
        aligned(size, align),
    ]
    return size, align, facts


def region(w, align):
    """The region: base address and length, base aligned to
    `region_align::<T>()`, and no wrap past the address space."""
    base, length = bv("base", w), bv("region_len", w)
    ra = umax2(align, const(SHARED_RING_ALIGN, w))
    ok, _ = checked_add(base, length)
    return base, length, [aligned(base, ra), ok]


def read(words, size, align, length, w):
    """The model of `attach`'s checks after the stamp: (accepted, layout)."""
    z = lambda k: widen(words[k], w)
    cap = z("capacity")
    elem_ok = And(z("elem_size") == size, z("elem_align") == align)
    cap_ok = And(is_power_of_two(cap), ULE(cap, const(MAX_CAPACITY, w)))
    total, prod, cons, data = z("total_size"), z("producer_offset"), z("consumer_offset"), z("data_offset")
    mul_ok, data_len = checked_mul(size, cap)
    parts = [
        (const(0, w), const(HEADER_SIZE, w), const(1, w)),
        (prod, const(LINE_SIZE, w), const(LINE_ALIGN, w)),
        (cons, const(LINE_SIZE, w), const(LINE_ALIGN, w)),
        (data, data_len, align),
    ]
    spans_ok, end = check_part_spans(parts, w)
    aligns_ok = And(aligned(prod, const(LINE_ALIGN, w)), aligned(cons, const(LINE_ALIGN, w)), aligned(data, align))
    release = z("release_every")
    accepted = And(
        # `layout::header(&region, HEADER_SIZE, ..)` before the header is read.
        check_region_len(const(HEADER_SIZE, w), length),
        elem_ok,
        cap_ok,
        check_region_len(total, length),
        mul_ok,
        spans_ok,
        aligns_ok,
        ULE(end, total),
        release != 0,
        ULE(release, cap),
    )
    return accepted, dict(cap=cap, prod=prod, cons=cons, data=data, release=release)


def in_bounds(start, n, length):
    ok, end = checked_add(start, n)
    return And(ok, ULE(end, length))


def sound(lay, size, align, base, length, w):
    """What every access through an accepted layout needs. The slots are
    `capacity` contiguous `T`s from `data` (Rust's `ptr.add(i)` for
    `i < capacity` stays inside them); `slot_in_range` in
    shared_ring_indices.py proves that `index & mask < capacity`."""
    line = const(LINE_SIZE, w)
    mul_ok, slots = checked_mul(size, lay["cap"])
    return And(
        in_bounds(const(0, w), const(HEADER_SIZE, w), length),
        in_bounds(lay["prod"], line, length),
        in_bounds(lay["cons"], line, length),
        mul_ok,
        in_bounds(lay["data"], slots, length),
        aligned(base + lay["prod"], const(LINE_ALIGN, w)),
        aligned(base + lay["cons"], const(LINE_ALIGN, w)),
        aligned(base + lay["data"], align),
        is_power_of_two(lay["cap"]),
        ULE(lay["cap"], const(MAX_CAPACITY, w)),
        lay["release"] != 0,
        ULE(lay["release"], lay["cap"]),
    )


def store_word(v):
    """`layout::store_word`: the value, or u32::MAX if it does not fit."""
    return If(fits(v, 32), truncate(v, 32), umax(32))


def canonical(size, align, capacity, release_every, w):
    """The model of `Layout::canonical::<T>`: (accepted, words written)."""
    cap_ok = And(is_power_of_two(capacity), ULE(capacity, const(MAX_CAPACITY, w)))
    data_ok, data = checked_next_multiple_of(const(DATA_OFFSET, w), align)
    mul_ok, slots = checked_mul(size, capacity)
    add_ok, total = checked_add(slots, data)
    accepted = And(cap_ok, data_ok, mul_ok, add_ok, fits(total, 32),
                   release_every != 0, ULE(release_every, capacity))
    words = dict(
        elem_size=store_word(size),
        elem_align=store_word(align),
        capacity=truncate(capacity, 32),
        producer_offset=store_word(const(PRODUCER_OFFSET, w)),
        consumer_offset=store_word(const(CONSUMER_OFFSET, w)),
        data_offset=store_word(data),
        total_size=store_word(total),
        release_every=truncate(release_every, 32),
    )
    return accepted, words, dict(total=total, data=data)


WORDS = ["elem_size", "elem_align", "capacity", "producer_offset", "consumer_offset",
         "data_offset", "total_size", "release_every"]


def pow2_lemma(report, w):
    """`aligned` (a mask) is `is_multiple_of` for a power-of-two alignment."""
    x, a = bv("x", w), bv("a", w)
    report.prove(f"lemma/usize{w}: x & (a - 1) == 0 <=> x % a == 0 for a power of two a <= 2^29",
                 aligned(x, a) == (URem(x, a) == 0),
                 is_power_of_two(a), ULE(a, const(1 << MAX_ALIGN_LOG2, w)))


def run(report):
    for w in USIZE_WIDTHS:
        pow2_lemma(report, w)
        size, align, t_facts = element(w)
        base, length, r_facts = region(w, align)
        words = {k: bv(k, 32) for k in WORDS}
        accepted, lay = read(words, size, align, length, w)
        report.prove(f"shared ring header/usize{w}: (a) accepted => header, lines, slot array in bounds and aligned",
                     sound(lay, size, align, base, length, w), accepted, *t_facts, *r_facts)
        report.satisfiable(f"shared ring header/usize{w}: some header is accepted", accepted, *t_facts, *r_facts)

        capacity, release_every = bv("capacity", w), bv("release_every", w)
        ok, written, made = canonical(size, align, capacity, release_every, w)
        honest_read, _ = read(written, size, align, length, w)
        report.prove(f"shared ring header/usize{w}: (b) every canonical header is accepted on its region",
                     honest_read, ok, UGE(length, made["total"]), *t_facts, *r_facts)
        own = dict(cap=capacity, prod=const(PRODUCER_OFFSET, w), cons=const(CONSUMER_OFFSET, w),
                   data=made["data"], release=release_every)
        report.prove(f"shared ring header/usize{w}: (a) the creator's own canonical layout is in bounds",
                     sound(own, size, align, base, length, w),
                     ok, UGE(length, made["total"]), UGE(length, const(HEADER_SIZE, w)), *t_facts, *r_facts)
        report.satisfiable(f"shared ring header/usize{w}: some layout is canonical",
                           ok, UGE(length, made["total"]), *t_facts, *r_facts)

    drift(report)


def drift(report):
    """The checks that tie this model to the Rust source."""
    check_consts(report, SRC, dict(SHARED_RING_MAGIC=MAGIC, SHARED_RING_VERSION=VERSION,
                                   PRODUCER_OFFSET=PRODUCER_OFFSET, CONSUMER_OFFSET=CONSUMER_OFFSET,
                                   DATA_OFFSET=DATA_OFFSET))
    check_consts(report, RAW, dict(MAX_CAPACITY=MAX_CAPACITY))
    check_consts(report, COMMON, dict(STATE_READY=2, STATE_INITIALISING=1))
    check_formulas(report, COMMON, "check(&self, id: LayoutId)", [
        "if state != STATE_READY {", "if magic != id.magic {", "if version != id.version {",
    ])
    check_consts(report, MOD, dict(SHARED_RING_ALIGN=SHARED_RING_ALIGN))
    check_pattern(report, SRC, r"assert!\(HEADER_SIZE == 64 && HEADER_SIZE <= PRODUCER_OFFSET\)", "header is 64 bytes")
    check_pattern(report, SRC, r"assert!\(size_of::<IndexLine>\(\) == 8 && align_of::<IndexLine>\(\) == 4\)",
                  "an index line is 8 bytes, aligned to 4")
    check_formulas(report, SRC, "read", [
        "if size as usize != size_of::<T>() || align as usize != align_of::<T>() {",
        "let capacity = check_capacity(word(&h.capacity) as usize)?;",
        "producer: word(&h.producer_offset) as usize,",
        "consumer: word(&h.consumer_offset) as usize,",
        "data: word(&h.data_offset) as usize,",
        "total: word(&h.total_size) as usize,",
        "layout.check::<T>(len)?;",
        "layout::check_release_interval(layout.release_every as usize, capacity as usize)?;",
    ])
    check_formulas(report, SRC, "check", [
        "layout::check_region_len(self.total, len)?;",
        "let data_len = size_of::<T>().checked_mul(self.capacity as usize).ok_or(RegionError::BadOffsets)?;",
        "Part { start: 0, len: HEADER_SIZE, align: 1, }",
        "Part { start: self.producer, len: line, align: line_align, }",
        "Part { start: self.consumer, len: line, align: line_align, }",
        "Part { start: self.data, len: data_len, align: align_of::<T>(), }",
        "if end > self.total { return Err(RegionError::BadOffsets); }",
    ])
    check_formulas(report, SRC, "canonical", [
        "let cap = check_capacity(capacity)?;",
        "let data = DATA_OFFSET.next_multiple_of(align_of::<T>());",
        "let total = size_of::<T>().checked_mul(capacity).and_then(|d| d.checked_add(data)).filter(|&t| u32::try_from(t).is_ok())",
        "layout::check_release_interval(release_every, capacity)?;",
    ])
    check_formulas(report, SRC, "write_elements", [
        "layout::store_word(&h.elem_size, size);",
        "layout::store_word(&h.elem_align, align);",
        "h.capacity.store(self.capacity, Ordering::Relaxed);",
        "layout::store_word(&h.data_offset, self.data);",
        "layout::store_word(&h.total_size, self.total);",
        "h.release_every.store(self.release_every, Ordering::Relaxed);",
    ])
    check_formulas(report, COMMON, "store_word", ["u32::try_from(value).unwrap_or(u32::MAX)"])
    check_formulas(report, COMMON, "header", [
        "check_region(region, needed.max(size_of::<H>()), align.max(align_of::<H>()),)?;",
    ])
    check_formulas(report, MOD, "attach", [
        "let h = crate::layout::header::<Header>(&region, HEADER_SIZE, region_align::<T>())?;",
        "let layout = Layout::read::<T>(h, region.len())?;",
    ])
    check_formulas(report, MOD, "init_deferred", [
        "let h = crate::layout::header::<Header>(&region, layout.total, region_align::<T>())?;",
    ])
    check_formulas(report, MOD, "region_align", [
        "if align_of::<T>() > SHARED_RING_ALIGN { align_of::<T>() } else { SHARED_RING_ALIGN }",
    ])
    check_formulas(report, RAW, "check_capacity", [
        "if !capacity.is_power_of_two() {",
        "if capacity > MAX_CAPACITY {",
    ])
