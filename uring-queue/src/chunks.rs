//! The grants the halves lend out: free slots to write in place
//! ([`WriteChunk`]), published elements to read in place ([`ReadChunk`]), and
//! published elements to take by value ([`Batch`]). Each borrows its half
//! mutably and moves that half's index when it commits.

use crate::Consumer;
use crate::copy::{Fault, through_runs};
use crate::raw::RawRing;
use core::{fmt, slice};
use zerocopy::FromBytes;

/// Free slots lent by [`Producer::write_chunk`](crate::Producer::write_chunk), written in place.
///
/// Dropping it without [`commit`](Self::commit) publishes nothing.
///
/// # Examples
///
/// ```
/// let mut ring = uring_queue::Ring::<u8, 4>::new();
/// let (mut tx, mut rx) = ring.split();
/// // Dropped without a commit: nothing reaches the consumer.
/// drop(tx.write_chunk(2).unwrap());
/// assert!(rx.is_empty());
/// let mut chunk = tx.write_chunk(2).unwrap();
/// chunk.as_mut_slices().0.copy_from_slice(&[1, 2]);
/// chunk.commit_all();
/// assert_eq!(rx.pop(), Ok(1));
/// ```
#[must_use = "nothing is published until the chunk is committed"]
pub struct WriteChunk<'p, T> {
    raw: RawRing<T>,
    tail: &'p mut u32,
    len: u32,
}

impl<'p, T> WriteChunk<'p, T> {
    /// Lends `len` slots from `*tail`.
    ///
    /// The caller is the producer, `tail` its private tail, and the `len`
    /// slots from it are free.
    pub(crate) fn new(raw: RawRing<T>, tail: &'p mut u32, len: u32) -> Self {
        Self { raw, tail, len }
    }
}

impl<T> fmt::Debug for WriteChunk<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WriteChunk")
            .field("len", &self.len)
            .finish()
    }
}

