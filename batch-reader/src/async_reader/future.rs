//! The futures: a read queues its op on its first poll and takes its bytes
//! on a later one; a run flushes the queue whenever its future would wait.

use core::cell::Cell;
use core::fmt;
use core::future::Future;
use core::marker::PhantomData;
use core::mem;
use core::pin::Pin;
use core::ptr;
use core::task::{Context, Poll, Waker};

use zerocopy::{FromBytes, IntoBytes};

use super::queue::{BROKEN, Enqueued, Inner, Status};
use super::solo::SoloPoll;
use super::{AsyncReader, DEFAULT_QUEUE, DEFAULT_STAGING};
use crate::{PartialRead, ReadBackend, ReadErrorKind};

/// What a read's future holds of its op.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Ticket {
    /// Not queued: not yet, or no longer.
    Unqueued,
    /// The reader's solo op.
    Solo,
    /// Queued in this slot.
    Slot(usize),
}

/// A [`Ticket`] as a future holds it: one word. Only the representation;
/// every decision matches on the [`Ticket`] that [`get`](Held::get) gives.
/// One word, not the enum's discriminant and index, keeps the poll's fast
/// path in registers: with the enum held, the joined-chains loop spilled
/// and ran about 8% more instructions per read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Held(usize);

impl Held {
    /// No slot index reaches these: `N` slots fit in memory, so `N` is far
    /// below them.
    const UNQUEUED: usize = usize::MAX;
    const SOLO: usize = usize::MAX - 1;

    /// The word for `ticket`.
    #[inline(always)]
    pub(super) const fn new(ticket: Ticket) -> Self {
        match ticket {
            Ticket::Unqueued => Self(Self::UNQUEUED),
            Ticket::Solo => Self(Self::SOLO),
            Ticket::Slot(idx) => Self(idx),
        }
    }

    /// The ticket this word holds.
    #[inline(always)]
    pub(super) const fn get(self) -> Ticket {
        match self.0 {
            Self::UNQUEUED => Ticket::Unqueued,
            Self::SOLO => Ticket::Solo,
            idx => Ticket::Slot(idx),
        }
    }
}

/// Who is polling a read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Poller {
    /// No run is being polled.
    Outside,
    /// A run is being polled, but the context is not its task's.
    OtherTask,
    /// The run being polled, with its task's waker: it flushes and polls
    /// again without being woken.
    Run,
}

impl<B, S, const N: usize, const A: usize> Inner<B, S, N, A> {
    /// The first poll of a read under the run that polls it, in short: as
    /// [`enqueue`](Self::enqueue), returning the ticket its future holds
    /// then, or [`Ticket::Unqueued`] for a read that would fill the queue or
    /// finds no room, which it leaves to the full poll (having at most moved
    /// the solo op, as `enqueue` would).
    #[inline(always)]
    fn enqueue_driven(&mut self, addr: u64, len: usize) -> Ticket {
        match self.enqueue_solo(addr, len, true) {
            Some(Enqueued::Solo) => return Ticket::Solo,
            Some(_) => return Ticket::Unqueued,
            None => {}
        }
        if self.queue.len() + 1 >= N || !self.staging.fits(len) {
            return Ticket::Unqueued;
        }
        self.push_slot(addr, len)
            .map_or(Ticket::Unqueued, Ticket::Slot)
    }
}

impl<B, S, const N: usize, const A: usize> AsyncReader<B, S, N, A> {
    /// Takes a queued op's future away: it leaves the next batch, or, if
    /// read, frees its slot and staging. Out of line: a future dropped
    /// unresolved is the rare case, and its drop is on every read's path.
    #[cold]
    #[inline(never)]
    fn cancel(&self, ticket: Ticket) {
        let waker = self.with(|inner| {
            let idx = match ticket {
                Ticket::Slot(idx) => idx,
                // Never held with `small`, which has no solo op.
                Ticket::Solo if !cfg!(feature = "small") => {
                    match mem::replace(&mut inner.solo, super::solo::Solo::Empty) {
                        super::solo::Solo::Moved(idx) => idx,
                        _ => return None,
                    }
                }
                Ticket::Solo | Ticket::Unqueued => return None,
            };
            inner.cancel_slot(idx)
        });
        // A drop from inside the backend cannot touch the state: the slot
        // stays queued and is read and kept like a leaked future's.
        drop(waker);
    }

