//! The writing half.

use crate::RingError;
use crate::WriteChunk;
use crate::copy::{CopyError, Fault};
use crate::half::{Keep, LineAligned, load_bound};
use crate::loom::sync::atomic::Ordering;
use crate::raw::{IndexLine, RawRing};
use core::fmt;
use core::marker::PhantomData;
use core::mem::ManuallyDrop;
use core::ptr::NonNull;
use zerocopy::FromBytes;

/// The writing half of a ring.
///
/// Keeps its own tail and a cached copy of the consumer's head; it reads the
/// shared head only when the cache says the ring is full. `Send` but not
/// `Sync`: one thread writes at a time.
///
/// # Examples
///
/// ```
/// use uring_queue::Ring;
///
/// let mut ring = Ring::<u64, 8>::new();
/// let (mut tx, mut rx) = ring.split();
/// std::thread::scope(|s| {
///     s.spawn(move || {
///         for i in 0..100u64 {
///             while tx.push(i).is_err() {
///                 std::hint::spin_loop();
///             }
///         }
///     });
///     let mut next = 0;
///     while next < 100 {
///         if let Ok(v) = rx.pop() {
///             assert_eq!(v, next);
///             next += 1;
///         }
///     }
/// });
/// ```
///
/// A half cannot be shared between threads:
///
/// ```compile_fail
/// fn is_sync<S: Sync>() {}
/// is_sync::<uring_queue::Producer<'static, u8>>();
/// ```
pub struct Producer<'a, T> {
    raw: RawRing<T>,
    /// Slot 0 and the index mask, copied out of the geometry so that `push`
    /// reads nothing but this half (see `RawRing` on why only the producer
    /// holds a copy).
    base: NonNull<T>,
    mask: u32,
    tail: u32,
    /// The cached consumer head plus the capacity: the tail may advance up to
    /// here. Kept in this form so the hot path's "is there room" is one
    /// subtraction and compare.
    limit: u32,
    corrupted: bool,
    /// Dropped by hand, from a local (see `close_producer`).
    _keep: ManuallyDrop<Keep<T>>,
    _borrow: PhantomData<&'a ()>,
    _align: LineAligned,
}

// SAFETY: the producer owns the writing side of the protocol; moving it to
// another thread moves that role with it. Elements are moved to the consumer's
// thread, hence `T: Send`. It is not `Sync` (raw pointers), so two threads
// never write at once.
unsafe impl<T: Send> Send for Producer<'_, T> {}

impl<T> fmt::Debug for Producer<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Producer")
            .field("capacity", &self.slots_total())
            .field("tail", &self.tail)
            .field("limit", &self.limit)
            .field("corrupted", &self.corrupted)
            .finish()
    }
}

