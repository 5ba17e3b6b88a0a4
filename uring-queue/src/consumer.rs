//! The reading half.

use crate::copy::{CopyError, Fault};
use crate::half::{Keep, LineAligned, load_bound};
use crate::loom::sync::atomic::Ordering;
use crate::raw::{IndexLine, MAX_CAPACITY, RawRing};
use crate::{Batch, ReadChunk, RingError};
use core::fmt;
use core::marker::PhantomData;
use core::mem::ManuallyDrop;
use core::ptr::NonNull;

/// The reading half of a ring.
///
/// Keeps its own head and a cached copy of the producer's tail; it reads the
/// shared tail only when the cache says the ring is empty. `Send` but not
/// `Sync`.
///
/// # Release modes
///
/// `K` says how often [`pop`](Self::pop) tells the producer that slots are
/// free again. With `K = 1`, the default, every `pop` publishes the new head
/// at once: the producer sees a slot free as soon as its element is popped.
///
/// With `K > 1` (a *deferred-release* consumer, from
/// [`Ring::split_deferred`](crate::Ring::split_deferred),
/// `HeapRing::new_deferred` (feature `alloc`) or
/// [`SharedRing::into_deferred_consumer`](crate::SharedRing::into_deferred_consumer)),
/// `pop` publishes only every `K`-th head. It also publishes whenever a read
/// finds the ring empty, on [`release`](Self::release), when a
/// [`Batch`] ends, when [`pop_slice`](Self::pop_slice) or a [`ReadChunk`]
/// commits, and when the consumer is dropped (before it marks itself
/// closed). Element by element this is faster: the producer finds free slots
/// in runs, and the consumer's stores stop competing with the producer's
/// reads for the same cache line.
///
/// What the producer is guaranteed: at most `K - 1` popped elements are
/// unpublished at any time, so `push` never fails while fewer than
/// `N - K + 1` elements are queued (pushed and not yet popped), `N` being the
/// capacity. A consumer that keeps reading until the ring is empty releases
/// everything, so a producer waiting for room is never stuck behind a
/// consumer that is waiting for elements.
///
/// When not to use it: when the two sides count credits, as in
/// request/response over two rings where a client keeps at most `N`
/// requests in flight because "a response means a request slot is free".
/// With deferred release the slot is free only once published, so call
/// [`release`](Self::release) before every send on the opposite ring and
/// before waiting, or use the default `K = 1`.
///
/// # Examples
///
/// ```
/// use uring_queue::{RingError, Ring};
///
/// let mut ring = Ring::<u32, 4>::new();
/// let (mut tx, mut rx) = ring.split();
/// tx.push(5).unwrap();
/// assert_eq!(rx.peek(), Ok(&5));
/// assert_eq!(rx.pop(), Ok(5));
/// assert_eq!(rx.pop(), Err(RingError::Empty));
/// ```
///
/// ```compile_fail
/// fn is_sync<S: Sync>() {}
/// is_sync::<uring_queue::Consumer<'static, u8>>();
/// ```
pub struct Consumer<'a, T, const K: usize = 1> {
    raw: RawRing<T>,
    /// Slot 0 and the index mask, copied out of the geometry as the producer
    /// does: a deferred consumer's `pop` (`K > 1`) reads nothing but this
    /// half and the slot (see `pop` on why `K = 1` does not), and the
    /// capacity is `mask + 1` without a look at the geometry.
    base: NonNull<T>,
    mask: u32,
    head: u32,
    cached_tail: u32,
    corrupted: bool,
    /// Dropped by hand, from a local (see `close_consumer`).
    _keep: ManuallyDrop<Keep<T>>,
    _borrow: PhantomData<&'a ()>,
    _align: LineAligned,
}

// SAFETY: the consumer owns the reading side of the protocol; moving it moves
// that role. Elements arrive from the producer's thread, hence `T: Send`. Not
// `Sync` (raw pointers), so two threads never read at once.
unsafe impl<T: Send, const K: usize> Send for Consumer<'_, T, K> {}

impl<T, const K: usize> fmt::Debug for Consumer<'_, T, K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Consumer")
            .field("capacity", &self.slots_total())
            .field("release_every", &K)
            .field("head", &self.head)
            .field("cached_tail", &self.cached_tail)
            .field("corrupted", &self.corrupted)
            .finish()
    }
}

