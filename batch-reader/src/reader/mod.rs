//! [`Reader`]: fragmentation, coalescing, retries, and the read layers.
//!
//! The public API is here; each route of a batch has a module of its own:
//!
//! - [`single`]: `read_buf` of one fragment, one backend call;
//! - [`direct`]: a window of single-fragment ops that merge with nothing,
//!   handed to the backend as it is;
//! - [`scatter`]: a window of single-fragment ops some of which merge, on a
//!   backend that scatters merged reads into the callers' buffers;
//! - [`general`]: everything else, through the fragment table, batch by
//!   batch (plan, submit, apply);
//! - [`scan`]: the direct route's tests that a window qualifies;
//! - [`outcome`]: a backend op's result, and how it is counted.

mod direct;
mod general;
mod outcome;
mod scan;
mod scatter;
mod single;
#[cfg(test)]
mod tests;

use zerocopy::{FromBytes, IntoBytes};

use crate::{
    CoalescePolicy, Completion, Counters, Geometry, ReadBackend, ReadErrorKind, ReadOp, ReadSummary,
};

/// Default number of ops in a [`read_iter`](Reader::read_iter) window: as
/// many as the default fragment table holds ([`DEFAULT_FRAGMENTS`]).
///
/// No backend call carries more ops than the fragment table holds, so a
/// window of that size is what lets each call carry as many ops as the
/// backend takes ([`Geometry::max_ops`]), up to 64. A smaller window caps
/// the calls below what the backend takes; a backend that takes more than
/// 64 needs both `N` and `F` raised (see [`Reader`]).
///
/// # Examples
///
/// A reader made with [`Reader::new`] over a backend that takes 64 ops per
/// call reads 65 ops in two calls:
///
/// ```
/// use batch_reader::{backends::MemoryBackend, Geometry, ReadOp, Reader, DEFAULT_WINDOW};
///
/// let mem = [0u8; 256];
/// let backend = MemoryBackend::new(&mem, Geometry::new(None, 64, 64)?);
/// let mut reader: Reader<_, _> = Reader::new(backend, [0u8; 0]);
/// let mut bufs = [[0u8; 1]; DEFAULT_WINDOW + 1];
/// // Two bytes apart, so that no two ops merge.
/// let ops = bufs.iter_mut().enumerate().map(|(i, b)| ReadOp::new(2 * i as u64, b, i));
/// reader.read_iter(ops, |_| {});
/// assert_eq!(reader.counters().backend_calls, 2);
/// assert_eq!(DEFAULT_WINDOW, 64);
/// # Ok::<(), batch_reader::GeometryError>(())
/// ```
pub const DEFAULT_WINDOW: usize = DEFAULT_FRAGMENTS;
/// Default number of fragments the reader tracks at once.
///
/// # Examples
///
/// With 4-byte boundary units, an op of `DEFAULT_FRAGMENTS + 1` units is
/// completed in two parts by a reader made with [`Reader::new`]:
///
/// ```
/// use batch_reader::{backends::MemoryBackend, Geometry, ReadOp, Reader, DEFAULT_FRAGMENTS};
///
/// let mem = [0u8; 4 * (DEFAULT_FRAGMENTS + 1)];
/// let backend = MemoryBackend::new(&mem, Geometry::new(Some(4), 4, 64)?);
/// let mut reader: Reader<_, _> = Reader::new(backend, [0u8; 0]);
/// let mut buf = [0u8; 4 * (DEFAULT_FRAGMENTS + 1)];
/// let mut parts = Vec::new();
/// reader.read_many(&mut [ReadOp::new(0, &mut buf, 0)], |c| parts.push((c.offset(), c.len())));
/// assert_eq!(parts, [(0, 4 * DEFAULT_FRAGMENTS), (4 * DEFAULT_FRAGMENTS, 4)]);
/// # Ok::<(), batch_reader::GeometryError>(())
/// ```
pub const DEFAULT_FRAGMENTS: usize = 64;

