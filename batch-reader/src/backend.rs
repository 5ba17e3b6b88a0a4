//! [`ReadBackend`]: the one call every layer is built on.

use crate::{Geometry, PartialRead, ReadErrorKind, ReadOp};

/// The result of one backend op.
///
/// Bytes `[0, valid)` of the op's buffer were read. If `valid` is less than the
/// op's length, the rest failed with `error`.
///
/// # Examples
///
/// A read that runs past the end of a [`MemoryBackend`](crate::backends::MemoryBackend)
/// reports the bytes it read and why the rest failed:
///
/// ```
/// use batch_reader::{backends::MemoryBackend, Geometry, ReadBackend, ReadErrorKind, ReadOp, Report};
///
/// let mem = [1u8; 6];
/// let mut backend = MemoryBackend::new(&mem, Geometry::new(None, 16, 4)?);
/// let mut buf = [0u8; 8];
/// let mut got = None;
/// backend.read_batch(&mut [ReadOp::new(0, &mut buf, 5)], |r| got = Some(r));
/// let r = got.unwrap();
/// assert_eq!((r.tag, r.valid, r.error), (5, 6, Some(ReadErrorKind::OutOfBounds)));
/// # Ok::<(), batch_reader::GeometryError>(())
/// ```
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
    ///
    /// # Examples
    ///
    /// ```
    /// use batch_reader::Report;
    ///
    /// let r = Report::ok(3, 16);
    /// assert_eq!(r, Report { tag: 3, valid: 16, error: None });
    /// ```
    #[inline]
    pub const fn ok(tag: usize, len: usize) -> Self {
        Self {
            tag,
            valid: len,
            error: None,
        }
    }

    /// Op `tag` read `valid` bytes, then failed with `error`.
    ///
    /// # Examples
    ///
    /// ```
    /// use batch_reader::{ReadErrorKind, Report};
    ///
    /// let r = Report::failed(3, 4, ReadErrorKind::Unmapped);
    /// assert_eq!((r.valid, r.error), (4, Some(ReadErrorKind::Unmapped)));
    /// ```
    #[inline]
    pub const fn failed(tag: usize, valid: usize, error: ReadErrorKind) -> Self {
        Self {
            tag,
            valid,
            error: Some(error),
        }
    }
}

/// One backend read of a contiguous range into several buffers, in order:
/// `parts[0]` gets the first bytes, then `parts[1]`, and so on. The reader
/// uses it for merged reads on backends that [scatter](ReadBackend::scatters),
/// so the merged bytes land in the callers' buffers without a copy.
///
/// # Examples
///
/// ```
/// use batch_reader::ScatterOp;
///
/// let (mut a, mut b) = ([0u8; 2], [0u8; 3]);
/// let mut parts: [&mut [u8]; 2] = [&mut a, &mut b];
/// let op = ScatterOp { addr: 8, parts: &mut parts, tag: 0 };
/// assert_eq!(op.len(), 5);
/// ```
#[derive(Debug)]
pub struct ScatterOp<'a, 'b> {
    /// Where the read starts.
    pub addr: u64,
    /// Where the bytes go, in order.
    pub parts: &'a mut [&'b mut [u8]],
    /// The tag to report under.
    pub tag: usize,
}

impl ScatterOp<'_, '_> {
    /// Total length of the parts.
    ///
    /// # Examples
    ///
    /// ```
    /// use batch_reader::ScatterOp;
    ///
    /// let (mut a, mut b) = ([0u8; 4], [0u8; 12]);
    /// let mut parts: [&mut [u8]; 2] = [&mut a, &mut b];
    /// assert_eq!(ScatterOp { addr: 0, parts: &mut parts, tag: 0 }.len(), 16);
    /// ```
    pub fn len(&self) -> usize {
        self.parts.iter().map(|p| p.len()).sum()
    }

