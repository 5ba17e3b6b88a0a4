//! [`Reader`]: fragmentation, coalescing, retries, and the read layers.

use core::mem::{self, MaybeUninit};

use zerocopy::{FromBytes, IntoBytes};

use crate::completion::FragRecord;
use crate::{
    CoalescePolicy, Completion, Counters, Geometry, ReadBackend, ReadErrorKind, ReadOp,
    ReadSummary, ScatterOp,
};

/// Default number of ops in a [`read_iter`](Reader::read_iter) window.
///
/// # Examples
///
/// A reader made with [`Reader::new`] reads 17 ops in two windows, so two
/// backend calls:
///
/// ```
/// use batch_reader::{backends::MemoryBackend, Geometry, ReadOp, Reader, DEFAULT_WINDOW};
///
/// let mem = [0u8; 64];
/// let backend = MemoryBackend::new(&mem, Geometry::new(None, 64, 64)?);
/// let mut reader: Reader<_, _> = Reader::new(backend, [0u8; 0]);
/// let mut bufs = [[0u8; 1]; DEFAULT_WINDOW + 1];
/// // Two bytes apart, so that no two ops merge.
/// let ops = bufs.iter_mut().enumerate().map(|(i, b)| ReadOp::new(2 * i as u64, b, i));
/// reader.read_iter(ops, |_| {});
/// assert_eq!(reader.counters().backend_calls, 2);
/// # Ok::<(), batch_reader::GeometryError>(())
/// ```
pub const DEFAULT_WINDOW: usize = 16;
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
///   iterator per window.
/// - `F` is how many fragments the reader tracks at once (the size of its
///   fragment table, kept on the stack). An op with more fragments than `F`
///   is completed in parts.
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

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Not yet read; may merge with neighbours.
    Pending,
    /// Its merged read failed before its last byte: read it alone.
    Retry,
    /// Has its outcome.
    Done,
}

/// A fragment's place in the backend's address space and the caller's buffer.
#[derive(Debug)]
struct Slot<'w> {
    addr: u64,
    buf: &'w mut [u8],
    state: State,
}

/// How a backend op of a batch reaches the callers' buffers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Route {
    /// One fragment, read straight into its buffer.
    Direct,
    /// Several fragments, read into scratch at this offset, then copied out.
    Scratch(usize),
    /// Several adjacent fragments, read straight into their buffers by a
    /// scattering backend.
    Scatter,
}

/// One backend op of the batch being built.
#[derive(Debug, Clone, Copy)]
struct Plan {
    first: usize,
    count: usize,
    addr: u64,
    span: usize,
    route: Route,
    retry: bool,
    result: Option<(usize, Option<ReadErrorKind>)>,
}

/// Where the next window starts: op index and offset within that op.
#[derive(Debug, Clone, Copy)]
struct Cursor {
    op: usize,
    offset: usize,
}

