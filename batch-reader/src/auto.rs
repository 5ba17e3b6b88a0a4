//! [`AsyncReader`]: reads that batch themselves on `.await`.
//!
//! Callers `.await` single reads; the reader queues them and sends every
//! queued op to the backend in one call when the task would otherwise return
//! `Pending`, or when `N` ops are queued. The task drives the backend itself:
//! there is no backend task, thread or channel.
//!
//! Bytes go from the backend into the reader's own staging space and are
//! copied into a caller's buffer only while that caller's future is being
//! polled, so a future that is dropped or leaked at any point leaves nothing
//! behind that could write to its buffer.

use core::cell::Cell;
use core::fmt;
use core::future::Future;
use core::marker::PhantomData;
use core::mem;
use core::pin::Pin;
use core::ptr;
use core::task::{Context, Poll, Waker};

use zerocopy::{FromBytes, IntoBytes};

use crate::loom::UnsafeCell;
use crate::{CoalescePolicy, Counters, DEFAULT_WINDOW, ReadBackend, ReadErrorKind, ReadOp, Reader};

/// Default number of ops an [`AsyncReader`] queues before it flushes
/// without waiting for the task to run out of work.
///
/// # Examples
///
/// ```
/// use batch_reader::{backends::MemoryBackend, AsyncReader, Geometry, DEFAULT_QUEUE};
///
/// let mem = [0u8; 16];
/// let reader: AsyncReader<_, _> =
///     AsyncReader::new(MemoryBackend::new(&mem, Geometry::new(None, 16, 1024)?), [0u8; 0]);
/// assert_eq!(reader.queue_capacity(), DEFAULT_QUEUE);
/// # Ok::<(), batch_reader::GeometryError>(())
/// ```
pub const DEFAULT_QUEUE: usize = 256;

/// Default size in bytes of an [`AsyncReader`]'s staging space.
///
/// # Examples
///
/// ```
/// use batch_reader::{backends::MemoryBackend, AsyncReader, Geometry, DEFAULT_STAGING};
///
/// let mem = [0u8; 16];
/// let reader: AsyncReader<_, _> =
///     AsyncReader::new(MemoryBackend::new(&mem, Geometry::new(None, 16, 1024)?), [0u8; 0]);
/// assert_eq!(reader.staging_capacity(), DEFAULT_STAGING);
/// # Ok::<(), batch_reader::GeometryError>(())
/// ```
pub const DEFAULT_STAGING: usize = 4096;

/// A read that failed part-way: bytes `[0, valid)` of the caller's buffer
/// were read and the byte at `valid` failed with `kind`. From `valid` on, the
/// buffer holds what it held before, except after a read too large for the
/// staging space, which goes straight into the buffer: there it may also hold
/// bytes read past the failure.
///
/// # Examples
///
/// ```
/// use batch_reader::{PartialRead, ReadErrorKind};
///
/// let e = PartialRead { valid: 3, kind: ReadErrorKind::Unmapped };
/// assert_eq!(e.to_string(), "read failed after 3 bytes: address not mapped");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PartialRead {
    /// How many bytes, from the start of the buffer, were read.
    pub valid: usize,
    /// Why the byte at `valid` could not be read.
    pub kind: ReadErrorKind,
}

impl fmt::Display for PartialRead {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "read failed after {} bytes: {}", self.valid, self.kind)
    }
}

impl core::error::Error for PartialRead {}

/// Where a queued op is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SlotState {
    /// Not in use.
    Free,
    /// Waiting for the next flush; it holds no staging yet.
    Queued,
    /// Its future was dropped while it was queued: the next flush skips it
    /// and frees it.
    Cancelled,
    /// Read; its bytes wait in staging until its future is polled or dropped.
    Done,
}

/// The offset and kind of a read's first failed byte, if any.
type Failure = Option<(usize, ReadErrorKind)>;

/// One queued op.
#[derive(Debug)]
struct Slot {
    state: SlotState,
    addr: u64,
    /// Where its bytes are in staging, once the flush that reads it has
    /// placed them.
    off: usize,
    len: usize,
    /// Offset and kind of its first failed byte, once read.
    failure: Option<(usize, ReadErrorKind)>,
    /// Whom to wake when it is read; `None` when the flush is made by the
    /// [`Run`] that polls it, which re-polls without being woken.
    waker: Option<Waker>,
}

impl Slot {
    const FREE: Slot = Slot {
        state: SlotState::Free,
        addr: 0,
        off: 0,
        len: 0,
        failure: None,
        waker: None,
    };
}

/// The slot index a future holds while its op is the reader's solo op.
const SOLO: usize = usize::MAX;

/// The slot index a future holds while its op is not queued (not yet, or
/// no longer). Slot indices proper are below `N`.
const UNQUEUED: usize = usize::MAX - 1;

/// The longest read that can be the solo op.
const SOLO_BYTES: usize = 64;

/// The solo op: a read awaited alone under the run that polls it, as each
/// step of a single chain is. It is kept apart from the slots, so that such
/// a read is queued, flushed and taken with a few stores and loads.
///
/// It exists only while the queue is empty: a second op queued before the
/// flush first moves the solo op into a slot ([`Solo::Moved`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Solo {
    /// None.
    Empty,
    /// Waiting for the next flush.
    Queued { addr: u64, len: usize },
    /// Read into `solo_buf`, with the offset and kind of its first failed
    /// byte if any; taken when its future is polled or dropped.
    Done(Option<(usize, ReadErrorKind)>),
    /// Moved into this slot; its future takes the slot on its next poll.
    Moved(usize),
    /// None, and the last flush read several ops: the next read goes into a
    /// slot. The other futures of that flush are still to be polled and
    /// likely to queue reads too (joined chains), and the first of them
    /// would only move a solo op into a slot. A flush of one op in a slot
    /// makes it [`Solo::Empty`] again.
    Joined,
}

/// Everything the futures share, behind the reader's one cell.
struct Inner<B, S, const N: usize, const A: usize> {
    reader: Reader<B, S, DEFAULT_WINDOW, N>,
    solo: Solo,
    /// Where the solo op's bytes land.
    solo_buf: [u8; SOLO_BYTES],
    staging: [u8; A],
    slots: [Slot; N],
    /// Indices of free slots.
    free: heapless::Vec<usize, N>,
    /// Indices of queued (and cancelled) slots, in queue order.
    queue: heapless::Vec<usize, N>,
    /// The end of the staging bytes of read slots: the next flush places
    /// its ops' bytes from here on.
    bump: usize,
    /// The staging bytes read slots hold (the sum of their lengths);
    /// staging is reused from its start once this is zero.
    held: usize,
    /// The staging bytes the queued ops will take when they are read:
    /// `held + queued <= A` always, so a flush always finds room for them,
    /// after moving the held bytes to the front if it must.
    queued: usize,
    /// A queued slot may hold a waker or have been cancelled since the last
    /// flush: that flush must look for both. (Reads queued under a run
    /// store no waker and are seldom dropped, so most flushes need not.)
    stirred: bool,
}

/// `to.copy_from_slice(from)`, without a call to `memcpy` for the 8-byte
/// values most reads are.
#[inline(always)]
fn copy_small(to: &mut [u8], from: &[u8]) {
    match (
        <&mut [u8; 8]>::try_from(&mut *to),
        <&[u8; 8]>::try_from(from),
    ) {
        (Ok(to), Ok(from)) => *to = *from,
        _ => to.copy_from_slice(from),
    }
}