/// The batching reader: every layer on top of one [`ReadBackend`].
///
/// - `S` is the scratch space merged reads land in (`[u8; K]`, `&mut [u8]`,
///   anything `AsMut<[u8]>`). Empty scratch turns merging off, except on
///   backends that [scatter](crate::ReadBackend::scatters) merged reads
///   straight into the callers' buffers (with the default gap 0).
/// - `N` is how many ops [`read_iter`](Reader::read_iter) takes from its
///   iterator per window (default [`DEFAULT_WINDOW`], 64).
/// - `F` is how many fragments the reader tracks at once (the size of its
///   fragment table, kept on the stack; default [`DEFAULT_FRAGMENTS`], 64).
///   An op with more fragments than `F` is completed in parts.
///
/// A backend call carries at most `F` ops, and at most the backend's
/// [`max_ops`](Geometry::max_ops). With the defaults, `read_many` and
/// `read_iter` fill every call of a backend that takes up to 64 ops; for
/// one that takes more (`ProcessBackend` takes 1024), raise `N` and `F`
/// together with [`with_window`](Reader::with_window), or lower `N` to
/// keep calls (and completions) smaller than the backend allows.
///
/// Nothing allocates: windows, fragment tables and backend batches live on
/// the stack and are bounded by `N` and `F`.
///
/// # Examples
///
/// ```
/// use batch_reader::{backends::MemoryBackend, Geometry, Reader};
///
/// let mem: Vec<u8> = (0..=255).collect();
/// let backend = MemoryBackend::new(&mem, Geometry::new(Some(64), 64, 32)?);
/// let mut reader: Reader<_, _> = Reader::new(backend, [0u8; 256]);
/// assert_eq!(reader.read_val::<u16>(0x10), Ok(u16::from_ne_bytes([0x10, 0x11])));
/// # Ok::<(), batch_reader::GeometryError>(())
/// ```
#[derive(Debug)]
pub struct Reader<B, S, const N: usize = DEFAULT_WINDOW, const F: usize = DEFAULT_FRAGMENTS> {
    backend: B,
    scratch: S,
    policy: CoalescePolicy,
    counters: Counters,
}

/// Where the next window starts: op index and offset within that op.
#[derive(Debug, Clone, Copy)]
struct Cursor {
    op: usize,
    offset: usize,
}

impl<B, S> Reader<B, S> {
    /// A reader with the default window and fragment table (64 each): each
    /// backend call carries as many ops as the backend takes, up to 64.
    ///
    /// Merged reads land in `scratch`, so merging never produces a read
    /// larger than it.
    ///
    /// # Examples
    ///
    /// With 8 bytes of scratch and a backend that does not scatter, three
    /// adjacent 4-byte ops take two backend reads: the first two merge, the
    /// third does not fit.
    ///
    /// ```
    /// use batch_reader::{backends::MemoryBackend, Geometry, ReadOp, Reader};
    ///
    /// let mem: Vec<u8> = (0..16).collect();
    /// let mut backend = MemoryBackend::new(&mem, Geometry::new(None, 16, 8)?);
    /// backend.set_scatter(false);
    /// let mut reader: Reader<_, _> = Reader::new(backend, [0u8; 8]);
    /// let mut bufs = [[0u8; 4]; 3];
    /// let [a, b, c] = &mut bufs;
    /// let mut ops = [ReadOp::new(0, a, 0), ReadOp::new(4, b, 1), ReadOp::new(8, c, 2)];
    /// reader.read_many(&mut ops, |_| {});
    /// assert_eq!(bufs, [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]]);
    /// let n = reader.counters();
    /// assert_eq!((n.backend_ops, n.merged_reads, n.merged_ops), (2, 1, 2));
    /// # Ok::<(), batch_reader::GeometryError>(())
    /// ```
    pub fn new(backend: B, scratch: S) -> Self {
        Self::with_window(backend, scratch)
    }
}

