//! The one place the crate's synchronisation primitives come from.
//!
//! Under `cfg(loom)` these are loom's model-checked types; otherwise
//! `portable_atomic` when the `portable-atomic` feature is on, else `core`.
//! Production code imports from here, never from `core` directly, so the same
//! code is what loom checks.

#[cfg(all(loom, feature = "alloc"))]
pub(crate) use loom::sync::Arc;
#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicU32, Ordering};

#[cfg(all(not(loom), feature = "portable-atomic"))]
pub(crate) use portable_atomic::{AtomicU32, Ordering};

#[cfg(all(not(loom), not(feature = "portable-atomic")))]
pub(crate) use core::sync::atomic::{AtomicU32, Ordering};

#[cfg(all(not(loom), feature = "alloc"))]
pub(crate) use alloc::sync::Arc;

/// Element storage cell. Always `core`'s cell, also under loom: the ring hands
/// out slices spanning many slots, which needs the slots to be contiguous
/// `T`s. Loom still sees every slot access through [`AccessTracker`].
pub(crate) use core::cell::UnsafeCell;

/// Records accesses to one slot for loom's causality checker.
///
/// Under loom each slot has one of these next to it and every read or write of
/// the slot is announced here first, so a missing Release/Acquire pair shows
/// up as a loom failure. Without loom it is a zero-sized no-op.
#[cfg(loom)]
#[derive(Debug)]
pub(crate) struct AccessTracker(loom::cell::UnsafeCell<()>);

#[cfg(loom)]
impl AccessTracker {
    pub(crate) fn new() -> Self {
        Self(loom::cell::UnsafeCell::new(()))
    }

    /// Announces a read of the slot.
    pub(crate) fn read(&self) {
        self.0.with(|_| ());
    }

    /// Announces a write of the slot.
    pub(crate) fn write(&self) {
        self.0.with_mut(|_| ());
    }
}

/// Stands in for loom's per-slot access tracker: zero-sized, never touched.
#[cfg(not(loom))]
#[derive(Debug, Clone, Copy)]
pub(crate) struct AccessTracker;
