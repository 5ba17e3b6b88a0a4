//! The control block shared by a pool and the slices it lends.
//!
//! It holds the atomic slot map (bit `i` set while slot `i` is lent) and, for
//! heap pools, a count of owners (the pool plus each live pooled slice) so the
//! memory is freed by whichever owner goes last: slices may outlive the pool,
//! and nobody waits for anybody.
//!
//! Memory ordering (argued in `docs/buffer-pool.md`):
//! - a slice returns its slot with a `Release` clear; the producer loads the
//!   map with `Acquire` before it reuses returned bytes, so every access the
//!   slice's owners made happens before the reuse;
//! - the producer sets a bit with a `Relaxed` set: the bytes reach the slice's
//!   new owner through whatever channel hands the slice over;
//! - owner counts are taken `Relaxed` (the taker already owns a count) and
//!   dropped `Release`, with an `Acquire` fence before freeing.

use crate::loom::cell::TrackedBytes;
use crate::loom::sync::atomic::Ordering;
#[cfg(feature = "alloc")]
use crate::loom::sync::atomic::{AtomicUsize, fence};
use crate::slot_map::sealed::Sealed;
#[cfg(feature = "alloc")]
use alloc::boxed::Box;
use core::ptr::NonNull;

/// The shared state of one pool.
#[derive(Debug)]
pub(crate) struct Control<M: Sealed> {
    /// Bit `i` set while slot `i` is lent.
    lent: M::Atomic,
    /// Loom's view of the pool memory (empty without loom).
    tracked: TrackedBytes,
    /// Present for heap pools: the owner count and the memory to free.
    #[cfg(feature = "alloc")]
    heap: Option<HeapMemory>,
}

/// Heap pool memory and the count of its owners.
#[cfg(feature = "alloc")]
#[derive(Debug)]
struct HeapMemory {
    owners: AtomicUsize,
    bytes: NonNull<u8>,
    cap: usize,
}

impl<M: Sealed> Control<M> {
    without_loom! {
        /// The control block of `'static` storage: no owner count, nothing to free.
        pub(crate) const fn new_static() -> Self {
            Self {
                lent: M::ZERO,
                tracked: TrackedBytes::none(),
                #[cfg(feature = "alloc")]
                heap: None,
            }
        }
    }

    /// A control block owning `cap` heap bytes at `bytes` (allocated with
    /// [`alloc_bytes`]), with one owner: the pool. Returned as a raw pointer
    /// because the pool and its slices share it; freed by the last
    /// [`release_owner`](Self::release_owner).
    #[cfg(feature = "alloc")]
    pub(crate) fn new_heap(bytes: NonNull<u8>, cap: usize) -> NonNull<Self> {
        let control = Box::new(Self {
            lent: M::new_atomic(),
            tracked: TrackedBytes::new(bytes.as_ptr(), cap),
            heap: Some(HeapMemory {
                owners: AtomicUsize::new(1),
                bytes,
                cap,
            }),
        });
        NonNull::from(Box::leak(control))
    }

    /// Records a read (or write) of bytes `at..at + len` for loom; bytes
    /// outside pool memory (a message in system memory) are ignored. Does
    /// nothing without loom.
    #[inline(always)]
    pub(crate) fn touch(&self, at: *const u8, len: usize, write: bool) {
        self.tracked.touch(at, len, write);
    }

    /// The slots currently lent, as seen with `Acquire`: every access made by
    /// an owner of a slice whose slot shows as free happened before this load.
    #[inline]
    pub(crate) fn lent_acquire(&self) -> u64 {
        M::load(&self.lent, Ordering::Acquire)
    }

    /// Marks `bit` lent and, for heap pools, counts the new slice as an owner.
    #[inline]
    pub(crate) fn lend(&self, bit: u64) {
        M::set(&self.lent, bit, Ordering::Relaxed);
        #[cfg(feature = "alloc")]
        if let Some(heap) = &self.heap {
            // The caller (the pool) already owns a count, so the memory
            // cannot be freed concurrently: a relaxed increment suffices.
            heap.owners.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Returns slot `bit` and gives up the slice's ownership.
    ///
    /// # Safety
    ///
    /// `this` points to a live control block of which the caller owns one
    /// slice's ownership, with slot `bit`; neither is used after this call.
    pub(crate) unsafe fn return_slot(this: NonNull<Self>, bit: u64) {
        // SAFETY: the caller owns a count (or the block is static), so the
        // block is alive.
        let control = unsafe { this.as_ref() };
        // Release: every access the slice's owners made to its bytes happens
        // before the producer's `Acquire` load that sees this bit clear.
        M::clear(&control.lent, bit, Ordering::Release);
        // SAFETY: delegated to the caller: one ownership, not used again.
        unsafe { Self::release_owner(this) };
    }

    /// Gives up one ownership; the last owner of a heap pool frees it.
    /// Does nothing for `'static` storage.
    ///
    /// # Safety
    ///
    /// `this` points to a live control block of which the caller owns one
    /// ownership (or which is static), not used by the caller after this call.
    pub(crate) unsafe fn release_owner(this: NonNull<Self>) {
        #[cfg(feature = "alloc")]
        {
            // SAFETY: the caller's ownership keeps the block alive until the
            // decrement below; no reference to it is used after that.
            let Some(heap) = (unsafe { &this.as_ref().heap }) else {
                return;
            };
            // Release: this owner's accesses happen before the free below.
            if heap.owners.fetch_sub(1, Ordering::Release) != 1 {
                return;
            }
            // Acquire: every other owner's accesses happen before the free.
            fence(Ordering::Acquire);
            let (bytes, cap) = (heap.bytes, heap.cap);
            // SAFETY: the count reached zero, so this is the last owner: no
            // slice or pool refers to the block or its bytes any more. The
            // block came from `Box::leak` in `new_heap`, the bytes from
            // `alloc_bytes(cap)`.
            unsafe {
                drop(Box::from_raw(this.as_ptr()));
                free_bytes(bytes, cap);
            }
        }
        #[cfg(not(feature = "alloc"))]
        let _ = this;
    }
}

/// Allocates `cap` zeroed bytes (zeroed so that every byte handed out is
/// initialised). Zero bytes allocate nothing.
#[cfg(feature = "alloc")]
pub(crate) fn alloc_bytes(cap: usize) -> Option<NonNull<u8>> {
    if cap == 0 {
        return Some(NonNull::dangling());
    }
    let layout = core::alloc::Layout::array::<u8>(cap).ok()?;
    // SAFETY: `layout` has non-zero size.
    NonNull::new(unsafe { alloc::alloc::alloc_zeroed(layout) })
}

/// Frees bytes from [`alloc_bytes`].
///
/// # Safety
///
/// `bytes` came from `alloc_bytes(cap)` and is not used after this call.
#[cfg(feature = "alloc")]
unsafe fn free_bytes(bytes: NonNull<u8>, cap: usize) {
    if cap == 0 {
        return;
    }
    // `alloc_bytes(cap)` succeeded with this same layout.
    if let Ok(layout) = core::alloc::Layout::array::<u8>(cap) {
        // SAFETY: allocated by `alloc_zeroed` with `layout`; the caller
        // guarantees this is the last use.
        unsafe { alloc::alloc::dealloc(bytes.as_ptr(), layout) };
    }
}
