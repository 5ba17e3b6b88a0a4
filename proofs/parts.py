"""`layout::check_parts` (uring-queue/src/layout.rs): the parts a header
names are each representable, aligned, and apart from every other.

Proven, for 4 parts (what both layouts pass) at each `usize` width:
(a) accepted => every part's end is representable, its start is aligned,
    no byte lies in two parts, and the returned end bounds every part.
The honest side (b) is proven with each layout's canonical parts, in
shared_ring_layout.py and uring_layout.py.
"""

from z3 import And, Not, ULE, ULT, Or, BoolVal

from common import (
    USIZE_WIDTHS,
    bv,
    check_formulas,
    checked_add,
    is_multiple_of,
    saturating_add,
    umax2,
    const,
)

SOURCE = "uring-queue/src/layout.rs"


def check_parts(parts, width):
    """The model of `check_parts`: (accepted, end). `parts` is a list of
    (start, len, align) bit-vectors of `width` bits."""
    spans, end = check_part_spans(parts, width)
    return And(spans, check_part_aligns(parts)), end


def check_part_aligns(parts):
    """The alignment half of `check_parts`'s conditions."""
    return And(*[is_multiple_of(start, align) for start, _, align in parts])


def check_part_spans(parts, width):
    """The range and overlap half of `check_parts`'s conditions, and the
    end it returns. (Split from the alignment half so that the solver
    proves each fast; together they are exactly `check_parts`.)"""
    conds = []
    end = const(0, width)
    for k, (start, length, align) in enumerate(parts):
        ok, a_end = checked_add(start, length)
        conds.append(ok)
        for b_start, b_len, _ in parts[k + 1 :]:
            overlap = And(ULT(start, saturating_add(b_start, b_len)), ULT(b_start, a_end))
            conds.append(Not(overlap))
        end = umax2(end, a_end)
    return And(*conds), end


def check_region_len(needed, actual):
    """`check_region_len`: Ok iff `actual >= needed`."""
    return ULE(needed, actual)


def in_part(x, start, length):
    return And(ULE(start, x), ULT(x, start + length))


def parts_sound(parts, end):
    """What an accepted set of parts guarantees (alignment aside, which is
    literally one of the conditions)."""
    w = end.size()
    facts = []
    for start, length, align in parts:
        ok, a_end = checked_add(start, length)
        facts += [ok, ULE(a_end, end)]
    x = bv("byte", w)
    for i, (s1, l1, _) in enumerate(parts):
        for s2, l2, _ in parts[i + 1 :]:
            facts.append(Not(And(in_part(x, s1, l1), in_part(x, s2, l2))))
    return And(*facts)


def run(report):
    for w in USIZE_WIDTHS:
        parts = [(bv(f"start{i}", w), bv(f"len{i}", w), bv(f"align{i}", w)) for i in range(4)]
        spans, end = check_part_spans(parts, w)
        accepted, _ = check_parts(parts, w)
        report.prove(f"check_parts/usize{w}: accepted parts have representable ends, are disjoint, end within the returned end",
                     parts_sound(parts, end), spans)
        report.satisfiable(f"check_parts/usize{w}: some parts are accepted", accepted,
                           *[l != 0 for _, l, _ in parts])
    drift(report)


def drift(report):
    """The checks that tie this model to the Rust source."""
    check_formulas(report, SOURCE, "check_parts", [
        "let a_end = a.start.checked_add(a.len).ok_or(RegionError::BadOffsets)?;",
        "if !is_multiple_of(a.start, a.align) { return Err(RegionError::BadOffsets); }",
        "for b in parts.iter().skip(k + 1) {",
        "if a.start < b.start.saturating_add(b.len) && b.start < a_end { return Err(RegionError::BadOffsets); }",
        "end = end.max(a_end);",
    ])
    # The crate's own `is_multiple_of` (the standard one is newer than its
    # rust-version): common.is_multiple_of models it.
    check_formulas(report, SOURCE, "is_multiple_of", [
        "match x.checked_rem(n) {",
        "Some(r) => r == 0,",
        "None => x == 0,",
    ])
    check_formulas(report, SOURCE, "check_region_len", [
        "if actual < needed { return Err(RegionError::TooSmall { needed, actual }); }",
    ])
    check_formulas(report, SOURCE, "check_release_interval", [
        "if found == 0 || found > max {",
    ])