impl<'a, T, const K: usize> Consumer<'a, T, K> {
    /// `K` as the index type; refuses to compile for `K = 0` or a `K` larger
    /// than any ring.
    const RELEASE_EVERY: u32 = {
        assert!(
            K >= 1 && K <= MAX_CAPACITY,
            "release interval must be at least 1 and at most MAX_CAPACITY"
        );
        K as u32
    };

    /// # Safety
    ///
    /// As for `Producer::new`, for the consumer's role; `head` must also be
    /// the head published in the ring.
    pub(crate) unsafe fn new(raw: RawRing<T>, head: u32, tail: u32, keep: Keep<T>) -> Self {
        let _ = Self::RELEASE_EVERY;
        Self {
            raw,
            // SAFETY: `base` is the slot pointer of a valid ring (the
            // caller's guarantee), so not null.
            base: unsafe { NonNull::new_unchecked(raw.base()) },
            mask: raw.slot_mask(),
            head,
            cached_tail: tail,
            corrupted: false,
            _keep: ManuallyDrop::new(keep),
            _borrow: PhantomData,
            _align: LineAligned,
        }
    }

    /// Number of slots.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut ring = uring_queue::Ring::<u8, 4>::new();
    /// assert_eq!(ring.split().1.capacity(), 4);
    /// ```
    #[inline]
    pub fn capacity(&self) -> usize {
        self.slots_total() as usize
    }

    /// The capacity from this half's own copy of the mask. Going through the
    /// ring's geometry instead would pick, at run time, between a pointer
    /// into the storage and one into this half, which keeps the half in
    /// memory (not registers) in the caller's loop.
    #[inline(always)]
    fn slots_total(&self) -> u32 {
        self.mask + 1
    }

    /// Elements known readable, refreshed from the producer's tail when fewer
    /// than `want` are known.
    #[inline(always)]
    pub(crate) fn available(&mut self, want: u32) -> Result<u32, RingError> {
        let ready = self.cached_tail.wrapping_sub(self.head);
        // `max(1)`: a request for nothing still notices a latched corruption.
        if ready >= want.max(1) {
            return Ok(ready);
        }
        self.refresh()
    }

    /// Reloads the producer's tail, validating it: it may only have moved
    /// forward, and at most `capacity` past our head.
    // Inlined: a consumer that keeps up with its producer (or a producer
    // that keeps the ring full) takes this path on most calls.
    #[inline]
    fn refresh(&mut self) -> Result<u32, RingError> {
        if self.corrupted {
            return Err(RingError::Corrupted);
        }
        let Some(tail) = self.load_tail() else {
            return Err(self.latch());
        };
        self.cached_tail = tail;
        let ready = tail.wrapping_sub(self.head);
        if K > 1 && ready == 0 {
            // A read found the ring empty: hand every popped slot back.
            self.release();
        }
        Ok(ready)
    }

    /// The producer's tail, loaded and validated.
    #[inline(always)]
    fn load_tail(&self) -> Option<u32> {
        let total = self.slots_total();
        load_bound(self.raw.producer(), 0, self.head, self.cached_tail, total)
    }

    /// Remembers a violation for good; the cache says "empty", so the fast
    /// path always falls through to `refresh`, which reports it. Also the
    /// record layer's, for corruption it finds in a record.
    pub(crate) fn latch(&mut self) -> RingError {
        self.corrupted = true;
        self.cached_tail = self.head;
        RingError::Corrupted
    }