    /// Whether `cx` carries the very waker of the run being polled: the
    /// quick form of `poller(cx) == Poller::Run`, which it implies (a waker
    /// that is not the same object but wakes the same task gets `false`
    /// here and is told apart by `poller`).
    #[inline(always)]
    fn driving(&self, cx: &Context<'_>) -> bool {
        ptr::eq(self.driver.get(), cx.waker())
    }

    /// Who polls with `cx`.
    #[inline]
    fn poller(&self, cx: &Context<'_>) -> Poller {
        let driver = self.driver.get();
        if driver.is_null() {
            return Poller::Outside;
        }
        // SAFETY: `driver` is non-null only while `RunFuture::poll` polls
        // its future, and then points at the waker of that poll's context,
        // which outlives the poll; we are inside it.
        if cx.waker().will_wake(unsafe { &*driver }) {
            Poller::Run
        } else {
            Poller::OtherTask
        }
    }
}

impl<B: ReadBackend, S: AsMut<[u8]>, const N: usize, const A: usize> AsyncReader<B, S, N, A> {
    /// Polls the op of `addr` and `out`: queues it on the first poll, then
    /// waits for the flush that reads it and copies its bytes into `out`.
    ///
    /// The two polls of a read awaited under a run (queue it, then take its
    /// bytes) are kept small enough to inline into the caller's future;
    /// everything else goes to `poll_op_slow`, which does the same steps in
    /// full. With the `small` feature there is no fast path: every poll
    /// goes to `poll_op_slow`, through one copy of this function that every
    /// read's future calls, not a copy in each.
    #[cfg_attr(not(feature = "small"), inline(always))]
    #[cfg_attr(feature = "small", inline(never))]
    fn poll_op(
        &self,
        held: &mut Held,
        addr: u64,
        out: &mut [u8],
        cx: &mut Context<'_>,
    ) -> Poll<Option<PartialRead>> {
        // The fast path, of the tickets a read under a run holds; none with
        // `small`.
        if !cfg!(feature = "small") {
            match held.get() {
                Ticket::Solo => {
                    if let Some(Some(failure)) = self.with(|inner| inner.take_solo(out)) {
                        *held = Held::new(Ticket::Unqueued);
                        return Poll::Ready(failure);
                    }
                    // Not read yet, moved, or polled from inside the backend.
                }
                Ticket::Unqueued => {
                    if !out.is_empty() && self.driving(cx) {
                        let queued = self.with(|inner| inner.enqueue_driven(addr, out.len()));
                        if let Some(queued @ (Ticket::Solo | Ticket::Slot(_))) = queued {
                            // Queued under the run that polls it: nothing to
                            // store, the run flushes and polls again.
                            *held = Held::new(queued);
                            return Poll::Pending;
                        }
                    }
                }
                Ticket::Slot(idx) => {
                    if let Some(Some(failure)) = self.with(|inner| inner.take_slot(idx, out)) {
                        *held = Held::new(Ticket::Unqueued);
                        return Poll::Ready(failure);
                    }
                    // Not read yet (nothing was changed), or polled from
                    // inside the backend.
                }
            }
        }
        let mut ticket = held.get();
        let polled = self.poll_op_slow(&mut ticket, addr, out, cx);
        *held = Held::new(ticket);
        polled
    }

