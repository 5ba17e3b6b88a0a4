//! Submission, and the routing of completions to their submitters.

use super::wakeups::Wakeups;
use super::{Client, Inner, Target};
use crate::uring::entry::CQE_IN_PLACE;
use crate::uring::entry::{Cqe, Sqe};
use crate::uring::request::{Request, Ticket};
use crate::uring::table::{Completed, Place};
use crate::uring::wake::Notifier;
use crate::uring::{Error, Rejected};
use core::task::Waker;

impl<'a, const N: usize, W: Notifier, const K: usize> Client<'a, N, W, K> {
    /// Submits a request if a credit is free, without waiting: the
    /// non-blocking twin of [`submit`](Self::submit). Redeem the ticket
    /// with [`wait`](Self::wait) or [`try_wait`](Self::try_wait).
    ///
    /// # Errors
    ///
    /// [`Error::Busy`] when every credit is in use, [`Error::Foreign`] for a
    /// block of another client, [`Error::PeerGone`] / [`Error::Corrupted`]
    /// once latched. The request comes back with the error.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[cfg(feature = "alloc")] {
    /// use uring_queue::HeapRing;
    /// use uring_queue::uring::{Client, Error, Link, Request, Spin};
    ///
    /// let link = Link::new();
    /// let (sq, _sq_rx) = HeapRing::new(2).unwrap();
    /// let (_cq_tx, cq) = HeapRing::new(2).unwrap();
    /// let client = Client::<2, _>::from_rings(sq, cq, &link, Spin);
    /// let a = client.try_submit(Request::new(1)).unwrap();
    /// let b = client.try_submit(Request::new(2)).unwrap();
    /// // Two credits, both used: the third waits for a completion.
    /// let rejected = client.try_submit(Request::new(3)).unwrap_err();
    /// assert_eq!(rejected.error, Error::Busy);
    /// assert_eq!(rejected.value.opcode, 3);
    /// assert_ne!(a.user_data(), b.user_data());
    /// # client.cancel(a).unwrap(); client.cancel(b).unwrap();
    /// # }
    /// ```
    pub fn try_submit(&self, request: Request) -> Result<Ticket, Rejected<Request>> {
        self.submit_with(request, None)
    }

    /// [`try_submit`](Self::try_submit), with the submitter's waker
    /// registered in the same critical section. `waker` is dropped after
    /// the lock is released (parameters drop after locals).
    #[inline]
    pub(super) fn submit_with(
        &self,
        request: Request,
        waker: Option<Waker>,
    ) -> Result<Ticket, Rejected<Request>> {
        let reject = |error, value| Err(Rejected { error, value });
        let (payload, response) = match (
            self.check_owner(&request.payload),
            self.check_owner(&request.response),
        ) {
            (Ok(p), Ok(r)) => (p, r),
            _ => return reject(Error::Foreign, request),
        };
        let mut inner = self.inner.lock();
        if let Some(e) = inner.failure() {
            return reject(e, request);
        }
        let vacancy = match inner.table.vacancy() {
            Ok(vacancy) => vacancy,
            Err(Error::Busy) => return reject(Error::Busy, request),
            Err(e) => {
                inner.corrupted = true;
                return reject(e, request);
            }
        };
        let sqe = Sqe {
            user_data: vacancy.tag.user_data(),
            opcode: request.opcode,
            flags: request.flags,
            payload_offset: u64::from(payload.offset),
            payload_len: payload.len,
            response_len: response.len,
            response_offset: u64::from(response.offset),
        };
        inner.publish_inbound();
        match inner.sq.push(sqe) {
            Ok(()) => {}
            // Credits never exceed the submission ring's capacity, so only
            // a server that stopped consuming leaves it full.
            Err(crate::PushError::Full(_)) => return reject(Error::Busy, request),
            Err(_) => {
                inner.corrupted = true;
                return reject(Error::Corrupted, request);
            }
        }
        inner.table.occupy(vacancy, waker, payload, response);
        drop(inner);
        self.link.server.wake.notify(&self.notifier);
        self.link.client.beat();
        Ok(Ticket {
            tag: vacancy.tag,
            owner: self.owner,
        })
    }

