//! Which of the calls waiting on a reactor-driven client the reactor wakes,
//! and the hand-off when that call leaves.
//!
//! A reactor keeps one waker per readiness (tokio's `AsyncFd` keeps the
//! last task that polled it), so of the calls that wait at once only the
//! last to go pending is woken when the eventfd turns readable. Each call
//! takes an id; it registers the id each time it goes pending; as it leaves
//! (finished or dropped) it finds out whether it still is the registered
//! call, and if so it owes the others a hand-off: one of them is woken, to
//! poll the reactor for itself. Checked by `tests/loom_reactor.rs`.
//!
//! Every access is `Relaxed`: the word only names a call, and the steps
//! that act on the answer (the hand-off's lock, the reactor's waker) order
//! themselves. A call registers and leaves in its own program order, so
//! the last change to the word is always a leave that cleared its own id:
//! once every call has left, none is registered.

use crate::loom::sync::atomic::{AtomicUsize, Ordering};
use core::num::NonZeroUsize;

/// The id of the waiting call the reactor wakes, and the source of call
/// ids.
///
/// Not part of the crate's API: public (and hidden from the docs) only so
/// that the crate's loom models in `tests/` can drive it.
///
/// # Examples
///
/// ```
/// use uring_queue::uring::{Leave, ReactorWaiter};
///
/// let waiter = ReactorWaiter::new();
/// let (a, b) = (waiter.take_id(), waiter.take_id());
/// waiter.register(a);
/// waiter.register(b);
/// // `a` is no longer the one the reactor wakes: it leaves quietly.
/// assert_eq!(waiter.leave(a), Leave::Quietly);
/// assert_eq!(waiter.registered(), Some(b));
/// // `b` is: its leave hands the role on.
/// assert_eq!(waiter.leave(b), Leave::HandOff);
/// assert_eq!(waiter.registered(), None);
/// ```
#[derive(Debug)]
pub struct ReactorWaiter {
    /// The registered call's id; 0 for none.
    registered: AtomicUsize,
    /// The next id to hand out (0 is skipped when it wraps).
    next_id: AtomicUsize,
}

/// What a leaving call owes the calls that still wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use]
pub enum Leave {
    /// It was the call the reactor wakes: wake another waiting call, which
    /// registers itself when it goes pending again.
    HandOff,
    /// Another call is registered, or none: nothing.
    Quietly,
}

impl Default for ReactorWaiter {
    fn default() -> Self {
        Self::new()
    }
}

impl ReactorWaiter {
    /// No call registered, ids from 1.
    ///
    /// # Examples
    ///
    /// ```
    /// let waiter = uring_queue::uring::ReactorWaiter::new();
    /// assert_eq!(waiter.registered(), None);
    /// assert_eq!(waiter.take_id().get(), 1);
    /// ```
    pub fn new() -> Self {
        Self {
            registered: AtomicUsize::new(0),
            next_id: AtomicUsize::new(1),
        }
    }

    /// A fresh id for a call: never 0, and not handed out again until the
    /// counter wraps.
    ///
    /// # Examples
    ///
    /// ```
    /// let waiter = uring_queue::uring::ReactorWaiter::new();
    /// assert_ne!(waiter.take_id(), waiter.take_id());
    /// ```
    #[inline]
    pub fn take_id(&self) -> NonZeroUsize {
        loop {
            let id = self.next_id.fetch_add(1, Ordering::Relaxed);
            if let Some(id) = NonZeroUsize::new(id) {
                return id;
            }
        }
    }

    /// Call `id` goes pending, its waker now the reactor's: it is the one
    /// the reactor wakes.
    ///
    /// # Examples
    ///
    /// ```
    /// let waiter = uring_queue::uring::ReactorWaiter::new();
    /// let id = waiter.take_id();
    /// waiter.register(id);
    /// assert_eq!(waiter.registered(), Some(id));
    /// ```
    #[inline]
    pub fn register(&self, id: NonZeroUsize) {
        self.registered.store(id.get(), Ordering::Relaxed);
    }

    /// Call `id` leaves (finished or dropped): clears the registration if
    /// it is still `id`'s, never another call's, and says whether a
    /// hand-off is owed.
    ///
    /// # Examples
    ///
    /// ```
    /// use uring_queue::uring::{Leave, ReactorWaiter};
    ///
    /// let waiter = ReactorWaiter::new();
    /// let id = waiter.take_id();
    /// // Finished before it ever went pending.
    /// assert_eq!(waiter.leave(id), Leave::Quietly);
    /// waiter.register(id);
    /// assert_eq!(waiter.leave(id), Leave::HandOff);
    /// ```
    #[inline]
    pub fn leave(&self, id: NonZeroUsize) -> Leave {
        match self
            .registered
            .compare_exchange(id.get(), 0, Ordering::Relaxed, Ordering::Relaxed)
        {
            Ok(_) => Leave::HandOff,
            Err(_) => Leave::Quietly,
        }
    }

    /// The registered call, if any.
    ///
    /// # Examples
    ///
    /// See [`ReactorWaiter`].
    #[inline]
    pub fn registered(&self) -> Option<NonZeroUsize> {
        NonZeroUsize::new(self.registered.load(Ordering::Relaxed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_skip_zero_when_the_counter_wraps() {
        let waiter = ReactorWaiter::new();
        waiter.next_id.store(usize::MAX, Ordering::Relaxed);
        assert_eq!(waiter.take_id().get(), usize::MAX);
        assert_eq!(waiter.take_id().get(), 1);
        assert_eq!(waiter.take_id().get(), 2);
    }

    #[test]
    fn a_call_that_re_registers_stays_the_registered_one() {
        let waiter = ReactorWaiter::new();
        let (a, b) = (waiter.take_id(), waiter.take_id());
        waiter.register(a);
        waiter.register(b);
        // `a` polled again and went pending after `b`: the reactor's waker
        // is `a`'s now.
        waiter.register(a);
        assert_eq!(waiter.leave(b), Leave::Quietly);
        assert_eq!(waiter.registered(), Some(a));
        assert_eq!(waiter.leave(a), Leave::HandOff);
        // Leaving twice (a guard cannot, but the word must not care).
        assert_eq!(waiter.leave(a), Leave::Quietly);
        assert_eq!(waiter.registered(), None);
    }

    #[test]
    fn a_leave_after_the_role_was_handed_off_is_quiet() {
        let waiter = ReactorWaiter::new();
        let (a, b) = (waiter.take_id(), waiter.take_id());
        waiter.register(a);
        assert_eq!(waiter.leave(a), Leave::HandOff);
        // `b` was woken by the hand-off and registered in turn.
        waiter.register(b);
        assert_eq!(waiter.leave(a), Leave::Quietly);
        assert_eq!(waiter.registered(), Some(b));
    }
}
