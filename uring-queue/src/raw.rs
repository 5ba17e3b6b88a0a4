//! The ring's shared state seen through raw pointers, whatever owns it.
//!
//! Every storage kind (inline, heap, shared region) produces a [`RawRing`]: two
//! index lines and a run of `capacity` contiguous element slots. The halves
//! only ever touch the ring through it, so the protocol is written once.

use crate::CapacityError;
use crate::loom::cell::AccessTracker;
use crate::loom::sync::atomic::{AtomicU32, Ordering};
use core::ptr::NonNull;

/// Largest capacity a ring may have: indices are free-running `u32`s, so the
/// distance between them must stay unambiguous.
///
/// # Examples
///
/// ```
/// use uring_queue::{CapacityError, MAX_CAPACITY, RegionError, SharedRing};
///
/// assert_eq!(MAX_CAPACITY, 1 << 31);
/// assert_eq!(
///     SharedRing::<u8>::required_size(2 * MAX_CAPACITY),
///     Err(RegionError::Capacity(CapacityError::TooLarge {
///         capacity: 2 * MAX_CAPACITY,
///         max: MAX_CAPACITY,
///     }))
/// );
/// ```
pub const MAX_CAPACITY: usize = 1 << 31;

/// A ring capacity as the index type.
///
/// # Errors
///
/// [`CapacityError::NotPowerOfTwo`] (zero included), then
/// [`CapacityError::TooLarge`] above [`MAX_CAPACITY`].
pub(crate) fn check_capacity(capacity: usize) -> Result<u32, CapacityError> {
    if !capacity.is_power_of_two() {
        return Err(CapacityError::NotPowerOfTwo { capacity });
    }
    if capacity > MAX_CAPACITY {
        return Err(CapacityError::TooLarge {
            capacity,
            max: MAX_CAPACITY,
        });
    }
    // At most `MAX_CAPACITY`, which fits.
    Ok(capacity as u32)
}

/// Pads and aligns a value to the length of a cache line (128 bytes on x86_64
/// and aarch64, whose prefetchers pull lines in pairs), so producer-owned and
/// consumer-owned state never share one.
#[cfg_attr(
    any(target_arch = "x86_64", target_arch = "aarch64"),
    repr(C, align(128))
)]
#[cfg_attr(
    not(any(target_arch = "x86_64", target_arch = "aarch64")),
    repr(C, align(64))
)]
#[derive(Debug)]
pub(crate) struct CachePadded<T>(pub(crate) T);

/// One half's published state: its free-running index and whether it is gone.
///
/// `#[repr(C)]` because the same layout is used inside shared regions.
#[repr(C)]
#[derive(Debug)]
pub(crate) struct IndexLine {
    /// Tail (producer line) or head (consumer line).
    pub(crate) index: AtomicU32,
    /// Non-zero once the owning half was dropped.
    pub(crate) closed: AtomicU32,
}

impl IndexLine {
    crate::loom::const_fn! {
        pub(crate) fn new() -> Self {
            Self {
                index: AtomicU32::new(0),
                closed: AtomicU32::new(0),
            }
        }
    }
}

/// Where a ring's slots are: the first slot, the loom trackers and the mask.
///
/// Written once, before any half exists, and only read afterwards. The inline
/// and heap rings keep it in their storage, on a line of its own that no one
/// writes, and the halves reach it through a pointer (see [`RawRing`]).
#[derive(Debug)]
pub(crate) struct Geometry<T> {
    data: NonNull<T>,
    /// Read only by loom's slot tracking.
    trackers: NonNull<AccessTracker>,
    /// `capacity - 1`, kept instead of the capacity so the slot index is one
    /// `and` on the hot path.
    mask: u32,
}

impl<T> Clone for Geometry<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for Geometry<T> {}

impl<T> Geometry<T> {
    /// A geometry of `capacity` slots from `data`, with `trackers` (dangling
    /// outside loom). Valid only as far as the pointers are; see [`RawRing`].
    pub(crate) const fn new(
        data: NonNull<T>,
        trackers: NonNull<AccessTracker>,
        capacity: u32,
    ) -> Self {
        Self {
            data,
            trackers,
            mask: capacity.wrapping_sub(1),
        }
    }
}