impl<B, S, const N: usize, const F: usize> Reader<B, S, N, F> {
    /// A reader with window `N` and fragment table `F` (both must be
    /// non-zero: a compile-time check).
    ///
    /// # Examples
    ///
    /// ```
    /// use batch_reader::{backends::MemoryBackend, Geometry, Reader};
    ///
    /// let mem = [0u8; 64];
    /// let backend = MemoryBackend::new(&mem, Geometry::new(None, 64, 4)?);
    /// let reader = Reader::<_, _, 4, 8>::with_window(backend, [0u8; 64]);
    /// assert_eq!(reader.counters().backend_calls, 0);
    /// # Ok::<(), batch_reader::GeometryError>(())
    /// ```
    pub fn with_window(backend: B, scratch: S) -> Self {
        const {
            assert!(N > 0, "the read_iter window must hold at least one op");
            assert!(F > 0, "the fragment table must hold at least one fragment");
        }
        Self {
            backend,
            scratch,
            policy: CoalescePolicy::default(),
            counters: Counters::default(),
        }
    }

    /// Replaces the coalescing policy.
    ///
    /// # Examples
    ///
    /// ```
    /// use batch_reader::{backends::MemoryBackend, CoalescePolicy, Geometry, ReadOp, Reader};
    ///
    /// let mem = [0u8; 16];
    /// let backend = MemoryBackend::new(&mem, Geometry::new(None, 16, 8)?);
    /// let mut reader: Reader<_, _> = Reader::new(backend, [0u8; 0]);
    /// let (mut a, mut b) = ([0u8; 4], [0u8; 4]);
    /// reader
    ///     .set_policy(CoalescePolicy::disabled())
    ///     .read_many(&mut [ReadOp::new(0, &mut a, 0), ReadOp::new(4, &mut b, 1)], |_| {});
    /// assert_eq!(reader.counters().merged_reads, 0);
    /// reader.set_policy(CoalescePolicy::default());
    /// reader.read_many(&mut [ReadOp::new(0, &mut a, 0), ReadOp::new(4, &mut b, 1)], |_| {});
    /// assert_eq!(reader.counters().merged_reads, 1);
    /// # Ok::<(), batch_reader::GeometryError>(())
    /// ```
    pub fn set_policy(&mut self, policy: CoalescePolicy) -> &mut Self {
        self.policy = policy;
        self
    }

    /// The coalescing policy.
    ///
    /// # Examples
    ///
    /// ```
    /// use batch_reader::{backends::MemoryBackend, CoalescePolicy, Geometry, Reader};
    ///
    /// let backend = MemoryBackend::new(&[], Geometry::new(None, 16, 8)?);
    /// let mut reader: Reader<_, _> = Reader::new(backend, [0u8; 64]);
    /// assert_eq!(reader.policy(), CoalescePolicy::with_gap(0));
    /// reader.set_policy(CoalescePolicy::with_gap(32));
    /// assert_eq!(reader.policy().max_gap(), Some(32));
    /// # Ok::<(), batch_reader::GeometryError>(())
    /// ```
    pub fn policy(&self) -> CoalescePolicy {
        self.policy
    }

    /// The running totals, since the reader was made or the last
    /// [`reset_counters`](Reader::reset_counters).
    ///
    /// # Examples
    ///
    /// ```
    /// use batch_reader::{backends::MemoryBackend, Geometry, Reader};
    ///
    /// let mem = [0u8; 64];
    /// let backend = MemoryBackend::new(&mem, Geometry::new(Some(16), 16, 8)?);
    /// let mut reader: Reader<_, _> = Reader::new(backend, [0u8; 0]);
    /// reader.read_buf(8, &mut [0u8; 16]); // crosses a boundary: two fragments
    /// reader.read_buf(40, &mut [0u8; 4]);
    /// let c = reader.counters();
    /// assert_eq!((c.ops, c.fragments, c.backend_calls), (2, 3, 2));
    /// assert_eq!((c.bytes_requested, c.bytes_read), (20, 20));
    /// # Ok::<(), batch_reader::GeometryError>(())
    /// ```
    pub fn counters(&self) -> Counters {
        self.counters
    }