impl<B, S> Reader<B, S> {
    /// A reader with the default window (16 ops) and fragment table (64).
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
    /// use batch_reader::{backends::MemoryBackend, Geometry, ReadErrorKind, Reader};
    ///
    /// let mem = [3u8; 16];
    /// let backend = MemoryBackend::new(&mem, Geometry::new(None, 16, 8)?);
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
    /// use batch_reader::{backends::MemoryBackend, Geometry, ReadErrorKind, Reader};
    ///
    /// let backend = MemoryBackend::new(&[], Geometry::new(None, 16, 8)?);
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
        match self.read_buf(addr, value.as_mut_bytes()).first_error() {
            None => Ok(value),
            Some((_, kind)) => Err(kind),
        }
    }

    /// Fills `buf` from `addr` and sums up what succeeded.
    ///
    /// For every failed range use [`read_many`](Reader::read_many) with one op.
    ///
    /// # Examples
    ///
    /// ```
    /// use batch_reader::{backends::MemoryBackend, Geometry, ReadErrorKind, Reader};
    ///
    /// let mem = [1u8; 100];
    /// let backend = MemoryBackend::new(&mem, Geometry::new(Some(32), 32, 8)?);
    /// let mut reader: Reader<_, _> = Reader::new(backend, [0u8; 0]);
    /// let mut buf = [0u8; 16];
    /// let s = reader.read_buf(90, &mut buf);
    /// assert_eq!((s.ok_bytes(), s.first_error()), (10, Some((10, ReadErrorKind::OutOfBounds))));
    /// # Ok::<(), batch_reader::GeometryError>(())
    /// ```
    // Always inlined: the single-op route is a few instructions around one
    // backend call, and a call into it would cost as much again.
    #[inline(always)]
    pub fn read_buf(&mut self, addr: u64, buf: &mut [u8]) -> ReadSummary {
        match self.read_one(addr, buf) {
            Some(summary) => summary,
            None => self.read_buf_general(addr, buf),
        }
    }

    /// The direct route for one op: when it is one fragment, one backend
    /// call with one op, and the summary and counters the direct route of
    /// `read_many` would give, without its window, batch and result lists.
    /// `None`, with nothing done, when the op is not one fragment (empty,
    /// overflowing, crossing a boundary or longer than `max_transfer`).
    #[inline(always)]
    fn read_one(&mut self, addr: u64, buf: &mut [u8]) -> Option<ReadSummary> {
        let geometry = self.backend.geometry();
        let len = buf.len();
        let (end, overflow) = addr.overflowing_add(len as u64);
        // The test of `scan` for one op.
        let unit = geometry.unit_mask();
        let one_fragment = ((len as u64).wrapping_sub(1) < geometry.max_transfer() as u64)
            & !overflow
            & ((addr ^ end.wrapping_sub(1)) & unit == 0);
        if !one_fragment {
            return None;
        }
        // A single op merges with nothing, so the coalescing policy does not
        // apply. As on the direct route, the last report under the op's tag
        // counts, other tags are ignored, and no report reads as
        // `Incomplete`.
        let mut got = None;
        let accepted = self
            .backend
            .read_batch(&mut [ReadOp::new(addr, buf, 0)], |r| {
                if r.tag == 0 {
                    got = Some((r.valid, r.error));
                }
            });
        let c = &mut self.counters;
        c.backend_calls += 1;
        c.ops += 1;
        c.fragments += 1;
        c.bytes_requested += len as u64;
        let (valid, error) = if accepted == 0 {
            // Not taken: fails as the direct route fails what is left.
            (0, ReadErrorKind::Rejected)
        } else {
            c.backend_ops += 1;
            c.bytes_read += len as u64;
            match got {
                Some((valid, _)) if valid >= len => return Some(ReadSummary::new(len, len, None)),
                Some((valid, error)) => (valid, error.unwrap_or(ReadErrorKind::Incomplete)),
                None => (0, ReadErrorKind::Incomplete),
            }
        };
        Some(ReadSummary::new(len, valid, Some((valid, error))))
    }

    #[inline(never)]
    fn read_buf_general(&mut self, addr: u64, buf: &mut [u8]) -> ReadSummary {
        let len = buf.len();
        let mut ok = 0;
        let mut first_error = None;
        let mut ops = [ReadOp::new(addr, buf, 0)];
        self.read_many(&mut ops, |c| {
            ok += c.ok_bytes();
            if first_error.is_none() {
                first_error = c.first_error();
            }
        });
        ReadSummary::new(len, ok, first_error)
    }

    /// Performs every op of `ops`, calling `done` with each op's
    /// completion(s), in op order.
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
        let mut window: heapless::Vec<ReadOp<'b>, N> = heapless::Vec::new();
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
        self.process_with(ops, done, true);
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
        let geometry = self.backend.geometry();
        let mut cursor = Cursor { op: 0, offset: 0 };
        while cursor.op < ops.len() {
            if direct && cursor.offset == 0 {
                // The window the table would hold if every op is one fragment.
                let end = cursor.op + (ops.len() - cursor.op).min(F);
                if self.read_direct(geometry, &mut ops[cursor.op..end], done) {
                    cursor.op = end;
                    continue;
                }
            }
            self.general_window(geometry, ops, &mut cursor, done);
        }
    }

    /// One table-full from `cursor` by the general route, and its
    /// completions. Kept out of line: its tables are large, and callers whose
    /// windows take the direct route should not carry them on their stack.
    #[inline(never)]
    fn general_window<D: FnMut(Completion<'_>)>(
        &mut self,
        geometry: Geometry,
        ops: &mut [ReadOp<'_>],
        cursor: &mut Cursor,
        done: &mut D,
    ) {
        let mut records: heapless::Vec<FragRecord, F> = heapless::Vec::new();
        self.run_window(geometry, ops, cursor, &mut records);
        let mut i = 0;
        while i < records.len() {
            let op_index = records[i].op;
            let mut j = i + 1;
            while j < records.len() && records[j].op == op_index {
                j += 1;
            }
            let op = &ops[op_index];
            let offset = records[i].offset;
            let len = records[j - 1].offset + records[j - 1].len - offset;
            done(Completion {
                tag: op.tag,
                addr: op.addr,
                op_len: op.buf.len(),
                offset,
                len,
                frags: &records[i..j],
                data: op.buf.get(offset..offset + len).unwrap_or(&[]),
            });
            i = j;
        }
    }

    /// The largest merged read the planner may build while no scratch is
    /// used yet, and the gap it bridges; `None` when nothing can merge.
    #[inline]
    fn merge_limits(&mut self, geometry: Geometry) -> Option<(u64, u64)> {
        let gap = self.policy.max_gap()?;
        // Scattering needs no scratch, but has nowhere to put gap bytes.
        let room = if gap == 0 && self.backend.scatters() {
            geometry.max_transfer()
        } else {
            geometry.max_transfer().min(self.scratch.as_mut().len())
        };
        Some((gap, room as u64))
    }

    /// The direct route for a window of at most `F` ops that the table would
    /// hold as one fragment each, none of which would merge with the one
    /// before it. Then the plan is one backend op per caller op, in order,
    /// so the ops go to the backend as they are and each report is its op's
    /// completion: no fragment table, no plan. Results and counters are
    /// exactly those of the general route ([`run_window`](Self::run_window)).
    ///
    /// The backend's ops are tagged by their index in the window. Where the
    /// caller's tags are those already, the first call takes the caller's
    /// own ops, with nothing copied; otherwise it takes copies so tagged.
    /// (A backend that changed an op's address, buffer or tag, which no
    /// backend has cause to, would then change the caller's op itself.)
    ///
    /// Returns `false`, having done nothing, if the window does not qualify.
    #[inline]
    fn read_direct<D: FnMut(Completion<'_>)>(
        &mut self,
        geometry: Geometry,
        window: &mut [ReadOp<'_>],
        done: &mut D,
    ) -> bool {
        let merge = self.merge_limits(geometry);
        let (merging, gap, room) = match merge {
            Some((gap, room)) => (true, gap, room),
            None => (false, 0, 0),
        };
        // Merges that a scattering backend takes straight into the buffers
        // have a route of their own; merges through scratch go the general
        // route.
        let scatter = merging && gap == 0 && self.backend.scatters();
        let max_transfer = geometry.max_transfer() as u64;
        // Bits above the boundary unit: an op stays in one unit when its
        // first and last byte agree on them.
        let unit = geometry.unit_mask();
        let k = window.len();
        if k > F {
            // Not reachable: the direct route takes at most `F` ops.
            return false;
        }
        // `passed <= k`; the `min` tells the compiler.
        let passed = k.min(geometry.max_ops());
        let near = merge.map(|m| m.0);
        let indexed = if self.backend.reports_in_order() {
            if let Some(bytes) = scan_lean::<false>(window, max_transfer, unit, near) {
                // Every op is one fragment and none is near the one before
                // it: the window's ops go to the backend as they are, and
                // each is completed in its report, whatever its tag.
                self.read_in_order(geometry, window, passed, bytes, done);
                return true;
            }
            // The tag test would only add to the test just failed.
            None
        } else {
            scan_lean::<true>(window, max_transfer, unit, near)
        };
        // Raw reports by window index, each op "not reported" (which reads
        // as `Incomplete`, as in `normalize`) until its report comes. A
        // report is stored under its tag, so that reports in any order,
        // twice or with unknown tags need no path of their own: the last one
        // for an op counts, as on the general route. (Two lists rather than
        // one of pairs: each store is then one move, and the fills are two
        // plain runs of bytes.)
        let mut valids = [const { MaybeUninit::<usize>::uninit() }; F];
        let mut errors = [const { MaybeUninit::<Option<ReadErrorKind>>::uninit() }; F];
        valids[..k].fill(MaybeUninit::new(UNREPORTED.0));
        errors[..k].fill(MaybeUninit::new(UNREPORTED.1));
        // SAFETY: `valids[..k]` and `errors[..k]` were written just now,
        // with `k <= F`; `MaybeUninit<T>` has the layout of `T`, and the
        // arrays are not used again but through these slices.
        let (valids, errors) = unsafe {
            (
                core::slice::from_raw_parts_mut(valids.as_mut_ptr().cast::<usize>(), k),
                core::slice::from_raw_parts_mut(
                    errors.as_mut_ptr().cast::<Option<ReadErrorKind>>(),
                    k,
                ),
            )
        };
        let (bytes, accepted) = match indexed {
            // Every op is one fragment, none is near the one before it, and
            // each is tagged by its index already: the window's ops go to the
            // backend as they are, with nothing copied.
            Some(bytes) => {
                let accepted = call_direct(
                    &mut self.backend,
                    &mut window[..passed],
                    &mut valids[..passed],
                    &mut errors[..passed],
                );
                (bytes, accepted)
            }
            None => {
                // One pass: the scan, and the first backend call's ops built
                // as it goes (tags are indices in the call). A window that
                // fails the scan goes the general route, which costs far more
                // than this.
                let mut batch: heapless::Vec<ReadOp<'_>, F> = heapless::Vec::new();
                let scan = scan_window(window, &mut batch, max_transfer, unit, merge.map(|m| m.0));
                if !scan.one_fragment {
                    return false;
                }
                let mut any_merge = false;
                if merging && scan.near {
                    // Some op starts within `gap` after its predecessor's
                    // end: the planner's full test for extending a read at
                    // `prev` by `op`, without branches as in `scan_into`.
                    let (mut prev_start, mut prev_end) = (0u64, u64::MAX);
                    for op in batch.iter() {
                        // Cannot overflow: checked by `scan_into`.
                        let (addr, end) = (op.addr, op.addr + op.buf.len() as u64);
                        // Where `addr < prev_end` the other parts may wrap;
                        // their values then do not matter.
                        any_merge |= (addr.wrapping_sub(prev_end) <= gap)
                            & (addr >= prev_end)
                            & (end.wrapping_sub(prev_start) <= room)
                            & geometry.same_unit(prev_start, end);
                        (prev_start, prev_end) = (addr, end);
                    }
                    if any_merge && !scatter {
                        return false;
                    }
                }
                if any_merge {
                    drop(batch);
                    return self.read_scattered_direct(geometry, window, scan.bytes, done);
                }
                let accepted = call_direct(
                    &mut self.backend,
                    &mut batch[..passed],
                    &mut valids[..passed],
                    &mut errors[..passed],
                );
                (scan.bytes, accepted)
            }
        };
        let mut n = first_call_counters(k, bytes);
        let (valids, errors) = (&*valids, &*errors);
        let accepted = accepted.min(passed);
        if accepted == k {
            n.backend_ops = k as u64;
            self.counters.add(&n);
            complete_direct(
                window,
                valids.iter().copied().zip(errors.iter().copied()),
                done,
            );
        } else {
            let mut results: heapless::Vec<Outcome, F> =
                valids.iter().copied().zip(errors.iter().copied()).collect();
            self.direct_rest(geometry, window, &mut results, accepted, &mut n);
            self.counters.add(&n);
            complete_direct(window, results.iter().copied(), done);
        }
        true
    }

    /// The direct route's call for a window of ops that go to the backend
    /// as they are (each one fragment, none near the one before it), on a
    /// backend that [reports in order](ReadBackend::reports_in_order): each
    /// op is completed in its report, so nothing is kept per op, and the
    /// ops' tags need not be their indices. Results and counters are those
    /// of the general route for a backend that keeps its promise. One that
    /// does not still gets one completion per op, in order: a report that
    /// does not come with the next op of the window (the caller's op itself,
    /// not a copy) is ignored, and that op completes as not reported; ops it
    /// reported past what it says it took count as taken.
    ///
    /// `passed` (at most the window's length) is how many ops the first call
    /// may take, `bytes` what the window's ops request.
    #[inline(always)]
    fn read_in_order<D: FnMut(Completion<'_>)>(
        &mut self,
        geometry: Geometry,
        window: &mut [ReadOp<'_>],
        passed: usize,
        bytes: u64,
        done: &mut D,
    ) {
        let k = window.len();
        // Where the window's ops are, and where the next op to complete is
        // (every op before it has its completion), to tell that a reported
        // op is that one. Only compared, never read through.
        let first = window.as_ptr();
        let mut at = first;
        let taken = self
            .backend
            .read_batch_in_order(&mut window[..passed], |op, r| {
                if core::ptr::eq((op as *const ReadOp<'_>).cast::<u8>(), at.cast::<u8>()) {
                    let index = (at as usize - first as usize) / mem::size_of::<ReadOp<'_>>();
                    complete_one(index, op.tag, op, (r.valid, r.error), done);
                    at = at.wrapping_add(1);
                }
            });
        let next = (at as usize - first as usize) / mem::size_of::<ReadOp<'_>>();
        let mut n = first_call_counters(k, bytes);
        // Ops reported past what the call says it took count as taken: they
        // have their completions. (Only the window's first `passed` ops can
        // have been reported.)
        let next = next.min(passed);
        let taken = taken.min(passed).max(next);
        for (index, op) in window.iter().enumerate().take(taken).skip(next) {
            complete_one(index, op.tag, op, UNREPORTED, done);
        }
        if taken == k {
            n.backend_ops = k as u64;
            self.counters.add(&n);
        } else {
            self.in_order_rest(geometry, window, taken, n, done);
        }
    }

    /// The rest of a window on the in-order route after a first call that
    /// took only `taken` of its ops (backpressure, or `max_ops`): as
    /// [`direct_rest`](Self::direct_rest), then the rest's completions.
    #[cold]
    #[inline(never)]
    fn in_order_rest<D: FnMut(Completion<'_>)>(
        &mut self,
        geometry: Geometry,
        window: &mut [ReadOp<'_>],
        taken: usize,
        mut n: Counters,
        done: &mut D,
    ) {
        // `direct_rest` fills the completed ops' entries, never read.
        let mut results: heapless::Vec<Outcome, F> = heapless::Vec::new();
        self.direct_rest(geometry, window, &mut results, taken, &mut n);
        self.counters.add(&n);
        for (index, (op, &result)) in window.iter().zip(results.iter()).enumerate().skip(taken) {
            complete_one(index, op.tag, op, result, done);
        }
    }

    /// The direct route for a window of single-fragment ops some of which
    /// merge, on a backend that scatters (gap 0): the runs of adjacent ops
    /// that the planner would merge become one [`ScatterOp`] each, built
    /// here while forming them, and go to the backend in one call. When
    /// every run is taken and read whole, each op is complete; otherwise the
    /// window continues on the general route from exactly the state its
    /// first call would have left ([`scattered_rest`](Self::scattered_rest)).
    ///
    /// Returns `false`, having done nothing, if the runs do not fit in one
    /// call (`max_ops`).
    #[inline(never)]
    fn read_scattered_direct<D: FnMut(Completion<'_>)>(
        &mut self,
        geometry: Geometry,
        window: &mut [ReadOp<'_>],
        bytes: u64,
        done: &mut D,
    ) -> bool {
        let room = geometry.max_transfer() as u64;
        // Each run: first op, number of ops, address, length.
        let mut runs: heapless::Vec<(usize, usize, u64, usize), F> = heapless::Vec::new();
        for (index, op) in window.iter().enumerate() {
            let (addr, len) = (op.addr, op.buf.len());
            let end = addr + len as u64;
            if let Some(run) = runs.last_mut() {
                // The planner's test, gap 0: starts where the run ends, and
                // the run stays within max_transfer and one unit.
                let run_end = run.2 + run.3 as u64;
                if addr == run_end && end - run.2 <= room && geometry.same_unit(run.2, end) {
                    run.1 += 1;
                    run.3 += len;
                    continue;
                }
            }
            // Cannot fail: at most one run per op.
            let _ = runs.push((index, 1, addr, len));
        }
        if runs.len() > geometry.max_ops() {
            return false;
        }

        let k = window.len();
        let mut n = Counters {
            ops: k as u64,
            fragments: k as u64,
            bytes_requested: bytes,
            backend_calls: 1,
            ..Counters::default()
        };
        let mut results: heapless::Vec<(usize, Option<ReadErrorKind>), F> = heapless::Vec::new();
        fill_unreported(&mut results, runs.len());
        let accepted = {
            let mut parts: heapless::Vec<&mut [u8], F> = heapless::Vec::new();
            for op in window.iter_mut() {
                // Cannot fail: at most F ops.
                let _ = parts.push(&mut *op.buf);
            }
            let mut rest: &mut [&mut [u8]] = &mut parts;
            let mut batch: heapless::Vec<ScatterOp<'_, '_>, F> = heapless::Vec::new();
            for (tag, &(_, count, addr, _)) in runs.iter().enumerate() {
                let (head, tail) = mem::take(&mut rest).split_at_mut(count);
                rest = tail;
                let _ = batch.push(ScatterOp {
                    addr,
                    parts: head,
                    tag,
                });
            }
            let accepted = self.backend.read_scattered(&mut batch, |r| {
                if let Some(slot) = results.get_mut(r.tag) {
                    *slot = (r.valid, r.error);
                }
            });
            accepted.min(batch.len())
        };
        let whole = accepted == runs.len()
            && runs
                .iter()
                .zip(results.iter())
                .all(|(run, result)| result.0 >= run.3);
        if !whole {
            self.scattered_rest(geometry, window, &runs, &results, accepted, n, done);
            return true;
        }
        for run in &runs {
            n.backend_ops += 1;
            n.bytes_read += run.3 as u64;
            if run.1 >= 2 {
                n.merged_reads += 1;
                n.merged_ops += run.1 as u64;
            }
        }
        self.counters.add(&n);
        for (index, op) in window.iter().enumerate() {
            let len = op.buf.len();
            let record = FragRecord {
                op: index,
                offset: 0,
                len,
                valid: len,
                error: None,
            };
            done(Completion {
                tag: op.tag,
                addr: op.addr,
                op_len: len,
                offset: 0,
                len,
                frags: core::slice::from_ref(&record),
                data: &*op.buf,
            });
        }
        true
    }

    /// [`read_scattered_direct`](Self::read_scattered_direct) when its call
    /// did not read every run whole: applies the call's outcome as the
    /// general route does (members read are complete, the others of a failed
    /// run are retried alone, runs not taken wait; a call that took nothing
    /// rejects the window), then lets the general route finish the window.
    #[cold]
    #[inline(never)]
    #[allow(clippy::too_many_arguments)]
    fn scattered_rest<D: FnMut(Completion<'_>)>(
        &mut self,
        geometry: Geometry,
        window: &mut [ReadOp<'_>],
        runs: &[(usize, usize, u64, usize)],
        results: &[(usize, Option<ReadErrorKind>)],
        accepted: usize,
        mut n: Counters,
        done: &mut D,
    ) {
        let mut records: heapless::Vec<FragRecord, F> = heapless::Vec::new();
        let mut slots: heapless::Vec<Slot<'_>, F> = heapless::Vec::new();
        for (index, op) in window.iter_mut().enumerate() {
            push(
                &mut records,
                &mut slots,
                FragRecord {
                    op: index,
                    offset: 0,
                    len: op.buf.len(),
                    valid: 0,
                    error: None,
                },
                Slot {
                    addr: op.addr,
                    buf: &mut *op.buf,
                    state: State::Pending,
                },
            );
        }
        for (&(first, count, addr, span), &result) in runs.iter().zip(results).take(accepted) {
            let (valid, error) = normalize(Some(result), span);
            n.backend_ops += 1;
            n.bytes_read += span as u64;
            if count == 1 {
                slots[first].state = State::Done;
                records[first].valid = valid;
                records[first].error = error;
                continue;
            }
            n.merged_reads += 1;
            n.merged_ops += count as u64;
            for (s, r) in slots[first..first + count]
                .iter_mut()
                .zip(&mut records[first..first + count])
            {
                let rel = (s.addr - addr) as usize;
                let len = s.buf.len();
                if rel + len <= valid {
                    s.state = State::Done;
                    r.valid = len;
                    r.error = None;
                } else {
                    s.state = State::Retry;
                }
            }
        }
        self.counters.add(&n);
        if accepted == 0 {
            for r in records.iter_mut() {
                r.valid = 0;
                r.error = Some(ReadErrorKind::Rejected);
            }
        } else {
            self.execute(geometry, &mut slots, &mut records);
        }
        drop(slots);
        for (op, record) in window.iter().zip(records.iter()) {
            done(Completion {
                tag: op.tag,
                addr: op.addr,
                op_len: op.buf.len(),
                offset: 0,
                len: op.buf.len(),
                frags: core::slice::from_ref(record),
                data: &*op.buf,
            });
        }
    }

    /// The direct route after a first call that took only `first` of the
    /// window's ops (backpressure, or `max_ops`): resubmits the rest as the
    /// general route would, until all are read or a call takes none.
    #[cold]
    #[inline(never)]
    fn direct_rest(
        &mut self,
        geometry: Geometry,
        window: &mut [ReadOp<'_>],
        results: &mut heapless::Vec<(usize, Option<ReadErrorKind>), F>,
        mut first: usize,
        n: &mut Counters,
    ) {
        let k = window.len();
        // What the last call took.
        let mut accepted = first;
        fill_unreported(results, first);
        while accepted > 0 && first < k {
            results.truncate(first);
            let passed = (k - first).min(geometry.max_ops());
            let mut batch: heapless::Vec<ReadOp<'_>, F> = heapless::Vec::new();
            for (tag, op) in window[first..first + passed].iter_mut().enumerate() {
                // Cannot fail: at most F ops.
                let _ = batch.push(ReadOp::new(op.addr, &mut *op.buf, tag));
            }
            fill_unreported(results, first + passed);
            let reports = &mut results[first..];
            accepted = self.backend.read_batch(&mut batch, |r| {
                if let Some(slot) = reports.get_mut(r.tag) {
                    *slot = (r.valid, r.error);
                }
            });
            n.backend_calls += 1;
            accepted = accepted.min(passed);
            first += accepted;
        }
        n.backend_ops = first as u64;
        // As the general route: what is left when a call takes nothing fails.
        results.truncate(first);
        for op in &window[first..] {
            n.bytes_read -= op.buf.len() as u64;
            let _ = results.push((0, Some(ReadErrorKind::Rejected)));
        }
    }

    /// Splits ops from `cursor` into fragments until the table is full, then
    /// reads them all.
    fn run_window(
        &mut self,
        geometry: Geometry,
        ops: &mut [ReadOp<'_>],
        cursor: &mut Cursor,
        records: &mut heapless::Vec<FragRecord, F>,
    ) {
        let mut slots: heapless::Vec<Slot<'_>, F> = heapless::Vec::new();
        let (mut op_count, mut bytes, mut fragments) = (0u64, 0u64, 0u64);
        for (op_index, op) in ops.iter_mut().enumerate().skip(cursor.op) {
            if records.is_full() {
                break;
            }
            let len = op.buf.len();
            let mut offset = cursor.offset;
            if offset == 0 {
                op_count += 1;
                bytes += len as u64;
                let unreadable = if len == 0 {
                    Some(None)
                } else if op.end().is_none() {
                    Some(Some(ReadErrorKind::AddressOverflow))
                } else {
                    None
                };
                if let Some(error) = unreadable {
                    push(
                        records,
                        &mut slots,
                        FragRecord {
                            op: op_index,
                            offset: 0,
                            len,
                            valid: 0,
                            error,
                        },
                        Slot {
                            addr: op.addr,
                            buf: &mut [],
                            state: State::Done,
                        },
                    );
                    cursor.op = op_index + 1;
                    continue;
                }
            }
            let mut rest: &mut [u8] = op.buf.get_mut(offset..).unwrap_or(&mut []);
            let mut addr = op.addr + offset as u64;
            while !rest.is_empty() && !records.is_full() {
                let n = geometry.fragment_len(addr, rest.len());
                let (head, tail) = mem::take(&mut rest).split_at_mut(n);
                rest = tail;
                push(
                    records,
                    &mut slots,
                    FragRecord {
                        op: op_index,
                        offset,
                        len: n,
                        valid: 0,
                        error: None,
                    },
                    Slot {
                        addr,
                        buf: head,
                        state: State::Pending,
                    },
                );
                fragments += 1;
                offset += n;
                addr += n as u64;
            }
            if rest.is_empty() {
                *cursor = Cursor {
                    op: op_index + 1,
                    offset: 0,
                };
            } else {
                *cursor = Cursor {
                    op: op_index,
                    offset,
                };
                break;
            }
        }
        self.counters.ops += op_count;
        self.counters.bytes_requested += bytes;
        self.counters.fragments += fragments;
        self.execute(geometry, &mut slots, records);
    }

    /// Reads every slot, merging neighbours, until each has its outcome.
    fn execute(&mut self, geometry: Geometry, slots: &mut [Slot<'_>], records: &mut [FragRecord]) {
        let scratch: &mut [u8] = self.scratch.as_mut();
        let max_gap = self.policy.max_gap();
        // Scattering needs no scratch, but has nowhere to put gap bytes.
        let scatter = max_gap == Some(0) && self.backend.scatters();
        let max_merge = if scatter {
            geometry.max_transfer() as u64
        } else {
            geometry.max_transfer().min(scratch.len()) as u64
        };
        let mut first = 0;
        // Kept local so the loop does not store through `self` per op.
        let mut n = Counters::default();
        loop {
            while first < slots.len() && slots[first].state == State::Done {
                first += 1;
            }
            if first == slots.len() {
                self.counters.add(&n);
                return;
            }

            // Plan one batch: which slots go together into which backend op.
            let mut plan: heapless::Vec<Plan, F> = heapless::Vec::new();
            let mut scratch_used = 0usize;
            let mut any_scatter = false;
            let mut i = first;
            while i < slots.len() && plan.len() < geometry.max_ops() {
                let s = &slots[i];
                if s.state == State::Done {
                    i += 1;
                    continue;
                }
                let start = s.addr;
                let mut end = start + s.buf.len() as u64;
                let mut j = i + 1;
                if let (State::Pending, Some(gap)) = (s.state, max_gap) {
                    let room = if scatter {
                        max_merge
                    } else {
                        max_merge.min((scratch.len() - scratch_used) as u64)
                    };
                    while let Some(t) = slots.get(j) {
                        if t.state != State::Pending || t.addr < end || t.addr - end > gap {
                            break;
                        }
                        let t_end = t.addr + t.buf.len() as u64;
                        if t_end - start > room || !geometry.same_unit(start, t_end) {
                            break;
                        }
                        end = t_end;
                        j += 1;
                    }
                }
                let entry = if j - i >= 2 {
                    let span = (end - start) as usize;
                    let route = if scatter {
                        any_scatter = true;
                        Route::Scatter
                    } else {
                        scratch_used += span;
                        Route::Scratch(scratch_used - span)
                    };
                    Plan {
                        first: i,
                        count: j - i,
                        addr: start,
                        span,
                        route,
                        retry: false,
                        result: None,
                    }
                } else {
                    j = i + 1;
                    Plan {
                        first: i,
                        count: 1,
                        addr: start,
                        span: s.buf.len(),
                        route: Route::Direct,
                        retry: s.state == State::Retry,
                        result: None,
                    }
                };
                // Cannot fail: each entry takes at least one of at most F slots.
                let _ = plan.push(entry);
                i = j;
            }

            // Hand the batch to the backend: as scatter ops if any merged
            // read scatters, else as plain ops.
            let accepted = if any_scatter {
                // Every planned slot's buffer, in plan order, then cut into
                // one run of parts per backend op.
                let mut parts: heapless::Vec<&mut [u8], F> = heapless::Vec::new();
                let mut entry = 0;
                for (index, s) in slots.iter_mut().enumerate() {
                    while entry < plan.len() && plan[entry].first + plan[entry].count <= index {
                        entry += 1;
                    }
                    match plan.get(entry) {
                        Some(p) if index >= p.first => {
                            let _ = parts.push(&mut *s.buf);
                        }
                        Some(_) => {}
                        None => break,
                    }
                }
                let mut rest: &mut [&mut [u8]] = &mut parts;
                let mut batch: heapless::Vec<ScatterOp<'_, '_>, F> = heapless::Vec::new();
                for (k, p) in plan.iter().enumerate() {
                    if rest.len() < p.count {
                        break;
                    }
                    let (head, tail) = mem::take(&mut rest).split_at_mut(p.count);
                    rest = tail;
                    let _ = batch.push(ScatterOp {
                        addr: p.addr,
                        parts: head,
                        tag: k,
                    });
                }
                let accepted = self.backend.read_scattered(&mut batch, |r| {
                    if let Some(p) = plan.get_mut(r.tag) {
                        p.result = Some((r.valid, r.error));
                    }
                });
                n.backend_calls += 1;
                accepted.min(batch.len())
            } else {
                let mut batch: heapless::Vec<ReadOp<'_>, F> = heapless::Vec::new();
                let mut scratch_rest: &mut [u8] = &mut scratch[..scratch_used];
                let mut slot_iter = slots.iter_mut().enumerate();
                for (k, p) in plan.iter().enumerate() {
                    let buf = if p.route == Route::Direct {
                        slot_iter
                            .by_ref()
                            .find(|(index, _)| *index == p.first)
                            .map(|(_, s)| &mut *s.buf)
                    } else {
                        let (head, tail) = mem::take(&mut scratch_rest).split_at_mut(p.span);
                        scratch_rest = tail;
                        Some(head)
                    };
                    match buf {
                        Some(buf) => {
                            let _ = batch.push(ReadOp::new(p.addr, buf, k));
                        }
                        None => break,
                    }
                }
                let accepted = self.backend.read_batch(&mut batch, |r| {
                    if let Some(p) = plan.get_mut(r.tag) {
                        p.result = Some((r.valid, r.error));
                    }
                });
                n.backend_calls += 1;
                accepted.min(batch.len())
            };

            if accepted == 0 {
                for (s, r) in slots.iter_mut().zip(records.iter_mut()).skip(first) {
                    if s.state != State::Done {
                        s.state = State::Done;
                        r.valid = 0;
                        r.error = Some(ReadErrorKind::Rejected);
                    }
                }
                self.counters.add(&n);
                return;
            }

            for p in &plan[..accepted] {
                let (valid, error) = normalize(p.result, p.span);
                n.backend_ops += 1;
                n.bytes_read += p.span as u64;
                if p.route == Route::Direct {
                    if p.retry {
                        n.retried_ops += 1;
                    }
                    slots[p.first].state = State::Done;
                    records[p.first].valid = valid;
                    records[p.first].error = error;
                    continue;
                }
                n.merged_reads += 1;
                n.merged_ops += p.count as u64;
                let merged: &[u8] = match p.route {
                    Route::Scratch(off) => &scratch[off..off + p.span],
                    _ => &[],
                };
                for (s, r) in slots[p.first..p.first + p.count]
                    .iter_mut()
                    .zip(&mut records[p.first..p.first + p.count])
                {
                    let rel = (s.addr - p.addr) as usize;
                    let len = s.buf.len();
                    if rel + len <= valid {
                        if let Some(bytes) = merged.get(rel..rel + len) {
                            s.buf.copy_from_slice(bytes);
                        }
                        s.state = State::Done;
                        r.valid = len;
                        r.error = None;
                    } else {
                        s.state = State::Retry;
                    }
                }
            }
        }
    }
}

/// How the lean pass of [`scan_into`] tests that an op is near its
/// predecessor: not at all (no merging: the caller does not look at
/// `near`), ...
const NEAR_NONE: u8 = 0;
/// ... by `addr == prev_end` (a gap of 0, the default policy), ...
const NEAR_ADJACENT: u8 = 1;
/// ... or by `addr - prev_end <= gap`.
const NEAR_GAP: u8 = 2;

/// What [`scan_into`] finds in a direct-route window.
struct Scan {
    /// Every op is one fragment: not empty, at most `max_transfer` long, not
    /// past the end of the address space, and within one boundary unit.
    one_fragment: bool,
    /// Some op starts at most `gap` bytes after the end of the op before
    /// it: the first part of the planner's merge test.
    near: bool,
    /// The bytes the ops request (meaningful when `one_fragment`).
    bytes: u64,
}

/// The first backend call of the direct route: `ops` tagged by their
/// index, each report stored under its tag into `valids` and `errors` (one
/// entry per op, filled "not reported" beforehand); reports past them are
/// ignored. Returns what the backend returned.
#[inline(always)]
fn call_direct<B: ReadBackend>(
    backend: &mut B,
    ops: &mut [ReadOp<'_>],
    valids: &mut [usize],
    errors: &mut [Option<ReadErrorKind>],
) -> usize {
    backend.read_batch(ops, |r| {
        if let (Some(v), Some(e)) = (valids.get_mut(r.tag), errors.get_mut(r.tag)) {
            *v = r.valid;
            *e = r.error;
        }
    })
}

/// The bytes `ops` request if every op is one fragment, none is near the
/// one before it (as for `gap` in [`scan_window`]), and, if `INDEXED`, each
/// is tagged by its index in `ops`: the window that can go to the backend
/// as it is. `None` otherwise, and [`scan_window`] then decides. Makes the
/// lean pass's tests ([`lean_pass`]), with the tag's on top if `INDEXED`.
#[inline(always)]
fn scan_lean<const INDEXED: bool>(
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

/// The mask the lean pass of [`scan_into`] tests an op's first and last
/// byte with: the bits above the boundary unit (`unit`) and above the
/// largest power of two at most `max_transfer`.
#[inline(always)]
fn lean_unit(max_transfer: u64, unit: u64) -> u64 {
    let block = 1u64 << (63 - max_transfer.max(1).leading_zeros());
    unit | !(block - 1)
}

/// [`scan_into`] with its lean pass picked for `gap` (`None` where nothing
/// merges).
#[inline(always)]
fn scan_window<'o, const F: usize>(
    ops: &'o mut [ReadOp<'_>],
    batch: &mut heapless::Vec<ReadOp<'o>, F>,
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

/// One pass over `ops` for [`Scan`], pushing each op onto `batch` with its
/// index as its tag. More than `F` ops fail the scan.
///
/// The pass starts lean: while every op is one fragment and none is near
/// its predecessor (as `NEAR` says), each test is a branch that the common
/// window, where all pass, always predicts. From the first op that fails
/// one, [`scan_rest`] goes on without branches, and the [`Scan`] is the
/// same either way.
#[inline(always)]
fn scan_into<'o, const NEAR: u8, const F: usize>(
    ops: &'o mut [ReadOp<'_>],
    batch: &mut heapless::Vec<ReadOp<'o>, F>,
    max_transfer: u64,
    unit: u64,
    gap: u64,
) -> Scan {
    batch.clear();
    if ops.len() > F {
        // Not reachable: the direct route takes at most `F` ops.
        return Scan {
            one_fragment: false,
            near: false,
            bytes: 0,
        };
    }
    let mut bytes = 0u64;
    // `u64::MAX` as the first predecessor's end never precedes an op.
    let mut prev_end = u64::MAX;
    // The lean pass tests the length and the boundary in one: that the
    // op's first and last byte lie in one aligned block of `p` bytes, the
    // largest power of two at most `max_transfer`, and in one boundary
    // unit (`b` bytes, a power of two). With `end > addr` (not empty, not
    // past the end of the address space), such an op is at most
    // `min(p, b) <= max_transfer` long and in one unit: one fragment. The
    // test is stricter than the exact one only for an op that crosses a
    // `p`-block, which happens only where `p < b` (with a boundary no
    // longer than `max_transfer`, `b <= p` and `unit` alone decides); such
    // an op goes on to `scan_rest`, which decides exactly.
    let lean_unit = lean_unit(max_transfer, unit);
    let mut rest = ops.iter_mut().enumerate();
    while let Some((tag, op)) = rest.next() {
        let (addr, len) = (op.addr, op.buf.len() as u64);
        let end = addr.wrapping_add(len);
        if !lean_pass::<NEAR>(addr, end, prev_end, lean_unit, gap) {
            return scan_rest(
                (tag, op),
                rest,
                batch,
                Scan {
                    one_fragment: true,
                    near: false,
                    bytes,
                },
                prev_end,
                max_transfer,
                unit,
                gap,
            );
        }
        bytes = bytes.wrapping_add(len);
        prev_end = end;
        // SAFETY: `batch` was emptied above and holds `F`, and there are at
        // most `F` ops (checked above), so it has room.
        unsafe { batch.push_unchecked(ReadOp::new(addr, &mut *op.buf, tag)) };
    }
    Scan {
        one_fragment: true,
        near: false,
        bytes,
    }
}

/// [`scan_into`] from the first op that failed its lean test (`first`, then
/// the ops of `rest`), given the [`Scan`] of the ops before it: one pass
/// without branches (on scattered addresses the merge test's parts are coin
/// tosses that branches would mispredict half the time, and the rest is
/// cheaper to accumulate than to branch on).
#[inline(never)]
#[allow(clippy::too_many_arguments)]
fn scan_rest<'o, 'b: 'o, const F: usize>(
    first: (usize, &'o mut ReadOp<'b>),
    rest: impl Iterator<Item = (usize, &'o mut ReadOp<'b>)>,
    batch: &mut heapless::Vec<ReadOp<'o>, F>,
    before: Scan,
    mut prev_end: u64,
    max_transfer: u64,
    unit: u64,
    gap: u64,
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
        one_fragment &= (len.wrapping_sub(1) < max_transfer)
            & !overflow
            & ((addr ^ end.wrapping_sub(1)) & unit == 0);
        // A prefilter for the full merge test, which the caller makes:
        // where `addr < prev_end` the difference wraps past any gap short
        // of 2^64 - (prev_end - addr), so at worst this calls for the full
        // test in vain.
        near |= addr.wrapping_sub(prev_end) <= gap;
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

/// A report's `(valid, error)`, made consistent: `valid <= len`, and an error
/// exactly when `valid < len`.
#[inline]
fn normalize(
    result: Option<(usize, Option<ReadErrorKind>)>,
    len: usize,
) -> (usize, Option<ReadErrorKind>) {
    match result {
        None => (0, Some(ReadErrorKind::Incomplete)),
        Some((valid, _)) if valid >= len => (len, None),
        Some((valid, error)) => (valid, Some(error.unwrap_or(ReadErrorKind::Incomplete))),
    }
}

/// A backend op's raw result: bytes read, and why the rest failed.
type Outcome = (usize, Option<ReadErrorKind>);

/// The [`Outcome`] of an op the backend did not report on.
const UNREPORTED: Outcome = (0, Some(ReadErrorKind::Incomplete));

/// The counters of a direct-route window of `k` ops requesting `bytes`
/// after its first backend call, before its ops taken are known.
#[inline(always)]
fn first_call_counters(k: usize, bytes: u64) -> Counters {
    Counters {
        ops: k as u64,
        fragments: k as u64,
        bytes_requested: bytes,
        bytes_read: bytes,
        backend_calls: 1,
        ..Counters::default()
    }
}

/// The completions of a direct-route window from its ops' raw results.
#[inline(always)]
fn complete_direct<D: FnMut(Completion<'_>)>(
    window: &[ReadOp<'_>],
    results: impl Iterator<Item = Outcome>,
    done: &mut D,
) {
    for (index, (op, result)) in window.iter().zip(results).enumerate() {
        complete_one(index, op.tag, op, result, done);
    }
}

/// The completion of a direct-route op, `index` in its window and tagged
/// `tag`, from its raw result.
#[inline(always)]
fn complete_one<D: FnMut(Completion<'_>)>(
    index: usize,
    tag: usize,
    op: &ReadOp<'_>,
    (valid, error): Outcome,
    done: &mut D,
) {
    let len = op.buf.len();
    let (valid, error) = if valid >= len {
        (len, None)
    } else {
        (valid, Some(error.unwrap_or(ReadErrorKind::Incomplete)))
    };
    let record = FragRecord {
        op: index,
        offset: 0,
        len,
        valid,
        error,
    };
    done(Completion {
        tag,
        addr: op.addr,
        op_len: len,
        offset: 0,
        len,
        frags: core::slice::from_ref(&record),
        data: &*op.buf,
    });
}

/// Extends `results` to `len` entries with "not reported".
#[inline]
fn fill_unreported<const F: usize>(
    results: &mut heapless::Vec<(usize, Option<ReadErrorKind>), F>,
    len: usize,
) {
    while results.len() < len {
        if results.push((0, Some(ReadErrorKind::Incomplete))).is_err() {
            break;
        }
    }
}

/// Adds a fragment to the table (the caller has checked there is room).
#[inline]
fn push<'w, const F: usize>(
    records: &mut heapless::Vec<FragRecord, F>,
    slots: &mut heapless::Vec<Slot<'w>, F>,
    record: FragRecord,
    slot: Slot<'w>,
) {
    if records.push(record).is_ok() {
        let _ = slots.push(slot);
    }
}

#[cfg(test)]
mod tests {
    //! The direct route against the general one: the same completions, the
    //! same counters and the same backend calls, also for backends that break
    //! the contract.

    extern crate alloc;

    use alloc::vec;
    use alloc::vec::Vec;

    use proptest::prelude::*;

    use super::*;
    use crate::backends::MemoryBackend;
    use crate::{Fragment, Report};

    fn mix(mut x: u64) -> u64 {
        x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
        x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        x ^ (x >> 31)
    }

    /// Memory that, depending on a seed and the call number, accepts fewer
    /// ops than it read, reports out of order, twice, not at all, under
    /// unknown tags, or more bytes than asked; and logs every call. With
    /// `in_order`, it says it [reports in order](ReadBackend::reports_in_order)
    /// and does so when `seed` is `None`; with a seed, it breaks that
    /// promise in the same ways, and also hands over a copy of an op.
    struct Quirky<'m> {
        inner: MemoryBackend<'m>,
        seed: Option<u64>,
        in_order: bool,
        calls: Vec<Vec<(u64, usize, usize)>>,
    }

    impl Quirky<'_> {
        /// Logs a call (its ops' addresses, lengths and tags), and returns
        /// its quirks: how many ops the call says it took of the `n` it
        /// read, the reports it makes of `got` (the reports of those `n`),
        /// and the hash they come from. `None` without a seed.
        fn quirks(
            &mut self,
            call: Vec<(u64, usize, usize)>,
            got: &[Report],
            n: usize,
        ) -> Option<(usize, Vec<Report>, u64)> {
            self.calls.push(call);
            let h = mix(self.seed? ^ self.calls.len() as u64);
            let n = if h.is_multiple_of(4) {
                n.min((h >> 8) as usize % (n + 1))
            } else {
                n
            };
            let mut reps: Vec<Report> = got[..n].to_vec();
            match (h >> 16) % 8 {
                0 => reps.reverse(),
                1 if !reps.is_empty() => {
                    reps.remove((h >> 24) as usize % reps.len());
                }
                2 => {
                    if let Some(&r) = reps.first() {
                        reps.push(Report::failed(r.tag, 0, ReadErrorKind::Io));
                    }
                }
                3 => reps.push(Report::ok(1000, 1)),
                4 => reps.iter_mut().for_each(|r| r.valid += 3),
                5 => reps.iter_mut().for_each(|r| r.error = None),
                6 if !got.is_empty() => {
                    // Any sequence: reports of the ops read, each under a
                    // tag drawn from the call's and a few past them, some
                    // cut short, in any order and number.
                    reps = (0..(h >> 24) % (2 * got.len() as u64 + 2))
                        .map(|i| {
                            let x = mix(h ^ i);
                            let mut r = got[x as usize % got.len()];
                            r.tag = (x >> 16) as usize % (got.len() + 2);
                            if (x >> 40).is_multiple_of(3) {
                                r.valid /= 2;
                            }
                            r
                        })
                        .collect();
                }
                _ => {}
            }
            if (h >> 32).is_multiple_of(5) {
                // A report for an op it did not take.
                reps.extend(got.get(n).copied());
            }
            Some((n, reps, h))
        }
    }

    impl ReadBackend for Quirky<'_> {
        fn geometry(&self) -> Geometry {
            self.inner.geometry()
        }

        fn read_batch<R: FnMut(Report)>(&mut self, ops: &mut [ReadOp<'_>], report: R) -> usize {
            let mut got = Vec::new();
            let n = self.inner.read_batch(ops, |r| got.push(r));
            let call = ops.iter().map(|o| (o.addr, o.buf.len(), o.tag)).collect();
            let Some((n, reps, _)) = self.quirks(call, &got, n) else {
                got.into_iter().for_each(report);
                return n;
            };
            reps.into_iter().for_each(report);
            n
        }

        fn reports_in_order(&self) -> bool {
            self.in_order
        }

        fn read_batch_in_order<R: FnMut(&ReadOp<'_>, Report)>(
            &mut self,
            ops: &mut [ReadOp<'_>],
            mut report: R,
        ) -> usize {
            // The reports by op index: tags are the ops' own here, which
            // need not be their positions. The log records positions, as
            // the other routes tag backend ops by them.
            let mut got = Vec::new();
            let n = self.inner.read_batch_in_order(ops, |_, r| {
                got.push(Report {
                    tag: got.len(),
                    ..r
                })
            });
            let call = ops
                .iter()
                .enumerate()
                .map(|(i, o)| (o.addr, o.buf.len(), i))
                .collect();
            let Some((n, reps, h)) = self.quirks(call, &got, n) else {
                for (op, r) in ops.iter().zip(got) {
                    report(op, Report { tag: op.tag, ..r });
                }
                return n;
            };
            // The copy handed over instead of the op it copies, if any.
            let copied = (h >> 48)
                .is_multiple_of(3)
                .then(|| (h >> 52) as usize % (n + 1));
            let mut spare = [0u8; 64];
            for r in reps {
                match ops.get(r.tag) {
                    Some(op) if copied != Some(r.tag) => report(op, Report { tag: op.tag, ..r }),
                    // A copy of an op, or an op it does not have.
                    found => {
                        let (addr, len, tag) =
                            found.map_or((0, 1, r.tag), |o| (o.addr, o.buf.len(), o.tag));
                        let copy = ReadOp::new(addr, &mut spare[..len.min(64)], tag);
                        report(&copy, Report { tag, ..r });
                    }
                }
            }
            n
        }

        fn scatters(&self) -> bool {
            self.inner.scatters()
        }
    }

    /// A completion's tag, address, op length, offset, length, fragments
    /// and data.
    type Seen = (usize, u64, usize, usize, usize, Vec<Fragment>, Vec<u8>);
    /// Every completion, the counters, and every backend call's ops.
    type Run = (Vec<Seen>, Counters, Vec<Vec<(u64, usize, usize)>>);

    #[derive(Debug, Clone)]
    struct Case {
        boundary: Option<u64>,
        max_transfer: usize,
        max_ops: usize,
        accept: usize,
        fault: Option<(u64, u64)>,
        gap: Option<u64>,
        scratch: usize,
        scatter: bool,
        quirks: Option<u64>,
        /// Each op tagged by its index in its window (which the direct
        /// route sends as it is), rather than by three times its index.
        indexed: bool,
        /// The backend says it reports in order (and keeps its promise
        /// unless it has `quirks`).
        in_order: bool,
        ops: Vec<(u64, usize)>,
    }

    fn case() -> impl Strategy<Value = Case> {
        (
            (
                prop_oneof![Just(None), (2u32..9).prop_map(|s| Some(1u64 << s))],
                1usize..70,
                1usize..12,
                prop_oneof![3 => Just(usize::MAX), 1 => 0usize..4],
                prop::option::of((0u64..300, 1u64..40)),
            ),
            (
                prop_oneof![Just(None), Just(Some(0u64)), Just(Some(4))],
                prop_oneof![Just(0usize), 1usize..200],
                any::<bool>(),
                prop::option::of(any::<u64>()),
                any::<bool>(),
                any::<bool>(),
            ),
            prop::collection::vec(
                (
                    0u8..8,
                    prop_oneof![19 => 0u64..320, 1 => (u64::MAX - 40)..=u64::MAX],
                    prop_oneof![3 => 1usize..9, 1 => 0usize..40],
                ),
                0..40,
            ),
        )
            .prop_map(
                |(
                    (boundary, max_transfer, max_ops, accept, fault),
                    (gap, scratch, scatter, quirks, indexed, in_order),
                    raw,
                )| {
                    let mut ops: Vec<(u64, usize)> = Vec::new();
                    for (mode, addr, len) in raw {
                        // A quarter of the ops follow the previous one, to
                        // merge; a few are empty or tiny.
                        let addr = match ops.last() {
                            Some(&(a, l)) if mode >= 6 => {
                                a.saturating_add(l as u64 + u64::from(mode - 6) * 2)
                            }
                            _ => addr,
                        };
                        ops.push((addr, if mode == 5 { len % 3 } else { len }));
                    }
                    Case {
                        boundary,
                        max_transfer,
                        max_ops,
                        accept,
                        fault,
                        gap,
                        scratch,
                        scatter,
                        quirks,
                        indexed,
                        // A backend that breaks its promise to report in
                        // order gets other results than on the general
                        // route: `unruly_case` tests it.
                        in_order: in_order && quirks.is_none(),
                        ops,
                    }
                },
            )
    }

    /// A case whose ops mostly follow each other, on a backend that
    /// scatters, with gap 0: merged reads straight into the buffers.
    fn merging_case() -> impl Strategy<Value = Case> {
        case().prop_map(|mut c| {
            c.gap = Some(0);
            c.scatter = true;
            for i in 1..c.ops.len() {
                if i % 4 != 0 {
                    let (addr, len) = c.ops[i - 1];
                    c.ops[i].0 = addr.saturating_add(len as u64);
                }
            }
            c
        })
    }

    /// A case on a backend that says it reports in order and does not.
    fn unruly_case() -> impl Strategy<Value = Case> {
        (case(), any::<u64>()).prop_map(|(mut c, seed)| {
            c.quirks = Some(seed);
            c.in_order = true;
            c
        })
    }

    /// Each completion's tag, address, op length, offset and length.
    fn shape(run: &Run) -> Vec<(usize, u64, usize, usize, usize)> {
        run.0.iter().map(|s| (s.0, s.1, s.2, s.3, s.4)).collect()
    }

    /// Whether every completion of `run` is consistent: its data as long
    /// as it is, and each fragment inside it, with an error exactly where
    /// bytes are missing.
    fn consistent(run: &Run) -> bool {
        run.0.iter().all(|(_, _, _, _, len, frags, data)| {
            data.len() == *len
                && frags
                    .iter()
                    .all(|f| f.valid <= f.len && f.error.is_some() == (f.valid < f.len))
        })
    }

    fn run<const N: usize, const F: usize>(c: &Case, mem: &[u8], direct: bool) -> Run {
        let g = Geometry::new(c.boundary, c.max_transfer, c.max_ops).expect("valid geometry");
        let mut inner = MemoryBackend::new(mem, g);
        inner.set_accept_limit(c.accept);
        inner.set_scatter(c.scatter);
        if let Some((start, len)) = c.fault {
            inner
                .inject_fault(start..start + len, ReadErrorKind::Unmapped)
                .expect("room for a fault");
        }
        let backend = Quirky {
            inner,
            seed: c.quirks,
            in_order: c.in_order,
            calls: Vec::new(),
        };
        let mut reader = Reader::<_, _, N, F>::with_window(backend, vec![0u8; c.scratch]);
        reader.set_policy(
            c.gap
                .map_or(CoalescePolicy::disabled(), CoalescePolicy::with_gap),
        );
        let mut bufs: Vec<Vec<u8>> = c.ops.iter().map(|&(_, len)| vec![0xAA; len]).collect();
        let mut ops: Vec<ReadOp<'_>> = bufs
            .iter_mut()
            .zip(&c.ops)
            .enumerate()
            .map(|(i, (b, &(addr, _)))| ReadOp::new(addr, b, if c.indexed { i % N } else { i * 3 }))
            .collect();
        let mut seen = Vec::new();
        let mut done = |d: Completion<'_>| {
            seen.push((
                d.tag(),
                d.addr(),
                d.op_len(),
                d.offset(),
                d.len(),
                d.fragments().collect(),
                d.data().to_vec(),
            ));
        };
        // read_iter's windows of N, as process sees them.
        for chunk in ops.chunks_mut(N) {
            reader.process_with(chunk, &mut done, direct);
        }
        let counters = reader.counters();
        let (backend, _) = reader.into_parts();
        (seen, counters, backend.calls)
    }

    /// Each op of the case read on its own: with `read_buf` (its route for
    /// one op) or through the general route, as summaries, buffers,
    /// counters and backend calls.
    type SingleRun = (
        Vec<(ReadSummary, Vec<u8>)>,
        Counters,
        Vec<Vec<(u64, usize, usize)>>,
    );

    fn run_single(c: &Case, mem: &[u8], one: bool) -> SingleRun {
        let g = Geometry::new(c.boundary, c.max_transfer, c.max_ops).expect("valid geometry");
        let mut inner = MemoryBackend::new(mem, g);
        inner.set_accept_limit(c.accept);
        inner.set_scatter(c.scatter);
        if let Some((start, len)) = c.fault {
            inner
                .inject_fault(start..start + len, ReadErrorKind::Unmapped)
                .expect("room for a fault");
        }
        let backend = Quirky {
            inner,
            seed: c.quirks,
            in_order: c.in_order,
            calls: Vec::new(),
        };
        let mut reader: Reader<_, _> = Reader::new(backend, vec![0u8; c.scratch]);
        reader.set_policy(
            c.gap
                .map_or(CoalescePolicy::disabled(), CoalescePolicy::with_gap),
        );
        let mut seen = Vec::new();
        for &(addr, len) in &c.ops {
            let mut buf = vec![0xAA; len];
            let summary = if one {
                reader.read_buf(addr, &mut buf)
            } else {
                let (mut ok, mut first_error) = (0, None);
                reader.process_with(
                    &mut [ReadOp::new(addr, &mut buf, 0)],
                    &mut |d: Completion<'_>| {
                        ok += d.ok_bytes();
                        if first_error.is_none() {
                            first_error = d.first_error();
                        }
                    },
                    false,
                );
                ReadSummary::new(len, ok, first_error)
            };
            seen.push((summary, buf));
        }
        let counters = reader.counters();
        let (backend, _) = reader.into_parts();
        (seen, counters, backend.calls)
    }

    proptest! {
        #![proptest_config(ProptestConfig {
            cases: if cfg!(miri) { 3 } else { 512 },
            failure_persistence: None,
            ..ProptestConfig::default()
        })]

        #[test]
        fn direct_route_matches_general_route(c in case()) {
            let mem: Vec<u8> = (0..300u32).map(|i| (i * 7 + 1) as u8).collect();
            prop_assert_eq!(run::<16, 64>(&c, &mem, true), run::<16, 64>(&c, &mem, false));
            prop_assert_eq!(run::<5, 4>(&c, &mem, true), run::<5, 4>(&c, &mem, false));
            prop_assert_eq!(run::<40, 1>(&c, &mem, true), run::<40, 1>(&c, &mem, false));
        }

        #[test]
        fn in_order_route_keeps_one_completion_per_op_on_unruly_backends(c in unruly_case()) {
            // A backend that breaks its promise to report in order gets
            // other results, but every op still has its completions, in op
            // order, as on the general route, and each is consistent.
            let mem: Vec<u8> = (0..300u32).map(|i| (i * 7 + 1) as u8).collect();
            for (direct, general) in [
                (run::<16, 64>(&c, &mem, true), run::<16, 64>(&c, &mem, false)),
                (run::<5, 4>(&c, &mem, true), run::<5, 4>(&c, &mem, false)),
            ] {
                prop_assert_eq!(shape(&direct), shape(&general));
                prop_assert_eq!(
                    (direct.1.ops, direct.1.fragments, direct.1.bytes_requested),
                    (general.1.ops, general.1.fragments, general.1.bytes_requested)
                );
                prop_assert!(consistent(&direct));
            }
        }

        #[test]
        fn single_op_route_matches_general_route(c in case()) {
            let mem: Vec<u8> = (0..300u32).map(|i| (i * 7 + 1) as u8).collect();
            prop_assert_eq!(run_single(&c, &mem, true), run_single(&c, &mem, false));
        }

        #[test]
        fn scattered_direct_route_matches_general_route(c in merging_case()) {
            let mem: Vec<u8> = (0..300u32).map(|i| (i * 7 + 1) as u8).collect();
            prop_assert_eq!(run::<16, 64>(&c, &mem, true), run::<16, 64>(&c, &mem, false));
            prop_assert_eq!(run::<5, 4>(&c, &mem, true), run::<5, 4>(&c, &mem, false));
        }
    }

    #[test]
    fn the_single_op_route_is_taken() {
        // Guards `single_op_route_matches_general_route` against comparing
        // the general route with itself: a plain op takes the single-op
        // route; one crossing a boundary does nothing there.
        let mem = [1u8; 64];
        let g = Geometry::new(Some(16), 16, 8).expect("valid geometry");
        let mut reader: Reader<_, _> = Reader::new(MemoryBackend::new(&mem, g), [0u8; 0]);
        let mut buf = [0u8; 8];
        let summary = reader.read_one(4, &mut buf).expect("one fragment");
        assert!(summary.is_ok());
        assert_eq!(buf, [1; 8]);
        let mut buf = [0u8; 8];
        assert_eq!(reader.read_one(12, &mut buf), None);
        assert_eq!(reader.read_one(4, &mut []), None);
        assert_eq!(buf, [0; 8]);
        assert_eq!(reader.counters().backend_calls, 1);
    }

    /// The scan as it was made before its lean pass: one pass without
    /// branches over every op.
    fn scan_reference(
        ops: &[(u64, usize)],
        max_transfer: u64,
        unit: u64,
        gap: u64,
    ) -> (bool, bool, u64) {
        let (mut one_fragment, mut near, mut bytes) = (true, false, 0u64);
        let mut prev_end = u64::MAX;
        for &(addr, len) in ops {
            let len = len as u64;
            let (end, overflow) = addr.overflowing_add(len);
            one_fragment &= (len.wrapping_sub(1) < max_transfer)
                & !overflow
                & ((addr ^ end.wrapping_sub(1)) & unit == 0);
            near |= addr.wrapping_sub(prev_end) <= gap;
            bytes = bytes.wrapping_add(len);
            prev_end = end;
        }
        (one_fragment, near, bytes)
    }

    fn scan_ops() -> impl Strategy<Value = Vec<(u64, usize)>> {
        prop::collection::vec(
            (
                0u8..4,
                prop_oneof![
                    6 => 0u64..600,
                    1 => (u64::MAX - 40)..=u64::MAX,
                    1 => any::<u64>(),
                ],
                prop_oneof![4 => 1usize..9, 1 => 0usize..80],
            ),
            0..24,
        )
        .prop_map(|raw| {
            let mut ops: Vec<(u64, usize)> = Vec::new();
            for (mode, addr, len) in raw {
                // Some ops start where the one before ends, or just after.
                let addr = match ops.last() {
                    Some(&(a, l)) if mode >= 2 => {
                        a.wrapping_add(l as u64 + u64::from(mode - 2) * 3)
                    }
                    _ => addr,
                };
                ops.push((addr, len));
            }
            ops
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig {
            cases: if cfg!(miri) { 4 } else { 2048 },
            failure_persistence: None,
            ..ProptestConfig::default()
        })]

        /// The scan's lean pass, and its hand-over to the pass without
        /// branches at any op, give what one pass without branches gives:
        /// the same `Scan` (`near` where merging asks for it) and the same
        /// batch, tagged by index.
        #[test]
        fn lean_scan_matches_branchless_scan(
            ops in scan_ops(),
            boundary in prop_oneof![Just(None), (0u32..10).prop_map(|s| Some(1u64 << s))],
            max_transfer in prop_oneof![1u64..70, Just(u64::MAX)],
            gap in prop_oneof![
                Just(None),
                Just(Some(0u64)),
                (1u64..8).prop_map(Some),
                Just(Some(u64::MAX)),
            ],
        ) {
            let unit = !boundary.map_or(u64::MAX, |b| b - 1);
            let mut bufs: Vec<Vec<u8>> = ops.iter().map(|&(_, len)| vec![0; len]).collect();
            let mut window: Vec<ReadOp<'_>> = bufs
                .iter_mut()
                .zip(&ops)
                .map(|(b, &(addr, _))| ReadOp::new(addr, b, 7))
                .collect();
            let mut batch: heapless::Vec<ReadOp<'_>, 24> = heapless::Vec::new();
            // As `read_direct` picks the lean pass.
            let scan = scan_window(&mut window, &mut batch, max_transfer, unit, gap);
            let (one_fragment, near, bytes) =
                scan_reference(&ops, max_transfer, unit, gap.unwrap_or(0));
            prop_assert_eq!(scan.one_fragment, one_fragment);
            prop_assert_eq!(scan.bytes, bytes);
            if gap.is_some() {
                prop_assert_eq!(scan.near, near);
            }
            let got: Vec<(u64, usize, usize)> =
                batch.iter().map(|op| (op.addr, op.buf.len(), op.tag)).collect();
            let want: Vec<(u64, usize, usize)> =
                ops.iter().enumerate().map(|(i, &(addr, len))| (addr, len, i)).collect();
            prop_assert_eq!(got, want);
        }
    }

    /// A scripted report: tag, valid bytes, error.
    type Scripted3 = (usize, usize, Option<ReadErrorKind>);
    /// A completion's valid bytes and first error.
    type Outcome2 = (usize, Option<(usize, ReadErrorKind)>);
    /// A script: what each call accepts and reports, and each op's outcome.
    type Script<'s> = (&'s [usize], &'s [&'s [Scripted3]], [Outcome2; 4]);

    /// Memory whose calls report exactly as scripted: call `i` accepts
    /// `accept[i]` ops (all of them past the script) and sends `reports[i]`
    /// as `(tag, valid, error)`.
    struct Scripted<'m> {
        inner: MemoryBackend<'m>,
        accept: Vec<usize>,
        reports: Vec<Vec<Scripted3>>,
        calls: usize,
    }

    impl ReadBackend for Scripted<'_> {
        fn geometry(&self) -> Geometry {
            self.inner.geometry()
        }

        fn read_batch<R: FnMut(Report)>(&mut self, ops: &mut [ReadOp<'_>], mut report: R) -> usize {
            let call = self.calls;
            self.calls += 1;
            let n = self.inner.read_batch(ops, |_| {});
            let n = self.accept.get(call).map_or(n, |&a| a.min(n));
            for &(tag, valid, error) in self.reports.get(call).map_or(&[][..], |r| &r[..]) {
                report(Report { tag, valid, error });
            }
            n
        }
    }

    /// Four 4-byte ops at 0, 8, 16, 24 of memory holding `0..64`, read
    /// through `Scripted`: each completion's tag, valid bytes and first
    /// error, by the direct route or the general one, and the counters.
    fn scripted(
        accept: &[usize],
        reports: &[&[Scripted3]],
        direct: bool,
    ) -> (Vec<(usize, Outcome2)>, Counters) {
        let mem: Vec<u8> = (0..64).collect();
        let g = Geometry::new(Some(64), 64, 8).expect("valid geometry");
        let backend = Scripted {
            inner: MemoryBackend::new(&mem, g),
            accept: accept.to_vec(),
            reports: reports.iter().map(|r| r.to_vec()).collect(),
            calls: 0,
        };
        let mut reader: Reader<_, _> = Reader::new(backend, [0u8; 0]);
        let mut bufs = [[0u8; 4]; 4];
        let mut ops: Vec<ReadOp<'_>> = bufs
            .iter_mut()
            .enumerate()
            .map(|(i, b)| ReadOp::new(i as u64 * 8, b, 10 + i))
            .collect();
        let mut seen = Vec::new();
        reader.process_with(
            &mut ops,
            &mut |d: Completion<'_>| seen.push((d.tag(), (d.ok_bytes(), d.first_error()))),
            direct,
        );
        (seen, reader.counters())
    }

    #[test]
    fn direct_route_reports_in_any_order() {
        use ReadErrorKind::{Incomplete, Io, Rejected};
        // In order, whole or not; out of order; one missing and one twice
        // (the last counts); unknown tags; a short read without a cause; a
        // call that takes two, then one that takes none.
        let cases: [Script<'_>; 6] = [
            (
                &[],
                &[&[(0, 4, None), (1, 4, None), (2, 4, None), (3, 4, None)]],
                [(4, None), (4, None), (4, None), (4, None)],
            ),
            (
                &[],
                &[&[(0, 4, None), (1, 2, Some(Io)), (2, 4, None), (3, 9, None)]],
                [(4, None), (2, Some((2, Io))), (4, None), (4, None)],
            ),
            (
                &[],
                &[&[(3, 4, None), (1, 2, Some(Io)), (0, 4, None), (2, 4, None)]],
                [(4, None), (2, Some((2, Io))), (4, None), (4, None)],
            ),
            (
                &[],
                &[&[(0, 4, None), (2, 1, Some(Io)), (3, 4, None), (2, 4, None)]],
                [(4, None), (0, Some((0, Incomplete))), (4, None), (4, None)],
            ),
            (
                &[],
                &[&[
                    (0, 4, None),
                    (9, 4, None),
                    (1, 3, None),
                    (4, 4, None),
                    (2, 4, None),
                    (3, 4, None),
                ]],
                [(4, None), (3, Some((3, Incomplete))), (4, None), (4, None)],
            ),
            (
                &[2, 0],
                &[&[(0, 4, None), (1, 4, None), (2, 4, None)], &[]],
                [
                    (4, None),
                    (4, None),
                    (0, Some((0, Rejected))),
                    (0, Some((0, Rejected))),
                ],
            ),
        ];
        for (accept, reports, want) in cases {
            let (direct, counters) = scripted(accept, reports, true);
            let want: Vec<_> = want
                .iter()
                .enumerate()
                .map(|(i, &outcome)| (10 + i, outcome))
                .collect();
            assert_eq!(direct, want);
            assert_eq!((direct, counters), scripted(accept, reports, false));
        }
    }

    #[test]
    fn the_direct_route_is_taken() {
        // Guards the test above against comparing the general route with
        // itself: a window of plain ops takes the direct route.
        let mem = [1u8; 64];
        let g = Geometry::new(Some(16), 16, 8).expect("valid geometry");
        let mut reader: Reader<_, _> = Reader::new(MemoryBackend::new(&mem, g), [0u8; 0]);
        let (mut a, mut b) = ([0u8; 4], [0u8; 4]);
        let mut ops = [ReadOp::new(0, &mut a, 0), ReadOp::new(8, &mut b, 1)];
        let mut calls = 0;
        let direct = reader.read_direct(g, &mut ops, &mut |_| calls += 1);
        assert!(direct);
        assert_eq!(calls, 2);
        // Adjacent ops that merge through scratch: not direct, nothing done.
        let (mut a, mut b) = ([0u8; 4], [0u8; 4]);
        let mut ops = [ReadOp::new(0, &mut a, 0), ReadOp::new(4, &mut b, 1)];
        let mut scratch = MemoryBackend::new(&mem, g);
        scratch.set_scatter(false);
        let mut reader: Reader<_, _> = Reader::new(scratch, [0u8; 64]);
        assert!(!reader.read_direct(g, &mut ops, &mut |_| calls += 1));
        assert_eq!(calls, 2);
        assert_eq!(reader.counters(), Counters::default());
        // The same on a backend that scatters: direct, one merged read.
        let mut reader: Reader<_, _> = Reader::new(MemoryBackend::new(&mem, g), [0u8; 0]);
        assert!(reader.read_direct(g, &mut ops, &mut |_| calls += 1));
        assert_eq!(calls, 4);
        let c = reader.counters();
        assert_eq!((c.backend_calls, c.merged_reads, c.merged_ops), (1, 1, 2));
        // An op that the lean pass refuses (it crosses a 16-byte block, the
        // largest power of two within `max_transfer` 24) but that is one
        // fragment all the same: direct, and read whole.
        let mem: [u8; 64] = core::array::from_fn(|i| i as u8);
        let g = Geometry::new(Some(64), 24, 8).expect("valid geometry");
        let mut reader: Reader<_, _> = Reader::new(MemoryBackend::new(&mem, g), [0u8; 0]);
        let (mut a, mut b) = ([0u8; 4], [0u8; 20]);
        let mut ops = [ReadOp::new(0, &mut a, 0), ReadOp::new(12, &mut b, 1)];
        let mut got = Vec::new();
        let direct = reader.read_direct(g, &mut ops, &mut |c: Completion<'_>| {
            got.push((c.tag(), c.is_ok(), c.data().to_vec()));
        });
        assert!(direct);
        let want: Vec<u8> = (12..32).collect();
        assert_eq!(got, [(0, true, vec![0, 1, 2, 3]), (1, true, want)]);
        let c = reader.counters();
        assert_eq!((c.backend_calls, c.backend_ops, c.fragments), (1, 2, 2));
    }

    /// Memory that logs where each call's ops lie and their tags.
    struct Spy<'m> {
        inner: MemoryBackend<'m>,
        calls: Vec<(usize, Vec<usize>)>,
    }

    impl ReadBackend for Spy<'_> {
        fn geometry(&self) -> Geometry {
            self.inner.geometry()
        }

        fn read_batch<R: FnMut(Report)>(&mut self, ops: &mut [ReadOp<'_>], report: R) -> usize {
            let tags = ops.iter().map(|op| op.tag).collect();
            self.calls.push((ops.as_ptr() as usize, tags));
            self.inner.read_batch(ops, report)
        }
    }

    #[test]
    fn ops_tagged_by_index_go_to_the_backend_as_they_are() {
        let mem: [u8; 64] = core::array::from_fn(|i| i as u8);
        let g = Geometry::new(Some(16), 16, 8).expect("valid geometry");
        let spy = Spy {
            inner: MemoryBackend::new(&mem, g),
            calls: Vec::new(),
        };
        let mut reader: Reader<_, _> = Reader::new(spy, [0u8; 0]);
        let mut bufs = [[0u8; 2]; 3];
        let [a, b, c] = &mut bufs;
        let mut ops = [
            ReadOp::new(0, a, 0),
            ReadOp::new(8, b, 1),
            ReadOp::new(32, c, 2),
        ];
        let at = ops.as_ptr() as usize;
        let mut tags = Vec::new();
        reader.read_many(&mut ops, |c| tags.push((c.tag(), c.is_ok())));
        assert_eq!(tags, [(0, true), (1, true), (2, true)]);
        // Tagged by their index: the caller's own ops, nothing copied.
        assert_eq!(reader.backend().calls, [(at, vec![0, 1, 2])]);
        assert_eq!(bufs, [[0, 1], [8, 9], [32, 33]]);

        // Other tags: a copy, tagged by index, and the caller's tags kept.
        let mut bufs = [[0u8; 2]; 3];
        let [a, b, c] = &mut bufs;
        let mut ops = [
            ReadOp::new(0, a, 7),
            ReadOp::new(8, b, 1),
            ReadOp::new(32, c, 2),
        ];
        let at = ops.as_ptr() as usize;
        let mut tags = Vec::new();
        reader.read_many(&mut ops, |c| tags.push((c.tag(), c.is_ok())));
        assert_eq!(tags, [(7, true), (1, true), (2, true)]);
        let (ptr, tags) = &reader.backend().calls[1];
        assert_ne!(*ptr, at);
        assert_eq!(tags, &[0, 1, 2]);
        assert_eq!([ops[0].tag, ops[1].tag, ops[2].tag], [7, 1, 2]);
        assert_eq!(bufs, [[0, 1], [8, 9], [32, 33]]);
    }

    /// Memory that says it reports in order. Its in-order call reads every
    /// op, then reports as `script` says (each entry an op's position; the
    /// op at `copy_of` is handed over as a copy) and says it took `taken`.
    /// Logs where each in-order call's ops lie, and counts the other calls.
    struct Unruly<'m> {
        inner: MemoryBackend<'m>,
        script: Vec<usize>,
        copy_of: Option<usize>,
        taken: usize,
        in_order_calls: Vec<usize>,
        batch_calls: usize,
    }

    impl<'m> Unruly<'m> {
        fn new(mem: &'m [u8], script: Vec<usize>, copy_of: Option<usize>, taken: usize) -> Self {
            let g = Geometry::new(Some(16), 16, 8).expect("valid geometry");
            Self {
                inner: MemoryBackend::new(mem, g),
                script,
                copy_of,
                taken,
                in_order_calls: Vec::new(),
                batch_calls: 0,
            }
        }
    }

    impl ReadBackend for Unruly<'_> {
        fn geometry(&self) -> Geometry {
            self.inner.geometry()
        }

        fn read_batch<R: FnMut(Report)>(&mut self, ops: &mut [ReadOp<'_>], report: R) -> usize {
            self.batch_calls += 1;
            self.inner.read_batch(ops, report)
        }

        fn reports_in_order(&self) -> bool {
            true
        }

        fn read_batch_in_order<R: FnMut(&ReadOp<'_>, Report)>(
            &mut self,
            ops: &mut [ReadOp<'_>],
            mut report: R,
        ) -> usize {
            self.in_order_calls.push(ops.as_ptr() as usize);
            let mut got = Vec::new();
            self.inner.read_batch_in_order(ops, |_, r| got.push(r));
            let mut spare = [0u8; 16];
            for &i in &self.script {
                let op = &ops[i];
                if self.copy_of == Some(i) {
                    let copy = ReadOp::new(op.addr, &mut spare[..op.buf.len()], op.tag);
                    report(&copy, got[i]);
                } else {
                    report(op, got[i]);
                }
            }
            self.taken
        }
    }

    /// A completion's tag, first error and bytes.
    type Seen5 = (usize, Option<(usize, ReadErrorKind)>, Vec<u8>);

    /// Reads five 2-byte ops tagged 10 to 14 at 0, 8, .., 32 with
    /// `reader`: each completion's tag, first error and bytes, and where the
    /// ops lie.
    fn read_five(reader: &mut Reader<Unruly<'_>, [u8; 0]>) -> (Vec<Seen5>, usize) {
        let mut bufs = [[0u8; 2]; 5];
        let mut ops: Vec<ReadOp<'_>> = bufs
            .iter_mut()
            .enumerate()
            .map(|(i, b)| ReadOp::new(8 * i as u64, b, 10 + i))
            .collect();
        let at = ops.as_ptr() as usize;
        let mut got = Vec::new();
        reader.read_many(&mut ops, |c| {
            got.push((c.tag(), c.first_error(), c.data().to_vec()))
        });
        (got, at)
    }

    #[test]
    fn a_backend_that_reports_in_order_completes_each_op_in_its_report() {
        // Guards the property tests' in-order cases: the route is taken, with
        // the caller's own ops (tags that are not positions), in one call.
        let mem: [u8; 64] = core::array::from_fn(|i| i as u8);
        let backend = Unruly::new(&mem, (0..5).collect(), None, 5);
        let mut reader: Reader<_, _> = Reader::new(backend, [0u8; 0]);
        let (got, at) = read_five(&mut reader);
        let want: Vec<_> = (0..5u8)
            .map(|i| (10 + i as usize, None, vec![8 * i, 8 * i + 1]))
            .collect();
        assert_eq!(got, want);
        assert_eq!(reader.backend().in_order_calls, [at]);
        assert_eq!(reader.backend().batch_calls, 0);
        let c = reader.counters();
        assert_eq!(
            (c.backend_calls, c.backend_ops, c.fragments, c.bytes_read),
            (1, 5, 5, 10)
        );
    }

    #[test]
    fn an_op_reported_out_of_order_completes_as_not_reported() {
        // Op 1 first (ignored, and not reported again), op 0 (completed),
        // op 0 again and a copy of op 2 (ignored), op 3 (not next:
        // ignored); the call says it took 2. So op 0 is read, op 1 is not
        // reported, and ops 2 to 4 are resubmitted, as on every route.
        let mem: [u8; 64] = core::array::from_fn(|i| i as u8);
        let backend = Unruly::new(&mem, vec![1, 0, 0, 2, 3], Some(2), 2);
        let mut reader: Reader<_, _> = Reader::new(backend, [0u8; 0]);
        let (got, _) = read_five(&mut reader);
        assert_eq!(
            got,
            [
                (10, None, vec![0, 1]),
                (11, Some((0, ReadErrorKind::Incomplete)), vec![8, 9]),
                (12, None, vec![16, 17]),
                (13, None, vec![24, 25]),
                (14, None, vec![32, 33]),
            ]
        );
        assert_eq!(reader.backend().in_order_calls.len(), 1);
        assert_eq!(reader.backend().batch_calls, 1);
        let c = reader.counters();
        assert_eq!((c.backend_calls, c.backend_ops, c.fragments), (2, 5, 5));
    }

    #[test]
    fn ops_reported_past_what_a_call_took_count_as_taken() {
        // Three ops reported in order, one said taken: the three have their
        // completions and only ops 3 and 4 are resubmitted.
        let mem: [u8; 64] = core::array::from_fn(|i| i as u8);
        let backend = Unruly::new(&mem, vec![0, 1, 2], None, 1);
        let mut reader: Reader<_, _> = Reader::new(backend, [0u8; 0]);
        let (got, _) = read_five(&mut reader);
        let want: Vec<_> = (0..5u8)
            .map(|i| (10 + i as usize, None, vec![8 * i, 8 * i + 1]))
            .collect();
        assert_eq!(got, want);
        assert_eq!(reader.backend().batch_calls, 1);
        let c = reader.counters();
        assert_eq!((c.backend_calls, c.backend_ops), (2, 5));
    }

    /// Memory with only the required methods, whose calls past the first
    /// `takes` take nothing; counts its calls.
    struct Plain<'m> {
        inner: MemoryBackend<'m>,
        takes: usize,
        calls: usize,
    }

    impl ReadBackend for Plain<'_> {
        fn geometry(&self) -> Geometry {
            self.inner.geometry()
        }

        fn read_batch<R: FnMut(Report)>(&mut self, ops: &mut [ReadOp<'_>], report: R) -> usize {
            self.calls += 1;
            if self.calls > self.takes {
                return 0;
            }
            self.inner.read_batch(ops, report)
        }
    }

    #[test]
    fn the_default_in_order_call_reads_op_by_op() {
        let mem: [u8; 64] = core::array::from_fn(|i| i as u8);
        let g = Geometry::new(None, 64, 8).expect("valid geometry");
        let mut backend = Plain {
            inner: MemoryBackend::new(&mem, g),
            takes: 3,
            calls: 0,
        };
        assert!(!backend.reports_in_order());
        let mut bufs = [[0u8; 2]; 4];
        let mut ops: Vec<ReadOp<'_>> = bufs
            .iter_mut()
            .enumerate()
            .map(|(i, b)| ReadOp::new(59 + 2 * i as u64, b, 7 * i))
            .collect();
        let mut seen = Vec::new();
        let n = backend.read_batch_in_order(&mut ops, |op, r| {
            seen.push((op.addr, op.buf.to_vec(), r));
        });
        // One call per op; the fourth takes nothing, which ends the batch.
        assert_eq!((n, backend.calls), (3, 4));
        assert_eq!(
            seen,
            [
                (59, vec![59, 60], Report::ok(0, 2)),
                (61, vec![61, 62], Report::ok(7, 2)),
                (
                    63,
                    vec![63, 0],
                    Report::failed(14, 1, ReadErrorKind::OutOfBounds)
                ),
            ]
        );
    }
}
