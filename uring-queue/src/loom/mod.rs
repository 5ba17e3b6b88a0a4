//! The one place the crate's synchronisation primitives come from.
//!
//! Production code imports atomics, fences, cells, `Arc`, the spin hint and
//! thread yields from here, never from `core` or `std` directly, so the code
//! loom checks is the code that ships. Under `cfg(loom)` each item is loom's
//! model-checked version; otherwise `portable_atomic`'s atomics when the
//! `portable-atomic` feature is on, else `core`'s, and `std`'s threads when
//! the `std` feature is on.
//!
//! The shape follows tokio's and maitake-sync's facades:
//! [`sync::atomic`](self::sync) (with `fence`), `sync::Arc`, `cell::UnsafeCell`
//! (the closure API `with` / `with_mut` in every build), `hint::spin_loop`,
//! [`thread`] and [`model`].
//!
//! Not part of the crate's API. The loom models live beside the code they
//! check (`src/tests/loom.rs`, `src/uring/tests/loom.rs`,
//! `src/uring/reactor_waiter/loom.rs`, `src/uring/eventfd/loom.rs`), as
//! test modules of the crate; [`model`], [`thread::spawn`] and the test
//! primitives in [`sync`] exist for them, in test builds only.

// A target without compare-and-swap (thumbv6m, riscv32imc) has no `swap` or
// `fetch_or` in `core`: say which feature brings them rather than leave the
// user with the raw errors of every call.
#[cfg(all(
    not(loom),
    not(feature = "portable-atomic"),
    not(target_has_atomic = "ptr")
))]
compile_error!(
    "uring-queue: this target has no compare-and-swap; turn on the `portable-atomic` \
     feature and choose its backend (its `critical-section` feature, or \
     `--cfg portable_atomic_unsafe_assume_single_core` on a single core)"
);

pub(crate) mod cell;
pub(crate) mod sync;

/// Busy-wait hints.
pub(crate) mod hint {
    /// One step of a busy wait. Under loom a yield, so that a model with a
    /// spinning thread still lets the other threads run.
    #[cfg(loom)]
    pub(crate) use loom::hint::spin_loop;

    /// One step of a busy wait.
    #[cfg(not(loom))]
    pub(crate) use core::hint::spin_loop;
}

/// Threads: loom's under `cfg(loom)`, else `std`'s (feature `std`).
pub(crate) mod thread {
    #[cfg(loom)]
    pub(crate) use loom::thread::yield_now;

    /// The models' threads.
    #[cfg(all(test, loom))]
    pub(crate) use loom::thread::spawn;

    #[cfg(all(not(loom), feature = "std"))]
    pub(crate) use std::thread::yield_now;

    /// The models' threads.
    #[cfg(all(test, not(loom), not(miri), feature = "std"))]
    pub(crate) use std::thread::spawn;

    /// Gives the CPU to another thread. Without `std` there is no scheduler
    /// to give it to: one spin-loop hint.
    #[cfg(all(not(loom), not(feature = "std")))]
    #[inline]
    pub(crate) fn yield_now() {
        core::hint::spin_loop();
    }
}

/// Runs a model: under loom, `f` in every interleaving loom explores;
/// otherwise `f` once, on this thread.
#[cfg(all(test, loom))]
pub(crate) use loom::model;

/// Runs a model: under loom, `f` in every interleaving loom explores;
/// otherwise (this build) `f` once, on this thread. The bounds are loom's,
/// so a model that builds one way builds the other.
#[cfg(all(test, not(loom), not(miri), feature = "std"))]
pub(crate) fn model<F>(f: F)
where
    F: Fn() + Sync + Send + 'static,
{
    f();
}

/// Defines a function that is `const` without loom and a plain `fn` under
/// loom, whose atomics and cells have no `const` constructors (the shape of
/// maitake-sync's `loom_const_fn!`).
macro_rules! const_fn {
    ($(#[$attr:meta])* $vis:vis fn $name:ident($($arg:tt)*) -> $ret:ty $body:block) => {
        $(#[$attr])*
        #[cfg(not(loom))]
        $vis const fn $name($($arg)*) -> $ret $body

        $(#[$attr])*
        #[cfg(loom)]
        $vis fn $name($($arg)*) -> $ret $body
    };
}
pub(crate) use const_fn;
