//! The one place this crate takes its synchronisation primitives from, in the
//! shape of tokio's and maitake-sync's `loom` modules: code elsewhere names
//! `crate::loom::sync::atomic::AtomicU8`, `crate::loom::cell::UnsafeCell` and
//! so on, never `core` or `loom` directly, and no `cfg(loom)` appears outside
//! this file.
//!
//! Under `cfg(loom)` the primitives are loom's, so the models in
//! `tests/loom.rs` explore every interleaving of the real code; with the
//! `portable-atomic` feature they are `portable_atomic`'s (the user picks its
//! backend); otherwise `core`'s.
//!
//! `tests/loom.rs` includes this file as a module of its own, for
//! [`model`] and [`thread`]: so the same models also run once, on real
//! threads, under a plain `cargo test`.

// Pieces of the facade that one includer uses and the other does not.
#![allow(dead_code, unused_imports, unused_macros)]

// A target without compare-and-swap (thumbv6m, riscv32imc) has no `swap` or
// `fetch_or` in `core`: say which feature brings them rather than leave the
// user with the raw errors of every call.
#[cfg(all(
    not(loom),
    not(feature = "portable-atomic"),
    not(target_has_atomic = "ptr")
))]
compile_error!(
    "buffer-pool: this target has no compare-and-swap; turn on the `portable-atomic` \
     feature and choose its backend (its `critical-section` feature, or \
     `--cfg portable_atomic_unsafe_assume_single_core` on a single core)"
);

/// Atomics, as `std::sync` lays them out.
pub(crate) mod sync {
    /// Atomic integers, `Ordering` and `fence`.
    pub(crate) mod atomic {
        #[cfg(loom)]
        pub(crate) use ::loom::sync::atomic::{
            AtomicBool, AtomicU8, AtomicU16, AtomicU32, AtomicU64, AtomicUsize, Ordering, fence,
        };

        #[cfg(all(not(loom), feature = "portable-atomic", target_has_atomic = "64"))]
        pub(crate) use portable_atomic::AtomicU64;
        #[cfg(all(not(loom), feature = "portable-atomic"))]
        pub(crate) use portable_atomic::{
            AtomicBool, AtomicU8, AtomicU16, AtomicU32, AtomicUsize, Ordering, fence,
        };

        #[cfg(all(not(loom), not(feature = "portable-atomic"), target_has_atomic = "64"))]
        pub(crate) use core::sync::atomic::AtomicU64;
        #[cfg(all(not(loom), not(feature = "portable-atomic")))]
        pub(crate) use core::sync::atomic::{
            AtomicBool, AtomicU8, AtomicU16, AtomicU32, AtomicUsize, Ordering, fence,
        };
    }
}

/// Interior mutability, with loom's closure API.
pub(crate) mod cell {
    /// `core::cell::UnsafeCell` behind loom's API: the contents are reached
    /// only inside [`with`](Self::with) / [`with_mut`](Self::with_mut), as
    /// raw pointers.
    ///
    /// Only the `'static` storage uses it, and that is not built under loom
    /// (see [`without_loom`]), so there is no loom variant.
    #[derive(Debug)]
    #[repr(transparent)]
    pub(crate) struct UnsafeCell<T: ?Sized>(core::cell::UnsafeCell<T>);

    impl<T> UnsafeCell<T> {
        /// Wraps `value`.
        pub(crate) const fn new(value: T) -> Self {
            Self(core::cell::UnsafeCell::new(value))
        }
    }

    impl<T: ?Sized> UnsafeCell<T> {
        /// Calls `f` with a pointer to the contents for reading; the caller
        /// keeps reads through it race-free.
        #[inline]
        pub(crate) fn with<R>(&self, f: impl FnOnce(*const T) -> R) -> R {
            f(self.0.get())
        }

        /// Calls `f` with a pointer to the contents for reading and writing;
        /// the caller keeps accesses through it race-free.
        #[inline]
        pub(crate) fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
            f(self.0.get())
        }
    }

    /// Loom's view of a region of bytes that is reached by raw pointer.
    ///
    /// Under loom it holds one tracked cell per byte, and every access to
    /// the region is mirrored on them, so loom reports an access that is not
    /// ordered after a conflicting one on another thread. Otherwise it is
    /// empty and recording an access compiles to nothing.
    #[derive(Debug, Default)]
    pub(crate) struct TrackedBytes {
        #[cfg(loom)]
        base: usize,
        #[cfg(loom)]
        cells: alloc::vec::Vec<::loom::cell::UnsafeCell<()>>,
    }

    impl TrackedBytes {
        /// Tracks nothing: every access is outside the region.
        pub(crate) const fn none() -> Self {
            Self {
                #[cfg(loom)]
                base: 0,
                #[cfg(loom)]
                cells: alloc::vec::Vec::new(),
            }
        }

        /// Tracks the `len` bytes from `base` on.
        pub(crate) fn new(base: *const u8, len: usize) -> Self {
            #[cfg(loom)]
            return Self {
                base: base as usize,
                cells: (0..len)
                    .map(|_| ::loom::cell::UnsafeCell::new(()))
                    .collect(),
            };
            #[cfg(not(loom))]
            {
                let _ = (base, len);
                Self::none()
            }
        }

        /// Records a read (or, with `write`, a write) of bytes
        /// `at..at + len`; bytes outside the region are ignored.
        #[inline(always)]
        pub(crate) fn touch(&self, at: *const u8, len: usize, write: bool) {
            #[cfg(loom)]
            {
                let from = (at as usize).wrapping_sub(self.base);
                for cell in self.cells.iter().skip(from).take(len) {
                    if write {
                        cell.with_mut(|_| ());
                    } else {
                        cell.with(|_| ());
                    }
                }
            }
            #[cfg(not(loom))]
            let _ = (at, len, write);
        }
    }
}

/// Runs a model: under loom, once per interleaving loom explores; otherwise
/// once, on real threads.
#[cfg(all(test, loom))]
pub(crate) use ::loom::model;

/// Runs a model: under loom, once per interleaving loom explores; otherwise
/// once, on real threads.
#[cfg(all(test, not(loom)))]
pub(crate) fn model<F: Fn() + Sync + Send + 'static>(f: F) {
    f();
}

/// Threads that a [`model`] runs on.
#[cfg(all(test, loom))]
pub(crate) use ::loom::thread;
/// Threads that a [`model`] runs on.
#[cfg(all(test, not(loom)))]
pub(crate) use std::thread;

/// Whether a [`model`] explores every interleaving (under loom) rather than
/// running once.
pub(crate) const EXHAUSTIVE: bool = cfg!(loom);

/// Items built only without loom: they need atomics made in a `const`
/// context (the `'static` storage's `const fn new`), and loom's atomics
/// cannot be.
macro_rules! without_loom {
    ($($item:item)*) => {
        $( #[cfg(not(loom))] $item )*
    };
}

/// Items built only where the facade has a 64-bit atomic (always under
/// loom).
macro_rules! with_atomic_u64 {
    ($($item:item)*) => {
        $( #[cfg(any(loom, target_has_atomic = "64"))] $item )*
    };
}
