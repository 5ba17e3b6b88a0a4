//! Cells: one API (`with` / `with_mut`, closures given a raw pointer) in
//! every build.
//!
//! - [`UnsafeCell`] is loom's under `cfg(loom)`, so loom checks every access
//!   through it against the happens-before order.
//! - [`UntrackedCell`] is `core`'s cell in every build, also under loom: the
//!   ring's element slots are these, because the ring lends out slices that
//!   span many slots, which needs the slots to be contiguous `T`s (loom's
//!   cell is not). Loom sees each slot access through an [`AccessTracker`]
//!   beside the slot instead.

/// A cell loom tracks (loom's own under `cfg(loom)`).
#[cfg(loom)]
pub(crate) use loom::cell::UnsafeCell;

/// A cell loom tracks (loom's own under `cfg(loom)`; without loom the same
/// as [`UntrackedCell`]).
#[cfg(not(loom))]
pub(crate) type UnsafeCell<T> = UntrackedCell<T>;

/// `core`'s cell with the facade's closure API, in every build.
#[repr(transparent)]
#[derive(Debug)]
pub(crate) struct UntrackedCell<T: ?Sized>(core::cell::UnsafeCell<T>);

impl<T> UntrackedCell<T> {
    pub(crate) const fn new(value: T) -> Self {
        Self(core::cell::UnsafeCell::new(value))
    }
}

impl<T: ?Sized> UntrackedCell<T> {
    /// Calls `f` with a pointer for reading the value.
    #[inline(always)]
    // Under loom only the spin lock's model, loom's mutex, would read
    // through it.
    #[cfg_attr(loom, allow(dead_code))]
    pub(crate) fn with<R>(&self, f: impl FnOnce(*const T) -> R) -> R {
        f(self.0.get())
    }

    /// Calls `f` with a pointer for writing the value.
    #[inline(always)]
    pub(crate) fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
        f(self.0.get())
    }
}

/// Records accesses to one untracked slot for loom's causality checker.
///
/// Under loom each slot has one of these next to it and every read or write
/// of the slot is announced here first, so a missing Release/Acquire pair
/// shows up as a loom failure. Without loom it is zero-sized and its
/// announcements compile to nothing.
#[derive(Debug)]
pub(crate) struct AccessTracker(UnsafeCell<()>);

impl AccessTracker {
    super::const_fn! {
        pub(crate) fn new() -> Self {
            Self(UnsafeCell::new(()))
        }
    }

    /// `N` trackers, one per slot of an inline ring.
    #[cfg(not(loom))]
    pub(crate) const fn array<const N: usize>() -> [Self; N] {
        [const { Self::new() }; N]
    }

    /// `N` trackers, one per slot of an inline ring.
    #[cfg(loom)]
    pub(crate) fn array<const N: usize>() -> [Self; N] {
        core::array::from_fn(|_| Self::new())
    }

    /// Whether slot accesses are announced: only under loom. Callers skip
    /// working out which trackers to announce when they are not.
    pub(crate) const TRACKED: bool = cfg!(loom);

    /// Announces an access to the `len` slots from free-running index
    /// `index` (wrapping at `mask`), whose trackers start at `trackers`.
    ///
    /// # Safety
    ///
    /// `trackers` points to `mask + 1` trackers.
    #[cfg(loom)]
    pub(crate) unsafe fn track_run(
        trackers: core::ptr::NonNull<Self>,
        mask: u32,
        index: u32,
        len: u32,
        write: bool,
    ) {
        for k in 0..len {
            let i = (index.wrapping_add(k) & mask) as usize;
            // SAFETY: `i <= mask`, and `trackers` points to `mask + 1`
            // trackers (the caller's guarantee).
            let t = unsafe { &*trackers.as_ptr().add(i) };
            if write {
                t.0.with_mut(|_| ());
            } else {
                t.0.with(|_| ());
            }
        }
    }

    /// Announces an access to slots: nothing to announce without loom.
    ///
    /// # Safety
    ///
    /// None without loom; callers keep loom's contract (`trackers` points
    /// to `mask + 1` trackers) all the same.
    #[cfg(not(loom))]
    #[inline(always)]
    pub(crate) unsafe fn track_run(
        _trackers: core::ptr::NonNull<Self>,
        _mask: u32,
        _index: u32,
        _len: u32,
        _write: bool,
    ) {
    }
}
