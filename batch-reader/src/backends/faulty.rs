//! [`Faulty`]: a test double that injects faults and backpressure into any
//! backend.

use core::ops::Range;

use crate::{FaultMapError, Geometry, ReadBackend, ReadErrorKind, ReadOp, Report, ScatterOp};

/// A range of addresses that fails with `kind`.
///
/// # Examples
///
/// ```
/// use batch_reader::backends::{Fault, Faulty, MemoryBackend};
/// use batch_reader::{Geometry, ReadErrorKind};
///
/// let mut backend = Faulty::new(MemoryBackend::new(&[], Geometry::new(None, 16, 1)?));
/// backend.inject_fault(8..16, ReadErrorKind::Unmapped)?;
/// assert_eq!(backend.faults(), [Fault { range: 8..16, kind: ReadErrorKind::Unmapped }]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fault {
    /// The failing addresses (never empty).
    pub range: Range<u64>,
    /// How they fail.
    pub kind: ReadErrorKind,
}

/// Any backend with up to `K` injected faults and a limit on the ops it
/// takes per call: the double that tests and benchmarks exercise a
/// reader's failure and backpressure paths with.
///
/// A read stops at its first faulted byte and fails from there with that
/// fault's kind (the inner backend is asked only for the bytes before
/// it), unless the inner backend stops it earlier. So, over a backend
/// whose faults do not depend on how reads are grouped, a byte reads the
/// same alone or inside any larger read, as the [`ReadBackend`] contract
/// asks. Without faults, each call goes to the inner backend as it is;
/// with faults, each op goes in a call of its own.
///
/// # Examples
///
/// ```
/// use batch_reader::backends::{Faulty, MemoryBackend};
/// use batch_reader::{Geometry, ReadBackend, ReadErrorKind, ReadOp, Report};
///
/// let mem = [5u8; 32];
/// let mut b = Faulty::new(MemoryBackend::new(&mem, Geometry::new(Some(16), 16, 4)?));
/// b.inject_fault(20..24, ReadErrorKind::Io)?;
/// let mut buf = [0u8; 8];
/// let mut ops = [ReadOp::new(16, &mut buf, 3)];
/// let mut got = None;
/// b.read_batch(&mut ops, |r| got = Some(r));
/// assert_eq!(got, Some(Report::failed(3, 4, ReadErrorKind::Io)));
/// assert_eq!(buf, [5, 5, 5, 5, 0, 0, 0, 0]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct Faulty<B, const K: usize = 8> {
    inner: B,
    faults: crate::stack::Stack<Fault, K>,
    /// The most ops one call takes (the inner backend may take fewer).
    accept: usize,
}

impl<B> Faulty<B> {
    /// `inner` with room for 8 faults, none injected, and no limit.
    ///
    /// # Examples
    ///
    /// ```
    /// use batch_reader::backends::{Faulty, MemoryBackend};
    /// use batch_reader::{FaultMapError, Geometry, ReadErrorKind, Reader};
    ///
    /// let mem = [1u8, 2, 3, 4];
    /// let mut backend = Faulty::new(MemoryBackend::new(&mem, Geometry::new(None, 16, 4)?));
    /// for a in 0..8 {
    ///     backend.inject_fault(100 + a..101 + a, ReadErrorKind::Io)?;
    /// }
    /// let full = backend.inject_fault(0..1, ReadErrorKind::Io);
    /// assert_eq!(full, Err(FaultMapError::Full { capacity: 8 }));
    /// let mut reader: Reader<_, _> = Reader::new(backend, [0u8; 0]);
    /// assert_eq!(reader.read_val::<u8>(2), Ok(3));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub const fn new(inner: B) -> Self {
        Self::with_room(inner)
    }
}

