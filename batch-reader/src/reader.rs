//! [`Reader`]: fragmentation, coalescing, retries, and the read layers.

use core::mem;

use zerocopy::{FromBytes, IntoBytes};

use crate::completion::FragRecord;
use crate::{
    CoalescePolicy, Completion, Counters, Geometry, ReadBackend, ReadErrorKind, ReadOp,
    ReadSummary, ScatterOp,
};

/// Default number of ops in a [`read_iter`](Reader::read_iter) window.
pub const DEFAULT_WINDOW: usize = 16;
/// Default number of fragments the reader tracks at once.
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
    pub fn set_policy(&mut self, policy: CoalescePolicy) -> &mut Self {
        self.policy = policy;
        self
    }

    /// The coalescing policy.
    pub fn policy(&self) -> CoalescePolicy {
        self.policy
    }

    /// The running totals.
    pub fn counters(&self) -> Counters {
        self.counters
    }

    /// Zeroes the running totals.
    pub fn reset_counters(&mut self) {
        self.counters = Counters::default();
    }

    /// The backend.
    pub fn backend(&self) -> &B {
        &self.backend
    }

    /// The backend, mutably (to inject faults, say).
    pub fn backend_mut(&mut self) -> &mut B {
        &mut self.backend
    }

    /// The backend and the scratch space back.
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
    pub fn read_buf(&mut self, addr: u64, buf: &mut [u8]) -> ReadSummary {
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
    fn process<D: FnMut(Completion<'_>)>(&mut self, ops: &mut [ReadOp<'_>], done: &mut D) {
        let geometry = self.backend.geometry();
        let mut cursor = Cursor { op: 0, offset: 0 };
        let mut records: heapless::Vec<FragRecord, F> = heapless::Vec::new();
        while cursor.op < ops.len() {
            records.clear();
            self.run_window(geometry, ops, &mut cursor, &mut records);
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
