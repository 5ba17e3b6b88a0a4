//! The one place this crate takes its synchronisation primitives from.
//!
//! Under `cfg(loom)` they are loom's, so the models in `tests/loom.rs` explore
//! every interleaving of the real code; with the `portable-atomic` feature they
//! are `portable_atomic`'s (the user picks its backend); otherwise `core`'s.

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicU8, AtomicU16, AtomicU32, AtomicU64, Ordering};
#[cfg(all(loom, feature = "alloc"))]
pub(crate) use loom::sync::atomic::{AtomicUsize, fence};

#[cfg(all(not(loom), feature = "portable-atomic", target_has_atomic = "64"))]
pub(crate) use portable_atomic::AtomicU64;
#[cfg(all(not(loom), feature = "portable-atomic"))]
pub(crate) use portable_atomic::{AtomicBool, AtomicU8, AtomicU16, AtomicU32, Ordering};
#[cfg(all(not(loom), feature = "portable-atomic", feature = "alloc"))]
pub(crate) use portable_atomic::{AtomicUsize, fence};

#[cfg(all(not(loom), not(feature = "portable-atomic"), target_has_atomic = "64"))]
pub(crate) use core::sync::atomic::AtomicU64;
#[cfg(all(not(loom), not(feature = "portable-atomic")))]
pub(crate) use core::sync::atomic::{AtomicBool, AtomicU8, AtomicU16, AtomicU32, Ordering};
#[cfg(all(not(loom), not(feature = "portable-atomic"), feature = "alloc"))]
pub(crate) use core::sync::atomic::{AtomicUsize, fence};

/// Interior mutability for storage that is shared by raw pointer.
///
/// Only the `'static` storage uses it, and that storage is not built under
/// loom (its constructor must be `const`, which loom's cells are not).
#[cfg(not(loom))]
#[derive(Debug)]
#[repr(transparent)]
pub(crate) struct UnsafeCell<T: ?Sized>(core::cell::UnsafeCell<T>);

#[cfg(not(loom))]
impl<T> UnsafeCell<T> {
    /// Wraps `value`.
    pub(crate) const fn new(value: T) -> Self {
        Self(core::cell::UnsafeCell::new(value))
    }
}

#[cfg(not(loom))]
impl<T: ?Sized> UnsafeCell<T> {
    /// A raw pointer to the contents, valid for reads and writes for as long
    /// as the cell lives; the caller keeps accesses through it race-free.
    pub(crate) const fn get(&self) -> *mut T {
        self.0.get()
    }
}
