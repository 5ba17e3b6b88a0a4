//! Storage on the heap, shared by the two halves through an `Arc`.

use crate::loom::cell::{AccessTracker, UntrackedCell};
use crate::loom::sync::Arc;
use crate::loom::sync::atomic::Ordering;
use crate::raw::{CachePadded, Geometry, IndexLine, RawRing, check_capacity};
use crate::{CapacityError, Consumer, Producer};
use alloc::boxed::Box;
use alloc::vec::Vec;
use core::fmt;
use core::marker::PhantomData;
use core::mem::MaybeUninit;
use core::ptr::NonNull;

/// Heap storage of one ring, freed when both halves are gone.
#[repr(C)]
pub(crate) struct Storage<T> {
    producer: CachePadded<IndexLine>,
    consumer: CachePadded<IndexLine>,
    /// Read by the halves on every operation, never written after `new`:
    /// after the two padded lines, so on a line neither half writes.
    geometry: Geometry<T>,
    /// From `Box::into_raw`, freed in `Drop`. Raw so that the halves' pointers
    /// into it are never invalidated by a move of an owning `Box`. Zeroed
    /// bytes at first; a slot holds a live `T` exactly when it lies in
    /// `[head, tail)`.
    slots: NonNull<[UntrackedCell<MaybeUninit<T>>]>,
    trackers: NonNull<[AccessTracker]>,
}

// SAFETY: the slots are reached only through the SPSC protocol, which moves
// each element from the producer's thread to the consumer's (hence
// `T: Send`); sharing the storage between the halves is what it is for.
unsafe impl<T: Send> Send for Storage<T> {}
// SAFETY: as above: concurrent access goes through atomics and disjoint slots.
unsafe impl<T: Send> Sync for Storage<T> {}

impl<T> Drop for Storage<T> {
    fn drop(&mut self) {
        // The last half is gone (each holds an `Arc` of this), and a consumer
        // publishes its final head before it closes; the check guards the
        // unreachable case of a consumer that never closed.
        if core::mem::needs_drop::<T>() && self.consumer.0.closed.load(Ordering::Acquire) != 0 {
            let tail = self.producer.0.index.load(Ordering::Acquire);
            let head = self.consumer.0.index.load(Ordering::Acquire);
            let live = tail.wrapping_sub(head);
            let capacity = self.slots.len();
            if live as usize <= capacity {
                for k in 0..live {
                    let i = (head.wrapping_add(k) as usize) & (capacity - 1);
                    // SAFETY: no half is left, so nothing else touches the
                    // slots; `i < capacity`; slots in `[head, tail)` hold live
                    // elements that nothing else drops, each dropped once here.
                    let slot = unsafe { &(*self.slots.as_ptr())[i] };
                    // SAFETY: as above.
                    slot.with_mut(|v| unsafe { (*v).assume_init_drop() });
                }
            }
        }
        // SAFETY: both came from `Box::into_raw` in `HeapRing::new` and are
        // freed only here, once no half (and so no pointer use) is left.
        unsafe {
            drop(Box::from_raw(self.slots.as_ptr()));
            drop(Box::from_raw(self.trackers.as_ptr()));
        }
    }
}

/// A ring on the heap: [`HeapRing::new`] returns its two halves, which own it
/// together (`'static`, so they can move to spawned threads).
///
/// Any `T: Send` goes through: elements are moved in and out, and those still
/// in the ring when the last half is dropped are dropped with it, once each.
///
/// # Examples
///
/// ```
/// use uring_queue::HeapRing;
///
/// let (mut tx, mut rx) = HeapRing::<u64>::new(1024).unwrap();
/// let t = std::thread::spawn(move || {
///     for i in 0..10_000u64 {
///         while tx.push(i).is_err() {}
///     }
/// });
/// let mut sum = 0;
/// let mut n = 0;
/// while n < 10_000 {
///     if let Ok(v) = rx.pop() {
///         sum += v;
///         n += 1;
///     }
/// }
/// t.join().unwrap();
/// assert_eq!(sum, 10_000 * 9_999 / 2);
/// ```
pub struct HeapRing<T>(PhantomData<T>);