    /// Submits a request, blocking while every credit is in use (routing
    /// completions and parking meanwhile), and returns its ticket without
    /// waiting for the reply: several can be in flight from one thread.
    /// [`try_submit`](Self::try_submit) never blocks;
    /// [`call`](Self::call) also waits for the reply.
    ///
    /// # Errors
    ///
    /// As [`try_submit`](Self::try_submit); [`Error::Busy`] only when
    /// waiting cannot help: every slot holds a reply nobody has taken yet.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[cfg(feature = "alloc")] {
    /// use uring_queue::HeapRing;
    /// use uring_queue::uring::{Client, Link, Request, Server, Spin};
    ///
    /// let link = Link::new();
    /// let (sq_tx, sq_rx) = HeapRing::new(4).unwrap();
    /// let (cq_tx, cq_rx) = HeapRing::new(4).unwrap();
    /// let client = Client::<4, _>::from_rings(sq_tx, cq_rx, &link, Spin);
    /// let mut server = Server::from_rings(sq_rx, cq_tx, &link, Spin);
    /// // Pipelined: four in flight, answered in reverse order.
    /// let tickets: Vec<_> = (0..4).map(|i| client.submit(Request::new(i)).unwrap()).collect();
    /// let incoming: Vec<_> = (0..4).map(|_| server.recv().unwrap()).collect();
    /// for inc in incoming.into_iter().rev() {
    ///     let op = inc.opcode() as i32;
    ///     server.complete(inc, op * 10, 0).unwrap();
    /// }
    /// for (i, t) in tickets.into_iter().enumerate() {
    ///     assert_eq!(client.wait(t).unwrap().result, i as i32 * 10);
    /// }
    /// # }
    /// ```
    pub fn submit(&self, mut request: Request) -> Result<Ticket, Error> {
        loop {
            match self.try_submit(request) {
                Ok(ticket) => return Ok(ticket),
                Err(Rejected {
                    error: Error::Busy,
                    value,
                }) => request = value,
                Err(r) => return Err(r.error),
            }
            if self.poll_completions()? == 0 {
                if self.inner.lock().table.outstanding() == 0 {
                    // Nothing will arrive: the slots hold untaken replies.
                    return Err(Error::Busy);
                }
                self.park()?;
            }
        }
    }

    /// Moves every completion that has arrived to its slot and wakes its
    /// submitter. Returns how many arrived.
    ///
    /// # Errors
    ///
    /// [`Error::Corrupted`] (latched) for a completion naming no request in
    /// flight or a response longer than its block.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[cfg(feature = "alloc")] {
    /// use uring_queue::HeapRing;
    /// use uring_queue::uring::{Client, Link, Request, Server, Spin};
    ///
    /// let link = Link::new();
    /// let (sq_tx, sq_rx) = HeapRing::new(4).unwrap();
    /// let (cq_tx, cq_rx) = HeapRing::new(4).unwrap();
    /// let client = Client::<4, _>::from_rings(sq_tx, cq_rx, &link, Spin);
    /// let mut server = Server::from_rings(sq_rx, cq_tx, &link, Spin);
    /// let t = client.try_submit(Request::new(1)).unwrap();
    /// assert_eq!(client.poll_completions(), Ok(0));
    /// let incoming = server.recv().unwrap();
    /// server.complete(incoming, 0, 0).unwrap();
    /// assert_eq!(client.poll_completions(), Ok(1));
    /// assert!(client.try_wait(t).is_ok());
    /// # }
    /// ```
    pub fn poll_completions(&self) -> Result<usize, Error> {
        let mut n = 0;
        loop {
            // Completions that wake nobody are routed under one lock; one
            // that wakes someone ends the run, and its wake-up runs after
            // the lock is released (so a woken task may submit at once,
            // before the rest are taken).
            let mut wake = Wakeups::default();
            let (corrupted, drained) = {
                let mut inner = self.inner.lock();
                loop {
                    if inner.corrupted {
                        break (true, true);
                    }
                    let cqe = match inner.cq.pop() {
                        Ok(cqe) => cqe,
                        Err(crate::RingError::Empty) => break (false, true),
                        Err(_) => {
                            inner.corrupted = true;
                            continue;
                        }
                    };
                    match inner.route(&cqe) {
                        Ok(w) => {
                            n += 1;
                            if !w.is_empty() {
                                wake = w;
                                break (false, false);
                            }
                        }
                        Err(_) => inner.corrupted = true,
                    }
                }
            };
            self.wake(wake);
            if corrupted {
                self.wake_all();
                return Err(Error::Corrupted);
            }
            if drained {
                return Ok(n);
            }
        }
    }
}

impl<const N: usize, const K: usize> Inner<'_, N, K> {
    /// Applies one completion. Returns whom to wake: the submitter (its
    /// task, or its thread if parked, or the driver if it is the driver's)
    /// and those waiting for a credit or any completion.
    fn route(&mut self, cqe: &Cqe) -> Result<Wakeups, Error> {
        let place = match cqe.reserved {
            0 => Place::ResponseBlock,
            CQE_IN_PLACE => Place::RequestBlock,
            // A bit this client does not know: it cannot tell where the
            // response is.
            _ => return Err(Error::Corrupted),
        };
        let response = (cqe.response_len, place);
        let completed = self
            .table
            .complete_in(cqe.user_data, cqe.result, cqe.flags, response)?;
        Ok(match completed {
            Completed::Reply {
                index,
                task,
                parked,
            } => {
                let mut wake = self.changed();
                wake.task = task;
                wake.slot = parked.then_some(index);
                wake.driver |= self.driving
                    && matches!(self.driver_target, Target::Reply(t) if t.index == index);
                // A ring credit came back.
                wake.credit = self.credit_waiting;
                wake
            }
            Completed::Discarded { payload, response } => {
                self.alloc.free(payload);
                self.alloc.free(response);
                self.released()
            }
        })
    }
}