    /// `poll_op` in full.
    #[inline(never)]
    fn poll_op_slow(
        &self,
        ticket: &mut Ticket,
        addr: u64,
        out: &mut [u8],
        cx: &mut Context<'_>,
    ) -> Poll<Option<PartialRead>> {
        if !cfg!(feature = "small") && *ticket == Ticket::Solo {
            if let Some(done) = self.poll_solo_op(ticket, out, cx) {
                return done;
            }
        }
        let first = *ticket == Ticket::Unqueued;
        let idx = match *ticket {
            Ticket::Slot(idx) => idx,
            Ticket::Unqueued | Ticket::Solo => match self.queue_op(ticket, addr, out, cx) {
                Ok(idx) => idx,
                Err(done) => return done,
            },
        };
        self.poll_slot(ticket, idx, first, out, cx)
    }

    /// Polls the solo op: `Some` with the poll's result, or `None` with
    /// `ticket` turned into the slot the op was moved to.
    fn poll_solo_op(
        &self,
        ticket: &mut Ticket,
        out: &mut [u8],
        cx: &Context<'_>,
    ) -> Option<Poll<Option<PartialRead>>> {
        let driven = self.poller(cx) == Poller::Run;
        match self.with(|inner| inner.poll_solo(out, driven)) {
            // Polled from inside the backend: the flush has it.
            None => Some(Poll::Ready(Some(BROKEN))),
            Some(SoloPoll::Ready(failure)) => {
                *ticket = Ticket::Unqueued;
                Some(Poll::Ready(failure))
            }
            Some(SoloPoll::Wait) => Some(Poll::Pending),
            Some(SoloPoll::Flush) => {
                // The queue is empty while there is a solo op, so this
                // flush reads it alone.
                self.flush();
                *ticket = Ticket::Unqueued;
                let taken = self.with(|inner| inner.take_solo(out)).flatten();
                // Not reachable: a flush reads a queued solo op.
                Some(Poll::Ready(taken.unwrap_or(Some(BROKEN))))
            }
            Some(SoloPoll::Slot(idx)) => {
                *ticket = Ticket::Slot(idx);
                None
            }
        }
    }

    /// The first poll of a read, in full: queues it, or reads it at once
    /// where it finds no room. `Ok` with its slot where it is to wait
    /// there; `Err` with the poll's result otherwise.
    fn queue_op(
        &self,
        ticket: &mut Ticket,
        addr: u64,
        out: &mut [u8],
        cx: &Context<'_>,
    ) -> Result<usize, Poll<Option<PartialRead>>> {
        if out.is_empty() {
            return Err(Poll::Ready(None));
        }
        let solo = self.poller(cx) == Poller::Run;
        match self.with(|inner| inner.enqueue(addr, out.len(), solo)) {
            None => Err(Poll::Ready(Some(BROKEN))),
            Some(Enqueued::Solo) => {
                // Queued under the run that polls it.
                *ticket = Ticket::Solo;
                Err(Poll::Pending)
            }
            Some(Enqueued::Direct) => Err(Poll::Ready(self.read_now(addr, out))),
            Some(Enqueued::Slot { idx, full }) => {
                *ticket = Ticket::Slot(idx);
                if full {
                    self.flush();
                    self.repoll.set(true);
                } else if self.poller(cx) == Poller::Run {
                    // Queued under the run that polls it: nothing to
                    // store, the run flushes and polls again.
                    return Err(Poll::Pending);
                }
                Ok(idx)
            }
        }
    }