impl<B, const K: usize> Faulty<B, K> {
    /// `inner` with room for `K` faults, none injected, and no limit.
    ///
    /// # Examples
    ///
    /// ```
    /// use batch_reader::backends::{Faulty, MemoryBackend};
    /// use batch_reader::{FaultMapError, Geometry, ReadErrorKind};
    ///
    /// let mem = [0u8; 16];
    /// let inner = MemoryBackend::new(&mem, Geometry::new(None, 16, 1)?);
    /// let mut backend = Faulty::<_, 1>::with_room(inner);
    /// backend.inject_fault(0..4, ReadErrorKind::Io)?;
    /// assert_eq!(backend.inject_fault(8..9, ReadErrorKind::Io), Err(FaultMapError::Full { capacity: 1 }));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub const fn with_room(inner: B) -> Self {
        Self {
            inner,
            faults: crate::stack::Stack::new(),
            accept: usize::MAX,
        }
    }

    /// Makes reads of `range` fail with `kind`.
    ///
    /// # Errors
    ///
    /// [`FaultMapError::EmptyRange`] if `range` holds no address (`5..5`),
    /// [`FaultMapError::ReversedRange`] if it ends before it starts
    /// (`10..5`), [`FaultMapError::Full`] if `K` faults are already
    /// injected.
    ///
    /// # Examples
    ///
    /// ```
    /// use batch_reader::backends::{Faulty, MemoryBackend};
    /// use batch_reader::{FaultMapError, Geometry, PartialRead, ReadErrorKind, Reader};
    ///
    /// let mem = [0u8; 16];
    /// let mut backend = Faulty::new(MemoryBackend::new(&mem, Geometry::new(None, 16, 4)?));
    /// backend.inject_fault(8..12, ReadErrorKind::PermissionDenied)?;
    /// let reversed = backend.inject_fault(10..5, ReadErrorKind::Io);
    /// assert_eq!(reversed, Err(FaultMapError::ReversedRange { start: 10, end: 5 }));
    /// assert_eq!(backend.inject_fault(5..5, ReadErrorKind::Io), Err(FaultMapError::EmptyRange { at: 5 }));
    /// let mut reader: Reader<_, _> = Reader::new(backend, [0u8; 0]);
    /// let s = reader.read_buf(4, &mut [0u8; 8]);
    /// let denied = PartialRead { valid: 4, kind: ReadErrorKind::PermissionDenied };
    /// assert_eq!(s.first_error(), Some(denied));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn inject_fault(
        &mut self,
        range: Range<u64>,
        kind: ReadErrorKind,
    ) -> Result<(), FaultMapError> {
        let Range { start, end } = range;
        if start > end {
            return Err(FaultMapError::ReversedRange { start, end });
        }
        if start == end {
            return Err(FaultMapError::EmptyRange { at: start });
        }
        self.faults
            .push(Fault { range, kind })
            .map_err(|_| FaultMapError::Full { capacity: K })
    }

    /// Removes every fault.
    ///
    /// # Examples
    ///
    /// ```
    /// use batch_reader::backends::{Faulty, MemoryBackend};
    /// use batch_reader::{Geometry, ReadErrorKind, Reader};
    ///
    /// let mem = [7u8; 16];
    /// let mut backend = Faulty::new(MemoryBackend::new(&mem, Geometry::new(None, 16, 4)?));
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
    /// use batch_reader::backends::{Faulty, MemoryBackend};
    /// use batch_reader::{Geometry, ReadErrorKind};
    ///
    /// let mut backend = Faulty::new(MemoryBackend::new(&[], Geometry::new(None, 16, 1)?));
    /// backend.inject_fault(32..48, ReadErrorKind::Unmapped)?;
    /// backend.inject_fault(0..4, ReadErrorKind::Io)?;
    /// let ranges: Vec<_> = backend.faults().iter().map(|f| f.range.clone()).collect();
    /// assert_eq!(ranges, [32..48, 0..4]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn faults(&self) -> &[Fault] {
        &self.faults
    }

    /// Takes at most `limit` ops per call (0: none), so that the reader
    /// must resubmit the rest.
    ///
    /// # Examples
    ///
    /// Three ops take three calls with a limit of 1:
    ///
    /// ```
    /// use batch_reader::backends::{Faulty, MemoryBackend};
    /// use batch_reader::{Geometry, ReadOp, Reader};
    ///
    /// let mem = [5u8; 64];
    /// let mut backend = Faulty::new(MemoryBackend::new(&mem, Geometry::new(None, 64, 8)?));
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
        self.accept = limit;
    }

    /// The inner backend.
    ///
    /// # Examples
    ///
    /// ```
    /// use batch_reader::backends::{Faulty, MemoryBackend};
    /// use batch_reader::{Geometry, ReadBackend};
    ///
    /// let g = Geometry::new(Some(64), 64, 8)?;
    /// let backend = Faulty::new(MemoryBackend::new(&[], g));
    /// assert_eq!(backend.inner().geometry(), g);
    /// # Ok::<(), batch_reader::GeometryError>(())
    /// ```
    pub fn inner(&self) -> &B {
        &self.inner
    }

    /// The inner backend, mutably.
    ///
    /// # Examples
    ///
    /// ```
    /// use batch_reader::backends::{Faulty, MemoryBackend};
    /// use batch_reader::{Geometry, ReadBackend};
    ///
    /// let mut backend = Faulty::new(MemoryBackend::new(&[], Geometry::new(None, 16, 8)?));
    /// backend.inner_mut().set_scatter(false);
    /// assert!(!backend.scatters());
    /// # Ok::<(), batch_reader::GeometryError>(())
    /// ```
    pub fn inner_mut(&mut self) -> &mut B {
        &mut self.inner
    }

    /// The inner backend back.
    ///
    /// # Examples
    ///
    /// ```
    /// use batch_reader::backends::{Faulty, MemoryBackend};
    /// use batch_reader::{Geometry, ReadErrorKind, Reader};
    ///
    /// let mem = [3u8; 8];
    /// let mut backend = Faulty::new(MemoryBackend::new(&mem, Geometry::new(None, 8, 8)?));
    /// backend.inject_fault(0..8, ReadErrorKind::Io)?;
    /// let mut reader: Reader<_, _> = Reader::new(backend.into_inner(), [0u8; 0]);
    /// assert_eq!(reader.read_val::<u8>(0), Ok(3));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn into_inner(self) -> B {
        self.inner
    }

    /// The first faulted byte of `len` bytes at `addr`: its offset, and
    /// its fault's kind (the fault injected first, of those starting
    /// there).
    fn first_fault(&self, addr: u64, len: usize) -> Option<(usize, ReadErrorKind)> {
        let end = addr.saturating_add(len as u64);
        let mut first: Option<(usize, ReadErrorKind)> = None;
        for f in &self.faults {
            if f.range.start < end && f.range.end > addr {
                let at = (f.range.start.max(addr) - addr) as usize;
                if first.is_none_or(|(earliest, _)| at < earliest) {
                    first = Some((at, f.kind));
                }
            }
        }
        first
    }
}

