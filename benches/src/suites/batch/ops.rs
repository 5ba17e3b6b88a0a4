//! The op arrays the seed rows read with, and the floors: the same ops
//! filled by hand, by the backend alone, and after the one-fragment test.

use batch_reader::backends::MemoryBackend;
use batch_reader::{Geometry, ReadBackend, ReadOp, Reader};
use std::hint::black_box;
use std::time::{Duration, Instant};

/// `BATCH` ops, op `i` reading 8 bytes at `addrs[i]` (0 past its end) into
/// `bufs[i]`, tagged `i`.
fn fresh_ops<'b, const BATCH: usize>(
    bufs: &'b mut [[u8; 8]; BATCH],
    addrs: &[usize],
) -> [ReadOp<'b>; BATCH] {
    let mut it = bufs.iter_mut();
    core::array::from_fn(|i| {
        let buf: &mut [u8] = it.next().map_or(&mut [], |b| &mut b[..]);
        ReadOp::new(addrs.get(i).copied().unwrap_or(0) as u64, buf, i)
    })
}

/// Points the first `addrs.len()` ops at `addrs` and returns them.
fn set_addrs<'o, 'b>(ops: &'o mut [ReadOp<'b>], addrs: &[usize]) -> &'o mut [ReadOp<'b>] {
    let ops = &mut ops[..addrs.len()];
    for (op, &a) in ops.iter_mut().zip(addrs) {
        op.addr = a as u64;
    }
    ops
}

/// The value of a completed 8-byte read, 0 if it failed.
#[inline(always)]
fn completed_u64(done: &batch_reader::Completion<'_>) -> u64 {
    match <[u8; 8]>::try_from(done.data()) {
        Ok(v) if done.is_ok() => u64::from_ne_bytes(v),
        _ => 0,
    }
}

