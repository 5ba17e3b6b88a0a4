//! Which of the calls waiting on a reactor-driven client the reactor wakes,
//! and the hand-off when that call leaves.
//!
//! A reactor keeps one waker per readiness (tokio's `AsyncFd` keeps the
//! last task that polled it), so of the calls that wait at once only the
//! last to poll the reactor is woken when the eventfd turns readable. Each
//! call takes an id; each time it goes pending it polls the reactor and
//! registers its id as one step under a lock ([`ReactorWaiter::pend`]), so
//! the registered call is always the one whose waker the reactor holds; as
//! it leaves (finished or dropped) it finds out, under the same lock,
//! whether it still is the registered call, and if so it owes the others a
//! hand-off: one of them is woken, to poll the reactor for itself. Checked
//! by the loom models in `reactor_waiter/loom.rs`.
//!
//! Were the poll and the registration two steps, two calls going pending at
//! once on two threads could poll in one order and register in the other:
//! the registration would name a call whose waker the reactor no longer
//! holds, the leave of the call it does hold would owe nothing, and the
//! other call would wait for its park timeout. The lock closes that.

use crate::loom::sync::SpinLock;
use crate::loom::sync::atomic::{AtomicUsize, Ordering};
use core::num::NonZeroUsize;
use core::task::Poll;

/// The id of the waiting call the reactor wakes, and the source of call
/// ids. Crate-internal: the tokio client's, and its loom models'
/// (`reactor_waiter/loom.rs`).
pub(crate) struct ReactorWaiter {
    /// The registered call's id; 0 for none. Held while a call polls the
    /// reactor, so that the poll and the registration are one step.
    registered: SpinLock<usize>,
    /// The next id to hand out (0 is skipped when it wraps).
    next_id: AtomicUsize,
}

impl core::fmt::Debug for ReactorWaiter {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        // `try_lock`: formatting from inside `pend`'s poll must not deadlock.
        let registered = self.registered.try_lock().map(|id| NonZeroUsize::new(*id));
        f.debug_struct("ReactorWaiter")
            .field("registered", &registered)
            .finish_non_exhaustive()
    }
}

/// What a leaving call owes the calls that still wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use]
pub(crate) enum Leave {
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
    pub(crate) fn new() -> Self {
        Self {
            registered: SpinLock::new(0),
            next_id: AtomicUsize::new(1),
        }
    }

    /// A fresh id for a call: never 0, and not handed out again until the
    /// counter wraps.
    #[inline]
    pub(crate) fn take_id(&self) -> NonZeroUsize {
        loop {
            let id = self.next_id.fetch_add(1, Ordering::Relaxed);
            if let Some(id) = NonZeroUsize::new(id) {
                return id;
            }
        }
    }

    /// Call `id` polls the reactor with `poll` (which leaves the call's
    /// waker with the reactor when it returns `Pending`) and, if it is
    /// pending, registers as the call the reactor wakes: both under the
    /// registration's lock, so no other call polls or registers between
    /// them.
    #[inline]
    pub(crate) fn pend<T>(&self, id: NonZeroUsize, poll: impl FnOnce() -> Poll<T>) -> Poll<T> {
        let mut registered = self.registered.lock();
        let polled = poll();
        if polled.is_pending() {
            *registered = id.get();
        }
        polled
    }

    /// Call `id` leaves (finished or dropped): clears the registration if
    /// it is still `id`'s, never another call's, and says whether a
    /// hand-off is owed.
    #[inline]
    pub(crate) fn leave(&self, id: NonZeroUsize) -> Leave {
        let mut registered = self.registered.lock();
        if *registered == id.get() {
            *registered = 0;
            Leave::HandOff
        } else {
            Leave::Quietly
        }
    }

    /// The registered call, if any: what the tests and models check.
    #[cfg(test)]
    pub(crate) fn registered(&self) -> Option<NonZeroUsize> {
        NonZeroUsize::new(*self.registered.lock())
    }
}

// Loom models; once on real threads without loom. Not under Miri.
#[cfg(all(test, feature = "std", not(miri)))]
mod loom;

// Plain unit tests: loom's atomics work only inside a model.
#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_new_waiter_has_none_registered_and_ids_from_one() {
        let waiter = ReactorWaiter::new();
        assert_eq!(waiter.registered(), None);
        assert_eq!(waiter.take_id().get(), 1);
        assert_ne!(waiter.take_id(), waiter.take_id());
    }

    #[test]
    fn a_ready_poll_registers_nothing_a_pending_one_registers() {
        let waiter = ReactorWaiter::new();
        let id = waiter.take_id();
        assert_eq!(waiter.pend(id, || Poll::Ready(7)), Poll::Ready(7));
        assert_eq!(waiter.registered(), None);
        assert_eq!(waiter.pend(id, || Poll::<u8>::Pending), Poll::Pending);
        assert_eq!(waiter.registered(), Some(id));
    }

    #[test]
    fn a_call_that_never_went_pending_leaves_quietly() {
        let waiter = ReactorWaiter::new();
        let id = waiter.take_id();
        assert_eq!(waiter.leave(id), Leave::Quietly);
        pending(&waiter, id);
        assert_eq!(waiter.leave(id), Leave::HandOff);
    }

    #[test]
    fn the_last_call_to_pend_is_the_one_the_reactor_wakes() {
        let waiter = ReactorWaiter::new();
        let (a, b) = (waiter.take_id(), waiter.take_id());
        // Each polls the reactor (here: nothing ready) and registers.
        pending(&waiter, a);
        pending(&waiter, b);
        // `a` is no longer the one the reactor wakes: it leaves quietly.
        assert_eq!(waiter.leave(a), Leave::Quietly);
        assert_eq!(waiter.registered(), Some(b));
        // `b` is: its leave hands the role on.
        assert_eq!(waiter.leave(b), Leave::HandOff);
        assert_eq!(waiter.registered(), None);
    }

    /// Call `id` goes pending: the reactor had nothing for it.
    fn pending(waiter: &ReactorWaiter, id: NonZeroUsize) {
        assert_eq!(waiter.pend(id, || Poll::<()>::Pending), Poll::Pending);
    }

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
        pending(&waiter, a);
        pending(&waiter, b);
        // `a` polled again and went pending after `b`: the reactor's waker
        // is `a`'s now.
        pending(&waiter, a);
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
        pending(&waiter, a);
        assert_eq!(waiter.leave(a), Leave::HandOff);
        // `b` was woken by the hand-off and registered in turn.
        pending(&waiter, b);
        assert_eq!(waiter.leave(a), Leave::Quietly);
        assert_eq!(waiter.registered(), Some(b));
    }
}