    /// Zeroes the running totals.
    ///
    /// # Examples
    ///
    /// ```
    /// use batch_reader::{backends::MemoryBackend, Counters, Geometry, Reader};
    ///
    /// let mem = [0u8; 16];
    /// let backend = MemoryBackend::new(&mem, Geometry::new(None, 16, 8)?);
    /// let mut reader: Reader<_, _> = Reader::new(backend, [0u8; 0]);
    /// reader.read_buf(0, &mut [0u8; 4]);
    /// assert_eq!(reader.counters().ops, 1);
    /// reader.reset_counters();
    /// assert_eq!(reader.counters(), Counters::default());
    /// # Ok::<(), batch_reader::GeometryError>(())
    /// ```
    pub fn reset_counters(&mut self) {
        self.counters = Counters::default();
    }

    /// The backend.
    ///
    /// # Examples
    ///
    /// ```
    /// use batch_reader::{backends::MemoryBackend, Geometry, ReadBackend, Reader};
    ///
    /// let g = Geometry::new(Some(4096), 4096, 8)?;
    /// let reader: Reader<_, _> = Reader::new(MemoryBackend::new(&[], g), [0u8; 0]);
    /// assert_eq!(reader.backend().geometry(), g);
    /// # Ok::<(), batch_reader::GeometryError>(())
    /// ```
    pub fn backend(&self) -> &B {
        &self.backend
    }

    /// The backend, mutably (to inject faults, say).
    ///
    /// # Examples
    ///
    /// ```
    /// use batch_reader::{backends::{Faulty, MemoryBackend}, Geometry, ReadErrorKind, Reader};
    ///
    /// let mem = [3u8; 16];
    /// let backend = Faulty::new(MemoryBackend::new(&mem, Geometry::new(None, 16, 8)?));
    /// let mut reader: Reader<_, _> = Reader::new(backend, [0u8; 0]);
    /// assert_eq!(reader.read_val::<u8>(4), Ok(3));
    /// reader.backend_mut().inject_fault(4..5, ReadErrorKind::TimedOut)?;
    /// assert_eq!(reader.read_val::<u8>(4), Err(ReadErrorKind::TimedOut));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn backend_mut(&mut self) -> &mut B {
        &mut self.backend
    }

    /// The backend and the scratch space back.
    ///
    /// # Examples
    ///
    /// ```
    /// use batch_reader::{backends::{Faulty, MemoryBackend}, Geometry, ReadErrorKind, Reader};
    ///
    /// let backend = Faulty::new(MemoryBackend::new(&[], Geometry::new(None, 16, 8)?));
    /// let mut reader: Reader<_, _> = Reader::new(backend, vec![0u8; 256]);
    /// reader.backend_mut().inject_fault(0..8, ReadErrorKind::Io)?;
    /// let (backend, scratch) = reader.into_parts();
    /// assert_eq!(backend.faults().len(), 1);
    /// assert_eq!(scratch.len(), 256);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn into_parts(self) -> (B, S) {
        (self.backend, self.scratch)
    }
}

impl<B: ReadBackend, S: AsMut<[u8]>, const N: usize, const F: usize> Reader<B, S, N, F> {
    /// Reads a plain-old-data value at `addr`, or the kind of the first
    /// failure.
    ///
    /// # Examples
    ///
    /// ```
    /// use batch_reader::{backends::MemoryBackend, Geometry, ReadErrorKind, Reader};
    ///
    /// let mem = 0xdead_beef_u32.to_ne_bytes();
    /// let backend = MemoryBackend::new(&mem, Geometry::new(None, 16, 1)?);
    /// let mut reader: Reader<_, _> = Reader::new(backend, [0u8; 0]);
    /// assert_eq!(reader.read_val::<u32>(0), Ok(0xdead_beef));
    /// assert_eq!(reader.read_val::<u32>(2), Err(ReadErrorKind::OutOfBounds));
    /// # Ok::<(), batch_reader::GeometryError>(())
    /// ```
    #[inline]
    pub fn read_val<T: FromBytes + IntoBytes>(&mut self, addr: u64) -> Result<T, ReadErrorKind> {
        let mut value = T::new_zeroed();
        // With `small`, only the first failure is kept: what `read_buf`
        // would sum up besides is not linked.
        let failed = if cfg!(feature = "small") {
            self.read_first_error(addr, value.as_mut_bytes())
        } else {
            self.read_buf(addr, value.as_mut_bytes()).first_error()
        };
        match failed {
            None => Ok(value),
            Some(failed) => Err(failed.kind),
        }
    }