    /// Removes the oldest element.
    ///
    /// # Errors
    ///
    /// [`RingError::Empty`], or [`RingError::Corrupted`].
    ///
    /// # Examples
    ///
    /// ```
    /// use uring_queue::{RingError, Ring};
    ///
    /// let mut ring = Ring::<u32, 4>::new();
    /// let (mut tx, mut rx) = ring.split();
    /// tx.push(1).unwrap();
    /// tx.push(2).unwrap();
    /// assert_eq!(rx.pop(), Ok(1));
    /// assert_eq!(rx.pop(), Ok(2));
    /// assert_eq!(rx.pop(), Err(RingError::Empty));
    /// ```
    #[inline]
    pub fn pop(&mut self) -> Result<T, RingError> {
        if self.available(1)? == 0 {
            return Err(RingError::Empty);
        }
        // K = 1 reads the slot through the ring's geometry (the slot pointer
        // and mask loaded from the storage), a deferred consumer through its
        // own copy. The difference is deliberate: with exact release, a
        // consumer whose `pop` is leaner than the producer's `push` catches
        // up with it and both fall into the slow state described at
        // `RawRing` (measured: 40-55 Mops/s against 370-450). Deferring the
        // release removes the head store that keeps the two in step, so the
        // deferred consumer can afford the lean read (docs/benchmarks.md,
        // spsc).
        let value = if K == 1 {
            // SAFETY: the slot at `head` was published, so we own it; the
            // head moves past it below, so the moved-out value is never read
            // again.
            unsafe { self.raw.read(self.head) }
        } else {
            self.raw.track(self.head, 1, false);
            // SAFETY: as above; `base` and `mask` are the ring's own (copied
            // in `new`), so the slot lies among its `capacity` contiguous
            // slots.
            unsafe {
                self.base
                    .as_ptr()
                    .add((self.head & self.mask) as usize)
                    .read()
            }
        };
        if K == 1 {
            self.raw.advance_head(&mut self.head, 1);
        } else {
            let next = self.head.wrapping_add(1);
            if next % Self::RELEASE_EVERY == 0 {
                self.raw.publish_head(next);
            }
            self.head = next;
        }
        Ok(value)
    }

    /// Publishes the head if popped elements are still unpublished (only a
    /// deferred-release consumer or an abandoned [`Batch`] leaves any);
    /// otherwise does nothing.
    ///
    /// Call it before waiting for the producer (parking, sleeping, blocking on
    /// another ring), and before anything the producer's progress depends on
    /// (a response on a second ring, say).
    ///
    /// # Examples
    ///
    /// ```
    /// use uring_queue::Ring;
    ///
    /// let mut ring = Ring::<u32, 4>::new();
    /// let (mut tx, mut rx) = ring.split_deferred::<4>();
    /// tx.push_slice(&[1, 2, 3, 4]).unwrap();
    /// assert_eq!(rx.pop(), Ok(1));
    /// // Popped but not yet published: the producer still sees a full ring.
    /// assert!(tx.is_full());
    /// rx.release();
    /// assert_eq!(tx.slots(), 1);
    /// // Nothing pending: a no-op.
    /// rx.release();
    /// assert_eq!(tx.slots(), 1);
    /// ```
    #[inline]
    pub fn release(&mut self) {
        // Our own line, written only by this half (or, in shared memory, by
        // a peer breaking the protocol, in which case storing our head again
        // is what we should do anyway).
        if self.raw.consumer().index.load(Ordering::Relaxed) != self.head {
            self.raw.publish_head(self.head);
        }
    }

    /// Popped elements not yet published to the producer: always below `K`.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut ring = uring_queue::Ring::<u8, 16>::new();
    /// let (mut tx, mut rx) = ring.split_deferred::<8>();
    /// tx.push_slice(&[0; 10]).unwrap();
    /// for _ in 0..3 {
    ///     rx.pop().unwrap();
    /// }
    /// assert_eq!(rx.pending(), 3);
    /// for _ in 0..5 {
    ///     rx.pop().unwrap();
    /// }
    /// // The eighth pop published.
    /// assert_eq!(rx.pending(), 0);
    /// assert_eq!(tx.len(), 2);
    /// ```
    #[inline]
    pub fn pending(&self) -> usize {
        let published = self.raw.consumer().index.load(Ordering::Relaxed);
        self.head.wrapping_sub(published).min(self.slots_total()) as usize
    }

    /// The release interval `K` (1 unless deferred).
    ///
    /// # Examples
    ///
    /// ```
    /// let mut ring = uring_queue::Ring::<u8, 64>::new();
    /// assert_eq!(ring.split().1.release_every(), 1);
    /// assert_eq!(ring.split_deferred::<32>().1.release_every(), 32);
    /// ```
    #[inline]
    pub const fn release_every(&self) -> usize {
        K
    }

