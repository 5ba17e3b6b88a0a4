//! Storage inside the value itself: no allocation, usable from a `static`.

use crate::loom::cell::{AccessTracker, UntrackedCell};
use crate::loom::sync::atomic::Ordering;
use crate::raw::{CachePadded, Geometry, IndexLine, MAX_CAPACITY, RawRing};
use crate::{Consumer, Producer};
use core::fmt;
use core::mem::MaybeUninit;
use core::ptr::{NonNull, addr_of_mut};

/// A ring of `N` elements stored inline. `N` must be a power of two no larger
/// than [`MAX_CAPACITY`]; anything else fails to compile.
///
/// [`split`](Self::split) lends out the two halves; once both are dropped it
/// can be split again and unread elements are still there. Any `T: Send`
/// goes through: elements are moved in and out, and those still in the ring
/// when it is dropped are dropped with it, once each.
///
/// # Examples
///
/// From a `static`, with no allocation:
///
/// ```
/// use uring_queue::Ring;
///
/// static mut RING: Ring<u32, 16> = Ring::new();
///
/// // SAFETY: this is the only place that touches `RING`.
/// let ring = unsafe { &mut *core::ptr::addr_of_mut!(RING) };
/// let (mut tx, mut rx) = ring.split();
/// tx.push(42).unwrap();
/// assert_eq!(rx.pop(), Ok(42));
/// ```
///
/// A capacity that is not a power of two does not compile:
///
/// ```compile_fail
/// let ring = uring_queue::Ring::<u8, 3>::new();
/// ```
///
/// Nor can the ring be touched while its halves are out:
///
/// ```compile_fail
/// let mut ring = uring_queue::Ring::<u8, 4>::new();
/// let (tx, rx) = ring.split();
/// let again = ring.split();
/// drop((tx, rx));
/// ```
#[repr(C)]
pub struct Ring<T, const N: usize> {
    /// Set by `split`, read by the halves on every operation, written by no
    /// one while they exist: a line of its own.
    geometry: CachePadded<Geometry<T>>,
    producer: CachePadded<IndexLine>,
    consumer: CachePadded<IndexLine>,
    /// Initialised (zeroed) bytes from the start; a slot holds a live `T`
    /// exactly when it lies in `[head, tail)`.
    slots: [UntrackedCell<MaybeUninit<T>>; N],
    trackers: [AccessTracker; N],
}

// SAFETY: the slots are only touched through the halves, which borrow the
// ring; sending the ring sends its elements, hence `T: Send`.
unsafe impl<T: Send, const N: usize> Send for Ring<T, N> {}

impl<T, const N: usize> fmt::Debug for Ring<T, N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Ring")
            .field("capacity", &N)
            .finish_non_exhaustive()
    }
}

impl<T, const N: usize> Ring<T, N> {
    const CAPACITY: u32 = {
        assert!(
            N.is_power_of_two() && N <= MAX_CAPACITY,
            "ring capacity must be a power of two no larger than MAX_CAPACITY"
        );
        N as u32
    };

    crate::loom::const_fn! {
        /// An empty ring. Slot bytes start zeroed, so for plain-old-data `T` a
        /// write chunk lends zeros until the slots are written.
        ///
        /// # Examples
        ///
        /// ```
        /// let mut ring = uring_queue::Ring::<u32, 8>::new();
        /// let (mut tx, rx) = ring.split();
        /// assert!(rx.is_empty());
        /// // Every slot holds zero until written.
        /// let mut chunk = tx.write_chunk(8).unwrap();
        /// assert_eq!(chunk.as_mut_slices().0, [0; 8]);
        /// ```
        pub fn new() -> Self {
            Self {
                geometry: CachePadded(Geometry::new(
                    NonNull::dangling(),
                    NonNull::dangling(),
                    Self::CAPACITY,
                )),
                producer: CachePadded(IndexLine::new()),
                consumer: CachePadded(IndexLine::new()),
                // SAFETY: an array of `UntrackedCell<MaybeUninit<T>>` needs no
                // initialisation at all; zeroing it makes every byte initialised,
                // which write chunks of `FromBytes` elements rely on.
                slots: unsafe { MaybeUninit::zeroed().assume_init() },
                trackers: AccessTracker::array(),
            }
        }
    }