    /// Polls the op queued in slot `idx` (`first`: queued in this poll):
    /// takes its bytes if it is read; otherwise flushes if the task came
    /// back from the executor, and stores the waker it needs.
    fn poll_slot(
        &self,
        ticket: &mut Ticket,
        idx: usize,
        first: bool,
        out: &mut [u8],
        cx: &Context<'_>,
    ) -> Poll<Option<PartialRead>> {
        let mut flushed = false;
        loop {
            let Some(status) = self.with(|inner| inner.status(idx, out, cx)) else {
                // Polled from inside the backend: the flush has it.
                return Poll::Ready(Some(BROKEN));
            };
            let stale_waker = match status {
                Status::Ready(failure, waker) => {
                    *ticket = Ticket::Unqueued;
                    drop(waker);
                    return Poll::Ready(failure);
                }
                Status::Queued { stale_waker } => stale_waker,
            };
            let poller = self.poller(cx);
            if poller == Poller::Outside && !first && !flushed {
                // Polled again outside a run: the task came back from the
                // executor, so everything queued by now goes out.
                flushed = true;
                self.flush();
                continue;
            }
            if poller != Poller::Run && stale_waker {
                let waker = cx.waker().clone();
                let old = self.with(|inner| inner.store_waker(idx, waker));
                drop(old);
            }
            if poller == Poller::Outside {
                // Come back after the rest of the task has queued its reads.
                cx.waker().wake_by_ref();
            }
            return Poll::Pending;
        }
    }
}

/// What [`ReadFuture`] and [`ReadValFuture`] share: the op they read and
/// its ticket, which is given back to the reader if the future is dropped
/// unresolved.
pub(super) struct QueuedOp<'r, B, S, const N: usize, const A: usize> {
    pub(super) reader: &'r AsyncReader<B, S, N, A>,
    pub(super) addr: u64,
    pub(super) ticket: Held,
}

impl<'r, B, S, const N: usize, const A: usize> QueuedOp<'r, B, S, N, A> {
    /// The op of a read of `addr`, not yet queued.
    #[inline]
    pub(super) fn new(reader: &'r AsyncReader<B, S, N, A>, addr: u64) -> Self {
        Self {
            reader,
            addr,
            ticket: Held::new(Ticket::Unqueued),
        }
    }

    /// The `Debug` of the future `name` holding this op, of `len` bytes.
    fn debug(&self, f: &mut fmt::Formatter<'_>, name: &str, len: usize) -> fmt::Result {
        f.debug_struct(name)
            .field("addr", &self.addr)
            .field("len", &len)
            .field("queued", &(self.ticket.get() != Ticket::Unqueued))
            .finish_non_exhaustive()
    }
}

impl<B: ReadBackend, S: AsMut<[u8]>, const N: usize, const A: usize> QueuedOp<'_, B, S, N, A> {
    /// Polls the op into `out`.
    #[inline(always)]
    fn poll(&mut self, out: &mut [u8], cx: &mut Context<'_>) -> Poll<Option<PartialRead>> {
        self.reader.poll_op(&mut self.ticket, self.addr, out, cx)
    }
}

impl<B, S, const N: usize, const A: usize> Drop for QueuedOp<'_, B, S, N, A> {
    #[inline]
    fn drop(&mut self) {
        let ticket = self.ticket.get();
        if ticket != Ticket::Unqueued {
            self.reader.cancel(ticket);
        }
    }
}

/// The future of [`AsyncReader::read`]: resolves to `Ok(())` when every
/// byte of the buffer was read, or to where the read first failed.
///
/// # Examples
///
/// ```
/// use batch_reader::{backends::MemoryBackend, AsyncReader, Geometry, ReadFuture};
///
/// let mem = [5u8; 8];
/// let backend = MemoryBackend::new(&mem, Geometry::new(None, 8, 8)?);
/// let reader: AsyncReader<_, _> = AsyncReader::new(backend, [0u8; 0]);
/// let mut buf = [0u8; 2];
/// let read: ReadFuture<'_, '_, _, _> = reader.read(0, &mut buf);
/// assert_eq!(embassy_futures::block_on(read), Ok(()));
/// assert_eq!(buf, [5, 5]);
/// # Ok::<(), batch_reader::GeometryError>(())
/// ```
#[must_use = "futures do nothing unless polled"]
pub struct ReadFuture<
    'r,
    'b,
    B,
    S,
    const N: usize = DEFAULT_QUEUE,
    const A: usize = DEFAULT_STAGING,
