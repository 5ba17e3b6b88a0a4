//! [`ReadBackend`]: the one call every layer is built on.

use crate::{Geometry, ReadErrorKind, ReadOp};

/// The result of one backend op.
///
/// Bytes `[0, valid)` of the op's buffer were read. If `valid` is less than the
/// op's length, the rest failed with `error`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Report {
    /// The tag of the backend op this reports on.
    pub tag: usize,
    /// How many bytes, from the start of the op, were read.
    pub valid: usize,
    /// Why the bytes after `valid` failed; `None` when all were read.
    pub error: Option<ReadErrorKind>,
}

impl Report {
    /// All `len` bytes of op `tag` were read.
    #[inline]
    pub const fn ok(tag: usize, len: usize) -> Self {
        Self {
            tag,
            valid: len,
            error: None,
        }
    }

    /// Op `tag` read `valid` bytes, then failed with `error`.
    #[inline]
    pub const fn failed(tag: usize, valid: usize, error: ReadErrorKind) -> Self {
        Self {
            tag,
            valid,
            error: Some(error),
        }
    }
}

/// A source of bytes that reads a batch of ops per call.
///
/// # Contract
///
/// [`read_batch`](ReadBackend::read_batch) performs some prefix `ops[..n]` of
/// the batch and returns `n` (backpressure: the caller resubmits the rest).
/// For each accepted op it calls `report` exactly once, in any order, with the
/// op's tag. It reports nothing about the ops it did not accept.
///
/// The [`Reader`](crate::Reader) only sends ops that respect
/// [`geometry`](ReadBackend::geometry): none crosses a boundary, none is longer
/// than `max_transfer`, at most `max_ops` per call. A backend must still not
/// misbehave on other input (it may report an error for such an op).
///
/// A backend's faults must not depend on how reads are grouped: reading a byte
/// alone or inside a larger op of the same boundary unit gives the same bytes,
/// and a read stops at its first failing byte. The reader's results are then
/// the same whether or not it merges.
///
/// # Examples
///
/// ```
/// use batch_reader::{Geometry, ReadBackend, ReadErrorKind, ReadOp, Report};
///
/// /// Every byte reads as its address's low byte; nothing past 1 MiB.
/// struct Counting;
///
/// impl ReadBackend for Counting {
///     fn geometry(&self) -> Geometry {
///         Geometry::new(None, 4096, 8).unwrap()
///     }
///     fn read_batch<R: FnMut(Report)>(&mut self, ops: &mut [ReadOp<'_>], mut report: R) -> usize {
///         let n = ops.len().min(8);
///         for op in &mut ops[..n] {
///             let mut valid = 0;
///             for (i, b) in op.buf.iter_mut().enumerate() {
///                 let a = op.addr + i as u64;
///                 if a >= 1 << 20 { break; }
///                 *b = a as u8;
///                 valid += 1;
///             }
///             report(if valid == op.buf.len() {
///                 Report::ok(op.tag, valid)
///             } else {
///                 Report::failed(op.tag, valid, ReadErrorKind::OutOfBounds)
///             });
///         }
///         n
///     }
/// }
///
/// let mut buf = [0u8; 4];
/// let mut ops = [ReadOp::new(0x10, &mut buf, 0)];
/// let mut got = None;
/// assert_eq!(Counting.read_batch(&mut ops, |r| got = Some(r)), 1);
/// assert_eq!(got, Some(Report::ok(0, 4)));
/// assert_eq!(buf, [0x10, 0x11, 0x12, 0x13]);
/// ```
pub trait ReadBackend {
    /// The limits this backend declares.
    fn geometry(&self) -> Geometry;

    /// Performs a prefix of `ops`, reports each through `report`, and returns
    /// how many it performed.
    fn read_batch<R: FnMut(Report)>(&mut self, ops: &mut [ReadOp<'_>], report: R) -> usize;
}

impl<B: ReadBackend + ?Sized> ReadBackend for &mut B {
    #[inline]
    fn geometry(&self) -> Geometry {
        (**self).geometry()
    }

    #[inline]
    fn read_batch<R: FnMut(Report)>(&mut self, ops: &mut [ReadOp<'_>], report: R) -> usize {
        (**self).read_batch(ops, report)
    }
}
