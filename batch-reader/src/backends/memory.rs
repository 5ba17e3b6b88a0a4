//! [`MemoryBackend`]: a byte slice with injectable faults.

use core::ops::Range;

use crate::{FaultMapError, Geometry, ReadBackend, ReadErrorKind, ReadOp, Report, ScatterOp};

/// A range of addresses that fails with `kind`.
///
/// # Examples
///
/// ```
/// use batch_reader::{backends::{Fault, MemoryBackend}, Geometry, ReadErrorKind};
///
/// let mut backend = MemoryBackend::new(&[], Geometry::new(None, 16, 1)?);
/// backend.inject_fault(8..16, ReadErrorKind::Unmapped)?;
/// assert_eq!(backend.faults(), [Fault { range: 8..16, kind: ReadErrorKind::Unmapped }]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fault {
    /// The failing addresses.
    pub range: Range<u64>,
    /// How they fail.
    pub kind: ReadErrorKind,
}

/// Reads from a byte slice mapped at `base`, with up to `K` injected faults.
///
/// A read copies bytes until its first byte that is faulted or outside the
/// slice, and fails from there with that fault's kind (or
/// [`OutOfBounds`](ReadErrorKind::OutOfBounds)). So a byte reads the same alone
/// or inside any larger read, as the [`ReadBackend`] contract asks.
///
/// [`set_accept_limit`](MemoryBackend::set_accept_limit) makes it accept fewer
/// ops per call than its geometry says, to exercise backpressure. It
/// [scatters](ReadBackend::scatters) merged reads straight into the callers'
/// buffers unless [`set_scatter(false)`](MemoryBackend::set_scatter) sends
/// them through the reader's scratch space instead.
///
/// # Examples
///
/// ```
/// use batch_reader::{backends::MemoryBackend, Geometry, ReadBackend, ReadErrorKind, ReadOp, Report};
///
/// let mem = [5u8; 32];
/// let mut b = MemoryBackend::new(&mem, Geometry::new(Some(16), 16, 4)?);
/// b.inject_fault(20..24, ReadErrorKind::Io)?;
/// let mut buf = [0u8; 8];
/// let mut ops = [ReadOp::new(16, &mut buf, 3)];
/// let mut got = None;
/// b.read_batch(&mut ops, |r| got = Some(r));
/// assert_eq!(got, Some(Report::failed(3, 4, ReadErrorKind::Io)));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct MemoryBackend<'m, const K: usize = 8> {
    mem: &'m [u8],
    base: u64,
    geometry: Geometry,
    faults: heapless::Vec<Fault, K>,
    /// The most ops one call takes: `max_ops`, or the accept limit if lower,
    /// kept as one number so that a call tests one.
    take: usize,
    scatter: bool,
}

impl<'m> MemoryBackend<'m> {
    /// `mem` mapped at address 0, declaring `geometry`, with room for 8
    /// faults.
    ///
    /// # Examples
    ///
    /// ```
    /// use batch_reader::{backends::MemoryBackend, FaultMapError, Geometry, ReadErrorKind, Reader};
    ///
    /// let mem = [1u8, 2, 3, 4];
    /// let mut backend = MemoryBackend::new(&mem, Geometry::new(None, 16, 4)?);
    /// for a in 0..8 {
    ///     backend.inject_fault(100 + a..101 + a, ReadErrorKind::Io)?;
    /// }
    /// let full = backend.inject_fault(0..1, ReadErrorKind::Io);
    /// assert_eq!(full, Err(FaultMapError::Full { capacity: 8 }));
    /// let mut reader: Reader<_, _> = Reader::new(backend, [0u8; 0]);
    /// assert_eq!(reader.read_val::<u8>(2), Ok(3));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new(mem: &'m [u8], geometry: Geometry) -> Self {
        Self::mapped_at(mem, 0, geometry)
    }

    /// `mem` mapped at address `base`, declaring `geometry`, with room for 8
    /// faults.
    ///
    /// # Examples
    ///
    /// ```
    /// use batch_reader::{backends::MemoryBackend, Geometry, ReadErrorKind, Reader};
    ///
    /// let mem = [1u8, 2, 3, 4];
    /// let backend = MemoryBackend::with_base(&mem, 0x1000, Geometry::new(None, 16, 4)?);
    /// let mut reader: Reader<_, _> = Reader::new(backend, [0u8; 0]);
    /// assert_eq!(reader.read_val::<u8>(0x1002), Ok(3));
    /// assert_eq!(reader.read_val::<u8>(2), Err(ReadErrorKind::OutOfBounds));
    /// # Ok::<(), batch_reader::GeometryError>(())
    /// ```
    pub fn with_base(mem: &'m [u8], base: u64, geometry: Geometry) -> Self {
        Self::mapped_at(mem, base, geometry)
    }
}

