//! The one place the crate's interior mutability comes from.
//!
//! Under `cfg(loom)` the cell is loom's model-checked `UnsafeCell`, so the
//! loom models in `tests/loom.rs` check every access the async reader makes
//! to its shared state; otherwise it is `core`'s cell behind the same
//! closure API (`with` / `with_mut`). Production code imports from here,
//! never from `core` directly, so the same code is what loom checks.

#[cfg(loom)]
pub(crate) use loom::cell::UnsafeCell;

/// `core::cell::UnsafeCell` with loom's closure API.
#[cfg(not(loom))]
#[derive(Debug)]
pub(crate) struct UnsafeCell<T>(core::cell::UnsafeCell<T>);

#[cfg(not(loom))]
impl<T> UnsafeCell<T> {
    #[inline]
    pub(crate) const fn new(value: T) -> Self {
        Self(core::cell::UnsafeCell::new(value))
    }

    #[inline]
    pub(crate) fn into_inner(self) -> T {
        self.0.into_inner()
    }

    /// Calls `f` with a pointer for mutable access to the value.
    #[inline]
    pub(crate) fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
        f(self.0.get())
    }
}