/// Marks a slot that a flush found no staging for (which `held + queued <=
/// A` rules out) read and failed, holding no staging.
#[cold]
fn unplaced(slot: &mut Slot) {
    slot.off = 0;
    slot.len = 0;
    slot.failure = Some((0, ReadErrorKind::Other));
}

/// What a first poll got.
enum Enqueued {
    /// Became the solo op.
    Solo,
    /// Queued in this slot; `true` if that filled the queue.
    Slot(usize, bool),
    /// No room (slots or staging): read at once, alone.
    Direct,
}

/// What polling the solo op found.
enum SoloPoll {
    /// Read; the copy to the caller is made.
    Ready(Option<(usize, ReadErrorKind)>),
    /// Still queued, under the run that flushes it.
    Wait,
    /// Moved into this slot: go on as that slot's future.
    Slot(usize),
    /// Still queued, polled where no run will flush it, and no slot to move
    /// it to: flush it now.
    Flush,
}

/// What polling a queued op found.
enum Status {
    /// Read; the copy to the caller is made.
    Ready(Option<(usize, ReadErrorKind)>, Option<Waker>),
    /// Still queued.
    Queued {
        /// Its stored waker does not wake this context.
        stale_waker: bool,
    },
}

/// A reader whose reads batch themselves: each `read(..).await` or
/// `read_val(..).await` queues one op, and every op queued when the task runs
/// out of other work goes to the backend in one call.
///
/// - `N` (default [`DEFAULT_QUEUE`]) is the most ops queued at once; the
///   reader flushes as soon as `N` are queued. It is also the fragment table
///   of the [`Reader`] inside, so a flush that the backend's geometry allows
///   in one call is one call.
/// - `A` (default [`DEFAULT_STAGING`]) is the staging space, in bytes, that
///   queued reads land in before their futures copy them out. A read that
///   does not fit in it, even with the bytes in use moved together, or that
///   finds all `N` slots taken, is made at once on its own.
/// - `S` is the scratch space of the [`Reader`] inside (see there).
///
/// # Flushing
///
/// Inside [`run`](AsyncReader::run), a flush happens every time the future
/// being run returns `Pending` with ops queued: the run flushes and polls it
/// again at once, and returns `Pending` only when nothing is queued. Awaited
/// anywhere else (no `run`), a read that is queued wakes its task and flushes
/// when it is polled again, so the batch is every op queued by then, at the
/// cost of one trip through the executor.
///
/// # Buffers on the stack
///
/// A flush writes only into the reader's own space: staging, or a small
/// buffer for the solo op (a read awaited alone under a run). A future
/// copies its bytes into the caller's buffer while it is being polled, when
/// it holds that buffer. A future dropped while its op is queued takes the op
/// out of the next batch; a future leaked with `mem::forget` keeps its slot
/// and staging until the reader is dropped, and never touches its buffer
/// again. No `unsafe` contract is put on callers.
///
/// The reader is not `Sync`: the futures of one reader live in one task (or
/// in tasks of one thread).
///
/// A backend that panics during a flush leaves the reader failing every
/// later read with [`Other`](ReadErrorKind::Other): the queue it was reading
/// is not trusted again.
///
/// # Examples
///
/// Three chains of dependent reads, of 1, 3 and 5 reads, joined: 5 backend
/// calls, one per step of the longest chain.
///
/// ```
/// use batch_reader::{backends::MemoryBackend, AsyncReader, Geometry};
/// use embassy_futures::{block_on, join::join3};
///
/// // Each 8-byte word holds the address of the next word.
/// let mut mem = vec![0u8; 1024];
/// for i in 0..128u64 {
///     mem[i as usize * 8..][..8].copy_from_slice(&((i + 1) * 8).to_ne_bytes());
/// }
/// let backend = MemoryBackend::new(&mem, Geometry::new(None, 1024, 1024)?);
/// let mut reader: AsyncReader<_, _> = AsyncReader::new(backend, [0u8; 0]);
/// let (a, b, c) = block_on(reader.run(|r| async move {
///     let chain = |start: u64, steps: usize| async move {
///         let mut p = start;
///         for _ in 0..steps {
///             p = r.read_val::<u64>(p).await?;
///         }
///         Ok::<u64, batch_reader::ReadErrorKind>(p)
///     };
///     join3(chain(0, 1), chain(160, 3), chain(480, 5)).await
/// }));
/// assert_eq!((a, b, c), (Ok(8), Ok(184), Ok(520)));
/// assert_eq!(reader.counters().backend_calls, 5);
/// # Ok::<(), batch_reader::GeometryError>(())
/// ```
pub struct AsyncReader<B, S, const N: usize = DEFAULT_QUEUE, const A: usize = DEFAULT_STAGING> {
    inner: UnsafeCell<Inner<B, S, N, A>>,
    /// A flush is under way: the backend is running, and `inner` is
    /// borrowed. Anything that would touch `inner` checks this first.
    busy: Cell<bool>,
    /// The waker of the [`Run`] whose future is being polled right now, or
    /// null.
    driver: Cell<*const Waker>,
    /// A read flushed a full queue in its own poll: the ops read then may
    /// belong to futures that a run polls and that stored no waker, so the
    /// run must poll its future again.
    repoll: Cell<bool>,
    /// The counters as [`counters`](AsyncReader::counters) last read them,
    /// for a call made while a flush holds `inner`.
    counters: Cell<Counters>,
}

// SAFETY: the only field that is not `Send` on its own is `driver`, a
// pointer that is non-null only while a `Run` borrowing the reader is being
// polled; the reader cannot be moved to another thread while it is borrowed,
// so a reader that moves carries a null pointer. Everything else (the
// backend, the scratch, the stored wakers) is `Send` by the bounds.
unsafe impl<B: Send, S: Send, const N: usize, const A: usize> Send for AsyncReader<B, S, N, A> {}

impl<B, S, const N: usize, const A: usize> fmt::Debug for AsyncReader<B, S, N, A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AsyncReader")
            .field("counters", &self.counters.get())
            .field("busy", &self.busy.get())
            .finish_non_exhaustive()
    }
}

impl<B, S, const N: usize, const A: usize> AsyncReader<B, S, N, A> {
    /// A reader over `backend`, with `scratch` for merged reads (see
    /// [`Reader`]). `N` must be non-zero (a compile-time check).
    ///
    /// # Examples
    ///
    /// ```
    /// use batch_reader::{backends::MemoryBackend, AsyncReader, Geometry};
    ///
    /// let mem = [7u8; 64];
    /// let backend = MemoryBackend::new(&mem, Geometry::new(None, 64, 64)?);
    /// // Up to 16 ops per batch, 256 bytes of staging.
    /// let reader = AsyncReader::<_, _, 16, 256>::new(backend, [0u8; 64]);
    /// assert_eq!(embassy_futures::block_on(reader.read_val::<u16>(0)), Ok(0x0707));
    /// # Ok::<(), batch_reader::GeometryError>(())
    /// ```
    pub fn new(backend: B, scratch: S) -> Self {
        const { assert!(N > 0, "the queue must hold at least one op") };
        let mut free = heapless::Vec::new();
        for i in (0..N).rev() {
            // Cannot fail: N indices into a vector of capacity N.
            let _ = free.push(i);
        }
        Self {
            inner: UnsafeCell::new(Inner {
                reader: Reader::with_window(backend, scratch),
                solo: Solo::Empty,
                solo_buf: [0; SOLO_BYTES],
                staging: [0; A],
                slots: [const { Slot::FREE }; N],
                free,
                queue: heapless::Vec::new(),
                bump: 0,
                held: 0,
                queued: 0,
                stirred: false,
            }),
            busy: Cell::new(false),
            driver: Cell::new(ptr::null()),
            repoll: Cell::new(false),
            counters: Cell::new(Counters::default()),
        }
    }

