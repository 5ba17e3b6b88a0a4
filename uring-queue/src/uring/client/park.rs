//! Parking: how a thread of the client waits for a completion. One thread
//! at a time *drives*: it runs the connection's park round on the client's
//! wake flag, which the server notifies, and judges the server's liveness.
//! The others are *followers*: each parks on a flag of its own, which
//! whoever routes its reply, or hands the driving role on, notifies.

use super::{Client, IDLE, Target};
use crate::loom::thread;
use crate::uring::park::{self, Round, SpinBudget};
use crate::uring::wake::{Notifier, WakeFlag};
use crate::uring::{Error, Options};

/// How a thread waits in [`Client::park`]: as the driver, on the client's
/// wake flag; on a flag of its own (its reply's slot's, or an idle one); or,
/// when every idle flag is taken, by yielding.
enum Role {
    Driver,
    Slot(u32),
    Idle(usize),
    Yield,
}

impl<const N: usize, W: Notifier, const K: usize> Client<'_, N, W, K> {
    /// Waits (spins, then parks on the client's wake flag) until a completion
    /// is available or one park round passes, then runs the liveness checks.
    /// If another thread already parks on that flag (it *drives*), parks on
    /// a flag of its own instead, until a completion is routed, a credit
    /// comes back or the driving role comes free.
    ///
    /// # Errors
    ///
    /// [`Error::PeerGone`] once the server closed, exited, restarted or went
    /// silent, and nothing is left to read; [`Error::Corrupted`] if latched.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[cfg(feature = "alloc")] {
    /// use uring_queue::HeapRing;
    /// use uring_queue::uring::{Client, Error, Link, Server, Spin};
    ///
    /// let link = Link::new();
    /// let (sq_tx, sq_rx) = HeapRing::new(4).unwrap();
    /// let (cq_tx, cq_rx) = HeapRing::new(4).unwrap();
    /// let client = Client::<4, _>::from_rings(sq_tx, cq_rx, &link, Spin);
    /// let server = Server::from_rings(sq_rx, cq_tx, &link, Spin);
    /// drop(server);
    /// assert_eq!(client.park(), Err(Error::PeerGone));
    /// # }
    /// ```
    pub fn park(&self) -> Result<(), Error> {
        self.park_on(Target::Any)
    }

    /// Waits until `target` may have changed: a completion is on the ring,
    /// the reply was routed (by another thread), the driving role came
    /// free, or one park round passed.
    ///
    /// One thread at a time drives: it parks on the client's wake flag,
    /// which the server notifies, and runs the liveness checks. A thread
    /// that finds another driving parks on a flag of its own (its slot's,
    /// or an idle one), which whoever routes its reply or frees the role
    /// notifies. Every flag has one waiter, so the handshake of
    /// [`WakeFlag`] holds for each: the waiter arms, then re-checks under
    /// the lock; the waker changes the state under the lock, then notifies.
    pub(super) fn park_on(&self, target: Target) -> Result<(), Error> {
        let (options, mut budget) = {
            let inner = self.inner.lock();
            if let Some(e) = inner.failure() {
                return if inner.ready(target) {
                    // Another thread routed our completion: take it first.
                    Ok(())
                } else {
                    Err(e)
                };
            }
            (inner.options, inner.spin_budget)
        };
        if budget.spin(&options, || self.inner.lock().ready(target)) {
            self.inner.lock().spin_budget = budget;
            return Ok(());
        }
        let role = match self.take_role(target, budget, &options) {
            Ok(Some(role)) => role,
            Ok(None) => return Ok(()),
            Err(e) => return Err(e),
        };
        match role {
            Role::Driver => self.drive(target, &options),
            Role::Slot(index) => {
                if let Some(flag) = self.slot_flags.get(index as usize) {
                    self.park_follower(flag, target, &options);
                }
                let mut inner = self.inner.lock();
                if let Some(slot) = inner.table.slot_at(index) {
                    slot.parked = false;
                }
                inner.parked_slots -= 1;
                Ok(())
            }
            Role::Idle(k) => {
                if let Some(flag) = self.idle_flags.get(k) {
                    self.park_follower(flag, target, &options);
                }
                self.inner.lock().idle_mask &= !(1 << k);
                Ok(())
            }
            Role::Yield => {
                thread::yield_now();
                Ok(())
            }
        }
    }

    /// After the spin, under the lock: publishes what was consumed, and
    /// either finds the wait over (`None`) or takes a role: the driving one
    /// if it is free, else a flag of the thread's own.
    fn take_role(
        &self,
        target: Target,
        mut budget: SpinBudget,
        options: &Options,
    ) -> Result<Option<Role>, Error> {
        let mut inner = self.inner.lock();
        inner.publish_inbound();
        if let Some(e) = inner.failure() {
            return if inner.ready(target) {
                Ok(None)
            } else {
                Err(e)
            };
        }
        if inner.ready(target) {
            budget.came_just_after(options);
        }
        inner.spin_budget = budget;
        if inner.ready(target) {
            return Ok(None);
        }
        let role = if !inner.driving {
            inner.driving = true;
            inner.driver_target = target;
            Role::Driver
        } else if let Target::Reply(tag) = target {
            if let Some(slot) = inner.table.slot_at(tag.index) {
                slot.parked = true;
            }
            inner.parked_slots += 1;
            Role::Slot(tag.index)
        } else if let Some(k) = (0..IDLE).find(|k| inner.idle_mask & (1 << k) == 0) {
            inner.idle_mask |= 1 << k;
            Role::Idle(k)
        } else {
            Role::Yield
        };
        Ok(Some(role))
    }

    /// A park round as the driver (the connection's one park round, see
    /// `uring::park`), on the client's wake flag; then the role handed on.
    fn drive(&self, target: Target, options: &Options) -> Result<(), Error> {
        let mut watch = self.inner.lock().watch;
        // Liveness is judged by the driver alone, once per round (heartbeats
        // count rounds), and outside the lock: the notifier may make system
        // calls.
        let round = park::park_round(
            &self.link.client,
            &self.link.server,
            &self.notifier,
            options,
            &mut watch,
            || self.inner.lock().ready(target),
        );
        let (tasks, parked, idle, settled) = {
            let mut inner = self.inner.lock();
            // The driver is the only writer of `watch`.
            inner.watch = watch;
            if round == Round::Ready {
                inner.spin_budget.came_just_after(options);
            }
            inner.driving = false;
            (
                core::mem::take(&mut inner.tasks_wait_on_driver),
                inner.parked_slots != 0,
                inner.idle_mask,
                // Looked at again under this lock: another thread may have
                // drained the ring, and routed our completion, since the
                // round looked.
                !inner.ready(target),
            )
        };
        // Hand the role on: every parked thread re-checks, and one drives;
        // tasks that counted on this driver poll again, and drive
        // themselves if nobody else does.
        if tasks {
            self.wake_tasks();
        }
        if parked {
            for flag in &self.slot_flags {
                flag.notify(&self.notifier);
            }
        }
        if idle != 0 {
            self.wake_idle(idle);
        }
        if round != Round::PeerGone || !settled {
            return Ok(());
        }
        self.wake_all();
        Err(Error::PeerGone)
    }

    /// A park round on a thread's own `flag` while another thread drives:
    /// it sleeps only while the driver is still there, nothing is to be
    /// routed, its wait is not over, and no failure is latched.
    fn park_follower(&self, flag: &WakeFlag, target: Target, options: &Options) {
        let _skipped = flag.park(&self.notifier, options.park_timeout, || {
            let inner = self.inner.lock();
            !(inner.driving && !inner.ready(target) && inner.failure().is_none())
        });
    }
}