/// A report cut at a fault `at` bytes into its op: what the inner backend
/// read before it, then the fault.
fn cut(report: Report, at: usize, kind: ReadErrorKind) -> Report {
    if report.valid < at {
        report
    } else {
        Report::failed(report.tag, at, kind)
    }
}

impl<B: ReadBackend, const K: usize> Faulty<B, K> {
    /// Reads `op` alone, cut short at its first faulted byte; `None` if
    /// the inner backend did not take it.
    fn read_faulted(&mut self, op: &mut ReadOp<'_>) -> Option<Option<Report>> {
        let Some((at, kind)) = self.first_fault(op.addr, op.buf.len()) else {
            let mut got = None;
            let taken = self
                .inner
                .read_batch(core::slice::from_mut(op), |r| got = Some(r));
            return (taken > 0).then_some(got);
        };
        if at == 0 {
            return Some(Some(Report::failed(op.tag, 0, kind)));
        }
        let before = op.buf.get_mut(..at).unwrap_or_default();
        let mut got = None;
        let mut one = [ReadOp::new(op.addr, before, op.tag)];
        if self.inner.read_batch(&mut one, |r| got = Some(r)) == 0 {
            return None;
        }
        Some(got.map(|r| cut(r, at, kind)))
    }

    /// Reads the parts of `op` one by one, as far as its first faulted byte
    /// (`at` bytes in, of `kind`).
    fn read_parts_faulted(
        &mut self,
        op: &mut ScatterOp<'_, '_>,
        at: usize,
        kind: ReadErrorKind,
    ) -> Report {
        let mut addr = op.addr;
        let mut valid = 0usize;
        for part in op.parts.iter_mut() {
            if valid == at {
                return Report::failed(op.tag, valid, kind);
            }
            let want = part.len().min(at - valid);
            let mut got = None;
            let mut one = [ReadOp::new(
                addr,
                part.get_mut(..want).unwrap_or_default(),
                0,
            )];
            let (read, error) = match self.inner.read_batch(&mut one, |r| got = Some(r)) {
                0 => (0, ReadErrorKind::Rejected),
                _ => got.map_or((0, ReadErrorKind::Incomplete), |r| {
                    (r.valid, r.error.unwrap_or(ReadErrorKind::Incomplete))
                }),
            };
            valid += read.min(want);
            if read < want {
                return Report::failed(op.tag, valid, error);
            }
            addr = addr.wrapping_add(part.len() as u64);
        }
        Report::failed(op.tag, valid, kind)
    }
}