    /// `N`: the most ops queued at once.
    ///
    /// # Examples
    ///
    /// ```
    /// use batch_reader::{backends::MemoryBackend, AsyncReader, Geometry};
    ///
    /// let backend = MemoryBackend::new(&[], Geometry::new(None, 16, 16)?);
    /// assert_eq!(AsyncReader::<_, _, 8>::new(backend, [0u8; 0]).queue_capacity(), 8);
    /// # Ok::<(), batch_reader::GeometryError>(())
    /// ```
    pub fn queue_capacity(&self) -> usize {
        N
    }

    /// `A`: the bytes of staging space queued reads share.
    ///
    /// # Examples
    ///
    /// ```
    /// use batch_reader::{backends::MemoryBackend, AsyncReader, Geometry};
    ///
    /// let backend = MemoryBackend::new(&[], Geometry::new(None, 16, 16)?);
    /// assert_eq!(AsyncReader::<_, _, 8, 64>::new(backend, [0u8; 0]).staging_capacity(), 64);
    /// # Ok::<(), batch_reader::GeometryError>(())
    /// ```
    pub fn staging_capacity(&self) -> usize {
        A
    }

    /// Running totals of the [`Reader`] inside: `backend_calls` counts
    /// flushes and reads made alone. Called from inside the reader's own
    /// backend during a flush, it returns the totals it last returned.
    ///
    /// # Examples
    ///
    /// ```
    /// use batch_reader::{backends::MemoryBackend, AsyncReader, Geometry};
    /// use embassy_futures::{block_on, join::join};
    ///
    /// let mem: Vec<u8> = (0..64).collect();
    /// let backend = MemoryBackend::new(&mem, Geometry::new(None, 64, 64)?);
    /// let mut reader: AsyncReader<_, _> = AsyncReader::new(backend, [0u8; 0]);
    /// let (a, b) = block_on(reader.run(|r| join(r.read_val::<u8>(3), r.read_val::<u8>(40))));
    /// assert_eq!((a, b), (Ok(3), Ok(40)));
    /// let c = reader.counters();
    /// assert_eq!((c.backend_calls, c.ops), (1, 2));
    /// # Ok::<(), batch_reader::GeometryError>(())
    /// ```
    pub fn counters(&self) -> Counters {
        match self.with(|inner| inner.reader.counters()) {
            Some(now) => {
                self.counters.set(now);
                now
            }
            None => self.counters.get(),
        }
    }

    /// Replaces the coalescing policy of the [`Reader`] inside.
    ///
    /// # Examples
    ///
    /// ```
    /// use batch_reader::{backends::MemoryBackend, AsyncReader, CoalescePolicy, Geometry};
    ///
    /// let backend = MemoryBackend::new(&[], Geometry::new(None, 16, 16)?);
    /// let mut reader: AsyncReader<_, _> = AsyncReader::new(backend, [0u8; 0]);
    /// reader.set_policy(CoalescePolicy::disabled());
    /// assert_eq!(reader.policy(), CoalescePolicy::disabled());
    /// # Ok::<(), batch_reader::GeometryError>(())
    /// ```
    pub fn set_policy(&mut self, policy: CoalescePolicy) -> &mut Self {
        self.inner_mut().reader.set_policy(policy);
        self
    }

    /// The coalescing policy of the [`Reader`] inside.
    ///
    /// # Examples
    ///
    /// ```
    /// use batch_reader::{backends::MemoryBackend, AsyncReader, CoalescePolicy, Geometry};
    ///
    /// let backend = MemoryBackend::new(&[], Geometry::new(None, 16, 16)?);
    /// let mut reader: AsyncReader<_, _> = AsyncReader::new(backend, [0u8; 0]);
    /// assert_eq!(reader.policy(), CoalescePolicy::default());
    /// # Ok::<(), batch_reader::GeometryError>(())
    /// ```
    pub fn policy(&mut self) -> CoalescePolicy {
        self.inner_mut().reader.policy()
    }

    /// The backend, for changes between reads (no future can be alive).
    ///
    /// # Examples
    ///
    /// ```
    /// use batch_reader::{backends::MemoryBackend, AsyncReader, Geometry, ReadErrorKind};
    ///
    /// let mem = [0u8; 16];
    /// let backend = MemoryBackend::new(&mem, Geometry::new(None, 16, 16)?);
    /// let mut reader: AsyncReader<_, _> = AsyncReader::new(backend, [0u8; 0]);
    /// reader.backend_mut().inject_fault(0..4, ReadErrorKind::Io)?;
    /// assert_eq!(embassy_futures::block_on(reader.read_val::<u8>(2)), Err(ReadErrorKind::Io));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn backend_mut(&mut self) -> &mut B {
        self.inner_mut().reader.backend_mut()
    }

    /// Takes the reader apart. Ops still queued (by leaked futures) are
    /// dropped unread.
    ///
    /// # Examples
    ///
    /// ```
    /// use batch_reader::{backends::MemoryBackend, AsyncReader, Geometry};
    ///
    /// let backend = MemoryBackend::new(&[], Geometry::new(None, 16, 16)?);
    /// let reader: AsyncReader<_, _> = AsyncReader::new(backend, [1u8; 4]);
    /// let (_backend, scratch) = reader.into_parts();
    /// assert_eq!(scratch, [1; 4]);
    /// # Ok::<(), batch_reader::GeometryError>(())
    /// ```
    pub fn into_parts(self) -> (B, S) {
        let Inner { reader, .. } = self.inner.into_inner();
        reader.into_parts()
    }

    /// The shared state, through an exclusive borrow of the reader.
    fn inner_mut(&mut self) -> &mut Inner<B, S, N, A> {
        self.inner.with_mut(|p| {
            // SAFETY: `&mut self` excludes every other access to the cell (no
            // future borrowing the reader can be alive, no flush under way),
            // and the borrow returned is tied to `&mut self`.
            unsafe { &mut *p }
        })
    }

    /// Runs `f` on the shared state, or returns `None` during a flush (a
    /// backend that reaches its own reader again).
    #[inline]
    fn with<R>(&self, f: impl FnOnce(&mut Inner<B, S, N, A>) -> R) -> Option<R> {
        if self.busy.get() {
            return None;
        }
        Some(self.inner.with_mut(|p| {
            // SAFETY: the reader is not `Sync`, so only this thread reaches
            // the cell. `busy` is false, so no flush holds a borrow of it,
            // and none of the closures given here calls code that could
            // reach the reader again (no backend, waker or caller code runs
            // inside: wakers are cloned before and dropped or woken after),
            // so this borrow is the only one until it ends.
            f(unsafe { &mut *p })
        }))
    }

    /// Takes a queued op's future away: it leaves the next batch, or, if
    /// read, frees its slot and staging. Out of line: a future dropped
    /// unresolved is the rare case, and its drop is on every read's path.
    #[cold]
    #[inline(never)]
    fn cancel(&self, idx: usize) {
        let waker = self.with(|inner| {
            if idx != SOLO {
                return inner.cancel_slot(idx);
            }
            match mem::replace(&mut inner.solo, Solo::Empty) {
                Solo::Moved(idx) => inner.cancel_slot(idx),
                Solo::Empty | Solo::Joined | Solo::Queued { .. } | Solo::Done(_) => None,
            }
        });
        // A drop from inside the backend cannot touch the state: the slot
        // stays queued and is read and kept like a leaked future's.
        drop(waker);
    }

    /// Whether `cx` carries the very waker of the run being polled: the
    /// quick form of `driven(cx) == (true, true)`, which it implies (a
    /// waker that is not the same object but wakes the same task gets
    /// `false` here and is told apart by `driven`).
    #[inline(always)]
    fn driving(&self, cx: &Context<'_>) -> bool {
        ptr::eq(self.driver.get(), cx.waker())
    }

    /// The waker of the run being polled, if `cx` belongs to it.
    #[inline]
    fn driven(&self, cx: &Context<'_>) -> (bool, bool) {
        let driver = self.driver.get();
        if driver.is_null() {
            return (false, false);
        }
        // SAFETY: `driver` is non-null only while `Run::poll` polls its
        // future, and then points at the waker of that poll's context, which
        // outlives the poll; we are inside it.
        let same = cx.waker().will_wake(unsafe { &*driver });
        (true, same)
    }
}

