//! The wake-ups the client owes: routing a completion or freeing a slot
//! decides, under the lock, whom to wake ([`Wakeups`]); the waking runs
//! after the lock is released, since wakers and the notifier are calls out
//! to user code.

use super::{Client, Inner, Target};
use crate::uring::wake::Notifier;
use core::task::Waker;

/// Who to wake once the lock is released: a call out to user code (a
/// waker, the notifier) never runs under the lock.
#[derive(Default)]
#[must_use]
pub(super) struct Wakeups {
    /// The submitter's task.
    pub(super) task: Option<Waker>,
    /// The tasks waiting for a credit.
    pub(super) credit: bool,
    /// A thread parked on this slot's flag.
    pub(super) slot: Option<u32>,
    /// Threads parked on these idle flags.
    pub(super) idle: u8,
    /// The driving thread, parked on the client's wake flag.
    pub(super) driver: bool,
}

impl Wakeups {
    pub(super) fn is_empty(&self) -> bool {
        self.task.is_none() && !self.credit && self.slot.is_none() && self.idle == 0 && !self.driver
    }
}

impl<const N: usize, const K: usize> Inner<'_, N, K> {
    /// The threads to wake because something changed (a completion routed,
    /// a credit back) that a thread waiting for anything may want: the idle
    /// ones and a driver. Nothing when no thread parks (the one-thread path).
    pub(super) fn changed(&self) -> Wakeups {
        Wakeups {
            idle: self.idle_mask,
            driver: self.driving && matches!(self.driver_target, Target::Any),
            ..Wakeups::default()
        }
    }

    /// Whom to wake after a slot was freed: a credit is back.
    pub(super) fn released(&self) -> Wakeups {
        Wakeups {
            credit: self.credit_waiting,
            ..self.changed()
        }
    }
}

impl<const N: usize, W: Notifier, const K: usize> Client<'_, N, W, K> {
    /// Wakes what routing or releasing asked for; the lock is not held.
    #[inline]
    pub(super) fn wake(&self, wake: Wakeups) {
        if let Some(w) = wake.task {
            w.wake();
        }
        if wake.credit {
            self.wake_credit_waiters();
        }
        if let Some(flag) = wake.slot.and_then(|i| self.slot_flags.get(i as usize)) {
            flag.notify(&self.notifier);
        }
        if wake.idle != 0 {
            self.wake_idle(wake.idle);
        }
        if wake.driver {
            self.link.client.wake.notify(&self.notifier);
        }
    }

    /// Wakes every task waiting for a credit: each polls again, and those
    /// that find none register again.
    #[cold]
    pub(super) fn wake_credit_waiters(&self) {
        let wakers = {
            let mut inner = self.inner.lock();
            inner.credit_waiting = false;
            core::mem::take(&mut inner.credit_wakers)
        };
        for w in wakers.into_iter().flatten() {
            w.wake();
        }
    }

    #[cold]
    pub(super) fn wake_idle(&self, mask: u8) {
        for (k, flag) in self.idle_flags.iter().enumerate() {
            if mask & (1 << k) != 0 {
                flag.notify(&self.notifier);
            }
        }
    }

    /// Wakes every task waiting for a reply or a credit: each polls again
    /// (and registers its waker again if it must wait on).
    #[cold]
    pub(super) fn wake_tasks(&self) {
        for i in 0..N {
            let (task, _) = self.inner.lock().table.take_waiter(i);
            if let Some(w) = task {
                w.wake();
            }
        }
        self.wake_credit_waiters();
    }

    /// Wakes every waiting submitter, task or thread, so that they see a
    /// latched failure.
    pub(super) fn wake_all(&self) {
        self.wake_tasks();
        for flag in &self.slot_flags {
            flag.notify(&self.notifier);
        }
        let idle = self.inner.lock().idle_mask;
        self.wake_idle(idle);
        self.link.client.wake.notify(&self.notifier);
    }
}