impl<'m, const K: usize> MemoryBackend<'m, K> {
    /// `mem` mapped at address `base`, declaring `geometry`, with room for
    /// `K` faults.
    ///
    /// # Examples
    ///
    /// ```
    /// use batch_reader::{backends::MemoryBackend, Geometry};
    ///
    /// let mem = [0u8; 16];
    /// let b = MemoryBackend::<'_, 32>::mapped_at(&mem, 0x1000, Geometry::new(None, 16, 1)?);
    /// assert!(b.faults().is_empty());
    /// # Ok::<(), batch_reader::GeometryError>(())
    /// ```
    pub fn mapped_at(mem: &'m [u8], base: u64, geometry: Geometry) -> Self {
        Self {
            mem,
            base,
            geometry,
            faults: heapless::Vec::new(),
            take: geometry.max_ops(),
            scatter: true,
        }
    }

    /// Makes reads of `range` fail with `kind`.
    ///
    /// # Errors
    ///
    /// [`FaultMapError::Full`] if `K` faults are already injected.
    ///
    /// # Examples
    ///
    /// ```
    /// use batch_reader::{backends::MemoryBackend, FaultMapError, Geometry, ReadErrorKind, Reader};
    ///
    /// let mem = [0u8; 16];
    /// let mut backend = MemoryBackend::<'_, 1>::mapped_at(&mem, 0, Geometry::new(None, 16, 4)?);
    /// backend.inject_fault(8..12, ReadErrorKind::PermissionDenied)?;
    /// let full = backend.inject_fault(0..1, ReadErrorKind::Io);
    /// assert_eq!(full, Err(FaultMapError::Full { capacity: 1 }));
    /// let mut reader: Reader<_, _> = Reader::new(backend, [0u8; 0]);
    /// let s = reader.read_buf(4, &mut [0u8; 8]);
    /// assert_eq!(s.first_error(), Some((4, ReadErrorKind::PermissionDenied)));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn inject_fault(
        &mut self,
        range: Range<u64>,
        kind: ReadErrorKind,
    ) -> Result<(), FaultMapError> {
        self.faults
            .push(Fault { range, kind })
            .map_err(|_| FaultMapError::Full { capacity: K })
    }

    /// Removes every fault.
    ///
    /// # Examples
    ///
    /// ```
    /// use batch_reader::{backends::MemoryBackend, Geometry, ReadErrorKind, Reader};
    ///
    /// let mem = [7u8; 16];
    /// let mut backend = MemoryBackend::new(&mem, Geometry::new(None, 16, 4)?);
    /// backend.inject_fault(0..16, ReadErrorKind::Io)?;
    /// let mut reader: Reader<_, _> = Reader::new(backend, [0u8; 0]);
    /// assert_eq!(reader.read_val::<u8>(3), Err(ReadErrorKind::Io));
    /// reader.backend_mut().clear_faults();
    /// assert_eq!(reader.read_val::<u8>(3), Ok(7));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn clear_faults(&mut self) {
        self.faults.clear();
    }

    /// The injected faults, in the order they were injected.
    ///
    /// # Examples
    ///
    /// ```
    /// use batch_reader::{backends::MemoryBackend, Geometry, ReadErrorKind};
    ///
    /// let mut backend = MemoryBackend::new(&[], Geometry::new(None, 16, 1)?);
    /// backend.inject_fault(32..48, ReadErrorKind::Unmapped)?;
    /// backend.inject_fault(0..4, ReadErrorKind::Io)?;
    /// let ranges: Vec<_> = backend.faults().iter().map(|f| f.range.clone()).collect();
    /// assert_eq!(ranges, [32..48, 0..4]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn faults(&self) -> &[Fault] {
        &self.faults
    }

    /// Accepts at most `limit` ops per call (0: accepts none).
    ///
    /// # Examples
    ///
    /// The reader resubmits what the backend did not accept, so three ops
    /// take three calls with a limit of 1:
    ///
    /// ```
    /// use batch_reader::{backends::MemoryBackend, Geometry, ReadOp, Reader};
    ///
    /// let mem = [5u8; 64];
    /// let mut backend = MemoryBackend::new(&mem, Geometry::new(None, 64, 8)?);
    /// backend.set_accept_limit(1);
    /// let mut reader: Reader<_, _> = Reader::new(backend, [0u8; 0]);
    /// let mut bufs = [[0u8; 4]; 3];
    /// let [a, b, c] = &mut bufs;
    /// let mut ops = [ReadOp::new(0, a, 0), ReadOp::new(16, b, 1), ReadOp::new(32, c, 2)];
    /// reader.read_many(&mut ops, |done| assert!(done.is_ok()));
    /// assert_eq!(reader.counters().backend_calls, 3);
    /// assert_eq!(bufs, [[5; 4]; 3]);
    /// # Ok::<(), batch_reader::GeometryError>(())
    /// ```
    pub fn set_accept_limit(&mut self, limit: usize) {
        self.take = limit.min(self.geometry.max_ops());
    }

    /// Whether merged reads are scattered straight into the callers'
    /// buffers (the default) or read through the reader's scratch space.
    ///
    /// # Examples
    ///
    /// Without scattering, adjacent ops merge only as far as the reader's
    /// scratch space allows; with none, they do not merge at all.
    ///
    /// ```
    /// use batch_reader::{backends::MemoryBackend, Geometry, ReadOp, Reader};
    ///
    /// let mem = [1u8; 16];
    /// let mut backend = MemoryBackend::new(&mem, Geometry::new(None, 16, 8)?);
    /// backend.set_scatter(false);
    /// let mut reader: Reader<_, _> = Reader::new(backend, [0u8; 0]);
    /// let (mut a, mut b) = ([0u8; 4], [0u8; 4]);
    /// reader.read_many(&mut [ReadOp::new(0, &mut a, 0), ReadOp::new(4, &mut b, 1)], |_| {});
    /// assert_eq!((reader.counters().backend_ops, reader.counters().merged_reads), (2, 0));
    ///
    /// reader.backend_mut().set_scatter(true);
    /// reader.reset_counters();
    /// reader.read_many(&mut [ReadOp::new(0, &mut a, 0), ReadOp::new(4, &mut b, 1)], |_| {});
    /// assert_eq!((reader.counters().backend_ops, reader.counters().merged_reads), (1, 1));
    /// # Ok::<(), batch_reader::GeometryError>(())
    /// ```
    pub fn set_scatter(&mut self, scatter: bool) {
        self.scatter = scatter;
    }

    /// For a read of `want` bytes at `addr`: how many can be read, why the
    /// rest cannot, and where the readable bytes start in `mem`.
    fn limit(&self, addr: u64, want: usize) -> (usize, Option<ReadErrorKind>, usize) {
        let offset = addr.wrapping_sub(self.base);
        let available = if addr < self.base || offset >= self.mem.len() as u64 {
            0
        } else {
            self.mem.len() - offset as usize
        };
        let (mut valid, mut error) = if available < want {
            (available, Some(ReadErrorKind::OutOfBounds))
        } else {
            (want, None)
        };
        let end = addr.saturating_add(valid as u64);
        for f in &self.faults {
            if f.range.start < end && f.range.end > addr {
                let at = (f.range.start.max(addr) - addr) as usize;
                if at < valid {
                    valid = at;
                    error = Some(f.kind);
                }
            }
        }
        (valid, error, offset as usize)
    }

    /// Reads `buf.len()` bytes at `addr`, stopping at the first faulted or
    /// missing byte: how many were read, and why the rest failed.
    #[inline(never)]
    fn read_limited(&self, addr: u64, buf: &mut [u8]) -> (usize, Option<ReadErrorKind>) {
        let (valid, error, start) = self.limit(addr, buf.len());
        if valid > 0 {
            copy(&mut buf[..valid], &self.mem[start..start + valid]);
        }
        (valid, error)
    }
}