impl<T: Copy + FromBytes> WriteChunk<'_, T> {
    /// The lent slots, in order: the part before the end of the storage and
    /// the part that wrapped to its start (often empty). They hold stale
    /// values, always valid ones.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut ring = uring_queue::Ring::<u8, 4>::new();
    /// let (mut tx, mut rx) = ring.split();
    /// tx.push_slice(&[0, 0, 0]).unwrap();
    /// rx.pop_slice(&mut [0; 3]).unwrap();
    /// // Three slots from the fourth: one before the end of the storage, two after.
    /// let mut chunk = tx.write_chunk(3).unwrap();
    /// let (a, b) = chunk.as_mut_slices();
    /// assert_eq!((a.len(), b.len()), (1, 2));
    /// a[0] = 1;
    /// b.copy_from_slice(&[2, 3]);
    /// chunk.commit_all();
    /// let mut out = [0; 3];
    /// assert_eq!(rx.pop_slice(&mut out), Ok(3));
    /// assert_eq!(out, [1, 2, 3]);
    /// ```
    #[inline]
    pub fn as_mut_slices(&mut self) -> (&mut [T], &mut [T]) {
        let (ptr, first, second) = self.raw.span(*self.tail, self.len);
        // SAFETY: the slots are free and lent to this chunk only (it borrows
        // the producer mutably); `span` keeps both runs in bounds; slots are
        // always initialised and `T: FromBytes` makes any content valid.
        unsafe {
            (
                slice::from_raw_parts_mut(ptr, first),
                slice::from_raw_parts_mut(self.raw.base(), second),
            )
        }
    }

    /// Number of lent slots.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut ring = uring_queue::Ring::<u8, 4>::new();
    /// let (mut tx, _rx) = ring.split();
    /// assert_eq!(tx.write_chunk(3).unwrap().len(), 3);
    /// ```
    #[inline]
    pub fn len(&self) -> usize {
        self.len as usize
    }

    /// Whether no slot was lent.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut ring = uring_queue::Ring::<u8, 4>::new();
    /// let (mut tx, _rx) = ring.split();
    /// assert!(tx.write_chunk(0).unwrap().is_empty());
    /// assert!(!tx.write_chunk(1).unwrap().is_empty());
    /// ```
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Publishes the first `n` slots (at most [`len`](Self::len); more is
    /// clamped) in one store.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut ring = uring_queue::Ring::<u8, 4>::new();
    /// let (mut tx, rx) = ring.split();
    /// tx.write_chunk(3).unwrap().commit(2);
    /// assert_eq!(rx.len(), 2);
    /// // Committing more than was lent publishes only what was lent.
    /// tx.write_chunk(1).unwrap().commit(10);
    /// assert_eq!(rx.len(), 3);
    /// ```
    #[inline]
    pub fn commit(self, n: usize) {
        let n = (n.min(self.len as usize)) as u32;
        self.raw.advance_tail(self.tail, n);
    }

    /// Copies into the lent slots with `copy`, a copy that may stop part-way,
    /// and publishes exactly what it copied, in one store; the contract of
    /// `copy` is [`Producer::push_with`](crate::Producer::push_with)'s. Returns how many elements were
    /// published.
    ///
    /// # Errors
    ///
    /// The [`Fault`] of a copy that stopped part-way, with `copied` counting
    /// every element published.
    ///
    /// # Examples
    ///
    /// ```
    /// use uring_queue::{Fault, Ring};
    ///
    /// let mut ring = Ring::<u8, 4>::new();
    /// let (mut tx, mut rx) = ring.split();
    /// let chunk = tx.write_chunk(4).unwrap();
    /// let r = chunk.commit_with(|dst| {
    ///     dst[0] = 7;
    ///     Err(Fault::new(1, "EFAULT"))
    /// });
    /// assert_eq!(r, Err(Fault::new(1, "EFAULT")));
    /// assert_eq!((rx.pop(), rx.pop().is_err()), (Ok(7), true));
    /// ```
    #[inline]
    pub fn commit_with<E>(
        mut self,
        copy: impl FnMut(&mut [T]) -> Result<usize, Fault<E>>,
    ) -> Result<usize, Fault<E>> {
        let (first, second) = self.as_mut_slices();
        let copied = through_runs(first, second, copy);
        self.commit(*copied.as_ref().unwrap_or_else(|f| &f.copied));
        copied
    }

    /// Publishes every lent slot.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut ring = uring_queue::Ring::<u8, 4>::new();
    /// let (mut tx, rx) = ring.split();
    /// tx.write_chunk(3).unwrap().commit_all();
    /// assert_eq!(rx.len(), 3);
    /// ```
    #[inline]
    pub fn commit_all(self) {
        let n = self.len as usize;
        self.commit(n);
    }
}

/// Published elements lent by [`Consumer::read_chunk`], read in place.
///
/// Dropping it without [`commit`](Self::commit) releases nothing.
///
/// # Examples
///
/// ```
/// let mut ring = uring_queue::Ring::<u8, 4>::new();
/// let (mut tx, mut rx) = ring.split();
/// tx.push_slice(&[1, 2, 3]).unwrap();
/// // Dropped without a commit: the elements stay in the ring.
/// drop(rx.read_chunk(3).unwrap());
/// assert_eq!(rx.len(), 3);
/// let chunk = rx.read_chunk(3).unwrap();
/// assert_eq!(chunk.as_slices().0, [1, 2, 3]);
/// chunk.commit_all();
/// assert!(rx.is_empty());
/// ```
#[must_use = "nothing is released until the chunk is committed"]
pub struct ReadChunk<'c, T> {
    raw: RawRing<T>,
    head: &'c mut u32,
    len: u32,
}

