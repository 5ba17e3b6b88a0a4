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
use crate::uring::reactor::spread::{Spread, Step};
use crate::uring::wake::Notifier;
use crate::uring::{Client, Error, Reply};
use core::future::Future;
use core::num::NonZeroUsize;
use core::pin::Pin;
use core::task::{Context, Poll};

/// What a reactor's poll found for a waiting side.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wake {
    /// The peer wrote the side's notifier (an eventfd).
    Notified,
    /// The connection's socket hung up, or carried bytes the protocol
    /// never sends: the peer is gone now, not a park timeout later.
    #[cfg_attr(
        loom,
        allow(dead_code, reason = "the tokio sides', which loom does not build")
    )]
    HungUp,
}

/// One call of a reactor-driven client, from its start until it leaves
/// (finished or dropped): its id, its polls while it waits, and on drop
/// the hand-off it owes if the reactor would wake it.
///
/// The call's future comes from [`Client::call_on_reactor`], which never
/// wakes its own task: while calls wait, the one the reactor wakes routes
/// the completions (waking the calls they belong to), and a call that
/// leaves while it is that one wakes another. The loom models in
/// `reactor_waiter/loom.rs` run this code with a reactor of their own.
pub(crate) struct OnReactor<'c, 'a, const N: usize, W: Notifier, const K: usize> {
    client: &'c Client<'a, N, W, K>,
    waiter: &'c ReactorWaiter,
    id: NonZeroUsize,
    /// The call's spin, spread over its polls.
    spread: Spread,
}

impl<'c, 'a, const N: usize, W: Notifier, const K: usize> OnReactor<'c, 'a, N, W, K> {
    /// A call of `client`, whose waiting calls `waiter` tracks.
    pub(crate) fn new(client: &'c Client<'a, N, W, K>, waiter: &'c ReactorWaiter) -> Self {
        Self {
            client,
            waiter,
            id: waiter.take_id(),
            spread: Spread::new(),
        }
    }