/// The bytes of a read of `len` at `addr` from `mem` mapped at `base`, if
/// there are no faults (`clean`) and the read lies wholly inside `mem`.
#[inline(always)]
fn whole(mem: &[u8], base: u64, clean: bool, addr: u64, len: usize) -> Option<&[u8]> {
    if !clean {
        return None;
    }
    // `addr < base` wraps to an offset past any slice.
    let offset = usize::try_from(addr.wrapping_sub(base)).ok()?;
    mem.get(offset..)?.get(..len)
}

/// `dst.copy_from_slice(src)`, without a call into `memcpy` for the short
/// reads (a field, a pointer) that make up most small-op batches.
#[inline(always)]
fn copy(dst: &mut [u8], src: &[u8]) {
    let n = dst.len();
    if n != src.len() {
        return;
    }
    if n == 8 {
        // A pointer or a `u64`, the commonest small read: one move.
        write8(dst, 0, read8(src, 0));
    } else if (8..=16).contains(&n) {
        // Two overlapping 8-byte moves cover 8 to 16 bytes.
        let (head, tail) = (read8(src, 0), read8(src, n - 8));
        write8(dst, n - 8, tail);
        write8(dst, 0, head);
    } else if (4..8).contains(&n) {
        let (head, tail) = (read4(src, 0), read4(src, n - 4));
        write4(dst, n - 4, tail);
        write4(dst, 0, head);
    } else {
        dst.copy_from_slice(src);
    }
}