impl<'a, T> Producer<'a, T> {
    /// # Safety
    ///
    /// `raw` must be valid for `'a` (and while `keep` is held), no other
    /// producer may exist for it, and `tail`/`head` must be the ring's current
    /// indices with `tail - head <= capacity`.
    pub(crate) unsafe fn new(raw: RawRing<T>, tail: u32, head: u32, keep: Keep<T>) -> Self {
        Self {
            raw,
            // SAFETY: `base` is the slot pointer of a valid ring (the
            // caller's guarantee), so not null.
            base: unsafe { NonNull::new_unchecked(raw.base()) },
            mask: raw.slot_mask(),
            tail,
            limit: head.wrapping_add(raw.capacity()),
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
    /// assert_eq!(ring.split().0.capacity(), 4);
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

    /// Free slots in the cache's view, refreshed from the consumer's head when
    /// fewer than `want` are known free.
    #[inline(always)]
    pub(crate) fn free(&mut self, want: u32) -> Result<u32, RingError> {
        let free = self.limit.wrapping_sub(self.tail);
        // `max(1)`: a request for nothing still notices a latched corruption.
        if free >= want.max(1) {
            return Ok(free);
        }
        self.refresh()
    }

    /// Reloads the consumer's head, validating it: it may only have moved
    /// forward, and not past our tail.
    // Inlined: a consumer that keeps up with its producer (or a producer
    // that keeps the ring full) takes this path on most calls.
    #[inline]
    fn refresh(&mut self) -> Result<u32, RingError> {
        if self.corrupted {
            return Err(RingError::Corrupted);
        }
        match self.load_limit() {
            Some(limit) => {
                self.limit = limit;
                Ok(limit.wrapping_sub(self.tail))
            }
            None => Err(self.latch()),
        }
    }

    /// The consumer's head, loaded and validated, as the limit it sets.
    #[inline(always)]
    fn load_limit(&self) -> Option<u32> {
        let total = self.slots_total();
        load_bound(self.raw.consumer(), total, self.tail, self.limit, total)
    }

    /// Remembers a violation for good. The cache is set to "full", so the
    /// fast path needs no extra check: it always falls through to `refresh`.
    fn latch(&mut self) -> RingError {
        self.corrupted = true;
        self.limit = self.tail;
        RingError::Corrupted
    }

    /// Appends one element, moving it into the ring.
    ///
    /// # Errors
    ///
    /// [`PushError::Full`] when no slot is free, [`PushError::Corrupted`] if
    /// the consumer's index broke the ring's invariants (now or before). Both
    /// hand the value back; `?` turns them into an [`RingError`].
    ///
    /// # Examples
    ///
    /// ```
    /// use uring_queue::{PushError, Ring};
    /// let mut ring = Ring::<u32, 1>::new();
    /// let (mut tx, _rx) = ring.split();
    /// assert_eq!(tx.push(7), Ok(()));
    /// assert_eq!(tx.push(8), Err(PushError::Full(8)));
    /// ```
    ///
    /// Values that own resources come back on failure, nothing is lost:
    ///
    /// ```
    /// use uring_queue::{RingError, Ring};
    /// let mut ring = Ring::<String, 1>::new();
    /// let (mut tx, mut rx) = ring.split();
    /// tx.push("one".to_string()).unwrap();
    /// let back = tx.push("two".to_string()).unwrap_err();
    /// assert_eq!(back.error(), RingError::Full);
    /// assert_eq!(back.into_inner(), "two");
    /// assert_eq!(rx.pop().as_deref(), Ok("one"));
    /// ```
    #[inline]
    pub fn push(&mut self, value: T) -> Result<(), PushError<T>> {
        match self.free(1) {
            Ok(0) => return Err(PushError::Full(value)),
            Ok(_) => {}
            Err(_) => return Err(PushError::Corrupted(value)),
        }
        self.raw.track(self.tail, 1, true);
        // SAFETY: at least one slot from `tail` is free, so we own it; `base`
        // and `mask` are the ring's own (copied in `new`), so the slot lies
        // among its `capacity` contiguous slots. A free slot holds no live
        // element (it was moved out by the consumer, or never written), so
        // overwriting it leaks nothing.
        unsafe {
            self.base
                .as_ptr()
                .add((self.tail & self.mask) as usize)
                .write(value);
        }
        self.raw.advance_tail(&mut self.tail, 1);
        Ok(())
    }

    /// Number of elements in the ring, as far as the consumer has published.
    /// Reports the ring as full once it is known to be corrupted.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut ring = uring_queue::Ring::<u8, 8>::new();
    /// let (mut tx, mut rx) = ring.split();
    /// tx.push_slice(&[1, 2, 3]).unwrap();
    /// assert_eq!(tx.len(), 3);
    /// rx.pop().unwrap();
    /// assert_eq!(tx.len(), 2);
    /// ```
    #[inline]
    pub fn len(&self) -> usize {
        if self.corrupted {
            return self.capacity();
        }
        match self.load_limit() {
            Some(limit) => self
                .slots_total()
                .wrapping_sub(limit.wrapping_sub(self.tail)) as usize,
            // Invalid head: the next operation latches; report no room.
            None => self.capacity(),
        }
    }

    /// Whether no element is waiting (the consumer has caught up).
    ///
    /// # Examples
    ///
    /// ```
    /// let mut ring = uring_queue::Ring::<u8, 4>::new();
    /// let (mut tx, mut rx) = ring.split();
    /// tx.push(1).unwrap();
    /// assert!(!tx.is_empty());
    /// rx.pop().unwrap();
    /// assert!(tx.is_empty());
    /// ```
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether no slot is free.
    ///
    /// # Examples
    ///
    /// ```
    /// use uring_queue::{PushError, Ring};
    ///
    /// let mut ring = Ring::<u8, 2>::new();
    /// let (mut tx, mut rx) = ring.split();
    /// tx.push_slice(&[1, 2]).unwrap();
    /// assert!(tx.is_full());
    /// assert_eq!(tx.push(3), Err(PushError::Full(3)));
    /// rx.pop().unwrap();
    /// assert!(!tx.is_full());
    /// ```
    #[inline]
    pub fn is_full(&self) -> bool {
        self.len() == self.capacity()
    }

    /// Number of free slots.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut ring = uring_queue::Ring::<u8, 4>::new();
    /// let (mut tx, _rx) = ring.split();
    /// assert_eq!(tx.slots(), 4);
    /// tx.push(1).unwrap();
    /// assert_eq!(tx.slots(), 3);
    /// ```
    #[inline]
    pub fn slots(&self) -> usize {
        self.capacity() - self.len()
    }

    /// Whether the consumer was dropped: nothing pushed from now on is read.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut ring = uring_queue::Ring::<u8, 4>::new();
    /// let (tx, rx) = ring.split();
    /// assert!(!tx.is_abandoned());
    /// drop(rx);
    /// assert!(tx.is_abandoned());
    /// ```
    #[inline]
    pub fn is_abandoned(&self) -> bool {
        self.raw.consumer().closed.load(Ordering::Acquire) != 0
    }

    /// Whether this half has seen the ring's invariants broken (see
    /// [`RingError::Corrupted`]).
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
    /// let mut tx = SharedRing::<u32>::init(region, 4).unwrap().into_producer();
    /// tx.push_slice(&[1, 2, 3, 4]).unwrap();
    /// assert!(!tx.is_corrupted());
    /// // A peer moves the consumer's head (at byte 256) past the producer's tail.
    /// // SAFETY: in bounds and aligned; the ring reads this word atomically too.
    /// unsafe { AtomicU32::from_ptr(start.add(256).cast()) }.store(9, Ordering::Relaxed);
    /// assert_eq!(tx.push(5).map_err(RingError::from), Err(RingError::Corrupted));
    /// assert!(tx.is_corrupted());
    /// ```
    #[inline]
    pub fn is_corrupted(&self) -> bool {
        self.corrupted
    }

    /// The ring behind this half, for the record layer.
    pub(crate) fn raw(&self) -> RawRing<T> {
        self.raw
    }

    /// The private tail, for the record layer.
    pub(crate) fn tail(&self) -> u32 {
        self.tail
    }

    /// The ring and the private tail, for the record layer's grants.
    pub(crate) fn parts(&mut self) -> (RawRing<T>, &mut u32) {
        (self.raw, &mut self.tail)
    }
}

impl<T: Copy> Producer<'_, T> {
    /// Appends as many elements of `values` as fit, from its start, with a
    /// single publish of the tail. Returns how many were appended (0 when full).
    ///
    /// # Errors
    ///
    /// [`RingError::Corrupted`] only.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut ring = uring_queue::Ring::<u16, 4>::new();
    /// let (mut tx, mut rx) = ring.split();
    /// assert_eq!(tx.push_slice(&[1, 2, 3, 4, 5]), Ok(4));
    /// let mut out = [0; 8];
    /// assert_eq!(rx.pop_slice(&mut out), Ok(4));
    /// assert_eq!(out[..4], [1, 2, 3, 4]);
    /// ```
    #[inline]
    pub fn push_slice(&mut self, values: &[T]) -> Result<usize, RingError> {
        let want = u32::try_from(values.len()).unwrap_or(u32::MAX);
        let n = self.free(want)?.min(want);
        if n == 0 {
            return Ok(0);
        }
        let (ptr, first, second) = self.raw.span(self.tail, n);
        self.raw.track(self.tail, n, true);
        // SAFETY: the `n` slots from `tail` are free, so owned by us; `span`
        // keeps `ptr..ptr + first` and `base..base + second` in bounds, and
        // `values` (a caller's slice) cannot overlap ring storage we own.
        unsafe {
            ptr.copy_from_nonoverlapping(values.as_ptr(), first);
            self.raw
                .base()
                .copy_from_nonoverlapping(values.as_ptr().add(first), second);
        }
        self.raw.advance_tail(&mut self.tail, n);
        Ok(n as usize)
    }
}

impl<T: Copy + FromBytes> Producer<'_, T> {
    /// Lends exactly `n` free slots for writing in place. Nothing is published
    /// until [`WriteChunk::commit`].
    ///
    /// # Errors
    ///
    /// [`RingError::Insufficient`] when fewer than `n` slots are free,
    /// [`RingError::TooLarge`] when `n` exceeds the capacity, [`RingError::Corrupted`].
    ///
    /// # Examples
    ///
    /// ```
    /// let mut ring = uring_queue::Ring::<u8, 8>::new();
    /// let (mut tx, rx) = ring.split();
    /// let mut chunk = tx.write_chunk(3).unwrap();
    /// let (a, _b) = chunk.as_mut_slices();
    /// a.copy_from_slice(b"abc");
    /// chunk.commit(2);
    /// assert_eq!(rx.len(), 2);
    /// ```
    #[inline]
    pub fn write_chunk(&mut self, n: usize) -> Result<WriteChunk<'_, T>, RingError> {
        if self.corrupted {
            return Err(RingError::Corrupted);
        }
        if n > self.capacity() {
            return Err(RingError::TooLarge {
                max: self.capacity(),
            });
        }
        let n = n as u32;
        let free = self.free(n)?;
        if free < n {
            return Err(RingError::Insufficient {
                available: free as usize,
            });
        }
        self.raw.track(self.tail, n, true);
        Ok(WriteChunk::new(self.raw, &mut self.tail, n))
    }
}