    /// Lends the consumer out for popping the elements readable now, without
    /// publishing the head until the batch ends; then publishes once.
    ///
    /// The batch yields, by value, the elements that were readable when it was
    /// made (one reload of the producer's tail). Elements it did not yield
    /// stay in the ring. Dropping it publishes the head, as rtrb's
    /// `ReadChunkIntoIter` does; so does [`Batch::release`].
    ///
    /// # Errors
    ///
    /// [`RingError::Corrupted`] only; an empty ring gives an empty batch.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut ring = uring_queue::Ring::<String, 8>::new();
    /// let (mut tx, mut rx) = ring.split();
    /// for w in ["a", "b", "c"] {
    ///     tx.push(w.to_string()).unwrap();
    /// }
    /// let mut batch = rx.batch().unwrap();
    /// assert_eq!(batch.len(), 3);
    /// assert_eq!(batch.next().as_deref(), Some("a"));
    /// assert_eq!(batch.next().as_deref(), Some("b"));
    /// // Not published while the batch lives.
    /// assert_eq!(tx.len(), 3);
    /// drop(batch);
    /// assert_eq!(tx.len(), 1);
    /// assert_eq!(rx.pop().as_deref(), Ok("c"));
    /// ```
    #[inline]
    pub fn batch(&mut self) -> Result<Batch<'_, 'a, T, K>, RingError> {
        let ready = self.available(self.slots_total())?;
        let end = self.head.wrapping_add(ready);
        Ok(Batch::new(self, end))
    }

    /// The oldest element, left in place.
    ///
    /// # Errors
    ///
    /// [`RingError::Empty`], or [`RingError::Corrupted`].
    ///
    /// # Examples
    ///
    /// ```
    /// use uring_queue::{RingError, Ring};
    ///
    /// let mut ring = Ring::<u32, 4>::new();
    /// let (mut tx, mut rx) = ring.split();
    /// assert_eq!(rx.peek(), Err(RingError::Empty));
    /// tx.push(7).unwrap();
    /// assert_eq!(rx.peek(), Ok(&7));
    /// // Still in the ring until popped.
    /// assert_eq!(rx.len(), 1);
    /// assert_eq!(rx.pop(), Ok(7));
    /// ```
    #[inline]
    pub fn peek(&mut self) -> Result<&T, RingError> {
        if self.available(1)? == 0 {
            return Err(RingError::Empty);
        }
        self.raw.track(self.head, 1, false);
        // SAFETY: the slot at `head` is published and ours until the head
        // moves, which needs `&mut self`, so not while this borrow lives.
        Ok(unsafe { &*self.raw.slot(self.head) })
    }

    /// Number of readable elements. Reports the ring as empty once it is known
    /// to be corrupted.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut ring = uring_queue::Ring::<u8, 8>::new();
    /// let (mut tx, mut rx) = ring.split();
    /// tx.push_slice(&[1, 2, 3]).unwrap();
    /// assert_eq!(rx.len(), 3);
    /// rx.pop().unwrap();
    /// assert_eq!(rx.len(), 2);
    /// ```
    #[inline]
    pub fn len(&self) -> usize {
        if self.corrupted {
            return 0;
        }
        match self.load_tail() {
            Some(tail) => tail.wrapping_sub(self.head) as usize,
            // Invalid tail: the next operation latches; report nothing.
            None => 0,
        }
    }

    /// Whether nothing is readable.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut ring = uring_queue::Ring::<u8, 4>::new();
    /// let (mut tx, rx) = ring.split();
    /// assert!(rx.is_empty());
    /// tx.push(1).unwrap();
    /// assert!(!rx.is_empty());
    /// ```
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether every slot holds an unread element.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut ring = uring_queue::Ring::<u8, 2>::new();
    /// let (mut tx, mut rx) = ring.split();
    /// tx.push_slice(&[1, 2]).unwrap();
    /// assert!(rx.is_full());
    /// rx.pop().unwrap();
    /// assert!(!rx.is_full());
    /// ```
    #[inline]
    pub fn is_full(&self) -> bool {
        self.len() == self.capacity()
    }

    /// Whether the producer was dropped. Elements it published before that are
    /// still readable: drain until empty *after* seeing this to get them all.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut ring = uring_queue::Ring::<u8, 4>::new();
    /// let (mut tx, mut rx) = ring.split();
    /// tx.push(1).unwrap();
    /// drop(tx);
    /// assert!(rx.is_abandoned());
    /// assert_eq!(rx.pop(), Ok(1));
    /// ```
    #[inline]
    pub fn is_abandoned(&self) -> bool {
        self.raw.producer().closed.load(Ordering::Acquire) != 0
    }

