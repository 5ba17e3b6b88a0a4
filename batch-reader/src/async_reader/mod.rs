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
//!
//! - [`queue`]: the slots reads wait in, and a slot's life;
//! - [`staging`]: the space flushed bytes land in until they are taken;
//! - [`solo`]: the one-op fast path, a read awaited alone under a run
//!   (left out with the `small` feature);
//! - [`flush`]: the queue to the backend in one call (with `small`, by
//!   one path for any number of ops);
//! - [`future`]: the futures, and how a poll moves a read along.

mod flush;
mod future;
mod queue;
mod solo;
mod staging;

use core::cell::Cell;
use core::fmt;
use core::future::Future;
use core::marker::PhantomData;
use core::ptr;
use core::task::Waker;

use zerocopy::{FromBytes, IntoBytes};

use future::QueuedOp;
pub use future::{ReadFuture, ReadValFuture, RunFuture};
use queue::Inner;

use crate::loom::cell::UnsafeCell;
use crate::{CoalescePolicy, Counters, ReadBackend, Reader};

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
/// With the `small` feature the reader has one path for every read: a read
/// awaited alone under a run is queued in a slot like any other, every
/// flush takes the same pass over the queue, and a read made at once goes
/// through [`read_many`](Reader::read_many) of one op. Each read gets the
/// same bytes and errors, and reads batch into as many backend calls, as
/// without it; it costs more instructions per read (most for a single
/// chain of dependent reads, each read then a batch of one), for much less
/// code.
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
/// in tasks of one thread). Its shared state is reached through `&self`
/// without a lock, which is sound only because no two threads can hold a
/// `&AsyncReader` at once; this does not compile:
///
/// ```compile_fail
/// use batch_reader::{backends::MemoryBackend, AsyncReader};
///
/// fn shared_across_threads<T: Sync>() {}
/// shared_across_threads::<AsyncReader<MemoryBackend<'static>, [u8; 0]>>();
/// ```
///
/// The reader may move to another thread between uses (it is `Send` when
/// its backend and scratch are), as a whole, with no future borrowing it:
///
/// ```
/// use batch_reader::{backends::MemoryBackend, AsyncReader, Geometry};
///
/// fn movable_between_threads<T: Send>() {}
/// movable_between_threads::<AsyncReader<MemoryBackend<'static>, [u8; 0]>>();
///
/// static MEM: [u8; 8] = [9; 8];
/// let reader: AsyncReader<_, _> =
///     AsyncReader::new(MemoryBackend::new(&MEM, Geometry::new(None, 8, 8)?), [0u8; 0]);
/// let read = std::thread::spawn(move || embassy_futures::block_on(reader.read_val::<u8>(3)));
/// assert_eq!(read.join().unwrap(), Ok(9));
/// # Ok::<(), batch_reader::GeometryError>(())
/// ```
///
/// A backend that panics during a flush leaves the reader failing every
/// later read with [`Other`](crate::ReadErrorKind::Other): the queue it was reading
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
        Self {
            inner: UnsafeCell::new(Inner::new(Reader::with_window(backend, scratch))),
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
    /// use batch_reader::{backends::{Faulty, MemoryBackend}, AsyncReader, Geometry, ReadErrorKind};
    ///
    /// let mem = [0u8; 16];
    /// let backend = Faulty::new(MemoryBackend::new(&mem, Geometry::new(None, 16, 16)?));
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
}

impl<B: ReadBackend, S: AsMut<[u8]>, const N: usize, const A: usize> AsyncReader<B, S, N, A> {
    /// Reads `buf.len()` bytes at `addr` into `buf`, batched with every other
    /// read queued before the task runs out of work.
    ///
    /// The future resolves to `Ok(())` when every byte was read, or to a
    /// [`PartialRead`](crate::PartialRead): the valid prefix and the kind of the first failure
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
    pub fn read<'r, 'b>(&'r self, addr: u64, buf: &'b mut [u8]) -> ReadFuture<'r, 'b, B, S, N, A> {
        ReadFuture {
            op: QueuedOp::new(self, addr),
            buf,
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
    pub fn read_val<T: FromBytes + IntoBytes>(
        &self,
        addr: u64,
    ) -> ReadValFuture<'_, T, B, S, N, A> {
        ReadValFuture {
            op: QueuedOp::new(self, addr),
            value: PhantomData,
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
    pub fn run<'a, F, Fut>(&'a mut self, f: F) -> RunFuture<'a, Fut, B, S, N, A>
    where
        F: FnOnce(&'a Self) -> Fut,
        Fut: Future,
    {
        let reader: &'a Self = self;
        RunFuture {
            reader,
            future: f(reader),
        }
    }
}

impl<B, S, const N: usize, const A: usize> AsyncReader<B, S, N, A> {
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
}
#[cfg(test)]
mod tests;