impl<T: Copy + FromBytes> Producer<'_, T> {
    /// Copies into the free slots with `copy`, a copy that may stop
    /// part-way (from user memory, say), and publishes exactly what it
    /// copied, in one store. Returns how many elements that was (0 when full,
    /// without calling `copy`).
    ///
    /// `copy` is given the free slots before the end of the storage, then,
    /// if it filled them all, those that wrapped to its start. It returns
    /// `Ok(n)` for `n` elements written at the start of the run it was given
    /// (fewer than the run: the source ran out, and it is not called again),
    /// or a [`Fault`] with the elements it wrote before it stopped. A count
    /// larger than the run is taken as the run. If `copy` panics, nothing of
    /// this call is published.
    ///
    /// # Errors
    ///
    /// [`CopyError::Fault`] when `copy` stopped part-way, with every element
    /// published by this call; [`CopyError::Ring`] ([`RingError::Corrupted`])
    /// before any copy.
    ///
    /// # Examples
    ///
    /// ```
    /// use uring_queue::{CopyError, Fault, Ring};
    ///
    /// let mut ring = Ring::<u8, 8>::new();
    /// let (mut tx, mut rx) = ring.split();
    /// let src = b"hello";
    /// let n = tx.push_with(|dst| {
    ///     let n = dst.len().min(src.len());
    ///     dst[..n].copy_from_slice(&src[..n]);
    ///     Ok::<_, Fault<()>>(n)
    /// });
    /// assert_eq!(n, Ok(5));
    /// // A copy that faults after two bytes publishes those two.
    /// let r = tx.push_with(|dst| {
    ///     dst[..2].copy_from_slice(b"!!");
    ///     Err(Fault::new(2, "EFAULT"))
    /// });
    /// assert_eq!(r, Err(CopyError::Fault(Fault::new(2, "EFAULT"))));
    /// let mut out = [0; 8];
    /// assert_eq!(rx.pop_slice(&mut out), Ok(7));
    /// assert_eq!(&out[..7], b"hello!!");
    /// ```
    #[inline]
    pub fn push_with<E>(
        &mut self,
        copy: impl FnMut(&mut [T]) -> Result<usize, Fault<E>>,
    ) -> Result<usize, CopyError<E>> {
        let free = self.free(u32::MAX).map_err(CopyError::Ring)?;
        if free == 0 {
            return Ok(0);
        }
        let chunk = self.write_chunk(free as usize).map_err(CopyError::Ring)?;
        chunk.commit_with(copy).map_err(CopyError::Fault)
    }
}