    /// Whether this half has seen the ring's invariants broken.
    ///
    /// # Examples
    ///
    /// ```
    /// use core::sync::atomic::{AtomicU32, Ordering};
    /// use uring_queue::{RingError, Region, SharedRing};
    ///
    /// let mut mem = [0u64; 64];
    /// let region = Region::new(zerocopy::IntoBytes::as_mut_bytes(&mut mem[..]));
    /// let start = region.as_ptr();
    /// let mut rx = SharedRing::<u32>::init(region, 16).unwrap().into_consumer();
    /// assert!(!rx.is_corrupted());
    /// // A peer sets the producer's tail (at byte 128) beyond the capacity.
    /// // SAFETY: in bounds and aligned; the ring reads this word atomically too.
    /// unsafe { AtomicU32::from_ptr(start.add(128).cast()) }.store(17, Ordering::Relaxed);
    /// assert_eq!(rx.pop(), Err(RingError::Corrupted));
    /// assert!(rx.is_corrupted());
    /// ```
    #[inline]
    pub fn is_corrupted(&self) -> bool {
        self.corrupted
    }

    /// The ring behind this half, for the record layer.
    pub(crate) fn raw(&self) -> RawRing<T> {
        self.raw
    }

    /// The private head, for the record layer.
    pub(crate) fn head(&self) -> u32 {
        self.head
    }

    /// The ring and the private head, for the record layer's lent frames.
    pub(crate) fn parts(&mut self) -> (RawRing<T>, &mut u32) {
        (self.raw, &mut self.head)
    }

    /// Advances and publishes the head by `n` slots already read.
    ///
    /// # Safety
    ///
    /// The `n` slots from the head must have been readable.
    pub(crate) unsafe fn advance(&mut self, n: u32) {
        self.raw.advance_head(&mut self.head, n);
    }
}

impl<T: Copy, const K: usize> Consumer<'_, T, K> {
    /// Moves up to `out.len()` elements into `out`, oldest first, with a single
    /// publish of the head. Returns how many (0 when empty).
    ///
    /// # Errors
    ///
    /// [`RingError::Corrupted`] only.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut ring = uring_queue::Ring::<u16, 8>::new();
    /// let (mut tx, mut rx) = ring.split();
    /// tx.push_slice(&[1, 2, 3]).unwrap();
    /// let mut out = [0; 2];
    /// assert_eq!(rx.pop_slice(&mut out), Ok(2));
    /// assert_eq!(out, [1, 2]);
    /// assert_eq!(rx.pop_slice(&mut out), Ok(1));
    /// assert_eq!(out[0], 3);
    /// assert_eq!(rx.pop_slice(&mut out), Ok(0));
    /// ```
    #[inline]
    pub fn pop_slice(&mut self, out: &mut [T]) -> Result<usize, RingError> {
        let want = u32::try_from(out.len()).unwrap_or(u32::MAX);
        let n = self.available(want)?.min(want);
        if n == 0 {
            return Ok(0);
        }
        let (ptr, first, second) = self.raw.span(self.head, n);
        self.raw.track(self.head, n, false);
        // SAFETY: the `n` slots from `head` are published, so ours to read;
        // `span` keeps both runs in bounds; `out` is the caller's exclusive
        // slice, so it cannot overlap ring storage.
        unsafe {
            out.as_mut_ptr().copy_from_nonoverlapping(ptr, first);
            out.as_mut_ptr()
                .add(first)
                .copy_from_nonoverlapping(self.raw.base(), second);
        }
        self.raw.advance_head(&mut self.head, n);
        Ok(n as usize)
    }

    /// Lends exactly `n` published elements for reading in place. They are
    /// released only by [`ReadChunk::commit`].
    ///
    /// # Errors
    ///
    /// [`RingError::Insufficient`] when fewer than `n` are readable,
    /// [`RingError::TooLarge`] when `n` exceeds the capacity, [`RingError::Corrupted`].
    ///
    /// # Examples
    ///
    /// ```
    /// let mut ring = uring_queue::Ring::<u8, 4>::new();
    /// let (mut tx, mut rx) = ring.split();
    /// tx.push_slice(b"xyz").unwrap();
    /// let chunk = rx.read_chunk(2).unwrap();
    /// assert_eq!(chunk.as_slices(), (&b"xy"[..], &[][..]));
    /// chunk.commit_all();
    /// assert_eq!(rx.pop(), Ok(b'z'));
    /// ```
    #[inline]
    pub fn read_chunk(&mut self, n: usize) -> Result<ReadChunk<'_, T>, RingError> {
        if self.corrupted {
            return Err(RingError::Corrupted);
        }
        if n > self.capacity() {
            return Err(RingError::TooLarge {
                max: self.capacity(),
            });
        }
        let n = n as u32;
        let ready = self.available(n)?;
        if ready < n {
            return Err(RingError::Insufficient {
                available: ready as usize,
            });
        }
        self.raw.track(self.head, n, false);
        Ok(ReadChunk::new(self.raw, &mut self.head, n))
    }
}

