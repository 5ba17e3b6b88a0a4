//! A small spin lock: what lets one client be shared between threads. Held
//! only for a few loads and stores of the client's own state, never across
//! a park, an `.await` or a call out to user code (wakers are woken after
//! it is released), so a waiter spins for a short while at most.
//!
//! The word is an `AtomicU32` of the facade, so targets without
//! compare-and-swap get `swap` from `portable-atomic`.
//!
//! Under loom the lock is loom's `Mutex`, and that choice lives here, in the
//! facade, because it cannot be made at the atomics: loom cannot bound a
//! spin wait (a waiter's loads may read the held word again and again, each
//! a new branch). A mutex has the same happens-before edges as the Acquire
//! swap and Release store, so the models check every use of the lock all
//! the same.

#[cfg(not(loom))]
pub(crate) use spin::SpinLock;

#[cfg(loom)]
pub(crate) use model::SpinLock;

#[cfg(not(loom))]
mod spin {
    use crate::loom::cell::UnsafeCell;
    use crate::loom::sync::atomic::{AtomicU32, Ordering};
    use crate::loom::{hint, thread};
    use core::ops::{Deref, DerefMut};

    /// The lock: a word taken with an Acquire swap and given back with a
    /// Release store.
    pub(crate) struct SpinLock<T> {
        locked: AtomicU32,
        value: UnsafeCell<T>,
    }

    // SAFETY: the lock hands out `&mut T` to one thread at a time (the word
    // is taken with an Acquire swap and given back with a Release store), so
    // sharing the lock moves the `T` between threads, which `T: Send` allows.
    unsafe impl<T: Send> Sync for SpinLock<T> {}
    // SAFETY: sending the lock sends the `T`.
    unsafe impl<T: Send> Send for SpinLock<T> {}

    impl<T> SpinLock<T> {
        pub(crate) fn new(value: T) -> Self {
            Self {
                locked: AtomicU32::new(0),
                value: UnsafeCell::new(value),
            }
        }

        /// Takes the lock, spinning while another thread holds it.
        #[inline]
        pub(crate) fn lock(&self) -> SpinGuard<'_, T> {
            if self.locked.swap(1, Ordering::Acquire) != 0 {
                self.contended();
            }
            SpinGuard { lock: self }
        }

        /// Takes the lock if it is free.
        pub(crate) fn try_lock(&self) -> Option<SpinGuard<'_, T>> {
            if self.locked.swap(1, Ordering::Acquire) != 0 {
                return None;
            }
            Some(SpinGuard { lock: self })
        }

        #[cold]
        fn contended(&self) {
            let mut spins = 0u32;
            loop {
                while self.locked.load(Ordering::Relaxed) != 0 {
                    spins = spins.wrapping_add(1);
                    // A holder that was preempted holds on for a time slice:
                    // let it run rather than burn ours.
                    if spins & 63 == 0 {
                        thread::yield_now();
                    } else {
                        hint::spin_loop();
                    }
                }
                if self.locked.swap(1, Ordering::Acquire) == 0 {
                    return;
                }
            }
        }

        /// The value, through an exclusive borrow of the lock: no locking.
        pub(crate) fn get_mut(&mut self) -> &mut T {
            // SAFETY: `&mut self` excludes every guard.
            self.value.with_mut(|v| unsafe { &mut *v })
        }
    }

    /// The lock, held: gives the value back on drop.
    pub(crate) struct SpinGuard<'l, T> {
        lock: &'l SpinLock<T>,
    }

    impl<T> Deref for SpinGuard<'_, T> {
        type Target = T;

        fn deref(&self) -> &T {
            // SAFETY: the guard holds the lock, so no other reference to the
            // value exists outside this guard's borrows.
            self.lock.value.with(|v| unsafe { &*v })
        }
    }

    impl<T> DerefMut for SpinGuard<'_, T> {
        fn deref_mut(&mut self) -> &mut T {
            // SAFETY: as in `deref`, and `&mut self` makes this borrow unique.
            self.lock.value.with_mut(|v| unsafe { &mut *v })
        }
    }

    impl<T> Drop for SpinGuard<'_, T> {
        fn drop(&mut self) {
            self.lock.locked.store(0, Ordering::Release);
        }
    }
}

#[cfg(loom)]
mod model {
    /// The lock under loom: loom's `Mutex` (see the module docs).
    #[derive(Debug)]
    pub(crate) struct SpinLock<T>(loom::sync::Mutex<T>);

    /// The lock, held.
    pub(crate) type SpinGuard<'l, T> = loom::sync::MutexGuard<'l, T>;

    impl<T> SpinLock<T> {
        pub(crate) fn new(value: T) -> Self {
            Self(loom::sync::Mutex::new(value))
        }

        pub(crate) fn lock(&self) -> SpinGuard<'_, T> {
            self.0.lock().unwrap()
        }

        pub(crate) fn try_lock(&self) -> Option<SpinGuard<'_, T>> {
            self.0.try_lock().ok()
        }

        pub(crate) fn get_mut(&mut self) -> &mut T {
            self.0.get_mut().unwrap()
        }
    }
}