/// Fills `ops` by plain copies from `mem` and adds up their values. An
/// 8-byte op is copied as one 8-byte value, not through `memcpy`, as the
/// crate's in-memory backend copies short reads, so that this stays a floor.
#[inline(always)]
pub(super) fn by_hand(mem: &[u8], ops: &mut [ReadOp<'_>]) -> u64 {
    for op in ops.iter_mut() {
        copy_by_hand(mem, op);
    }
    sum_of(ops)
}

/// Fills `op` by a plain copy from `mem` (see [`by_hand`]), if it lies
/// within it.
#[inline(always)]
fn copy_by_hand(mem: &[u8], op: &mut ReadOp<'_>) {
    let at = op.addr as usize;
    if let Some(src) = mem.get(at..at + op.buf.len()) {
        match (
            <&mut [u8; 8]>::try_from(&mut *op.buf),
            <[u8; 8]>::try_from(src),
        ) {
            (Ok(dst), Ok(src)) => *dst = src,
            _ => op.buf.copy_from_slice(src),
        }
    }
}

/// The values of the 8-byte ops of `ops`, added up.
#[inline(always)]
fn sum_of(ops: &[ReadOp<'_>]) -> u64 {
    ops.iter()
        .fold(0u64, |sum, op| match <[u8; 8]>::try_from(&*op.buf) {
            Ok(v) => sum.wrapping_add(u64::from_ne_bytes(v)),
            Err(_) => sum,
        })
}

/// Times reading `addrs` in batches of `BATCH` ops built afresh for each
/// batch; `read` performs one batch and returns the sum of its values.
#[inline(always)]
pub(super) fn timed_fresh<const BATCH: usize>(
    addrs: &[usize],
    mut read: impl FnMut(&mut [ReadOp<'_>]) -> u64,
) -> Duration {
    let mut bufs = [[0u8; 8]; BATCH];
    let t = Instant::now();
    let mut sum = 0u64;
    for chunk in addrs.chunks(BATCH) {
        let mut ops = fresh_ops(&mut bufs, chunk);
        sum = sum.wrapping_add(read(&mut ops[..chunk.len()]));
    }
    black_box(sum);
    t.elapsed()
}

/// As [`timed_fresh`], with one op array built before timing and only its
/// addresses set for each batch.
#[inline(always)]
pub(super) fn timed_reused<const BATCH: usize>(
    addrs: &[usize],
    read: impl FnMut(&mut [ReadOp<'_>]) -> u64,
) -> Duration {
    timed_reused_tagged::<BATCH>(addrs, |i| i, read)
}

/// As [`timed_reused`], with op `i` tagged `tag(i)`.
#[inline(always)]
pub(super) fn timed_reused_tagged<const BATCH: usize>(
    addrs: &[usize],
    tag: impl Fn(usize) -> usize,
    mut read: impl FnMut(&mut [ReadOp<'_>]) -> u64,
) -> Duration {
    let mut bufs = [[0u8; 8]; BATCH];
    let mut ops = fresh_ops(&mut bufs, &[]);
    for (i, op) in ops.iter_mut().enumerate() {
        op.tag = tag(i);
    }
    let t = Instant::now();
    let mut sum = 0u64;
    for chunk in addrs.chunks(BATCH) {
        sum = sum.wrapping_add(read(set_addrs(&mut ops, chunk)));
    }
    black_box(sum);
    t.elapsed()
}

/// One `read_many` over `ops`: the sum of the completed values.
#[inline(always)]
pub(super) fn read_sum<const N: usize, const F: usize>(
    reader: &mut Reader<MemoryBackend<'_>, Vec<u8>, N, F>,
    ops: &mut [ReadOp<'_>],
) -> u64 {
    let mut sum = 0u64;
    reader.read_many(ops, |done| sum = sum.wrapping_add(completed_u64(&done)));
    sum
}

/// The backend's `read_batch_in_order` called directly on `ops`, each
/// value added up in its op's report as `completed_u64` does: a batch
/// without the reader, taken as the reader's direct route takes it.
#[inline(always)]
pub(super) fn backend_sum(backend: &mut MemoryBackend<'_>, ops: &mut [ReadOp<'_>]) -> u64 {
    let mut sum = 0u64;
    let ops = black_box(ops);
    backend.read_batch_in_order(ops, |op, r| {
        if let (Ok(v), true) = (<[u8; 8]>::try_from(&*op.buf), r.valid >= op.buf.len()) {
            sum = sum.wrapping_add(u64::from_ne_bytes(v));
        }
    });
    sum
}

/// Whether every op of `ops` is one fragment of `geometry`: not empty, at
/// most `max_transfer` long, not past the end of the address space, and
/// within one boundary unit. The test any reader that honours a backend's
/// geometry makes before it hands ops over as they are, in one pass without
/// branches, as the crate's reader makes it.
#[inline(always)]
fn one_fragment_each(ops: &[ReadOp<'_>], geometry: Geometry) -> bool {
    let test = FragmentTest::of(geometry);
    let mut ok = true;
    for op in ops {
        ok &= test.one_fragment(op.addr, op.buf.len() as u64).is_some();
    }
    ok
}

/// What an op is tested against to be one fragment of a geometry.
#[derive(Clone, Copy)]
struct FragmentTest {
    max_transfer: u64,
    /// The bits above the boundary unit (0 without a boundary).
    unit: u64,
}

impl FragmentTest {
    #[inline(always)]
    fn of(geometry: Geometry) -> Self {
        Self {
            max_transfer: geometry.max_transfer() as u64,
            unit: !geometry.boundary().map_or(u64::MAX, |b| b - 1),
        }
    }

    /// The end of an op of `len` bytes at `addr` if it is one fragment (see
    /// [`one_fragment_each`]), without branches.
    #[inline(always)]
    fn one_fragment(self, addr: u64, len: u64) -> Option<u64> {
        let (end, overflow) = addr.overflowing_add(len);
        let ok = (len.wrapping_sub(1) < self.max_transfer)
            & !overflow
            & ((addr ^ end.wrapping_sub(1)) & self.unit == 0);
        ok.then_some(end)
    }
}

/// [`by_hand`] with each op's one-fragment test (as [`one_fragment_each`])
/// and the test that it does not start where the op before it ends (where
/// it would merge) made in the loop that copies it: the check where only
/// code that reads the memory itself can put it. A reader hands its ops to a
/// backend, so it makes the check in a pass of its own before the call.
/// Stops at the first op that fails (none does here).
#[inline(always)]
pub(super) fn by_hand_checked(mem: &[u8], geometry: Geometry, ops: &mut [ReadOp<'_>]) -> u64 {
    let test = FragmentTest::of(geometry);
    let mut prev_end = u64::MAX;
    for op in ops.iter_mut() {
        match test.one_fragment(op.addr, op.buf.len() as u64) {
            Some(end) if op.addr != prev_end => prev_end = end,
            _ => break,
        }
        copy_by_hand(mem, op);
    }
    sum_of(ops)
}

/// [`backend_sum`] after the one-fragment test of every op
/// ([`one_fragment_each`]): a batch without a reader's bookkeeping, but
/// with the check a reader cannot skip. 0 if an op fails it (none does
/// here).
#[inline(always)]
pub(super) fn checked_backend_sum(backend: &mut MemoryBackend<'_>, ops: &mut [ReadOp<'_>]) -> u64 {
    let ops = black_box(ops);
    if !one_fragment_each(ops, backend.geometry()) {
        return 0;
    }
    backend_sum(backend, ops)
}