impl<'c, T> ReadChunk<'c, T> {
    /// Lends `len` elements from `*head`.
    ///
    /// The caller is the consumer, `head` its private head, and the `len`
    /// elements from it are published.
    pub(crate) fn new(raw: RawRing<T>, head: &'c mut u32, len: u32) -> Self {
        Self { raw, head, len }
    }
}

impl<T> fmt::Debug for ReadChunk<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReadChunk").field("len", &self.len).finish()
    }
}

impl<T: Copy> ReadChunk<'_, T> {
    /// The lent elements in order: before the end of the storage, and wrapped
    /// to its start (often empty).
    ///
    /// # Examples
    ///
    /// ```
    /// let mut ring = uring_queue::Ring::<u8, 4>::new();
    /// let (mut tx, mut rx) = ring.split();
    /// tx.push_slice(&[0, 0, 0]).unwrap();
    /// rx.pop_slice(&mut [0; 3]).unwrap();
    /// // The next three elements wrap around the end of the storage.
    /// tx.push_slice(&[1, 2, 3]).unwrap();
    /// let chunk = rx.read_chunk(3).unwrap();
    /// assert_eq!(chunk.as_slices(), (&[1][..], &[2, 3][..]));
    /// ```
    #[inline]
    pub fn as_slices(&self) -> (&[T], &[T]) {
        let (ptr, first, second) = self.raw.span(*self.head, self.len);
        // SAFETY: the elements are published and lent to this chunk, which
        // borrows the consumer mutably, so the producer does not write them
        // until the head moves; `span` keeps both runs in bounds.
        unsafe {
            (
                slice::from_raw_parts(ptr, first),
                slice::from_raw_parts(self.raw.base(), second),
            )
        }
    }

    /// Number of lent elements.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut ring = uring_queue::Ring::<u8, 4>::new();
    /// let (mut tx, mut rx) = ring.split();
    /// tx.push_slice(&[1, 2, 3]).unwrap();
    /// assert_eq!(rx.read_chunk(2).unwrap().len(), 2);
    /// ```
    #[inline]
    pub fn len(&self) -> usize {
        self.len as usize
    }

    /// Whether nothing was lent.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut ring = uring_queue::Ring::<u8, 4>::new();
    /// let (mut tx, mut rx) = ring.split();
    /// tx.push(1).unwrap();
    /// assert!(rx.read_chunk(0).unwrap().is_empty());
    /// assert!(!rx.read_chunk(1).unwrap().is_empty());
    /// ```
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Releases the first `n` elements (at most [`len`](Self::len); more is
    /// clamped) to the producer in one store.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut ring = uring_queue::Ring::<u8, 4>::new();
    /// let (mut tx, mut rx) = ring.split();
    /// tx.push_slice(&[1, 2, 3]).unwrap();
    /// rx.read_chunk(2).unwrap().commit(1);
    /// assert_eq!(rx.pop(), Ok(2));
    /// // Committing more than was lent releases only what was lent.
    /// rx.read_chunk(1).unwrap().commit(10);
    /// assert!(rx.is_empty());
    /// ```
    #[inline]
    pub fn commit(self, n: usize) {
        let n = (n.min(self.len as usize)) as u32;
        self.raw.advance_head(self.head, n);
    }

    /// Copies the lent elements out with `copy`, a copy that may stop
    /// part-way, and releases exactly what it copied, in one store; the
    /// contract of `copy` is [`Consumer::pop_with`]'s. Returns how many
    /// elements were released.
    ///
    /// # Errors
    ///
    /// The [`Fault`] of a copy that stopped part-way, with `copied` counting
    /// every element released.
    ///
    /// # Examples
    ///
    /// ```
    /// use uring_queue::{Fault, Ring};
    ///
    /// let mut ring = Ring::<u8, 4>::new();
    /// let (mut tx, mut rx) = ring.split();
    /// tx.push_slice(&[1, 2, 3]).unwrap();
    /// let r = rx.read_chunk(3).unwrap().commit_with(|_src| Err(Fault::new(2, "EFAULT")));
    /// assert_eq!(r, Err(Fault::new(2, "EFAULT")));
    /// assert_eq!(rx.pop(), Ok(3));
    /// ```
    #[inline]
    pub fn commit_with<E>(
        self,
        copy: impl FnMut(&[T]) -> Result<usize, Fault<E>>,
    ) -> Result<usize, Fault<E>> {
        let (first, second) = self.as_slices();
        let copied = through_runs(first, second, copy);
        self.commit(*copied.as_ref().unwrap_or_else(|f| &f.copied));
        copied
    }

    /// Releases every lent element.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut ring = uring_queue::Ring::<u8, 4>::new();
    /// let (mut tx, mut rx) = ring.split();
    /// tx.push_slice(&[1, 2, 3]).unwrap();
    /// rx.read_chunk(2).unwrap().commit_all();
    /// assert_eq!(rx.pop(), Ok(3));
    /// ```
    #[inline]
    pub fn commit_all(self) {
        let n = self.len as usize;
        self.commit(n);
    }
}

