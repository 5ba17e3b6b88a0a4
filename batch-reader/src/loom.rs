//! The one place the crate's interior mutability comes from, in the shape
//! every crate of the workspace uses (`cell`, and `model` for tests).
//!
//! Under `cfg(loom)` the cell is loom's model-checked `UnsafeCell`, so the
//! loom models check every access the async reader makes to its shared
//! state; otherwise it is `core`'s cell behind the same closure API (`with`
//! / `with_mut`). Production code imports from here, never from `core`
//! directly, so the same code is what loom checks. The crate uses no
//! atomics: a [`Reader`](crate::Reader) is driven through `&mut self`, and
//! an [`AsyncReader`](crate::AsyncReader) is not `Sync`.

/// `UnsafeCell` with loom's closure API.
pub(crate) mod cell {
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

        /// Calls `f` with a pointer for shared access to the value.
        #[inline]
        #[allow(dead_code)] // The facade's full shape; the crate writes through `with_mut`.
        pub(crate) fn with<R>(&self, f: impl FnOnce(*const T) -> R) -> R {
            f(self.0.get())
        }

        /// Calls `f` with a pointer for mutable access to the value.
        #[inline]
        pub(crate) fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
            f(self.0.get())
        }
    }
}

/// Runs a model: every interleaving loom finds under `cfg(loom)`, the
/// closure once otherwise, so a model is also a plain test.
#[cfg(all(test, loom))]
pub(crate) use loom::model;

/// Runs a model: every interleaving loom finds under `cfg(loom)`, the
/// closure once otherwise, so a model is also a plain test.
#[cfg(all(test, not(loom)))]
pub(crate) fn model<F: Fn() + Sync + Send + 'static>(f: F) {
    f();
}