> {
    pub(super) op: QueuedOp<'r, B, S, N, A>,
    pub(super) buf: &'b mut [u8],
}

impl<B, S, const N: usize, const A: usize> fmt::Debug for ReadFuture<'_, '_, B, S, N, A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.op.debug(f, "ReadFuture", self.buf.len())
    }
}

impl<B: ReadBackend, S: AsMut<[u8]>, const N: usize, const A: usize> Future
    for ReadFuture<'_, '_, B, S, N, A>
{
    type Output = Result<(), PartialRead>;

    // Always inlined: its fast path is a few loads and stores, and a call
    // per poll, with its prologue, costs as much again. The compiler
    // otherwise decides by the size of the caller, so unrelated changes
    // tip it either way. With `small`, a call: `poll_op` is not inlined.
    #[cfg_attr(not(feature = "small"), inline(always))]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        this.op.poll(this.buf, cx).map(|failure| match failure {
            None => Ok(()),
            Some(failed) => Err(failed),
        })
    }
}

/// The future of [`AsyncReader::read_val`]: resolves to the value, or to
/// the kind of the read's first failure.
///
/// # Examples
///
/// ```
/// use batch_reader::{backends::MemoryBackend, AsyncReader, Geometry, ReadValFuture};
///
/// let mem = [5u8; 8];
/// let backend = MemoryBackend::new(&mem, Geometry::new(None, 8, 8)?);
/// let reader: AsyncReader<_, _> = AsyncReader::new(backend, [0u8; 0]);
/// let read: ReadValFuture<'_, u16, _, _> = reader.read_val(6);
/// assert_eq!(embassy_futures::block_on(read), Ok(0x0505));
/// # Ok::<(), batch_reader::GeometryError>(())
/// ```
#[must_use = "futures do nothing unless polled"]
pub struct ReadValFuture<
    'r,
    T,
    B,
    S,
    const N: usize = DEFAULT_QUEUE,
    const A: usize = DEFAULT_STAGING,
> {
    pub(super) op: QueuedOp<'r, B, S, N, A>,
    pub(super) value: PhantomData<fn() -> T>,
}

impl<T, B, S, const N: usize, const A: usize> fmt::Debug for ReadValFuture<'_, T, B, S, N, A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.op.debug(f, "ReadValFuture", mem::size_of::<T>())
    }
}

impl<T: FromBytes + IntoBytes, B: ReadBackend, S: AsMut<[u8]>, const N: usize, const A: usize>
    Future for ReadValFuture<'_, T, B, S, N, A>
{
    type Output = Result<T, ReadErrorKind>;

    // Always inlined, as `ReadFuture`'s.
    #[cfg_attr(not(feature = "small"), inline(always))]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let mut value = T::new_zeroed();
        this.op
            .poll(value.as_mut_bytes(), cx)
            .map(|failure| match failure {
                None => Ok(value),
                Some(failed) => Err(failed.kind),
            })
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
pub struct RunFuture<
    'a,
    Fut,
    B,
    S,
    const N: usize = DEFAULT_QUEUE,
    const A: usize = DEFAULT_STAGING,
> {
    pub(super) reader: &'a AsyncReader<B, S, N, A>,
    pub(super) future: Fut,
}

impl<Fut, B, S, const N: usize, const A: usize> fmt::Debug for RunFuture<'_, Fut, B, S, N, A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RunFuture")
            .field("reader", self.reader)
            .finish_non_exhaustive()
    }
}

impl<Fut: Future, B: ReadBackend, S: AsMut<[u8]>, const N: usize, const A: usize> Future
    for RunFuture<'_, Fut, B, S, N, A>
{
    type Output = Fut::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Fut::Output> {
        // SAFETY: `future` is structurally pinned: it is never moved out of
        // `self` nor reached other than through this pinned projection, and
        // `RunFuture` has no `Drop` impl and is `Unpin` only when `Fut` is.
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
