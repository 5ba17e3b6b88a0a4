//! The direct route's scans: whether a window's ops can go to the backend
//! as they are. Tuned by branch behaviour (see `docs/benchmarks.md`, the
//! batch sections): a lean pass with branches that the usual window, where
//! every op passes, always predicts, and from the first op that fails a
//! test, a pass without branches.

use crate::ReadOp;

/// How the lean pass tests that an op is near its predecessor: not at all
/// (no merging: the caller does not look at `near`), ... (A `u8` rather
/// than an enum: stable Rust takes no enum as a const parameter.)
const NEAR_NONE: u8 = 0;
/// ... by `addr == prev_end` (a gap of 0, the default policy), ...
const NEAR_ADJACENT: u8 = 1;
/// ... or by `addr - prev_end <= gap`.
const NEAR_GAP: u8 = 2;

/// What [`scan_window`] finds in a direct-route window.
#[derive(Debug, Clone, Copy)]
pub(super) struct Scan {
    /// Every op is one fragment: not empty, at most `max_transfer` long, not
    /// past the end of the address space, and within one boundary unit.
    pub(super) one_fragment: bool,
    /// Some op starts at most `gap` bytes after the end of the op before
    /// it: the first part of the planner's merge test.
    pub(super) near: bool,
    /// The bytes the ops request (meaningful when `one_fragment`).
    pub(super) bytes: u64,
}

impl Scan {
    /// The scan of no op yet.
    const START: Self = Self {
        one_fragment: true,
        near: false,
        bytes: 0,
    };
}

/// The bytes `ops` request if every op is one fragment, none is near the
/// one before it (as for `gap` in [`scan_window`]), and, if `INDEXED`, each
/// is tagged by its index in `ops`: the window that can go to the backend
/// as it is. `None` otherwise, and [`scan_window`] then decides. Makes the
/// lean pass's tests ([`lean_pass`]), with the tag's on top if `INDEXED`.
#[inline(always)]
pub(super) fn scan_lean<const INDEXED: bool>(
    ops: &[ReadOp<'_>],
    max_transfer: u64,
    unit: u64,
    gap: Option<u64>,
) -> Option<u64> {
    match gap {
        None => scan_lean_with::<NEAR_NONE, INDEXED>(ops, max_transfer, unit, 0),
        Some(0) => scan_lean_with::<NEAR_ADJACENT, INDEXED>(ops, max_transfer, unit, 0),
        Some(gap) => scan_lean_with::<NEAR_GAP, INDEXED>(ops, max_transfer, unit, gap),
    }
}

/// [`scan_lean`] for one way of testing nearness (`NEAR`).
#[inline(always)]
fn scan_lean_with<const NEAR: u8, const INDEXED: bool>(
    ops: &[ReadOp<'_>],
    max_transfer: u64,
    unit: u64,
    gap: u64,
) -> Option<u64> {
    let lean_unit = lean_unit(max_transfer, unit);
    let mut bytes = 0u64;
    let mut prev_end = u64::MAX;
    for (tag, op) in ops.iter().enumerate() {
        let (addr, len) = (op.addr, op.buf.len() as u64);
        let end = addr.wrapping_add(len);
        if (INDEXED && op.tag != tag) || !lean_pass::<NEAR>(addr, end, prev_end, lean_unit, gap) {
            return None;
        }
        bytes = bytes.wrapping_add(len);
        prev_end = end;
    }
    Some(bytes)
}

/// The lean pass's test of an op from `addr` to `end` (`addr + len`,
/// wrapping) after one ending at `prev_end`: it is one fragment (by the
/// mask of [`lean_unit`]) and not near its predecessor (as `NEAR` says).
/// Each part is a branch, which the usual window, where every op passes,
/// always predicts.
#[inline(always)]
fn lean_pass<const NEAR: u8>(addr: u64, end: u64, prev_end: u64, lean_unit: u64, gap: u64) -> bool {
    // `end > addr` holds exactly when the op is not empty and does not run
    // past the end of the address space (a wrapped `end` is below `addr`,
    // since `len < 2^64`).
    !(end <= addr
        || (addr ^ end.wrapping_sub(1)) & lean_unit != 0
        || match NEAR {
            NEAR_NONE => false,
            NEAR_ADJACENT => addr == prev_end,
            _ => addr.wrapping_sub(prev_end) <= gap,
        })
}

/// The mask the lean pass tests an op's first and last byte with: the bits
/// above the boundary unit (`unit`) and above the largest power of two at
/// most `max_transfer`.
///
/// The lean pass tests the length and the boundary in one: that the op's
/// first and last byte lie in one aligned block of `p` bytes, the largest
/// power of two at most `max_transfer`, and in one boundary unit (`b`
/// bytes, a power of two). With `end > addr` (not empty, not past the end
/// of the address space), such an op is at most `min(p, b) <=
/// max_transfer` long and in one unit: one fragment. The test is stricter
/// than the exact one only for an op that crosses a `p`-block, which
/// happens only where `p < b` (with a boundary no longer than
/// `max_transfer`, `b <= p` and `unit` alone decides); such an op goes on
/// to [`scan_rest`], which decides exactly.
#[inline(always)]
fn lean_unit(max_transfer: u64, unit: u64) -> u64 {
    let block = 1u64 << (63 - max_transfer.max(1).leading_zeros());
    unit | !(block - 1)
}

/// One pass over `ops` for [`Scan`], pushing each op onto `batch` with its
/// index as its tag, with its lean pass picked for `gap` (`None` where
/// nothing merges). More than `F` ops fail the scan.
#[inline(always)]
pub(super) fn scan_window<'o, const F: usize>(
    ops: &'o mut [ReadOp<'_>],
    batch: &mut crate::stack::Stack<ReadOp<'o>, F>,
    max_transfer: u64,
    unit: u64,
    gap: Option<u64>,
) -> Scan {
    let (b, mt) = (batch, max_transfer);
    match gap {
        None => scan_into::<NEAR_NONE, F>(ops, b, mt, unit, 0),
        Some(0) => scan_into::<NEAR_ADJACENT, F>(ops, b, mt, unit, 0),
        Some(gap) => scan_into::<NEAR_GAP, F>(ops, b, mt, unit, gap),
    }
}

