//! Atomics, `Arc`, and the client's lock.

mod spin_lock;

pub(crate) use spin_lock::SpinLock;

/// Atomic words and fences.
pub(crate) mod atomic {
    #[cfg(loom)]
    pub(crate) use loom::sync::atomic::{AtomicU32, AtomicUsize, Ordering, fence};

    #[cfg(all(not(loom), feature = "portable-atomic"))]
    pub(crate) use portable_atomic::{AtomicU32, Ordering, fence};

    /// Pointer-sized words: the eventfd notifier and the reactor's waiter.
    #[cfg(all(
        not(loom),
        feature = "portable-atomic",
        any(feature = "tokio", all(feature = "std", target_os = "linux"))
    ))]
    pub(crate) use portable_atomic::AtomicUsize;

    #[cfg(all(not(loom), not(feature = "portable-atomic")))]
    pub(crate) use core::sync::atomic::{AtomicU32, Ordering, fence};

    /// Pointer-sized words: the eventfd notifier and the reactor's waiter.
    #[cfg(all(
        not(loom),
        not(feature = "portable-atomic"),
        any(feature = "tokio", all(feature = "std", target_os = "linux"))
    ))]
    pub(crate) use core::sync::atomic::AtomicUsize;
}

#[cfg(all(loom, feature = "alloc"))]
pub(crate) use loom::sync::Arc;

#[cfg(all(not(loom), feature = "alloc"))]
pub(crate) use alloc::sync::Arc;

/// For the crate's models: blocking primitives that loom checks.
#[cfg(all(test, loom))]
pub(crate) use loom::sync::{Condvar, Mutex};

/// For the crate's models: `std`'s blocking primitives.
#[cfg(all(test, not(loom), not(miri), feature = "std"))]
pub(crate) use std::sync::{Condvar, Mutex};