/// How a call goes to the inner backend.
enum Call<'a, T> {
    /// The call takes no op.
    Nothing,
    /// No faults: these ops go as they are.
    Pass(&'a mut [T]),
    /// These ops go one by one, each cut at its first faulted byte.
    EachOp(&'a mut [T]),
}

impl<B, const K: usize> Faulty<B, K> {
    /// How a call of `ops` goes: at most the accept limit of them.
    fn call<'a, T>(&self, ops: &'a mut [T]) -> Call<'a, T> {
        let n = ops.len().min(self.accept);
        match ops.get_mut(..n) {
            None | Some([]) => Call::Nothing,
            Some(ops) if self.faults.is_empty() => Call::Pass(ops),
            Some(ops) => Call::EachOp(ops),
        }
    }

    /// Takes `ops` in turn with `take` until it says the inner backend
    /// took none; returns how many were taken.
    fn each<T>(&mut self, ops: &mut [T], mut take: impl FnMut(&mut Self, &mut T) -> bool) -> usize {
        let mut taken = 0;
        for op in ops {
            if !take(self, op) {
                break;
            }
            taken += 1;
        }
        taken
    }
}

impl<B: ReadBackend, const K: usize> ReadBackend for Faulty<B, K> {
    #[inline]
    fn geometry(&self) -> Geometry {
        self.inner.geometry()
    }

    fn read_batch<R: FnMut(Report)>(&mut self, ops: &mut [ReadOp<'_>], mut report: R) -> usize {
        match self.call(ops) {
            Call::Nothing => 0,
            Call::Pass(ops) => self.inner.read_batch(ops, report),
            Call::EachOp(ops) => self.each(ops, |this, op| {
                let got = this.read_faulted(op);
                got.inspect(|r| r.iter().copied().for_each(&mut report))
                    .is_some()
            }),
        }
    }

    fn reports_in_order(&self) -> bool {
        self.inner.reports_in_order()
    }

    fn read_batch_in_order<R: FnMut(&ReadOp<'_>, Report)>(
        &mut self,
        ops: &mut [ReadOp<'_>],
        mut report: R,
    ) -> usize {
        match self.call(ops) {
            Call::Nothing => 0,
            Call::Pass(ops) => self.inner.read_batch_in_order(ops, report),
            Call::EachOp(ops) => self.each(ops, |this, op| {
                if this.first_fault(op.addr, op.buf.len()).is_none() {
                    // The op itself, so that its report comes with it.
                    let one = core::slice::from_mut(op);
                    return this.inner.read_batch_in_order(one, &mut report) > 0;
                }
                let Some(got) = this.read_faulted(op) else {
                    return false;
                };
                let unreported = Report::failed(op.tag, 0, ReadErrorKind::Incomplete);
                report(op, got.unwrap_or(unreported));
                true
            }),
        }
    }

    fn scatters(&self) -> bool {
        self.inner.scatters()
    }

    fn read_scattered<R: FnMut(Report)>(
        &mut self,
        ops: &mut [ScatterOp<'_, '_>],
        mut report: R,
    ) -> usize {
        match self.call(ops) {
            Call::Nothing => 0,
            Call::Pass(ops) => self.inner.read_scattered(ops, report),
            Call::EachOp(ops) => {
                self.each(ops, |this, op| match this.first_fault(op.addr, op.len()) {
                    None => {
                        this.inner
                            .read_scattered(core::slice::from_mut(op), &mut report)
                            > 0
                    }
                    Some((at, kind)) => {
                        report(this.read_parts_faulted(op, at, kind));
                        true
                    }
                })
            }
        }
    }
}

#[cfg(test)]
mod tests;