impl<B, S, const N: usize, const A: usize> Inner<B, S, N, A> {
    /// Takes slot `idx` away from its dropped future: it leaves the next
    /// batch, or, if read, is freed with its staging. Returns its waker.
    fn cancel_slot(&mut self, idx: usize) -> Option<Waker> {
        let slot = self.slots.get_mut(idx)?;
        let waker = slot.waker.take();
        match slot.state {
            SlotState::Queued => {
                slot.state = SlotState::Cancelled;
                self.queued -= slot.len;
                self.stirred = true;
                self.drop_cancelled();
            }
            SlotState::Done => self.release(idx),
            SlotState::Free | SlotState::Cancelled => {}
        }
        waker
    }

    /// Frees a read slot and its staging.
    #[inline]
    fn release(&mut self, idx: usize) {
        let slot = &mut self.slots[idx];
        // `failure` and `off` are set when the slot is next read.
        slot.state = SlotState::Free;
        // Cannot fail: a slot is freed once per use.
        let _ = self.free.push(idx);
        self.held -= slot.len;
        if self.held == 0 {
            self.bump = 0;
        }
    }

    /// Empties the queue if every op in it was cancelled, so that their
    /// slots come back without waiting for a flush.
    fn drop_cancelled(&mut self) {
        let slots = &mut self.slots;
        if self
            .queue
            .iter()
            .all(|&i| slots[i].state == SlotState::Cancelled)
        {
            while let Some(i) = self.queue.pop() {
                slots[i].state = SlotState::Free;
                // Cannot fail: a slot is freed once per use.
                let _ = self.free.push(i);
            }
        }
    }

    /// Moves the staging bytes of every read slot to the front of staging,
    /// in the order they lie there, so that `bump` becomes `held`. Tasks
    /// that keep read ops waiting while later ones are read never let
    /// staging empty, so without this the space would run out however
    /// little of it is in use. Out of line: it runs only when a flush finds
    /// no room after `bump`, and its list of slots is large.
    #[cold]
    #[inline(never)]
    fn compact(&mut self) {
        let mut live: heapless::Vec<usize, N> = heapless::Vec::new();
        for (i, slot) in self.slots.iter().enumerate() {
            if slot.state == SlotState::Done {
                // Cannot fail: N slots.
                let _ = live.push(i);
            }
        }
        let slots = &mut self.slots;
        live.sort_unstable_by_key(|&i| slots[i].off);
        let mut to = 0;
        for &i in live.iter() {
            let slot = &mut slots[i];
            // Moves down only: `to` never passes a slot's offset.
            self.staging.copy_within(slot.off..slot.off + slot.len, to);
            slot.off = to;
            to += slot.len;
        }
        self.bump = to;
    }

    /// Queues a read of `len` (non-zero) bytes at `addr`: as the solo op if
    /// `solo` (polled under its run), nothing else is queued and the last
    /// flush was not of several ops ([`Solo::Joined`]), else in a slot.
    #[inline]
    fn enqueue(&mut self, addr: u64, len: usize, solo: bool) -> Enqueued {
        match self.enqueue_solo(addr, len, solo) {
            Some(queued) => queued,
            None => self.enqueue_slot(addr, len),
        }
    }

    /// The solo op's part of [`enqueue`](Self::enqueue): the read becomes
    /// the solo op (`Solo`), or a queued solo op finds no slot to move to
    /// (`Direct`: this read goes alone at once, and the queue stays empty
    /// while there is a solo op); `None` if the read goes on to a slot.
    #[inline(always)]
    fn enqueue_solo(&mut self, addr: u64, len: usize, solo: bool) -> Option<Enqueued> {
        if solo && matches!(self.solo, Solo::Empty) && self.queue.is_empty() && len <= SOLO_BYTES {
            self.solo = Solo::Queued { addr, len };
            return Some(Enqueued::Solo);
        }
        if let Solo::Queued { .. } = self.solo {
            if !self.move_solo() {
                return Some(Enqueued::Direct);
            }
        }
        None
    }

    /// Moves a queued solo op into a slot, at the head of the queue (which
    /// is empty while there is a solo op). Returns `false` if no slot or
    /// staging is free, leaving it where it was.
    #[cold]
    #[inline(never)]
    fn move_solo(&mut self) -> bool {
        let Solo::Queued { addr, len } = self.solo else {
            return true;
        };
        match self.enqueue_slot(addr, len) {
            Enqueued::Slot(idx, _) => {
                self.solo = Solo::Moved(idx);
                true
            }
            Enqueued::Solo | Enqueued::Direct => false,
        }
    }

    /// Queues a read of `len` (non-zero) bytes at `addr` in a slot. Its
    /// staging is placed by the flush that reads it; here it is only
    /// counted, so that the ops queued always fit.
    #[inline]
    fn enqueue_slot(&mut self, addr: u64, len: usize) -> Enqueued {
        // `held + queued <= A`, so this does not underflow.
        if self.queue.is_full() || len > A - self.held - self.queued {
            return Enqueued::Direct;
        }
        match self.push_slot(addr, len) {
            Some(idx) => Enqueued::Slot(idx, self.queue.is_full()),
            None => Enqueued::Direct,
        }
    }

    /// The first poll of a read under the run that polls it, in short: as
    /// [`enqueue`](Self::enqueue), returning the slot index its future
    /// holds then ([`SOLO`] for the solo op), or [`UNQUEUED`] for a read
    /// that would fill the queue or finds no room, which it leaves to the
    /// full poll (having at most moved the solo op, as `enqueue` would).
    #[inline(always)]
    fn enqueue_driven(&mut self, addr: u64, len: usize) -> usize {
        match self.enqueue_solo(addr, len, true) {
            Some(Enqueued::Solo) => return SOLO,
            Some(_) => return UNQUEUED,
            None => {}
        }
        // `held + queued <= A`, so this does not underflow.
        if self.queue.len() + 1 >= N || len > A - self.held - self.queued {
            return UNQUEUED;
        }
        self.push_slot(addr, len).unwrap_or(UNQUEUED)
    }