/// [`scan_window`] for one way of testing nearness (`NEAR`).
///
/// The pass starts lean: while every op is one fragment and none is near
/// its predecessor (as `NEAR` says), each test is a branch that the common
/// window, where all pass, always predicts. From the first op that fails
/// one, [`scan_rest`] goes on without branches, and the [`Scan`] is the
/// same either way.
#[inline(always)]
fn scan_into<'o, const NEAR: u8, const F: usize>(
    ops: &'o mut [ReadOp<'_>],
    batch: &mut crate::stack::Stack<ReadOp<'o>, F>,
    max_transfer: u64,
    unit: u64,
    gap: u64,
) -> Scan {
    batch.clear();
    if ops.len() > F {
        // Not reachable: the direct route takes at most `F` ops.
        return Scan {
            one_fragment: false,
            ..Scan::START
        };
    }
    let mut bytes = 0u64;
    // `u64::MAX` as the first predecessor's end never precedes an op.
    let mut prev_end = u64::MAX;
    let lean_unit = lean_unit(max_transfer, unit);
    let mut rest = ops.iter_mut().enumerate();
    while let Some((tag, op)) = rest.next() {
        let (addr, len) = (op.addr, op.buf.len() as u64);
        let end = addr.wrapping_add(len);
        if !lean_pass::<NEAR>(addr, end, prev_end, lean_unit, gap) {
            let before = Scan {
                bytes,
                ..Scan::START
            };
            let tests = Tests {
                max_transfer,
                unit,
                gap,
            };
            return scan_rest((tag, op), rest, batch, before, prev_end, tests);
        }
        bytes = bytes.wrapping_add(len);
        prev_end = end;
        // SAFETY: `batch` was emptied above and holds `F`, and there are at
        // most `F` ops (checked above), so it has room.
        unsafe { batch.push_unchecked(ReadOp::new(addr, &mut *op.buf, tag)) };
    }
    Scan {
        bytes,
        ..Scan::START
    }
}

/// The limits [`scan_rest`] tests each op against.
#[derive(Debug, Clone, Copy)]
struct Tests {
    max_transfer: u64,
    unit: u64,
    gap: u64,
}

/// [`scan_into`] from the first op that failed its lean test (`first`, then
/// the ops of `rest`), given the [`Scan`] of the ops before it: one pass
/// without branches (on scattered addresses the merge test's parts are coin
/// tosses that branches would mispredict half the time, and the rest is
/// cheaper to accumulate than to branch on).
#[inline(never)]
fn scan_rest<'o, 'b: 'o, const F: usize>(
    first: (usize, &'o mut ReadOp<'b>),
    rest: impl Iterator<Item = (usize, &'o mut ReadOp<'b>)>,
    batch: &mut crate::stack::Stack<ReadOp<'o>, F>,
    before: Scan,
    mut prev_end: u64,
    tests: Tests,
) -> Scan {
    let Scan {
        mut one_fragment,
        mut near,
        mut bytes,
    } = before;
    for (tag, op) in core::iter::once(first).chain(rest) {
        let (addr, len) = (op.addr, op.buf.len() as u64);
        let (end, overflow) = addr.overflowing_add(len);
        // `len - 1` wraps for an empty op, so it fails the length test.
        one_fragment &= (len.wrapping_sub(1) < tests.max_transfer)
            & !overflow
            & ((addr ^ end.wrapping_sub(1)) & tests.unit == 0);
        // A prefilter for the full merge test, which the caller makes:
        // where `addr < prev_end` the difference wraps past any gap short
        // of 2^64 - (prev_end - addr), so at worst this calls for the full
        // test in vain.
        near |= addr.wrapping_sub(prev_end) <= tests.gap;
        bytes = bytes.wrapping_add(len);
        prev_end = end;
        // Cannot fail: at most `F` ops, checked by `scan_into`.
        let _ = batch.push(ReadOp::new(addr, &mut *op.buf, tag));
    }
    Scan {
        one_fragment,
        near,
        bytes,
    }
}

#[cfg(test)]
mod tests;