impl<T: Copy, const K: usize> Consumer<'_, T, K> {
    /// Copies the published elements out with `copy`, a copy that may stop
    /// part-way (to user memory, say), and releases exactly what it copied to
    /// the producer, in one store. Returns how many elements that was (0 when
    /// empty, without calling `copy`).
    ///
    /// `copy` is given the elements before the end of the storage, then, if
    /// it took them all, those that wrapped to its start. It returns `Ok(n)`
    /// for the first `n` elements of the run taken (fewer than the run: the
    /// destination is full, and it is not called again), or a [`Fault`] with
    /// the elements it took before it stopped. A count larger than the run
    /// is taken as the run. If `copy` panics, nothing of this call is
    /// released.
    ///
    /// # Errors
    ///
    /// [`CopyError::Fault`] when `copy` stopped part-way, with every element
    /// released by this call; [`CopyError::Ring`] ([`RingError::Corrupted`])
    /// before any copy.
    ///
    /// # Examples
    ///
    /// ```
    /// use uring_queue::{Fault, Ring};
    ///
    /// let mut ring = Ring::<u8, 8>::new();
    /// let (mut tx, mut rx) = ring.split();
    /// tx.push_slice(b"hello").unwrap();
    /// let mut out = [0u8; 3];
    /// let n = rx.pop_with(|src| {
    ///     let n = src.len().min(out.len());
    ///     out[..n].copy_from_slice(&src[..n]);
    ///     Ok::<_, Fault<()>>(n)
    /// });
    /// assert_eq!((n, &out), (Ok(3), b"hel"));
    /// assert_eq!(rx.len(), 2);
    /// ```
    #[inline]
    pub fn pop_with<E>(
        &mut self,
        copy: impl FnMut(&[T]) -> Result<usize, Fault<E>>,
    ) -> Result<usize, CopyError<E>> {
        let ready = self.available(u32::MAX).map_err(CopyError::Ring)?;
        if ready == 0 {
            return Ok(0);
        }
        let chunk = self.read_chunk(ready as usize).map_err(CopyError::Ring)?;
        chunk.commit_with(copy).map_err(CopyError::Fault)
    }
}

impl<T, const K: usize> Drop for Consumer<'_, T, K> {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: `_keep` is not used again: this is the half's `drop`.
        let keep = unsafe { ManuallyDrop::take(&mut self._keep) };
        close_consumer(self.raw.consumer(), self.head, keep);
    }
}

/// The consumer's `drop`, out of line and given the half's fields by value.
///
/// A caller whose loop can unwind (an `assert!`, an `unwrap`) drops the half
/// on its cleanup path; were that drop given the half's address (a `&mut
/// self` method not inlined there, or `Arc`'s slow path on a field), the
/// half would be kept in memory for the whole loop, its head stored back and
/// its slot pointer reloaded on every `pop`. By value, the half stays in
/// registers.
#[inline(never)]
fn close_consumer<T>(line: &IndexLine, head: u32, _keep: Keep<T>) {
    // The head first, then the flag: a producer (or a ring being dropped)
    // that sees the flag sees the final head, and never a popped element as
    // still queued. Only a deferred-release consumer or an abandoned `Batch`
    // leaves it unpublished; storing it again otherwise changes nothing.
    if line.index.load(Ordering::Relaxed) != head {
        // Release, as in `RawRing::publish_head`.
        line.index.store(head, Ordering::Release);
    }
    // Release: every read of a slot happened before the producer sees this.
    line.closed.store(1, Ordering::Release);
    // `_keep` (the heap storage's handle, if any) is dropped on return,
    // after the flag.
}