    /// Takes a free slot for a read of `len` bytes at `addr` and queues it,
    /// the queue having room; `None` if no slot is free.
    #[inline(always)]
    fn push_slot(&mut self, addr: u64, len: usize) -> Option<usize> {
        let idx = self.free.pop()?;
        let slot = &mut self.slots[idx];
        slot.state = SlotState::Queued;
        slot.addr = addr;
        slot.len = len;
        self.queued += len;
        // Cannot fail: the caller checked.
        let _ = self.queue.push(idx);
        Some(idx)
    }

    /// If the solo op is read, copies its valid prefix into `out`, frees it
    /// and returns its failure.
    #[inline]
    fn take_solo(&mut self, out: &mut [u8]) -> Option<Option<(usize, ReadErrorKind)>> {
        let Solo::Done(failure) = self.solo else {
            return None;
        };
        let valid = failure.map_or(out.len(), |(v, _)| v).min(out.len());
        if let (Some(to), Some(from)) = (out.get_mut(..valid), self.solo_buf.get(..valid)) {
            copy_small(to, from);
        }
        self.solo = Solo::Empty;
        Some(failure)
    }

    /// Where the solo op stands, for its future, polled under its run
    /// (`driven`) or not.
    fn poll_solo(&mut self, out: &mut [u8], driven: bool) -> SoloPoll {
        if let Some(failure) = self.take_solo(out) {
            return SoloPoll::Ready(failure);
        }
        match self.solo {
            Solo::Queued { .. } if driven => SoloPoll::Wait,
            Solo::Queued { .. } => {
                if !self.move_solo() {
                    return SoloPoll::Flush;
                }
                self.poll_solo(out, driven)
            }
            Solo::Moved(idx) => {
                // It was moved by a second read: the flush reads several.
                self.solo = Solo::Joined;
                SoloPoll::Slot(idx)
            }
            // Not reachable for the future holding the solo op.
            Solo::Empty | Solo::Joined | Solo::Done(_) => {
                SoloPoll::Ready(Some((0, ReadErrorKind::Other)))
            }
        }
    }

    /// If slot `idx` is read and holds no waker (a flush takes the wakers
    /// of the ops it reads), copies its valid prefix into `out` (the buffer
    /// of the op it was queued for, so `out.len()` is its length), frees it,
    /// and returns its failure.
    #[inline(always)]
    fn take_slot(&mut self, idx: usize, out: &mut [u8]) -> Option<Failure> {
        let slot = self.slots.get(idx)?;
        if slot.state != SlotState::Done || slot.waker.is_some() {
            return None;
        }
        Some(self.copy_out(idx, out))
    }

    /// Copies the valid prefix of read slot `idx` into `out` (as
    /// [`take_slot`](Self::take_slot)), frees it, and returns its failure.
    #[inline(always)]
    fn copy_out(&mut self, idx: usize, out: &mut [u8]) -> Failure {
        let slot = &self.slots[idx];
        let failure = slot.failure;
        let to = match failure {
            None => Some(out),
            Some((valid, _)) => out.get_mut(..valid.min(out.len())),
        };
        if let Some(to) = to {
            if let Some(from) = self.staging.get(slot.off..).and_then(|s| s.get(..to.len())) {
                copy_small(to, from);
            }
        }
        self.release(idx);
        failure
    }

    /// Where a queued op stands; if read, copies its valid prefix into `out`
    /// and frees it.
    #[inline]
    fn status(&mut self, idx: usize, out: &mut [u8], cx: &Context<'_>) -> Status {
        let slot = &mut self.slots[idx];
        match slot.state {
            SlotState::Done => {
                // Woken or dropped by the caller, outside this borrow.
                let waker = slot.waker.take();
                Status::Ready(self.copy_out(idx, out), waker)
            }
            SlotState::Queued => Status::Queued {
                stale_waker: !slot.waker.as_ref().is_some_and(|w| w.will_wake(cx.waker())),
            },
            // Not reachable for a live future's slot.
            SlotState::Free | SlotState::Cancelled => {
                Status::Ready(Some((0, ReadErrorKind::Other)), None)
            }
        }
    }

    /// The flush of a queued solo op: one `read_buf` into its bytes.
    /// Returns whether there was one.
    #[inline(always)]
    fn flush_solo(&mut self) -> bool
    where
        B: ReadBackend,
        S: AsMut<[u8]>,
    {
        let Solo::Queued { addr, len } = self.solo else {
            return false;
        };
        // The queue is empty while there is a solo op.
        let failure = match self.solo_buf.get_mut(..len) {
            Some(buf) => self.reader.read_buf(addr, buf).first_error(),
            None => Some((0, ReadErrorKind::Other)),
        };
        self.solo = Solo::Done(failure);
        true
    }

    /// Where the next flush places its ops' bytes: at `bump`, after the
    /// bytes read slots hold, moved to the front first if the queued ops
    /// would not fit after them (they always fit then: `held + queued <=
    /// A`).
    #[inline]
    fn placement(&mut self) -> usize {
        if self.queued > A - self.bump {
            self.compact();
        }
        self.bump
    }

    /// The flush of a queue holding exactly one op, still queued: one
    /// `read_buf` into its staging (the same `read_many` on a batch of one,
    /// which the compiler specializes for that length). Returns the waker to
    /// wake, or `None` (having done nothing) for any other queue.
    fn flush_single(&mut self) -> Option<Option<Waker>>
    where
        B: ReadBackend,
        S: AsMut<[u8]>,
    {
        let [idx] = self.queue[..] else {
            return None;
        };
        if self.slots.get(idx)?.state != SlotState::Queued {
            return None;
        }
        let at = self.placement();
        let Inner {
            reader,
            solo,
            staging,
            slots,
            queue,
            bump,
            held,
            queued,
            ..
        } = self;
        if *solo == Solo::Joined {
            *solo = Solo::Empty;
        }
        let slot = &mut slots[idx];
        slot.state = SlotState::Done;
        *queued = 0;
        queue.clear();
        match staging.get_mut(at..at + slot.len) {
            Some(buf) => {
                slot.off = at;
                *bump = at + slot.len;
                *held += slot.len;
                slot.failure = reader.read_buf(slot.addr, buf).first_error();
            }
            // Not reachable: `placement` leaves room for the queued ops.
            None => unplaced(slot),
        }
        Some(slot.waker.take())
    }