    /// Fills `buf` from `addr` and sums up what succeeded.
    ///
    /// For every failed range use [`read_many`](Reader::read_many) with one op.
    ///
    /// # Examples
    ///
    /// ```
    /// use batch_reader::{backends::MemoryBackend, Geometry, PartialRead, ReadErrorKind, Reader};
    ///
    /// let mem = [1u8; 100];
    /// let backend = MemoryBackend::new(&mem, Geometry::new(Some(32), 32, 8)?);
    /// let mut reader: Reader<_, _> = Reader::new(backend, [0u8; 0]);
    /// let mut buf = [0u8; 16];
    /// let s = reader.read_buf(90, &mut buf);
    /// assert_eq!((s.ok_bytes(), s.first_error()), (10, Some(PartialRead { valid: 10, kind: ReadErrorKind::OutOfBounds })));
    /// # Ok::<(), batch_reader::GeometryError>(())
    /// ```
    // Always inlined: the single-op route is a few instructions around one
    // backend call, and a call into it would cost as much again.
    #[inline(always)]
    pub fn read_buf(&mut self, addr: u64, buf: &mut [u8]) -> ReadSummary {
        // With `small`, a lone op takes the batch route too: the same
        // summary, counters and backend call, without a route of its own.
        if cfg!(feature = "small") {
            return self.read_buf_general(addr, buf);
        }
        match self.read_one(addr, buf) {
            Some(summary) => summary,
            None => self.read_buf_general(addr, buf),
        }
    }