#[inline(always)]
fn read8(s: &[u8], at: usize) -> [u8; 8] {
    s.get(at..at + 8)
        .and_then(|b| b.try_into().ok())
        .unwrap_or_default()
}

#[inline(always)]
fn write8(d: &mut [u8], at: usize, v: [u8; 8]) {
    if let Some(b) = d.get_mut(at..at + 8) {
        b.copy_from_slice(&v);
    }
}

#[inline(always)]
fn read4(s: &[u8], at: usize) -> [u8; 4] {
    s.get(at..at + 4)
        .and_then(|b| b.try_into().ok())
        .unwrap_or_default()
}

impl<const K: usize> MemoryBackend<'_, K> {
    /// Reads one op of a batch into its buffer and returns its report.
    /// `mem` and `base` are this backend's, and `clean` tells that no fault
    /// is injected.
    #[inline(always)]
    fn read_op(&self, (mem, base, clean): (&[u8], u64, bool), op: &mut ReadOp<'_>) -> Report {
        let (valid, error) = match whole(mem, base, clean, op.addr, op.buf.len()) {
            Some(src) => {
                copy(op.buf, src);
                (src.len(), None)
            }
            None => self.read_limited(op.addr, op.buf),
        };
        Report {
            tag: op.tag,
            valid,
            error,
        }
    }

    /// Performs a prefix of `ops` (as many as the backend takes), each op
    /// reported right after it is read, in order, with the op itself: both
    /// `read_batch` and `read_batch_in_order`.
    #[inline(always)]
    fn read_each<R: FnMut(&ReadOp<'_>, Report)>(
        &mut self,
        ops: &mut [ReadOp<'_>],
        mut report: R,
    ) -> usize {
        if let [op] = ops {
            // A batch of one, as a reader's single read makes it: the same
            // step without the loop, which the compiler does not always see
            // through for a length it knows.
            if self.take == 0 {
                return 0;
            }
            let r = self.read_op((self.mem, self.base, self.faults.is_empty()), op);
            report(op, r);
            return 1;
        }
        let n = ops.len().min(self.take);
        let ops = &mut ops[..n];
        if self.faults.is_empty() {
            // The loop for a backend without faults, its test made once:
            // most batches are read from clean memory. `mem` and `base` are
            // kept local, as the loop writes through `report` and the
            // buffers.
            let (mem, base) = (self.mem, self.base);
            for op in ops {
                // The read that lies wholly inside `mem` reports on its own
                // path, so that no constant is merged with the other's.
                if let Some(src) = whole(mem, base, true, op.addr, op.buf.len()) {
                    copy(op.buf, src);
                    let r = Report::ok(op.tag, src.len());
                    report(op, r);
                } else {
                    let r = self.read_op((mem, base, false), op);
                    report(op, r);
                }
            }
        } else {
            for op in ops {
                let r = self.read_op((self.mem, self.base, false), op);
                report(op, r);
            }
        }
        n
    }
}

#[inline(always)]
fn write4(d: &mut [u8], at: usize, v: [u8; 4]) {
    if let Some(b) = d.get_mut(at..at + 4) {
        b.copy_from_slice(&v);
    }
}