    /// Sends every queued op to the backend in one `read_many`, marks them
    /// read, frees cancelled ones, and moves the wakers to wake into
    /// `wakers`. Returns whether any op was sent.
    ///
    /// One pass over the queue does all of it before the read: nothing can
    /// look at a slot until the flush is over (the reader is busy), so a
    /// slot marked read before its bytes arrive is never seen as such.
    fn flush(&mut self, wakers: &mut heapless::Vec<Waker, N>) -> bool
    where
        B: ReadBackend,
        S: AsMut<[u8]>,
    {
        let start = self.placement();
        if self.queue.len() > 1 && self.solo == Solo::Empty {
            self.solo = Solo::Joined;
        }
        let Inner {
            reader,
            staging,
            slots,
            free,
            queue,
            bump,
            held,
            queued,
            stirred,
            ..
        } = self;
        let stirred = mem::take(stirred);
        let mut ops: heapless::Vec<ReadOp<'_>, N> = heapless::Vec::new();
        // The ops' buffers are carved off the front of what is left of
        // staging, one after the other, in queue order.
        let mut rest: &mut [u8] = staging.get_mut(start..).unwrap_or_default();
        let mut at = start;
        // Marks a queued slot read and adds its op to the batch.
        let mut place = |slot: &mut Slot, idx: usize| {
            slot.state = SlotState::Done;
            let len = slot.len;
            match mem::take(&mut rest).split_at_mut_checked(len) {
                Some((buf, tail)) => {
                    rest = tail;
                    slot.off = at;
                    slot.failure = None;
                    at += len;
                    // Cannot fail: at most N queued.
                    let _ = ops.push(ReadOp::new(slot.addr, buf, idx));
                }
                // Not reachable: `placement` leaves room for the queued ops.
                None => unplaced(slot),
            }
        };
        if stirred {
            for &idx in queue.iter() {
                let Some(slot) = slots.get_mut(idx) else {
                    continue;
                };
                match slot.state {
                    SlotState::Queued => {
                        place(slot, idx);
                        if let Some(w) = slot.waker.take() {
                            // Cannot fail: at most N queued.
                            let _ = wakers.push(w);
                        }
                    }
                    SlotState::Cancelled => {
                        slot.state = SlotState::Free;
                        // Cannot fail: a slot is freed once per use.
                        let _ = free.push(idx);
                    }
                    SlotState::Free | SlotState::Done => {}
                }
            }
        } else {
            // Every slot in the queue is queued, without a waker.
            for &idx in queue.iter() {
                if let Some(slot) = slots.get_mut(idx) {
                    if slot.state == SlotState::Queued {
                        place(slot, idx);
                    }
                }
            }
        }
        *held += at - start;
        *bump = at;
        *queued = 0;
        queue.clear();
        let sent = !ops.is_empty();
        if sent {
            // Only failures are looked up: a read slot without one was
            // marked so above. The first failure of an op completed in
            // parts counts.
            reader.read_many(&mut ops, |done| {
                if let Some(failure) = done.first_error() {
                    if let Some(slot) = slots.get_mut(done.tag()) {
                        slot.failure.get_or_insert(failure);
                    }
                }
            });
        }
        sent
    }
}

impl<B: ReadBackend, S: AsMut<[u8]>, const N: usize, const A: usize> AsyncReader<B, S, N, A> {
    /// Reads `buf.len()` bytes at `addr` into `buf`, batched with every other
    /// read queued before the task runs out of work.
    ///
    /// The future resolves to `Ok(())` when every byte was read, or to a
    /// [`PartialRead`]: the valid prefix and the kind of the first failure
    /// (see there for the bytes after it).
    /// Polled again after it resolved, it reads again.
    ///
    /// # Examples
    ///
    /// ```
    /// use batch_reader::{backends::MemoryBackend, AsyncReader, Geometry, PartialRead, ReadErrorKind};
    /// use embassy_futures::{block_on, join::join};
    ///
    /// let mem: Vec<u8> = (0..32).collect();
    /// let backend = MemoryBackend::new(&mem, Geometry::new(None, 32, 32)?);
    /// let mut reader: AsyncReader<_, _> = AsyncReader::new(backend, [0u8; 0]);
    /// let (mut a, mut b) = ([0u8; 4], [9u8; 4]);
    /// let (ra, rb) = block_on(reader.run(|r| join(r.read(4, &mut a), r.read(30, &mut b))));
    /// assert_eq!(ra, Ok(()));
    /// assert_eq!(rb, Err(PartialRead { valid: 2, kind: ReadErrorKind::OutOfBounds }));
    /// assert_eq!((a, b), ([4, 5, 6, 7], [30, 31, 9, 9]));
    /// assert_eq!(reader.counters().backend_calls, 1);
    /// # Ok::<(), batch_reader::GeometryError>(())
    /// ```
    #[inline]
    pub fn read<'r, 'b>(&'r self, addr: u64, buf: &'b mut [u8]) -> Read<'r, 'b, B, S, N, A> {
        Read {
            reader: self,
            addr,
            buf,
            slot: UNQUEUED,
        }
    }

