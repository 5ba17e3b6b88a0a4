//! What the request/response layer needs beyond the crate's `loom` facade:
//! the fence of the wake-up handshake and the spin hint. Picked the same way
//! as the facade picks its atomics, so loom checks the code that ships.

pub(crate) use crate::loom::{AtomicU32, Ordering};

#[cfg(all(not(loom), not(feature = "portable-atomic")))]
pub(crate) use core::sync::atomic::fence;
#[cfg(loom)]
pub(crate) use loom::sync::atomic::fence;
#[cfg(all(not(loom), feature = "portable-atomic"))]
pub(crate) use portable_atomic::fence;

/// One step of a busy wait. Under loom a yield, so that a model with a
/// spinning thread still lets the other threads run.
#[inline]
pub(crate) fn spin_loop() {
    #[cfg(loom)]
    loom::thread::yield_now();
    #[cfg(not(loom))]
    core::hint::spin_loop();
}

/// Step `i` (from 0) of a busy wait that yields the CPU after every
/// `yield_every` steps (0: never; only with `std`).
#[inline]
pub(crate) fn spin_step(i: u32, yield_every: u32) {
    #[cfg(all(feature = "std", not(loom)))]
    if yield_every != 0 && (i + 1).is_multiple_of(yield_every) {
        std::thread::yield_now();
        return;
    }
    let _ = (i, yield_every);
    spin_loop();
}

#[cfg(loom)]
use crate::loom::AccessTracker;
use crate::loom::UnsafeCell;
use core::ops::{Deref, DerefMut};

/// A small spin lock: what lets one client be shared between threads. Held
/// only for a few loads and stores of the client's own state, never across
/// a park, an `.await` or a call out to user code (wakers are woken after
/// it is released), so a waiter spins for a short while at most.
///
/// The word is an `AtomicU32` of the facade, so targets without
/// compare-and-swap get `swap` from `portable-atomic`. Under loom the lock
/// is loom's `Mutex`: loom cannot bound a spin wait (a waiter's loads may
/// read the held word again and again, each a new branch), and a mutex has
/// the same happens-before edges as the Acquire swap and Release store, so
/// the models check every use of the lock all the same.
pub(crate) struct SpinLock<T> {
    #[cfg(not(loom))]
    locked: AtomicU32,
    #[cfg(loom)]
    locked: loom::sync::Mutex<()>,
    value: UnsafeCell<T>,
    /// Lets loom check that the lock orders every access to `value`.
    #[cfg(loom)]
    tracker: AccessTracker,
}

// SAFETY: the lock hands out `&mut T` to one thread at a time (the word is
// taken with an Acquire swap and given back with a Release store), so
// sharing the lock moves the `T` between threads, which `T: Send` allows.
unsafe impl<T: Send> Sync for SpinLock<T> {}
// SAFETY: sending the lock sends the `T`.
unsafe impl<T: Send> Send for SpinLock<T> {}

impl<T> SpinLock<T> {
    pub(crate) fn new(value: T) -> Self {
        Self {
            #[cfg(not(loom))]
            locked: AtomicU32::new(0),
            #[cfg(loom)]
            locked: loom::sync::Mutex::new(()),
            value: UnsafeCell::new(value),
            #[cfg(loom)]
            tracker: AccessTracker::new(),
        }
    }

    /// Takes the lock, spinning while another thread holds it.
    #[inline]
    #[cfg(not(loom))]
    pub(crate) fn lock(&self) -> SpinGuard<'_, T> {
        if self.locked.swap(1, Ordering::Acquire) != 0 {
            self.contended();
        }
        SpinGuard { lock: self }
    }

    #[cfg(loom)]
    pub(crate) fn lock(&self) -> SpinGuard<'_, T> {
        let held = self.locked.lock().unwrap();
        self.tracker.write();
        SpinGuard { lock: self, held }
    }

    /// Takes the lock if it is free.
    #[cfg(not(loom))]
    pub(crate) fn try_lock(&self) -> Option<SpinGuard<'_, T>> {
        if self.locked.swap(1, Ordering::Acquire) != 0 {
            return None;
        }
        Some(SpinGuard { lock: self })
    }

    #[cfg(loom)]
    pub(crate) fn try_lock(&self) -> Option<SpinGuard<'_, T>> {
        let held = self.locked.try_lock().ok()?;
        self.tracker.write();
        Some(SpinGuard { lock: self, held })
    }

    #[cold]
    #[cfg(not(loom))]
    fn contended(&self) {
        let mut spins = 0u32;
        loop {
            while self.locked.load(Ordering::Relaxed) != 0 {
                spins = spins.wrapping_add(1);
                // A holder that was preempted holds on for a time slice:
                // let it run rather than burn ours.
                #[cfg(all(feature = "std", not(loom)))]
                if spins & 63 == 0 {
                    std::thread::yield_now();
                    continue;
                }
                spin_loop();
            }
            if self.locked.swap(1, Ordering::Acquire) == 0 {
                return;
            }
        }
    }

    /// The value, through an exclusive borrow of the lock: no locking.
    pub(crate) fn get_mut(&mut self) -> &mut T {
        #[cfg(loom)]
        self.tracker.write();
        // SAFETY: `&mut self` excludes every guard.
        unsafe { &mut *self.value.get() }
    }
}

/// The lock, held: gives the value back on drop.
pub(crate) struct SpinGuard<'l, T> {
    lock: &'l SpinLock<T>,
    #[cfg(loom)]
    #[allow(dead_code)]
    held: loom::sync::MutexGuard<'l, ()>,
}

impl<T> Deref for SpinGuard<'_, T> {
    type Target = T;

    fn deref(&self) -> &T {
        // SAFETY: the guard holds the lock, so no other reference to the
        // value exists outside this guard's borrows.
        unsafe { &*self.lock.value.get() }
    }
}

impl<T> DerefMut for SpinGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as in `deref`, and `&mut self` makes this borrow unique.
        unsafe { &mut *self.lock.value.get() }
    }
}

#[cfg(not(loom))]
impl<T> Drop for SpinGuard<'_, T> {
    fn drop(&mut self) {
        self.lock.locked.store(0, Ordering::Release);
    }
}