    /// Whether the op reads nothing: it has no parts, or only empty ones.
    ///
    /// # Examples
    ///
    /// ```
    /// use batch_reader::ScatterOp;
    ///
    /// let mut none: [&mut [u8]; 0] = [];
    /// assert!(ScatterOp { addr: 0, parts: &mut none, tag: 0 }.is_empty());
    /// let (mut a, mut b) = ([0u8; 0], [0u8; 1]);
    /// let mut parts: [&mut [u8]; 2] = [&mut a, &mut b];
    /// assert!(!ScatterOp { addr: 0, parts: &mut parts, tag: 0 }.is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.parts.iter().all(|p| p.is_empty())
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
    ///
    /// # Examples
    ///
    /// ```
    /// use batch_reader::{backends::MemoryBackend, Geometry, ReadBackend};
    ///
    /// let g = Geometry::new(Some(512), 4096, 32)?;
    /// let backend = MemoryBackend::new(&[], g);
    /// assert_eq!(backend.geometry(), g);
    /// # Ok::<(), batch_reader::GeometryError>(())
    /// ```
    fn geometry(&self) -> Geometry;

    /// Performs a prefix of `ops`, reports each through `report`, and returns
    /// how many it performed.
    ///
    /// # Examples
    ///
    /// A backend taking at most 2 ops per call performs the first 2 of 3 and
    /// reports only those; the caller resubmits the third.
    ///
    /// ```
    /// use batch_reader::{backends::MemoryBackend, Geometry, ReadBackend, ReadOp};
    ///
    /// let mem = [9u8; 32];
    /// let mut backend = MemoryBackend::new(&mem, Geometry::new(None, 32, 2)?);
    /// let mut bufs = [[0u8; 4]; 3];
    /// let [a, b, c] = &mut bufs;
    /// let mut ops = [ReadOp::new(0, a, 10), ReadOp::new(8, b, 11), ReadOp::new(16, c, 12)];
    /// let mut tags = Vec::new();
    /// assert_eq!(backend.read_batch(&mut ops, |r| tags.push(r.tag)), 2);
    /// assert_eq!(tags, [10, 11]);
    /// assert_eq!(bufs, [[9; 4], [9; 4], [0; 4]]);
    /// # Ok::<(), batch_reader::GeometryError>(())
    /// ```
    fn read_batch<R: FnMut(Report)>(&mut self, ops: &mut [ReadOp<'_>], report: R) -> usize;

    /// Whether [`read_batch`](ReadBackend::read_batch) reports each op right
    /// after performing it, in op order, so that
    /// [`read_batch_in_order`](ReadBackend::read_batch_in_order) takes a
    /// whole batch in one call. When it does, the reader completes each op
    /// of a batch it hands over as it is in the op's report, with nothing
    /// kept per op. The default is `false`.
    ///
    /// # Examples
    ///
    /// ```
    /// use batch_reader::{backends::MemoryBackend, Geometry, ReadBackend};
    ///
    /// let backend = MemoryBackend::new(&[], Geometry::new(None, 16, 1)?);
    /// assert!(backend.reports_in_order());
    /// # Ok::<(), batch_reader::GeometryError>(())
    /// ```
    fn reports_in_order(&self) -> bool {
        false
    }

    /// Like [`read_batch`](ReadBackend::read_batch), with each op reported
    /// right after it is performed, in op order, and handed to `report`
    /// with its report: its address, and its buffer now holding the bytes
    /// read. Performs a prefix `ops[..n]`, calls `report` exactly once for
    /// each of those ops, in order, and returns `n`.
    ///
    /// The default calls `read_batch` once per op, stopping at the first op
    /// it does not take, so it keeps the order on any backend but does not
    /// batch. A backend that [reports in order](ReadBackend::reports_in_order)
    /// overrides it with one call for the batch.
    ///
    /// A backend that overrides it and breaks the order (reports late,
    /// twice, or with another op) gets no memory unsafety and no panic from
    /// the [`Reader`](crate::Reader), and each op still gets exactly one
    /// completion, in order; but an op reported out of order completes as
    /// not reported ([`Incomplete`](ReadErrorKind::Incomplete)).
    ///
    /// # Examples
    ///
    /// ```
    /// use batch_reader::{backends::MemoryBackend, Geometry, ReadBackend, ReadOp};
    ///
    /// let mem: Vec<u8> = (0..32).collect();
    /// let mut backend = MemoryBackend::new(&mem, Geometry::new(None, 32, 8)?);
    /// let (mut a, mut b) = ([0u8; 2], [0u8; 3]);
    /// let mut ops = [ReadOp::new(4, &mut a, 7), ReadOp::new(20, &mut b, 9)];
    /// let mut seen = Vec::new();
    /// let n = backend.read_batch_in_order(&mut ops, |op, r| seen.push((r.tag, op.buf.to_vec())));
    /// assert_eq!(n, 2);
    /// assert_eq!(seen, [(7, vec![4, 5]), (9, vec![20, 21, 22])]);
    /// # Ok::<(), batch_reader::GeometryError>(())
    /// ```
    fn read_batch_in_order<R: FnMut(&ReadOp<'_>, Report)>(
        &mut self,
        ops: &mut [ReadOp<'_>],
        mut report: R,
    ) -> usize {
        let mut n = 0;
        for op in ops.iter_mut() {
            let mut got = None;
            if self.read_batch(core::slice::from_mut(op), |r| got = Some(r)) == 0 {
                break;
            }
            let r = got.unwrap_or(Report::failed(op.tag, 0, ReadErrorKind::Incomplete));
            report(op, r);
            n += 1;
        }
        n
    }

    /// Whether [`read_scattered`](ReadBackend::read_scattered) reads
    /// straight into the parts (a vectored system call, a copy per part).
    /// When it does, and the coalescing gap is 0, the reader sends merged
    /// reads there instead of reading them into scratch space and copying.
    /// The default is `false`.
    ///
    /// # Examples
    ///
    /// ```
    /// use batch_reader::{backends::MemoryBackend, Geometry, ReadBackend};
    ///
    /// let mut backend = MemoryBackend::new(&[], Geometry::new(None, 16, 1)?);
    /// assert!(backend.scatters());
    /// backend.set_scatter(false);
    /// assert!(!backend.scatters());
    /// # Ok::<(), batch_reader::GeometryError>(())
    /// ```
    fn scatters(&self) -> bool {
        false
    }

    /// Like [`read_batch`](ReadBackend::read_batch), for ops whose bytes go
    /// into several buffers: performs a prefix of `ops`, reports each exactly
    /// once (`valid` counts bytes across the parts, in order) and returns how
    /// many it performed. The same geometry applies to each op as a whole.
    ///
    /// The default reads each part with `read_batch`, stopping an op at its
    /// first part that fails.
    ///
    /// # Examples
    ///
    /// One op reading 5 bytes at address 4 into two buffers; a fault at
    /// address 7 stops it after 3 bytes:
    ///
    /// ```
    /// use batch_reader::{backends::{Faulty, MemoryBackend}, Geometry, ReadBackend, ReadErrorKind, Report, ScatterOp};
    ///
    /// let mem: Vec<u8> = (0..16).collect();
    /// let mut backend = Faulty::new(MemoryBackend::new(&mem, Geometry::new(None, 16, 4)?));
    /// backend.inject_fault(7..8, ReadErrorKind::Io)?;
    /// let (mut a, mut b) = ([0u8; 2], [0u8; 3]);
    /// let mut parts: [&mut [u8]; 2] = [&mut a, &mut b];
    /// let mut ops = [ScatterOp { addr: 4, parts: &mut parts, tag: 1 }];
    /// let mut got = None;
    /// assert_eq!(backend.read_scattered(&mut ops, |r| got = Some(r)), 1);
    /// assert_eq!(got, Some(Report::failed(1, 3, ReadErrorKind::Io)));
    /// assert_eq!((a, b[0]), ([4, 5], 6));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn read_scattered<R: FnMut(Report)>(
        &mut self,
        ops: &mut [ScatterOp<'_, '_>],
        mut report: R,
    ) -> usize {
        let n = ops.len().min(self.geometry().max_ops());
        for op in &mut ops[..n] {
            let mut addr = op.addr;
            let mut valid = 0;
            let mut error = None;
            for part in op.parts.iter_mut() {
                let len = part.len();
                let mut one = [ReadOp::new(addr, part, 0)];
                let mut got = None;
                if self.read_batch(&mut one, |r| got = Some((r.valid, r.error))) == 0 {
                    got = Some((0, Some(ReadErrorKind::Rejected)));
                }
                let (v, e) = got.unwrap_or((0, Some(ReadErrorKind::Incomplete)));
                valid += v.min(len);
                if v < len {
                    error = Some(e.unwrap_or(ReadErrorKind::Incomplete));
                    break;
                }
                addr = addr.wrapping_add(len as u64);
            }
            report(Report {
                tag: op.tag,
                valid,
                error,
            });
        }
        n
    }
}

/// A source that reads one op at a time: a positioned read of a buffer
/// (a file, a flash chip, a byte slice). Implementing it makes a
/// [`ReadBackend`] that performs each op of a batch in turn and
/// [reports in order](ReadBackend::reports_in_order), taking up to
/// `max_ops` ops per call; the in-order logic is written once, here.
///
/// # Examples
///
/// ```
/// use batch_reader::{Geometry, PartialRead, ReadAt, ReadErrorKind, ReadOp, Reader};
///
/// /// Every byte reads as its address's low byte; nothing past 1 MiB.
/// struct Counting;
///
/// impl ReadAt for Counting {
///     fn geometry(&self) -> Geometry {
///         Geometry::new(None, 4096, 8).unwrap()
///     }
///     fn read_at(&mut self, addr: u64, buf: &mut [u8]) -> Result<(), PartialRead> {
///         for (i, b) in buf.iter_mut().enumerate() {
///             let a = addr + i as u64;
///             if a >= 1 << 20 {
///                 return Err(PartialRead { valid: i, kind: ReadErrorKind::OutOfBounds });
///             }
///             *b = a as u8;
///         }
///         Ok(())
///     }
/// }
///
/// let mut reader: Reader<_, _> = Reader::new(Counting, [0u8; 0]);
/// let (mut a, mut b) = ([0u8; 2], [0u8; 4]);
/// let mut ops = [ReadOp::new(0x10, &mut a, 0), ReadOp::new((1 << 20) - 2, &mut b, 1)];
/// let mut got = Vec::new();
/// reader.read_many(&mut ops, |c| got.push((c.tag(), c.first_error())));
/// let past = PartialRead { valid: 2, kind: ReadErrorKind::OutOfBounds };
/// assert_eq!(got, [(0, None), (1, Some(past))]);
/// assert_eq!((a, b[..2].to_vec()), ([0x10, 0x11], vec![0xfe, 0xff]));
/// ```
pub trait ReadAt {
    /// The limits this source declares.
    ///
    /// # Examples
    ///
    /// ```
    /// use batch_reader::{backends::MemoryBackend, Geometry, ReadAt};
    ///
    /// let g = Geometry::new(Some(512), 4096, 32)?;
    /// assert_eq!(ReadAt::geometry(&MemoryBackend::new(&[], g)), g);
    /// # Ok::<(), batch_reader::GeometryError>(())
    /// ```
    fn geometry(&self) -> Geometry;

    /// Fills `buf` with the bytes at `addr`, or says where it stopped: a
    /// read stops at its first failing byte.
    ///
    /// # Errors
    ///
    /// A [`PartialRead`]: the bytes before `valid` were read, the one at
    /// `valid` failed with `kind`.
    ///
    /// # Examples
    ///
    /// ```
    /// use batch_reader::{backends::MemoryBackend, Geometry, PartialRead, ReadAt, ReadErrorKind};
    ///
    /// let mem = [7u8; 6];
    /// let mut backend = MemoryBackend::new(&mem, Geometry::new(None, 16, 4)?);
    /// let mut buf = [0u8; 8];
    /// let past = PartialRead { valid: 6, kind: ReadErrorKind::OutOfBounds };
    /// assert_eq!(backend.read_at(0, &mut buf), Err(past));
    /// assert_eq!(backend.read_at(2, &mut buf[..4]), Ok(()));
    /// # Ok::<(), batch_reader::GeometryError>(())
    /// ```
    fn read_at(&mut self, addr: u64, buf: &mut [u8]) -> Result<(), PartialRead>;

    /// Whether [`read_parts_at`](ReadAt::read_parts_at) reads straight into
    /// the parts (see [`ReadBackend::scatters`]). The default is `false`.
    ///
    /// # Examples
    ///
    /// ```
    /// use batch_reader::{backends::MemoryBackend, Geometry, ReadAt};
    ///
    /// let mut backend = MemoryBackend::new(&[], Geometry::new(None, 16, 1)?);
    /// assert!(ReadAt::scatters(&backend));
    /// backend.set_scatter(false);
    /// assert!(!ReadAt::scatters(&backend));
    /// # Ok::<(), batch_reader::GeometryError>(())
    /// ```
    fn scatters(&self) -> bool {
        false
    }

    /// Fills `parts`, in order, with the consecutive bytes from `addr`, or
    /// says where it stopped (`valid` counts bytes across the parts). The
    /// default reads each part with [`read_at`](ReadAt::read_at), stopping
    /// at the first that fails.
    ///
    /// # Errors
    ///
    /// A [`PartialRead`], as for [`read_at`](ReadAt::read_at).
    ///
    /// # Examples
    ///
    /// ```
    /// use batch_reader::{backends::MemoryBackend, Geometry, PartialRead, ReadAt, ReadErrorKind};
    ///
    /// let mem: Vec<u8> = (0..10).collect();
    /// let mut backend = MemoryBackend::new(&mem, Geometry::new(None, 16, 4)?);
    /// let (mut a, mut b) = ([0u8; 2], [0u8; 3]);
    /// assert_eq!(backend.read_parts_at(4, &mut [&mut a, &mut b]), Ok(()));
    /// assert_eq!((a, b), ([4, 5], [6, 7, 8]));
    /// let past = PartialRead { valid: 4, kind: ReadErrorKind::OutOfBounds };
    /// assert_eq!(backend.read_parts_at(6, &mut [&mut a, &mut b]), Err(past));
    /// # Ok::<(), batch_reader::GeometryError>(())
    /// ```
    fn read_parts_at(&mut self, addr: u64, parts: &mut [&mut [u8]]) -> Result<(), PartialRead> {
        let mut at = addr;
        let mut valid = 0usize;
        for part in parts.iter_mut() {
            if let Err(failed) = self.read_at(at, part) {
                return Err(PartialRead {
                    valid: valid.saturating_add(failed.valid),
                    kind: failed.kind,
                });
            }
            valid = valid.saturating_add(part.len());
            at = at.wrapping_add(part.len() as u64);
        }
        Ok(())
    }

    /// Reads each of `ops` with [`read_at`](ReadAt::read_at), in order,
    /// and hands it to `report` with its report right after. The blanket
    /// [`ReadBackend`] impl calls it with at most `max_ops` ops.
    ///
    /// A source whose reads depend on a few fields can override it to
    /// call [`read_each_at`] on a copy of itself: the reads store into the
    /// callers' buffers, which the compiler cannot tell from the source's
    /// own fields, so it reloads them after every op unless they are in a
    /// local copy.
    ///
    /// # Examples
    ///
    /// ```
    /// use batch_reader::{backends::MemoryBackend, Geometry, ReadAt, ReadOp};
    ///
    /// let mem: Vec<u8> = (0..16).collect();
    /// let mut backend = MemoryBackend::new(&mem, Geometry::new(None, 16, 4)?);
    /// let (mut a, mut b) = ([0u8; 2], [0u8; 2]);
    /// let mut ops = [ReadOp::new(1, &mut a, 0), ReadOp::new(9, &mut b, 1)];
    /// let mut tags = Vec::new();
    /// backend.read_each(&mut ops, |op, r| tags.push((op.tag, r.valid)));
    /// assert_eq!(tags, [(0, 2), (1, 2)]);
    /// assert_eq!((a, b), ([1, 2], [9, 10]));
    /// # Ok::<(), batch_reader::GeometryError>(())
    /// ```
    #[inline(always)]
    fn read_each<R: FnMut(&ReadOp<'_>, Report)>(&mut self, ops: &mut [ReadOp<'_>], report: R) {
        read_each_at(self, ops, report);
    }
}

/// [`ReadAt::read_each`]'s default: each of `ops` read from `source` with
/// [`read_at`](ReadAt::read_at), in order, and handed to `report` with its
/// report right after.
///
/// # Examples
///
/// ```
/// use batch_reader::{backends::MemoryBackend, read_each_at, Geometry, ReadOp};
///
/// let mem = [4u8; 8];
/// let mut backend = MemoryBackend::new(&mem, Geometry::new(None, 8, 4)?);
/// let mut buf = [0u8; 3];
/// let mut valid = 0;
/// read_each_at(&mut backend, &mut [ReadOp::new(6, &mut buf, 0)], |_, r| valid = r.valid);
/// assert_eq!((valid, buf), (2, [4, 4, 0]));
/// # Ok::<(), batch_reader::GeometryError>(())
/// ```
#[inline(always)]
pub fn read_each_at<T: ReadAt + ?Sized, R: FnMut(&ReadOp<'_>, Report)>(
    source: &mut T,
    ops: &mut [ReadOp<'_>],
    mut report: R,
) {
    for op in ops {
        read_and_report(source, op, &mut report);
    }
}

/// The report of `op` from what its read returned.
#[inline(always)]
fn report_of(tag: usize, len: usize, result: Result<(), PartialRead>) -> Report {
    match result {
        Ok(()) => Report::ok(tag, len),
        Err(failed) => Report::failed(tag, failed.valid.min(len), failed.kind),
    }
}

/// Reads `op` and reports it. A whole read reports on its own path, so that
/// no constant of its report is merged with a failed one's.
#[inline(always)]
fn read_and_report<T: ReadAt + ?Sized, R: FnMut(&ReadOp<'_>, Report)>(
    source: &mut T,
    op: &mut ReadOp<'_>,
    report: &mut R,
) {
    match source.read_at(op.addr, op.buf) {
        Ok(()) => {
            let r = Report::ok(op.tag, op.buf.len());
            report(op, r);
        }
        Err(failed) => {
            let r = Report::failed(op.tag, failed.valid.min(op.buf.len()), failed.kind);
            report(op, r);
        }
    }
}

impl<T: ReadAt> ReadBackend for T {
    #[inline]
    fn geometry(&self) -> Geometry {
        ReadAt::geometry(self)
    }

    #[inline(always)]
    fn read_batch<R: FnMut(Report)>(&mut self, ops: &mut [ReadOp<'_>], mut report: R) -> usize {
        self.read_batch_in_order(ops, |_, r| report(r))
    }

    #[inline]
    fn reports_in_order(&self) -> bool {
        true
    }

    #[inline(always)]
    fn read_batch_in_order<R: FnMut(&ReadOp<'_>, Report)>(
        &mut self,
        ops: &mut [ReadOp<'_>],
        mut report: R,
    ) -> usize {
        if let [op] = ops {
            // A batch of one, as a reader's single read makes it: the same
            // step without the loop, which the compiler does not always see
            // through for a length it knows. (`max_ops` is never 0.)
            read_and_report(self, op, &mut report);
            return 1;
        }
        let n = ops.len().min(ReadAt::geometry(self).max_ops());
        let Some(ops) = ops.get_mut(..n) else {
            return 0;
        };
        self.read_each(ops, report);
        n
    }

    #[inline]
    fn scatters(&self) -> bool {
        ReadAt::scatters(self)
    }

    fn read_scattered<R: FnMut(Report)>(
        &mut self,
        ops: &mut [ScatterOp<'_, '_>],
        mut report: R,
    ) -> usize {
        let n = ops.len().min(ReadAt::geometry(self).max_ops());
        let Some(ops) = ops.get_mut(..n) else {
            return 0;
        };
        for op in ops {
            let len = op.len();
            let r = report_of(op.tag, len, self.read_parts_at(op.addr, op.parts));
            report(r);
        }
        n
    }
}

impl<T: ReadAt + ?Sized> ReadAt for &mut T {
    #[inline]
    fn geometry(&self) -> Geometry {
        (**self).geometry()
    }

    #[inline]
    fn read_at(&mut self, addr: u64, buf: &mut [u8]) -> Result<(), PartialRead> {
        (**self).read_at(addr, buf)
    }

    #[inline]
    fn scatters(&self) -> bool {
        (**self).scatters()
    }

    #[inline]
    fn read_parts_at(&mut self, addr: u64, parts: &mut [&mut [u8]]) -> Result<(), PartialRead> {
        (**self).read_parts_at(addr, parts)
    }

    #[inline(always)]
    fn read_each<R: FnMut(&ReadOp<'_>, Report)>(&mut self, ops: &mut [ReadOp<'_>], report: R) {
        (**self).read_each(ops, report);
    }
}