    /// One poll of the call: its own progress first; while it waits, the
    /// handshake of `uring::reactor` on the client's flag (a spin spread
    /// over polls, yielding to the runtime between turns, then the flag
    /// armed and the ring looked at again), then `reactor` (the eventfd,
    /// and the socket of a service's connection), polled and registered
    /// with as one step. `Pending` leaves the task's waker with the call's
    /// slot and, if this call is the last to wait, with the reactor (or,
    /// between turns of the spin, the task woken); the caller adds its
    /// liveness timer.
    pub(crate) fn poll<F: Future<Output = Result<Reply, Error>>>(
        &mut self,
        mut call: Pin<&mut F>,
        cx: &mut Context<'_>,
        mut reactor: impl FnMut(&mut Context<'_>) -> Poll<Wake>,
    ) -> Poll<Result<Reply, Error>> {
        loop {
            if let Poll::Ready(reply) = call.as_mut().poll(cx) {
                self.client.reactor_found(&mut self.spread);
                return Poll::Ready(reply);
            }
            match self.client.reactor_step(&mut self.spread, cx.waker()) {
                // Completions to route: look again.
                Step::Ready => continue,
                Step::Yield => return Poll::Pending,
                Step::Wait => {}
            }
            // The server gone (latched, so the next poll of the call
            // reports it): look again.
            if self.client.reactor_check(false).is_err() {
                continue;
            }
            // The reactor's poll and the registration as one step: the
            // registered call is the one whose waker the reactor holds.
            match self.waiter.pend(self.id, || reactor(cx)) {
                // The server's wake-up is this call's alone now: the
                // reactor's readiness is cleared and the flag is down (or
                // about to be: the server clears it with a plain store,
                // which may land after another call armed it again). This
                // call may finish without waiting again, so it restores
                // the handshake for the calls that still wait, before it
                // looks at its own: the flag armed, then every completion
                // that arrived routed (waking the calls they belong to).
                // A routing error is latched; the call reports it.
                Poll::Ready(Wake::Notified) => {
                    self.client.reactor_rearm();
                    let _ = self.client.poll_completions();
                }
                // The socket hung up, or carried bytes the protocol never
                // sends: the peer is gone, attached or not.
                Poll::Ready(Wake::HungUp) => self.client.reactor_gone(),
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}

impl<const N: usize, W: Notifier, const K: usize> Drop for OnReactor<'_, '_, N, W, K> {
    fn drop(&mut self) {
        match self.waiter.leave(self.id) {
            Leave::HandOff => self.client.reactor_hand_off(),
            Leave::Quietly => {}
        }
    }
}

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
    use crate::uring::reactor::spread::tests::counting;

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
    fn a_call_on_the_reactor_never_wakes_its_own_task() {
        use crate::HeapRing;
        use crate::uring::{Link, Request, Server, Spin};
        use core::pin::pin;

        let link = Link::new();
        let (sq_tx, sq_rx) = HeapRing::new(2).unwrap();
        let (cq_tx, cq_rx) = HeapRing::new(2).unwrap();
        let client = Client::<2, _>::from_rings(sq_tx, cq_rx, &link, Spin);
        let mut server = Server::from_rings(sq_rx, cq_tx, &link, Spin);
        let (count, waker) = counting();
        let mut cx = Context::from_waker(&waker);
        // A plain async call with nobody driving wakes its task to be
        // polled again (it busy-polls): the reactor's call does not.
        let mut plain = pin!(client.call_async(Request::new(1)));
        assert!(plain.as_mut().poll(&mut cx).is_pending());
        assert_eq!(count.get(), 1);
        let mut call = pin!(client.call_on_reactor(Request::new(2)));
        assert!(call.as_mut().poll(&mut cx).is_pending());
        assert!(call.as_mut().poll(&mut cx).is_pending());
        assert_eq!(count.get(), 1);
        // Its reply, routed by anyone, wakes it.
        for _ in 0..2 {
            let incoming = server.try_recv().unwrap().unwrap();
            let op = incoming.opcode() as i32;
            server.complete(incoming, op * 10, 0).unwrap();
        }
        assert_eq!(client.poll_completions().unwrap(), 2);
        assert!(count.get() >= 2);
        match call.as_mut().poll(&mut cx) {
            Poll::Ready(Ok(reply)) => assert_eq!(reply.result, 20),
            other => panic!("{other:?}"),
        }
        assert!(matches!(plain.as_mut().poll(&mut cx), Poll::Ready(Ok(r)) if r.result == 10));
    }

    /// The call that takes the reactor's wake-up arms the flag again and
    /// routes every completion before it looks at its own reply: its reply
    /// may have been routed meanwhile by another call, and were it to finish
    /// at once, the other call's completion, posted with the flag down,
    /// would wait in the ring for that call's park timeout.
    #[test]
    fn the_call_that_takes_a_wake_up_rearms_and_routes_for_the_others() {
        use crate::HeapRing;
        use crate::uring::{Link, Request, Server, Spin};
        use core::pin::pin;

        let link = Link::new();
        let (sq_tx, sq_rx) = HeapRing::new(2).unwrap();
        let (cq_tx, cq_rx) = HeapRing::new(2).unwrap();
        let mut client = Client::<2, _>::from_rings(sq_tx, cq_rx, &link, Spin);
        // No spin: the first poll goes to the reactor.
        client.set_options(crate::uring::Options {
            spin: 0,
            min_spin: 0,
            ..crate::uring::Options::default()
        });
        let mut server = Server::from_rings(sq_rx, cq_tx, &link, Spin);
        let waiter = ReactorWaiter::new();
        let (_, my_waker) = counting();
        let (theirs, their_waker) = counting();
        let mut on_reactor = OnReactor::new(&client, &waiter);
        let mut mine = pin!(client.call_on_reactor(Request::new(1)));
        let mut other = pin!(client.call_on_reactor(Request::new(2)));
        let mut cx = Context::from_waker(&my_waker);
        assert!(mine.as_mut().poll(&mut cx).is_pending());
        assert!(
            other
                .as_mut()
                .poll(&mut Context::from_waker(&their_waker))
                .is_pending()
        );
        let first = server.try_recv().unwrap().unwrap();
        let second = server.try_recv().unwrap().unwrap();
        let mut answers = Some((first, second));
        // While this call polls the reactor: the server answers it (and its
        // notify takes the flag down), another call routes that answer,
        // then the server answers the other call (no notify: the flag is
        // down), and the reactor reports the first answer's wake-up.
        let polled = on_reactor.poll(mine.as_mut(), &mut cx, |_| match answers.take() {
            Some((first, second)) => {
                assert!(link.client.wake.is_armed());
                server.complete(first, 10, 0).unwrap();
                assert!(!link.client.wake.is_armed());
                assert_eq!(client.poll_completions().unwrap(), 1);
                server.complete(second, 20, 0).unwrap();
                Poll::Ready(Wake::Notified)
            }
            None => Poll::Pending,
        });
        assert!(matches!(polled, Poll::Ready(Ok(r)) if r.result == 10));
        // The other call's reply was routed, its task woken, and the flag
        // is up again for whoever waits next.
        assert_eq!(theirs.get(), 1);
        assert!(link.client.wake.is_armed());
        let mut cx = Context::from_waker(&their_waker);
        assert!(matches!(other.as_mut().poll(&mut cx), Poll::Ready(Ok(r)) if r.result == 20));
    }

    /// A waiting call spins a turn at a time and yields to the runtime
    /// between turns (its task woken at once), so that a server task on
    /// the same worker can run; it goes to the reactor only once its spin
    /// is over.
    #[test]
    fn a_waiting_call_yields_between_turns_of_its_spin() {
        use crate::HeapRing;
        use crate::uring::reactor::spread::CHECKS_PER_TURN;
        use crate::uring::{Link, Request, Server, Spin};
        use core::pin::pin;

        let link = Link::new();
        let (sq_tx, sq_rx) = HeapRing::new(2).unwrap();
        let (cq_tx, cq_rx) = HeapRing::new(2).unwrap();
        let client = Client::<2, _>::from_rings(sq_tx, cq_rx, &link, Spin);
        let mut server = Server::from_rings(sq_rx, cq_tx, &link, Spin);
        assert!(client.options().spin > CHECKS_PER_TURN);
        let waiter = ReactorWaiter::new();
        let (count, waker) = counting();
        let mut cx = Context::from_waker(&waker);
        let mut on_reactor = OnReactor::new(&client, &waiter);
        let mut call = pin!(client.call_on_reactor(Request::new(1)));
        let mut reactor_polls = 0;
        // Submitted, one turn of the spin, then a yield: not registered
        // with the reactor, the flag down, the task woken to go on.
        let polled = on_reactor.poll(call.as_mut(), &mut cx, |_| {
            reactor_polls += 1;
            Poll::Pending
        });
        assert!(polled.is_pending());
        assert_eq!(count.get(), 1);
        assert_eq!(reactor_polls, 0);
        assert!(!link.client.wake.is_armed());
        assert_eq!(waiter.registered(), None);
        // The server runs meanwhile; the next poll finds the reply.
        let incoming = server.try_recv().unwrap().unwrap();
        server.complete(incoming, 10, 0).unwrap();
        let polled = on_reactor.poll(call.as_mut(), &mut cx, |_| {
            reactor_polls += 1;
            Poll::Pending
        });
        assert!(matches!(polled, Poll::Ready(Ok(r)) if r.result == 10));
        assert_eq!(reactor_polls, 0);
        drop(on_reactor);
        assert_eq!(client.in_flight(), 0);
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