/// Where a half finds the geometry.
#[derive(Debug)]
enum Locus<T> {
    /// In the ring's storage, which outlives the halves (inline and heap
    /// rings).
    Stored(NonNull<Geometry<T>>),
    /// Carried in the half itself (shared regions: the only memory that
    /// outlives the halves there is the region, which the peer can write, so
    /// the validated geometry cannot live in it). Not built under loom,
    /// which models the in-process rings only.
    #[cfg_attr(loom, allow(dead_code))]
    Carried(Geometry<T>),
}

impl<T> Clone for Locus<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for Locus<T> {}

/// Pointers to one ring's index lines, and its geometry.
///
/// Invariant (established by the constructors' callers and kept by whoever
/// owns the storage for as long as a half holds a copy): both lines are valid
/// `IndexLine`s, a stored geometry is valid and never written while a half
/// exists, the geometry's `data` points to `capacity` initialised, contiguous
/// `T`s that only the halves access, `trackers` to `capacity` trackers
/// (dangling is fine when `AccessTracker` is zero-sized), and `capacity` is a
/// power of two no larger than [`MAX_CAPACITY`].
///
/// The default consumer's `pop` reaches a stored geometry through a pointer;
/// the producer's `push`, and a deferred-release consumer's `pop`, use their
/// own copies of the slot pointer and mask (see `Producer` and
/// `Consumer::pop`).
/// The asymmetry is deliberate: an element-wise SPSC ring runs fastest when
/// the consumer trails the producer by many slots, so that each cache line of
/// slots crosses between the cores once. A consumer whose `pop` is cheaper
/// than the producer's `push` catches up, reads lines the producer is still
/// writing, and both halves slow down several times over (docs/uring-queue.md,
/// "Element-wise speed"). Copying the geometry into both halves measured 8
/// times slower element-wise than copying it into the producer only.
#[derive(Debug)]
pub(crate) struct RawRing<T> {
    producer: NonNull<IndexLine>,
    consumer: NonNull<IndexLine>,
    geometry: Locus<T>,
}

impl<T> Clone for RawRing<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for RawRing<T> {}

impl<T> RawRing<T> {
    /// A ring that carries its geometry (for shared regions).
    ///
    /// # Safety
    ///
    /// The pointers must satisfy the type's invariant for as long as any copy
    /// of the returned value is used, and at most one producer and one
    /// consumer may be built on them.
    #[cfg_attr(loom, allow(dead_code))]
    pub(crate) unsafe fn new(
        producer: NonNull<IndexLine>,
        consumer: NonNull<IndexLine>,
        data: NonNull<T>,
        trackers: NonNull<AccessTracker>,
        capacity: u32,
    ) -> Self {
        debug_assert!(capacity.is_power_of_two() && capacity as usize <= MAX_CAPACITY);
        Self {
            producer,
            consumer,
            geometry: Locus::Carried(Geometry::new(data, trackers, capacity)),
        }
    }

    /// A ring whose geometry lives in its storage.
    ///
    /// # Safety
    ///
    /// As for [`RawRing::new`]; in addition `geometry` must stay valid, and
    /// unwritten, for as long as any copy of the returned value is used.
    pub(crate) unsafe fn with_stored_geometry(
        producer: NonNull<IndexLine>,
        consumer: NonNull<IndexLine>,
        geometry: NonNull<Geometry<T>>,
    ) -> Self {
        Self {
            producer,
            consumer,
            geometry: Locus::Stored(geometry),
        }
    }

    /// The ring's geometry.
    #[inline(always)]
    fn geometry(&self) -> &Geometry<T> {
        match &self.geometry {
            // SAFETY: a stored geometry stays valid and unwritten while a copy
            // of `self` is used (type invariant).
            Locus::Stored(g) => unsafe { g.as_ref() },
            Locus::Carried(g) => g,
        }
    }

    #[inline(always)]
    pub(crate) fn capacity(&self) -> u32 {
        self.geometry().mask + 1
    }

    #[inline(always)]
    fn mask(&self) -> u32 {
        self.geometry().mask
    }

    /// The producer's index line.
    #[inline(always)]
    pub(crate) fn producer(&self) -> &IndexLine {
        // SAFETY: the type invariant keeps the line valid while `self` is used;
        // it only holds atomics, so a shared reference is fine while both
        // halves (and, in shared memory, a peer) use it.
        unsafe { self.producer.as_ref() }
    }