impl<T> fmt::Debug for HeapRing<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("HeapRing")
    }
}

impl<T: Send> HeapRing<T> {
    /// Allocates a ring of `capacity` slots and returns its halves.
    ///
    /// # Errors
    ///
    /// [`CapacityError`] unless `capacity` is a power of two no larger than
    /// [`MAX_CAPACITY`](crate::MAX_CAPACITY).
    ///
    /// # Examples
    ///
    /// ```
    /// use uring_queue::{CapacityError, HeapRing};
    ///
    /// let (mut tx, mut rx) = HeapRing::<u32>::new(8).unwrap();
    /// assert_eq!(tx.capacity(), 8);
    /// tx.push(1).unwrap();
    /// assert_eq!(rx.pop(), Ok(1));
    /// assert_eq!(
    ///     HeapRing::<u32>::new(6).unwrap_err(),
    ///     CapacityError::NotPowerOfTwo { capacity: 6 }
    /// );
    /// ```
    #[allow(clippy::new_ret_no_self)]
    pub fn new(
        capacity: usize,
    ) -> Result<(Producer<'static, T>, Consumer<'static, T>), CapacityError> {
        Self::new_deferred::<1>(capacity)
    }

    /// As [`new`](Self::new), with a deferred-release consumer that publishes
    /// its head every `K` pops (see [`Consumer`], "Release modes").
    ///
    /// # Errors
    ///
    /// As for [`new`](Self::new).
    ///
    /// # Examples
    ///
    /// ```
    /// let (mut tx, mut rx) = uring_queue::HeapRing::<u64>::new_deferred::<32>(1024).unwrap();
    /// let t = std::thread::spawn(move || {
    ///     for i in 0..1_000u64 {
    ///         while tx.push(i).is_err() {}
    ///     }
    /// });
    /// let mut next = 0;
    /// while next < 1_000 {
    ///     if let Ok(v) = rx.pop() {
    ///         assert_eq!(v, next);
    ///         next += 1;
    ///     }
    /// }
    /// t.join().unwrap();
    /// ```
    pub fn new_deferred<const K: usize>(
        capacity: usize,
    ) -> Result<(Producer<'static, T>, Consumer<'static, T, K>), CapacityError> {
        let capacity_index = check_capacity(capacity)?;
        let slots: Box<[UntrackedCell<MaybeUninit<T>>]> = (0..capacity)
            .map(|_| UntrackedCell::new(MaybeUninit::zeroed()))
            .collect::<Vec<_>>()
            .into_boxed_slice();
        // Zero-sized without loom: no allocation.
        let trackers: Box<[AccessTracker]> = (0..capacity).map(|_| AccessTracker::new()).collect();
        // SAFETY: `Box::into_raw` never returns null.
        let slots = unsafe { NonNull::new_unchecked(Box::into_raw(slots)) };
        // SAFETY: as above.
        let trackers = unsafe { NonNull::new_unchecked(Box::into_raw(trackers)) };
        let storage = Arc::new(Storage {
            producer: CachePadded(IndexLine::new()),
            consumer: CachePadded(IndexLine::new()),
            geometry: Geometry::new(
                slots.cast::<T>(),
                trackers.cast::<AccessTracker>(),
                capacity_index,
            ),
            slots,
            trackers,
        });
        // SAFETY: the lines and the geometry live in the `Arc`'s allocation
        // and the slots in their own, all kept alive by the `Arc` clones the
        // halves hold, and the geometry is never written again; the slots are
        // `capacity` contiguous `T` slots, none live yet; the trackers are
        // `capacity` long (zero-sized without loom); the indices
        // start equal; and this is the only producer and consumer.
        unsafe {
            let raw = RawRing::with_stored_geometry(
                NonNull::from(&storage.producer.0),
                NonNull::from(&storage.consumer.0),
                NonNull::from(&storage.geometry),
            );
            Ok((
                Producer::new(raw, 0, 0, Some(storage.clone())),
                Consumer::new(raw, 0, 0, Some(storage)),
            ))
        }
    }
}