impl<T> Drop for Producer<'_, T> {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: `_keep` is not used again: this is the half's `drop`.
        let keep = unsafe { ManuallyDrop::take(&mut self._keep) };
        close_producer(self.raw.producer(), keep);
    }
}

/// The producer's `drop`, out of line and given the half's fields by value,
/// so that a caller's loop keeps the half in registers (see the consumer's
/// `close_consumer`).
#[inline(never)]
fn close_producer<T>(line: &IndexLine, _keep: Keep<T>) {
    // Release: a consumer that sees the flag also sees every element
    // published before it.
    line.closed.store(1, Ordering::Release);
    // `_keep` (the heap storage's handle, if any) is dropped on return,
    // after the flag.
}

/// Why [`Producer::push`] did not happen, with the value it did not take.
///
/// Converts into the matching [`RingError`] (so `?` works in functions returning
/// `Result<_, RingError>`).
///
/// # Examples
///
/// ```
/// use uring_queue::{RingError, PushError, Ring};
///
/// let mut ring = Ring::<Box<u32>, 1>::new();
/// let (mut tx, _rx) = ring.split();
/// tx.push(Box::new(1)).unwrap();
/// let e = tx.push(Box::new(2)).unwrap_err();
/// assert!(matches!(e, PushError::Full(_)));
/// assert_eq!(RingError::from(e), RingError::Full);
/// ```
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum PushError<T> {
    /// No free slot: the consumer has not caught up (see [`RingError::Full`]).
    Full(T),
    /// The consumer's index broke the ring's invariants (see
    /// [`RingError::Corrupted`]).
    Corrupted(T),
}