/// Elements lent by [`Consumer::batch`], yielded by value; the head is
/// published once, when the batch is dropped.
///
/// # Examples
///
/// ```
/// let mut ring = uring_queue::Ring::<u32, 8>::new();
/// let (mut tx, mut rx) = ring.split();
/// tx.push_slice(&[1, 2, 3]).unwrap();
/// let sum: u32 = rx.batch().unwrap().sum();
/// assert_eq!(sum, 6);
/// assert!(tx.is_empty());
/// ```
#[must_use = "a batch yields nothing unless iterated"]
pub struct Batch<'c, 'a, T, const K: usize = 1> {
    consumer: &'c mut Consumer<'a, T, K>,
    /// One past the last element readable when the batch was made.
    end: u32,
}

impl<'c, 'a, T, const K: usize> Batch<'c, 'a, T, K> {
    /// Lends `consumer` out up to `end`, one past the last element published
    /// when the batch is made.
    pub(crate) fn new(consumer: &'c mut Consumer<'a, T, K>, end: u32) -> Self {
        Self { consumer, end }
    }
}

impl<T, const K: usize> fmt::Debug for Batch<'_, '_, T, K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Batch").field("len", &self.len()).finish()
    }
}

impl<T, const K: usize> Batch<'_, '_, T, K> {
    /// Publishes the head now (the batch goes on).
    ///
    /// # Examples
    ///
    /// ```
    /// let mut ring = uring_queue::Ring::<u8, 4>::new();
    /// let (mut tx, mut rx) = ring.split();
    /// tx.push_slice(&[1, 2, 3]).unwrap();
    /// let mut batch = rx.batch().unwrap();
    /// batch.next();
    /// assert_eq!(tx.len(), 3);
    /// batch.release();
    /// assert_eq!(tx.len(), 2);
    /// ```
    #[inline]
    pub fn release(&mut self) {
        self.consumer.release();
    }
}

impl<T, const K: usize> Iterator for Batch<'_, '_, T, K> {
    type Item = T;

    #[inline]
    fn next(&mut self) -> Option<T> {
        let end = self.end;
        let (raw, head) = self.consumer.parts();
        if *head == end {
            return None;
        }
        // SAFETY: `head` lies in `[head, end)`, published when the batch was
        // made; the batch borrows the consumer mutably, so it alone reads the
        // slot, and the head moves past it at once, so the moved-out value is
        // never read again.
        let value = unsafe { raw.read(*head) };
        *head = head.wrapping_add(1);
        Some(value)
    }

    #[inline]
    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.end.wrapping_sub(self.consumer.head()) as usize;
        (n, Some(n))
    }
}

impl<T, const K: usize> ExactSizeIterator for Batch<'_, '_, T, K> {}

impl<T, const K: usize> Drop for Batch<'_, '_, T, K> {
    fn drop(&mut self) {
        self.consumer.release();
    }
}
