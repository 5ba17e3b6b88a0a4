//! Storage on the heap, shared by the two halves through an `Arc`.

use crate::loom::{AccessTracker, Arc, UnsafeCell};
use crate::raw::{CachePadded, Geometry, IndexLine, MAX_CAPACITY, RawRing};
use crate::{CapacityError, Consumer, Producer};
use alloc::boxed::Box;
use alloc::vec::Vec;
use core::fmt;
use core::marker::PhantomData;
use core::ptr::NonNull;
use zerocopy::{FromBytes, IntoBytes};

/// Heap storage of one ring, freed when both halves are gone.
#[repr(C)]
pub(crate) struct Storage<T> {
    producer: CachePadded<IndexLine>,
    consumer: CachePadded<IndexLine>,
    /// Read by the halves on every operation, never written after `new`:
    /// after the two padded lines, so on a line neither half writes.
    geometry: Geometry<T>,
    /// From `Box::into_raw`, freed in `Drop`. Raw so that the halves' pointers
    /// into it are never invalidated by a move of an owning `Box`.
    slots: NonNull<[UnsafeCell<T>]>,
    trackers: NonNull<[AccessTracker]>,
}

// SAFETY: the slots are plain data reached only through the SPSC protocol;
// sharing the storage between the two halves' threads is what it is for.
unsafe impl<T: Send> Send for Storage<T> {}
// SAFETY: as above: concurrent access goes through atomics and disjoint slots.
unsafe impl<T: Send> Sync for Storage<T> {}

impl<T> Drop for Storage<T> {
    fn drop(&mut self) {
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

impl<T: Copy + FromBytes + IntoBytes + Send> HeapRing<T> {
    /// Allocates a ring of `capacity` zeroed slots and returns its halves.
    ///
    /// # Errors
    ///
    /// [`CapacityError`] unless `capacity` is a power of two no larger than
    /// [`MAX_CAPACITY`].
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
        if !capacity.is_power_of_two() {
            return Err(CapacityError::NotPowerOfTwo { capacity });
        }
        if capacity > MAX_CAPACITY {
            return Err(CapacityError::TooLarge { capacity });
        }
        let slots: Box<[UnsafeCell<T>]> = (0..capacity)
            .map(|_| UnsafeCell::new(T::new_zeroed()))
            .collect::<Vec<_>>()
            .into_boxed_slice();
        #[cfg(loom)]
        let trackers: Box<[AccessTracker]> = (0..capacity).map(|_| AccessTracker::new()).collect();
        #[cfg(not(loom))]
        let trackers: Box<[AccessTracker]> = Box::new([]);
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
                capacity as u32,
            ),
            slots,
            trackers,
        });
        // SAFETY: the lines and the geometry live in the `Arc`'s allocation
        // and the slots in their own, all kept alive by the `Arc` clones the
        // halves hold, and the geometry is never written again; the slots are
        // `capacity` contiguous zeroed (valid) `T`s; the trackers are
        // `capacity` long under loom and zero-sized otherwise; the indices
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