    /// Number of slots.
    ///
    /// # Examples
    ///
    /// ```
    /// let ring = uring_queue::Ring::<u64, 32>::new();
    /// assert_eq!(ring.capacity(), 32);
    /// ```
    pub const fn capacity(&self) -> usize {
        N
    }

    /// Lends out the producer and the consumer. They borrow the ring, so it
    /// cannot be split twice at once.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut ring = uring_queue::Ring::<u32, 4>::new();
    /// let (mut tx, rx) = ring.split();
    /// tx.push(1).unwrap();
    /// drop((tx, rx));
    /// // Split again: the unread element is still there.
    /// let (_tx, mut rx) = ring.split();
    /// assert_eq!(rx.pop(), Ok(1));
    /// ```
    pub fn split(&mut self) -> (Producer<'_, T>, Consumer<'_, T>) {
        self.split_deferred::<1>()
    }

    /// Lends out the producer and a deferred-release consumer, which publishes
    /// its head every `K` pops (see [`Consumer`], "Release modes"). `K = 1` is
    /// [`split`](Self::split).
    ///
    /// # Examples
    ///
    /// ```
    /// let mut ring = uring_queue::Ring::<u32, 8>::new();
    /// let (mut tx, mut rx) = ring.split_deferred::<4>();
    /// tx.push_slice(&[0; 8]).unwrap();
    /// for _ in 0..3 {
    ///     rx.pop().unwrap();
    /// }
    /// // Three popped, none published yet: the producer still sees no room.
    /// assert!(tx.push(9).is_err());
    /// rx.pop().unwrap();
    /// // The fourth pop published all four.
    /// assert_eq!(tx.slots(), 4);
    /// ```
    ///
    /// `K = 0` does not compile:
    ///
    /// ```compile_fail
    /// let mut ring = uring_queue::Ring::<u32, 8>::new();
    /// let _ = ring.split_deferred::<0>();
    /// ```
    pub fn split_deferred<const K: usize>(&mut self) -> (Producer<'_, T>, Consumer<'_, T, K>) {
        let cap = Self::CAPACITY;
        // Halves dropped earlier marked themselves closed; these are new ones.
        self.producer.0.closed.store(0, Ordering::Relaxed);
        self.consumer.0.closed.store(0, Ordering::Relaxed);
        let tail = self.producer.0.index.load(Ordering::Relaxed);
        let head = self.consumer.0.index.load(Ordering::Relaxed);
        let this: *mut Self = self;
        // SAFETY: `this` comes from `&mut self`, so the field pointers are
        // valid and non-null, and stay so for the borrow the halves carry; no
        // half exists yet, so writing the geometry races with nothing, and
        // none is written again while the halves (which borrow the ring)
        // exist. The slots array holds `N` contiguous `T` slots (`UntrackedCell`
        // and `MaybeUninit` are `repr(transparent)`), live exactly in
        // `[head, tail)`, and `trackers` holds `N` trackers. Indices were
        // last written by halves of this ring, and the head published (a
        // consumer publishes before it closes), so `tail - head <= N`.
        unsafe {
            (*this).geometry.0 = Geometry::new(
                NonNull::new_unchecked(addr_of_mut!((*this).slots).cast::<T>()),
                NonNull::new_unchecked(addr_of_mut!((*this).trackers).cast::<AccessTracker>()),
                cap,
            );
            let raw = RawRing::with_stored_geometry(
                NonNull::new_unchecked(addr_of_mut!((*this).producer.0)),
                NonNull::new_unchecked(addr_of_mut!((*this).consumer.0)),
                NonNull::new_unchecked(addr_of_mut!((*this).geometry.0)),
            );
            (
                Producer::new(raw, tail, head, None),
                Consumer::new(raw, head, tail, None),
            )
        }
    }
}