    /// The consumer's index line.
    #[inline(always)]
    pub(crate) fn consumer(&self) -> &IndexLine {
        // SAFETY: as in `producer`.
        unsafe { self.consumer.as_ref() }
    }

    /// Publishes the producer's new tail: everything written to slots before
    /// this becomes visible to a consumer that loads the tail with Acquire.
    ///
    /// Callers publish first and update their private copy of the index
    /// afterwards. The reverse order (private copy first) measured about 20%
    /// slower ping-pong round trips on x86_64 (docs/uring-queue.md).
    #[inline(always)]
    pub(crate) fn publish_tail(&self, tail: u32) {
        self.producer().index.store(tail, Ordering::Release);
    }

    /// Moves a producer's private `tail` `n` slots on and publishes it: the
    /// shared store first, the private copy second (see `publish_tail`).
    #[inline(always)]
    pub(crate) fn advance_tail(&self, tail: &mut u32, n: u32) {
        let next = tail.wrapping_add(n);
        self.publish_tail(next);
        *tail = next;
    }

    /// Moves a consumer's private `head` `n` slots on and publishes it, in
    /// the same order as [`advance_tail`](Self::advance_tail).
    #[inline(always)]
    pub(crate) fn advance_head(&self, head: &mut u32, n: u32) {
        let next = head.wrapping_add(n);
        self.publish_head(next);
        *head = next;
    }

    /// Publishes the consumer's new head: every read of slots before this
    /// happens before the producer, loading the head with Acquire, reuses them.
    /// Published before the private copy is updated, as in `publish_tail`.
    #[inline(always)]
    pub(crate) fn publish_head(&self, head: u32) {
        self.consumer().index.store(head, Ordering::Release);
    }

    /// The slot that free-running index `index` maps to.
    #[inline(always)]
    pub(crate) fn slot(&self, index: u32) -> *mut T {
        let i = (index & self.mask()) as usize;
        // SAFETY: `i < capacity` and `data` points to `capacity` contiguous
        // `T`s (type invariant), so the offset stays inside that allocation.
        unsafe { self.geometry().data.as_ptr().add(i) }
    }

    /// Tells loom about an access to slots `index..index + len` (wrapping);
    /// nothing to do without loom.
    #[inline(always)]
    pub(crate) fn track(&self, index: u32, len: u32, write: bool) {
        if AccessTracker::TRACKED {
            let g = self.geometry();
            // SAFETY: under loom `trackers` points to `capacity` of them (type
            // invariant), and `mask` is `capacity - 1`.
            unsafe { AccessTracker::track_run(g.trackers, g.mask, index, len, write) }
        }
    }

    /// Writes `value` to the slot of `index`.
    ///
    /// # Safety
    ///
    /// The caller is the producer and owns the slot: it lies in
    /// `[tail, head + capacity)`.
    #[inline(always)]
    pub(crate) unsafe fn write(&self, index: u32, value: T) {
        self.track(index, 1, true);
        // SAFETY: the slot is in bounds (`slot`) and owned by the caller, so
        // nothing else reads or writes it now.
        unsafe { self.slot(index).write(value) }
    }

    /// Reads the slot of `index`.
    ///
    /// # Safety
    ///
    /// The caller is the consumer and owns the slot: it lies in `[head, tail)`.
    #[inline(always)]
    pub(crate) unsafe fn read(&self, index: u32) -> T {
        self.track(index, 1, false);
        // SAFETY: in bounds and initialised (type invariant); owned by the
        // caller, so the producer does not write it now.
        unsafe { self.slot(index).read() }
    }

    /// Splits `len` slots from `index` at the end of the storage: returns the
    /// first slot's pointer and the lengths before and after the wrap.
    #[inline(always)]
    pub(crate) fn span(&self, index: u32, len: u32) -> (*mut T, usize, usize) {
        let start = index & self.mask();
        let first = len.min(self.capacity() - start);
        (self.slot(index), first as usize, (len - first) as usize)
    }

    /// The mask that maps a free-running index to its slot.
    #[inline(always)]
    pub(crate) fn slot_mask(&self) -> u32 {
        self.mask()
    }

    /// The pointer to slot 0.
    #[inline(always)]
    pub(crate) fn base(&self) -> *mut T {
        self.geometry().data.as_ptr()
    }
}