    /// Reads a plain-old-data value at `addr`, batched like
    /// [`read`](AsyncReader::read): `Ok(value)`, or the kind of the first
    /// failure.
    ///
    /// # Examples
    ///
    /// ```
    /// use batch_reader::{backends::MemoryBackend, AsyncReader, Geometry, ReadErrorKind};
    /// use embassy_futures::block_on;
    ///
    /// let mem = 0x1122_3344_u32.to_ne_bytes();
    /// let backend = MemoryBackend::new(&mem, Geometry::new(None, 16, 16)?);
    /// let reader: AsyncReader<_, _> = AsyncReader::new(backend, [0u8; 0]);
    /// assert_eq!(block_on(reader.read_val::<u32>(0)), Ok(0x1122_3344));
    /// assert_eq!(block_on(reader.read_val::<u32>(1)), Err(ReadErrorKind::OutOfBounds));
    /// # Ok::<(), batch_reader::GeometryError>(())
    /// ```
    #[inline]
    pub fn read_val<T: FromBytes + IntoBytes>(&self, addr: u64) -> ReadVal<'_, T, B, S, N, A> {
        ReadVal {
            reader: self,
            addr,
            slot: UNQUEUED,
            _value: PhantomData,
        }
    }

    /// Runs the future `f` builds, flushing the queue whenever it returns
    /// `Pending` with ops queued and polling it again at once: the reads of
    /// one step of every joined chain go out in one backend call, and the
    /// task never waits on the executor for a read.
    ///
    /// It borrows the reader mutably, so no other run, and no future outside
    /// it, shares the queue while it runs.
    ///
    /// # Examples
    ///
    /// ```
    /// use batch_reader::{backends::MemoryBackend, AsyncReader, Geometry};
    ///
    /// let mem: Vec<u8> = (0..64).collect();
    /// let backend = MemoryBackend::new(&mem, Geometry::new(None, 64, 64)?);
    /// let mut reader: AsyncReader<_, _> = AsyncReader::new(backend, [0u8; 0]);
    /// let sum = embassy_futures::block_on(reader.run(|r| async move {
    ///     let mut sum = 0u32;
    ///     for addr in [1, 2, 3] {
    ///         sum += u32::from(r.read_val::<u8>(addr).await.unwrap_or(0));
    ///     }
    ///     sum
    /// }));
    /// assert_eq!(sum, 6);
    /// assert_eq!(reader.counters().backend_calls, 3); // each read waits for the one before
    /// # Ok::<(), batch_reader::GeometryError>(())
    /// ```
    pub fn run<'a, F, Fut>(&'a mut self, f: F) -> Run<'a, Fut, B, S, N, A>
    where
        F: FnOnce(&'a Self) -> Fut,
        Fut: Future,
    {
        let reader: &'a Self = self;
        Run {
            reader,
            future: f(reader),
        }
    }

    /// Runs `f` on the shared state with `busy` set, so that whatever `f`
    /// calls (the backend) finds the reader busy if it reaches it again;
    /// `None`, with nothing done, if a flush is already under way. If `f`
    /// panics, `busy` stays set, and the reader fails every later read
    /// rather than trust a half-read queue.
    #[inline(always)]
    fn busy_with<R>(&self, f: impl FnOnce(&mut Inner<B, S, N, A>) -> R) -> Option<R> {
        if self.busy.get() {
            return None;
        }
        self.busy.set(true);
        let r = self.inner.with_mut(|p| {
            // SAFETY: the reader is not `Sync`, so only this thread reaches
            // the cell, and `busy` was false, so no other borrow of it is
            // live. While this one is, `busy` is true, and every other way in
            // (`with`, `busy_with`) checks `busy` and stays out, also when
            // the backend reaches this reader again.
            f(unsafe { &mut *p })
        });
        self.busy.set(false);
        Some(r)
    }

    /// Sends every queued op to the backend in one call (as far as its
    /// geometry allows) and wakes the futures that asked to be woken.
    /// Returns whether any op was sent.
    fn flush(&self) -> bool {
        match self.busy_with(|inner| inner.flush_solo()) {
            Some(true) => true,
            Some(false) => self.flush_queue(),
            None => false,
        }
    }

    /// [`flush`](Self::flush) of the queue (no solo op). Out of line, so
    /// that the flush of a solo op carries none of it.
    #[inline(never)]
    fn flush_queue(&self) -> bool {
        match self.busy_with(|inner| inner.flush_single()) {
            Some(Some(waker)) => {
                if let Some(w) = waker {
                    w.wake();
                }
                true
            }
            Some(None) => self.flush_many(),
            None => false,
        }
    }

    /// [`flush`](Self::flush) of any number of queued ops. Kept out of line:
    /// its batch and waker lists are large, and a task awaiting one read at
    /// a time should not carry them on its stack.
    #[inline(never)]
    fn flush_many(&self) -> bool {
        let mut wakers: heapless::Vec<Waker, N> = heapless::Vec::new();
        let sent = self.busy_with(|inner| inner.flush(&mut wakers));
        // Popped, not iterated by value: moving the vector out would copy
        // all of its capacity.
        while let Some(w) = wakers.pop() {
            w.wake();
        }
        sent.unwrap_or(false)
    }

    /// Reads `buf` at `addr` at once, alone (no room in the queue).
    fn read_now(&self, addr: u64, buf: &mut [u8]) -> Option<(usize, ReadErrorKind)> {
        self.busy_with(|inner| inner.reader.read_buf(addr, buf).first_error())
            .unwrap_or(Some((0, ReadErrorKind::Other)))
    }

    /// Polls the op of `addr` and `out`: queues it on the first poll, then
    /// waits for the flush that reads it and copies its bytes into `out`.
    ///
    /// The two polls of a read awaited under a run (queue it, then take its
    /// bytes) are kept small enough to inline into the caller's future;
    /// everything else goes to `poll_op_slow`, which does the same steps in
    /// full.
    #[inline(always)]
    fn poll_op(
        &self,
        slot: &mut usize,
        addr: u64,
        out: &mut [u8],
        cx: &mut Context<'_>,
    ) -> Poll<Option<(usize, ReadErrorKind)>> {
        match *slot {
            SOLO => {
                if let Some(Some(failure)) = self.with(|inner| inner.take_solo(out)) {
                    *slot = UNQUEUED;
                    return Poll::Ready(failure);
                }
                // Not read yet, moved, or polled from inside the backend.
            }
            UNQUEUED => {
                if !out.is_empty() && self.driving(cx) {
                    if let Some(queued) = self.with(|inner| inner.enqueue_driven(addr, out.len())) {
                        if queued != UNQUEUED {
                            // Queued under the run that polls it: nothing
                            // to store, the run flushes and polls again.
                            *slot = queued;
                            return Poll::Pending;
                        }
                    }
                }
            }
            idx => {
                if let Some(Some(failure)) = self.with(|inner| inner.take_slot(idx, out)) {
                    *slot = UNQUEUED;
                    return Poll::Ready(failure);
                }
                // Not read yet (nothing was changed), or polled from
                // inside the backend.
            }
        }
        self.poll_op_slow(slot, addr, out, cx)
    }

    /// `poll_op` in full.
    #[inline(never)]
    fn poll_op_slow(
        &self,
        slot: &mut usize,
        addr: u64,
        out: &mut [u8],
        cx: &mut Context<'_>,
    ) -> Poll<Option<(usize, ReadErrorKind)>> {
        if *slot == SOLO {
            let driven = self.driven(cx) == (true, true);
            match self.with(|inner| inner.poll_solo(out, driven)) {
                // Polled from inside the backend: the flush has it.
                None => return Poll::Ready(Some((0, ReadErrorKind::Other))),
                Some(SoloPoll::Ready(failure)) => {
                    *slot = UNQUEUED;
                    return Poll::Ready(failure);
                }
                Some(SoloPoll::Wait) => return Poll::Pending,
                Some(SoloPoll::Flush) => {
                    // The queue is empty while there is a solo op, so this
                    // flush reads it alone.
                    self.flush();
                    *slot = UNQUEUED;
                    let taken = self.with(|inner| inner.take_solo(out)).flatten();
                    // Not reachable: a flush reads a queued solo op.
                    return Poll::Ready(taken.unwrap_or(Some((0, ReadErrorKind::Other))));
                }
                Some(SoloPoll::Slot(idx)) => *slot = idx,
            }
        }
        let first = *slot == UNQUEUED;
        let idx = match *slot {
            UNQUEUED => {
                if out.is_empty() {
                    return Poll::Ready(None);
                }
                let solo = self.driven(cx) == (true, true);
                let queued = self.with(|inner| inner.enqueue(addr, out.len(), solo));
                match queued {
                    None => return Poll::Ready(Some((0, ReadErrorKind::Other))),
                    Some(Enqueued::Solo) => {
                        // Queued under the run that polls it.
                        *slot = SOLO;
                        return Poll::Pending;
                    }
                    Some(Enqueued::Direct) => return Poll::Ready(self.read_now(addr, out)),
                    Some(Enqueued::Slot(idx, full)) => {
                        *slot = idx;
                        if full {
                            self.flush();
                            self.repoll.set(true);
                        } else if self.driven(cx) == (true, true) {
                            // Queued under the run that polls it: nothing
                            // to store, the run flushes and polls again.
                            return Poll::Pending;
                        }
                        idx
                    }
                }
            }
            // A slot (a solo op moved into one was turned into its index
            // above).
            idx => idx,
        };
        let mut flushed = false;
        loop {
            let Some(status) = self.with(|inner| inner.status(idx, out, cx)) else {
                // Polled from inside the backend: the flush has it.
                return Poll::Ready(Some((0, ReadErrorKind::Other)));
            };
            let stale_waker = match status {
                Status::Ready(failure, waker) => {
                    *slot = UNQUEUED;
                    drop(waker);
                    return Poll::Ready(failure);
                }
                Status::Queued { stale_waker } => stale_waker,
            };
            let (driven, same) = self.driven(cx);
            if !driven && !first && !flushed {
                // Polled again outside a run: the task came back from the
                // executor, so everything queued by now goes out.
                flushed = true;
                self.flush();
                continue;
            }
            if (!driven || !same) && stale_waker {
                let waker = cx.waker().clone();
                let old = self.with(|inner| {
                    inner.stirred = true;
                    inner.slots[idx].waker.replace(waker)
                });
                drop(old);
            }
            if !driven {
                // Come back after the rest of the task has queued its reads.
                cx.waker().wake_by_ref();
            }
            return Poll::Pending;
        }
    }
}