impl<const K: usize> ReadBackend for MemoryBackend<'_, K> {
    #[inline]
    fn geometry(&self) -> Geometry {
        self.geometry
    }

    #[inline(always)]
    fn read_batch<R: FnMut(Report)>(&mut self, ops: &mut [ReadOp<'_>], mut report: R) -> usize {
        self.read_each(ops, |_, r| report(r))
    }

    #[inline]
    fn reports_in_order(&self) -> bool {
        true
    }

    #[inline(always)]
    fn read_batch_in_order<R: FnMut(&ReadOp<'_>, Report)>(
        &mut self,
        ops: &mut [ReadOp<'_>],
        report: R,
    ) -> usize {
        self.read_each(ops, report)
    }

    fn scatters(&self) -> bool {
        self.scatter
    }

    fn read_scattered<R: FnMut(Report)>(
        &mut self,
        ops: &mut [ScatterOp<'_, '_>],
        mut report: R,
    ) -> usize {
        let n = ops.len().min(self.take);
        for op in &mut ops[..n] {
            let (valid, error, start) = self.limit(op.addr, op.len());
            let mut src = &self.mem[start.min(self.mem.len())..];
            let mut left = valid;
            for part in op.parts.iter_mut() {
                let k = left.min(part.len());
                if k == 0 {
                    break;
                }
                part[..k].copy_from_slice(&src[..k]);
                src = &src[k..];
                left -= k;
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

#[cfg(test)]
mod tests {
    use super::*;

    fn geometry() -> Geometry {
        match Geometry::new(Some(16), 16, 4) {
            Ok(g) => g,
            Err(e) => panic!("{e}"),
        }
    }

    fn read(b: &mut MemoryBackend<'_, 4>, addr: u64, len: usize) -> (Report, [u8; 32]) {
        let mut buf = [0u8; 32];
        let mut ops = [ReadOp::new(addr, &mut buf[..len], 1)];
        let mut got = None;
        assert_eq!(b.read_batch(&mut ops, |r| got = Some(r)), 1);
        (got.expect("one report"), buf)
    }

    #[test]
    fn reads_stop_at_the_first_fault_or_the_end() {
        let mem: [u8; 40] = core::array::from_fn(|i| i as u8);
        let mut b = MemoryBackend::<'_, 4>::mapped_at(&mem, 100, geometry());
        assert_eq!(read(&mut b, 100, 8).0, Report::ok(1, 8));
        assert_eq!(
            read(&mut b, 130, 16).0,
            Report::failed(1, 10, ReadErrorKind::OutOfBounds)
        );
        assert_eq!(
            read(&mut b, 99, 4).0,
            Report::failed(1, 0, ReadErrorKind::OutOfBounds)
        );
        b.inject_fault(104..106, ReadErrorKind::Unmapped).unwrap();
        let (r, buf) = read(&mut b, 101, 8);
        assert_eq!(r, Report::failed(1, 3, ReadErrorKind::Unmapped));
        assert_eq!(&buf[..3], &[1, 2, 3]);
        assert_eq!(
            read(&mut b, 105, 4).0,
            Report::failed(1, 0, ReadErrorKind::Unmapped)
        );
        assert_eq!(read(&mut b, 106, 4).0, Report::ok(1, 4));
        // The first failing byte decides the kind, fault or end.
        b.inject_fault(138..200, ReadErrorKind::Io).unwrap();
        assert_eq!(
            read(&mut b, 136, 8).0,
            Report::failed(1, 2, ReadErrorKind::Io)
        );
        assert_eq!(
            read(&mut b, u64::MAX - 2, 8).0,
            Report::failed(1, 0, ReadErrorKind::OutOfBounds)
        );
    }

    #[test]
    fn fault_map_full_is_an_error() {
        let mem = [0u8; 4];
        let mut b = MemoryBackend::<'_, 1>::mapped_at(&mem, 0, geometry());
        assert_eq!(b.inject_fault(0..1, ReadErrorKind::Io), Ok(()));
        assert_eq!(
            b.inject_fault(1..2, ReadErrorKind::Io),
            Err(FaultMapError::Full { capacity: 1 })
        );
        b.clear_faults();
        assert!(b.faults().is_empty());
    }

    #[test]
    fn accepts_at_most_max_ops_and_the_limit() {
        let mem = [0u8; 64];
        let mut b = MemoryBackend::<'_, 1>::mapped_at(&mem, 0, geometry());
        let mut bufs = [[0u8; 1]; 6];
        let mut ops: heapless::Vec<ReadOp<'_>, 6> = bufs
            .iter_mut()
            .enumerate()
            .map(|(i, buf)| ReadOp::new(i as u64, buf, i))
            .collect();
        let mut seen = 0;
        assert_eq!(b.read_batch(&mut ops, |_| seen += 1), 4);
        assert_eq!(seen, 4);
        b.set_accept_limit(2);
        assert_eq!(b.read_batch(&mut ops, |_| seen += 1), 2);
        b.set_accept_limit(0);
        assert_eq!(b.read_batch(&mut ops, |_| seen += 1), 0);
        assert_eq!(seen, 6);
    }
}