impl<T, const N: usize> Default for Ring<T, N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T, const N: usize> Drop for Ring<T, N> {
    fn drop(&mut self) {
        if !core::mem::needs_drop::<T>() {
            return;
        }
        // A consumer that was leaked rather than dropped may have moved
        // elements out without publishing its head: then which slots are live
        // is unknown, and leaking them is the only safe choice. A consumer
        // that was dropped published its final head before its flag.
        if self.consumer.0.closed.load(Ordering::Acquire) == 0 {
            return;
        }
        let tail = self.producer.0.index.load(Ordering::Acquire);
        let head = self.consumer.0.index.load(Ordering::Acquire);
        let live = tail.wrapping_sub(head);
        if live as usize > N {
            return;
        }
        for k in 0..live {
            let i = (head.wrapping_add(k) as usize) & (N - 1);
            // SAFETY: `&mut self`: no half exists (they borrow the ring), and
            // slots in `[head, tail)` hold live elements that nothing else
            // will drop; each is dropped once, here.
            self.slots[i].with_mut(|slot| unsafe { (*slot).assume_init_drop() });
        }
    }
}

// Plain unit tests: loom's atomics work only inside a model.
#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::RingError;

    #[test]
    fn resplit_keeps_unread_elements_and_reopens() {
        let mut ring = Ring::<u16, 4>::new();
        {
            let (mut tx, rx) = ring.split();
            tx.push_slice(&[1, 2, 3]).unwrap();
            drop(rx);
            assert!(tx.is_abandoned());
        }
        let (tx, mut rx) = ring.split();
        assert!(!tx.is_abandoned());
        assert!(!rx.is_abandoned());
        assert_eq!(rx.pop(), Ok(1));
        assert_eq!(rx.len(), 2);
    }

    #[test]
    fn indices_wrap_past_u32_max() {
        let mut ring = Ring::<u32, 4>::new();
        ring.producer.0.index.store(u32::MAX - 2, Ordering::Relaxed);
        ring.consumer.0.index.store(u32::MAX - 2, Ordering::Relaxed);
        let (mut tx, mut rx) = ring.split();
        for round in 0..5u32 {
            assert_eq!(tx.push_slice(&[round, round + 1, round + 2]), Ok(3));
            let mut out = [0; 4];
            assert_eq!(rx.pop_slice(&mut out), Ok(3));
            assert_eq!(out[..3], [round, round + 1, round + 2]);
        }
        assert_eq!(rx.pop(), Err(RingError::Empty));
    }

    #[test]
    fn chunks_split_at_the_wrap() {
        let mut ring = Ring::<u8, 4>::new();
        let (mut tx, mut rx) = ring.split();
        tx.push_slice(&[0, 0, 0]).unwrap();
        rx.read_chunk(3).unwrap().commit_all();
        let mut w = tx.write_chunk(3).unwrap();
        let (a, b) = w.as_mut_slices();
        assert_eq!((a.len(), b.len()), (1, 2));
        a[0] = 7;
        b.copy_from_slice(&[8, 9]);
        w.commit_all();
        let r = rx.read_chunk(3).unwrap();
        assert_eq!(r.as_slices(), (&[7][..], &[8, 9][..]));
        r.commit(1);
        assert_eq!(rx.pop_slice(&mut [0; 4]), Ok(2));
    }

    #[test]
    fn chunk_requests_beyond_capacity_or_availability_fail() {
        let mut ring = Ring::<u8, 4>::new();
        let (mut tx, mut rx) = ring.split();
        assert_eq!(
            tx.write_chunk(5).unwrap_err(),
            RingError::TooLarge { max: 4 }
        );
        tx.push(1).unwrap();
        assert_eq!(
            tx.write_chunk(4).unwrap_err(),
            RingError::Insufficient { available: 3 }
        );
        assert_eq!(
            rx.read_chunk(5).unwrap_err(),
            RingError::TooLarge { max: 4 }
        );
        assert_eq!(
            rx.read_chunk(2).unwrap_err(),
            RingError::Insufficient { available: 1 }
        );
        // An uncommitted chunk publishes nothing.
        drop(tx.write_chunk(2).unwrap());
        assert_eq!(rx.len(), 1);
    }

    #[test]
    fn commit_clamps_to_the_grant() {
        let mut ring = Ring::<u8, 4>::new();
        let (mut tx, rx) = ring.split();
        tx.write_chunk(2).unwrap().commit(10);
        assert_eq!(rx.len(), 2);
        assert_eq!(tx.slots(), 2);
        assert!(!tx.is_full());
    }
}
