//! What a reactor-driven client (the `tokio` feature) asks of the client:
//! the steps of `uring::reactor` on the client's lines and state.

use super::Client;
use crate::uring::Error;
use crate::uring::reactor;
use crate::uring::reactor::spread::{Spread, Step};
use crate::uring::wake::Notifier;
use core::task::Waker;

impl<const N: usize, W: Notifier, const K: usize> Client<'_, N, W, K> {
    /// One step of a waiting call's spin (see [`Spread`]), after
    /// publishing what was consumed: [`Step::Ready`] when completions wait
    /// to be routed.
    pub(crate) fn reactor_step(&self, spread: &mut Spread, waker: &Waker) -> Step {
        let (options, mut budget) = {
            let mut inner = self.inner.lock();
            inner.publish_inbound();
            (inner.options, inner.spin_budget)
        };
        let step = spread.step(&self.link.client, &options, &mut budget, waker, || {
            !self.inner.lock().cq.is_empty()
        });
        self.inner.lock().spin_budget = budget;
        step
    }

    /// A waiting call's reply came while its `spread` was under way
    /// (routed by another call): the phase ends as a spin that found it.
    pub(crate) fn reactor_found(&self, spread: &mut Spread) {
        // Most replies come at a poll's first look, with no phase to end:
        // no lock then.
        if spread.is_under_way() {
            spread.found(&mut self.inner.lock().spin_budget);
        }
    }

    /// Arms the client's wake flag again after a waiting call took the
    /// server's wake-up from the reactor: the calls that still wait count
    /// on the flag being up (see `reactor_waiter::OnReactor::poll`). The
    /// caller routes the completion ring next.
    pub(crate) fn reactor_rearm(&self) {
        self.link.client.wake.arm();
    }

    /// Runs the liveness checks (see `reactor::check`); once the server is
    /// gone, latches it and wakes every waiter, so each future resolves to
    /// [`Error::PeerGone`] (after its reply, if that was posted).
    pub(crate) fn reactor_check(&self, parked: bool) -> Result<(), Error> {
        let (mut watch, options) = {
            let inner = self.inner.lock();
            (inner.watch, inner.options)
        };
        let alive = reactor::check(
            &self.link.client,
            &self.link.server,
            &self.notifier,
            &options,
            &mut watch,
            parked,
        );
        {
            let mut inner = self.inner.lock();
            // A concurrent check may have latched first: keep a latch.
            if !inner.watch.is_gone() {
                inner.watch = watch;
            }
        }
        if alive {
            Ok(())
        } else {
            self.wake_all();
            Err(Error::PeerGone)
        }
    }

    /// Latches the server gone (its connection's socket hung up) and wakes
    /// every waiter, so each future resolves to [`Error::PeerGone`] (after
    /// its reply, if that was posted).
    pub(crate) fn reactor_gone(&self) {
        self.inner.lock().watch.latch_gone();
        self.wake_all();
    }

    /// Wakes one task that waits for a reply, or failing that those that
    /// wait for a credit: a waiter that leaves while it was the one the
    /// reactor would wake hands that role on.
    pub(crate) fn reactor_hand_off(&self) {
        let (task, credit) = {
            let mut inner = self.inner.lock();
            let task = (0..N).find_map(|i| inner.table.take_waiter(i).0);
            (task, inner.credit_waiting)
        };
        // Woken after the lock is released: a call out to the executor.
        match task {
            Some(w) => w.wake(),
            None if credit => self.wake_credit_waiters(),
            None => {}
        }
    }

    /// The client's notifier.
    #[cfg_attr(
        loom,
        allow(dead_code, reason = "the tokio client's, which loom does not build")
    )]
    pub(crate) fn notifier(&self) -> &W {
        &self.notifier
    }
}