/// The future of [`AsyncReader::read`].
///
/// # Examples
///
/// ```
/// use batch_reader::{backends::MemoryBackend, AsyncReader, Geometry, Read};
///
/// let mem = [5u8; 8];
/// let backend = MemoryBackend::new(&mem, Geometry::new(None, 8, 8)?);
/// let reader: AsyncReader<_, _> = AsyncReader::new(backend, [0u8; 0]);
/// let mut buf = [0u8; 2];
/// let read: Read<'_, '_, _, _> = reader.read(0, &mut buf);
/// assert_eq!(embassy_futures::block_on(read), Ok(()));
/// assert_eq!(buf, [5, 5]);
/// # Ok::<(), batch_reader::GeometryError>(())
/// ```
#[must_use = "futures do nothing unless polled"]
pub struct Read<'r, 'b, B, S, const N: usize = DEFAULT_QUEUE, const A: usize = DEFAULT_STAGING> {
    reader: &'r AsyncReader<B, S, N, A>,
    addr: u64,
    buf: &'b mut [u8],
    /// Its slot index, [`SOLO`] or [`UNQUEUED`].
    slot: usize,
}

impl<B, S, const N: usize, const A: usize> fmt::Debug for Read<'_, '_, B, S, N, A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Read")
            .field("addr", &self.addr)
            .field("len", &self.buf.len())
            .field("queued", &(self.slot != UNQUEUED))
            .finish_non_exhaustive()
    }
}

impl<B: ReadBackend, S: AsMut<[u8]>, const N: usize, const A: usize> Future
    for Read<'_, '_, B, S, N, A>
{
    type Output = Result<(), PartialRead>;

    // Always inlined: its fast path is a few loads and stores, and a call
    // per poll, with its prologue, costs as much again. The compiler
    // otherwise decides by the size of the caller, so unrelated changes
    // tip it either way.
    #[inline(always)]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        this.reader
            .poll_op(&mut this.slot, this.addr, this.buf, cx)
            .map(|failure| match failure {
                None => Ok(()),
                Some((valid, kind)) => Err(PartialRead { valid, kind }),
            })
    }
}

impl<B, S, const N: usize, const A: usize> Drop for Read<'_, '_, B, S, N, A> {
    #[inline]
    fn drop(&mut self) {
        if self.slot != UNQUEUED {
            self.reader.cancel(self.slot);
        }
    }
}

/// The future of [`AsyncReader::read_val`].
///
/// # Examples
///
/// ```
/// use batch_reader::{backends::MemoryBackend, AsyncReader, Geometry, ReadVal};
///
/// let mem = [5u8; 8];
/// let backend = MemoryBackend::new(&mem, Geometry::new(None, 8, 8)?);
/// let reader: AsyncReader<_, _> = AsyncReader::new(backend, [0u8; 0]);
/// let read: ReadVal<'_, u16, _, _> = reader.read_val(6);
/// assert_eq!(embassy_futures::block_on(read), Ok(0x0505));
/// # Ok::<(), batch_reader::GeometryError>(())
/// ```
#[must_use = "futures do nothing unless polled"]
pub struct ReadVal<'r, T, B, S, const N: usize = DEFAULT_QUEUE, const A: usize = DEFAULT_STAGING> {
    reader: &'r AsyncReader<B, S, N, A>,
    addr: u64,
    /// Its slot index, [`SOLO`] or [`UNQUEUED`].
    slot: usize,
    _value: PhantomData<fn() -> T>,
}

impl<T, B, S, const N: usize, const A: usize> fmt::Debug for ReadVal<'_, T, B, S, N, A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReadVal")
            .field("addr", &self.addr)
            .field("len", &mem::size_of::<T>())
            .field("queued", &(self.slot != UNQUEUED))
            .finish_non_exhaustive()
    }
}

impl<T: FromBytes + IntoBytes, B: ReadBackend, S: AsMut<[u8]>, const N: usize, const A: usize>
    Future for ReadVal<'_, T, B, S, N, A>
{
    type Output = Result<T, ReadErrorKind>;

    // Always inlined, as `Read`'s.
    #[inline(always)]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let mut value = T::new_zeroed();
        this.reader
            .poll_op(&mut this.slot, this.addr, value.as_mut_bytes(), cx)
            .map(|failure| match failure {
                None => Ok(value),
                Some((_, kind)) => Err(kind),
            })
    }
}

impl<T, B, S, const N: usize, const A: usize> Drop for ReadVal<'_, T, B, S, N, A> {
    #[inline]
    fn drop(&mut self) {
        if self.slot != UNQUEUED {
            self.reader.cancel(self.slot);
        }
    }
}

/// The future of [`AsyncReader::run`]: the future being run, flushed every
/// time it would return `Pending` with ops queued.
///
/// # Examples
///
/// ```
/// use batch_reader::{backends::MemoryBackend, AsyncReader, Geometry};
/// use embassy_futures::{block_on, join::join3};
///
/// let mem: Vec<u8> = (0..16).collect();
/// let backend = MemoryBackend::new(&mem, Geometry::new(None, 16, 16)?);
/// let mut reader: AsyncReader<_, _> = AsyncReader::new(backend, [0u8; 0]);
/// let run = reader.run(|r| join3(r.read_val::<u8>(1), r.read_val::<u8>(5), r.read_val::<u8>(9)));
/// assert_eq!(block_on(run), (Ok(1), Ok(5), Ok(9)));
/// assert_eq!(reader.counters().backend_calls, 1);
/// # Ok::<(), batch_reader::GeometryError>(())
/// ```
#[must_use = "futures do nothing unless polled"]
pub struct Run<'a, Fut, B, S, const N: usize = DEFAULT_QUEUE, const A: usize = DEFAULT_STAGING> {
    reader: &'a AsyncReader<B, S, N, A>,
    future: Fut,
}

impl<Fut, B, S, const N: usize, const A: usize> fmt::Debug for Run<'_, Fut, B, S, N, A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Run")
            .field("reader", self.reader)
            .finish_non_exhaustive()
    }
}

impl<Fut: Future, B: ReadBackend, S: AsMut<[u8]>, const N: usize, const A: usize> Future
    for Run<'_, Fut, B, S, N, A>
{
    type Output = Fut::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Fut::Output> {
        // SAFETY: `future` is structurally pinned: it is never moved out of
        // `self` nor reached other than through this pinned projection, and
        // `Run` has no `Drop` impl and is `Unpin` only when `Fut` is.
        let this = unsafe { self.get_unchecked_mut() };
        let reader = this.reader;
        // SAFETY: see above; `this.future` stays where it is.
        let mut future = unsafe { Pin::new_unchecked(&mut this.future) };
        // Restores the outer driver when this poll returns, also if the
        // future panics, so a reader used after a caught panic holds no
        // pointer to this poll's waker. The flushes between polls keep it:
        // they run no future (a future polled from inside the backend finds
        // the reader busy), and no other context carries this very waker.
        let _driving = Driving::new(&reader.driver, cx.waker());
        loop {
            let polled = future.as_mut().poll(cx);
            if polled.is_ready() {
                return polled;
            }
            // Flush what is queued, or, if a full queue was flushed during
            // the poll, poll again for the futures whose ops it read.
            if !reader.flush() && !reader.repoll.take() {
                return polled;
            }
        }
    }
}

/// Marks a run's waker as the reader's driver for as long as it lives.
struct Driving<'r> {
    cell: &'r Cell<*const Waker>,
    outer: *const Waker,
}

impl<'r> Driving<'r> {
    fn new(cell: &'r Cell<*const Waker>, waker: &Waker) -> Self {
        let outer = cell.replace(waker);
        Self { cell, outer }
    }
}

impl Drop for Driving<'_> {
    fn drop(&mut self) {
        self.cell.set(self.outer);
    }
}