    /// Performs every op of `ops`, calling `done` with each op's
    /// completion(s), in op order.
    ///
    /// An op usually gets one completion, but an op with more fragments
    /// than the fragment table holds (`F`) gets one per table-full: count
    /// ops with [`Completion::is_last`], not completions.
    ///
    /// Where `ops` are at most `F`, and each is one fragment of the
    /// backend's geometry that does not merge with the one before it, the
    /// ops go to the backend as they are on a backend that
    /// [reports in order](ReadBackend::reports_in_order) (all of this
    /// crate's do), and each op's `done` is called in its report. On other
    /// backends that holds for ops tagged by their index (`0, 1, 2, ...`, as
    /// below); ops tagged otherwise are copied first, tagged by index for the
    /// backend. Completions carry the caller's tags either way.
    ///
    /// # Examples
    ///
    /// ```
    /// use batch_reader::{backends::MemoryBackend, Geometry, ReadOp, Reader};
    ///
    /// let mem: Vec<u8> = (0..64).collect();
    /// let backend = MemoryBackend::new(&mem, Geometry::new(None, 64, 8)?);
    /// let mut reader: Reader<_, _> = Reader::new(backend, [0u8; 64]);
    /// let (mut a, mut b) = ([0u8; 2], [0u8; 3]);
    /// let mut ops = [ReadOp::new(4, &mut a, 0), ReadOp::new(40, &mut b, 1)];
    /// let mut ok = 0;
    /// reader.read_many(&mut ops, |c| if c.is_ok() { ok += 1 });
    /// assert_eq!((ok, a, b), (2, [4, 5], [40, 41, 42]));
    /// # Ok::<(), batch_reader::GeometryError>(())
    /// ```
    pub fn read_many<D: FnMut(Completion<'_>)>(&mut self, ops: &mut [ReadOp<'_>], mut done: D) {
        self.process(ops, &mut done);
    }

    /// Performs the ops of an iterator, `N` at a time, calling `done` with
    /// each op's completion(s) in op order. Nothing is allocated: each window
    /// of ops is held on the stack.
    ///
    /// As with [`read_many`](Reader::read_many), an op spanning more than a
    /// full fragment table gets several completions: count ops with
    /// [`Completion::is_last`], not completions.
    ///
    /// # Examples
    ///
    /// ```
    /// use batch_reader::{backends::MemoryBackend, Geometry, ReadOp, Reader};
    ///
    /// let mem: Vec<u8> = (0..=255).collect();
    /// let backend = MemoryBackend::new(&mem, Geometry::new(None, 256, 64)?);
    /// let mut reader = Reader::<_, _, 4, 16>::with_window(backend, [0u8; 256]);
    /// let mut buf = [0u8; 40];
    /// let ops = buf.chunks_mut(4).enumerate().map(|(i, b)| ReadOp::new(i as u64 * 4, b, i));
    /// let mut tags = Vec::new();
    /// reader.read_iter(ops, |c| tags.push(c.tag()));
    /// assert_eq!(tags, (0..10).collect::<Vec<_>>());
    /// assert_eq!(buf[39], 39);
    /// assert_eq!(reader.counters().backend_calls, 3); // windows of 4, 4 and 2 ops
    /// # Ok::<(), batch_reader::GeometryError>(())
    /// ```
    pub fn read_iter<'b, I, D>(&mut self, ops: I, mut done: D)
    where
        I: IntoIterator<Item = ReadOp<'b>>,
        D: FnMut(Completion<'_>),
    {
        let mut ops = ops.into_iter();
        let mut window: crate::stack::Stack<ReadOp<'b>, N> = crate::stack::Stack::new();
        loop {
            window.clear();
            while !window.is_full() {
                match ops.next() {
                    // Cannot fail: the window is not full.
                    Some(op) => {
                        let _ = window.push(op);
                    }
                    None => break,
                }
            }
            if window.is_empty() {
                return;
            }
            self.process(&mut window, &mut done);
        }
    }

    /// Runs `ops` through the fragment table, one table-full at a time.
    #[inline]
    fn process<D: FnMut(Completion<'_>)>(&mut self, ops: &mut [ReadOp<'_>], done: &mut D) {
        // With `small`, every window takes the general route: the same
        // results, counters and backend calls, in far less code.
        self.process_with(ops, done, !cfg!(feature = "small"));
    }

    /// [`process`](Self::process), optionally without the direct route (so
    /// tests can check that both routes agree).
    #[inline]
    fn process_with<D: FnMut(Completion<'_>)>(
        &mut self,
        ops: &mut [ReadOp<'_>],
        done: &mut D,
        direct: bool,
    ) {
        if cfg!(feature = "small") && !direct {
            // One out-of-line loop for every caller.
            self.general_windows(ops, done);
            return;
        }
        let geometry = self.backend.geometry();
        let mut cursor = Cursor { op: 0, offset: 0 };
        while cursor.op < ops.len() {
            if direct && cursor.offset == 0 {
                // The window the table would hold if every op is one fragment.
                let end = cursor.op + (ops.len() - cursor.op).min(F);
                let window = ops.get_mut(cursor.op..end).unwrap_or_default();
                if self.read_direct(geometry, window, done) {
                    cursor.op = end;
                    continue;
                }
            }
            self.general_window(geometry, ops, &mut cursor, done);
        }
    }

    /// How the planner may merge: `None` when nothing can.
    #[inline]
    fn merge_limits(&mut self, geometry: Geometry) -> Option<Merge> {
        let gap = self.policy.max_gap()?;
        // Scattering needs no scratch, but has nowhere to put gap bytes.
        let scatter = gap == 0 && self.backend.scatters();
        let room = if scatter {
            geometry.max_transfer()
        } else {
            geometry.max_transfer().min(self.scratch.as_mut().len())
        };
        Some(Merge {
            gap,
            room: room as u64,
            scatter,
        })
    }
}

/// Where the cold routes hand their completions: through a pointer, so
/// that each is compiled once, not once per caller's closure (the hot ones
/// take the closure's own type, and inline it).
type Done<'d> = dyn FnMut(Completion<'_>) + 'd;

/// How the planner merges fragments into one backend op.
#[derive(Debug, Clone, Copy)]
struct Merge {
    /// The largest gap a merged read bridges.
    gap: u64,
    /// The largest merged read while no scratch is used yet.
    room: u64,
    /// Merged reads scatter into the callers' buffers (gap 0, on a
    /// backend that scatters) rather than go through scratch.
    scatter: bool,
}