impl<T> PushError<T> {
    /// The value that was not pushed.
    ///
    /// # Examples
    ///
    /// ```
    /// use uring_queue::PushError;
    /// assert_eq!(PushError::Full(vec![1u8]).into_inner(), vec![1]);
    /// ```
    pub fn into_inner(self) -> T {
        match self {
            Self::Full(v) | Self::Corrupted(v) => v,
        }
    }

    /// The cause, without the value.
    ///
    /// # Examples
    ///
    /// ```
    /// use uring_queue::{RingError, PushError};
    /// assert_eq!(PushError::Corrupted(1u8).error(), RingError::Corrupted);
    /// ```
    pub fn error(&self) -> RingError {
        match self {
            Self::Full(_) => RingError::Full,
            Self::Corrupted(_) => RingError::Corrupted,
        }
    }
}

impl<T> From<PushError<T>> for RingError {
    fn from(e: PushError<T>) -> Self {
        e.error()
    }
}

// By hand: the value need not be `Debug` (`unwrap` then works for any `T`).
impl<T> fmt::Debug for PushError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Full(_) => f.write_str("Full(..)"),
            Self::Corrupted(_) => f.write_str("Corrupted(..)"),
        }
    }
}

// Without the value, as `Debug`: `T` need not be `defmt::Format`.
#[cfg(feature = "defmt")]
impl<T> defmt::Format for PushError<T> {
    fn format(&self, f: defmt::Formatter<'_>) {
        match self {
            Self::Full(_) => defmt::write!(f, "Full(..)"),
            Self::Corrupted(_) => defmt::write!(f, "Corrupted(..)"),
        }
    }
}

impl<T> fmt::Display for PushError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.error(), f)
    }
}

impl<T> core::error::Error for PushError<T> {}
