//! Waiting for replies: blocking waits, non-blocking checks, cancellation,
//! the blocking call, and a minimal executor for the client's futures.

use super::wakeups::Wakeups;
use super::{Client, Target};
use crate::uring::request::{Reply, Request, Ticket};
use crate::uring::table::{Cancelled, Polled};
use crate::uring::wake::Notifier;
use crate::uring::{Error, Rejected};
use core::future::Future;
use core::pin::pin;
use core::task::{Context, Poll, Waker};

impl<const N: usize, W: Notifier, const K: usize> Client<'_, N, W, K> {
    /// Takes the reply if it has arrived, else hands the ticket back with
    /// [`Error::NotReady`].
    ///
    /// # Errors
    ///
    /// [`Error::NotReady`], [`Error::Foreign`] for another client's ticket,
    /// [`Error::PeerGone`] / [`Error::Corrupted`] once latched.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[cfg(feature = "alloc")] {
    /// use uring_queue::HeapRing;
    /// use uring_queue::uring::{Client, Error, Link, Request, Server, Spin};
    ///
    /// let link = Link::new();
    /// let (sq_tx, sq_rx) = HeapRing::new(4).unwrap();
    /// let (cq_tx, cq_rx) = HeapRing::new(4).unwrap();
    /// let client = Client::<4, _>::from_rings(sq_tx, cq_rx, &link, Spin);
    /// let mut server = Server::from_rings(sq_rx, cq_tx, &link, Spin);
    /// let t = client.try_submit(Request::new(1)).unwrap();
    /// let t = client.try_wait(t).unwrap_err();
    /// assert_eq!(t.error, Error::NotReady);
    /// let incoming = server.recv().unwrap();
    /// server.complete(incoming, 5, 0).unwrap();
    /// assert_eq!(client.try_wait(t.value).unwrap().result, 5);
    /// # }
    /// ```
    pub fn try_wait(&self, ticket: Ticket) -> Result<Reply, Rejected<Ticket>> {
        if let Err(error) = self.poll_completions() {
            return Err(Rejected {
                error,
                value: ticket,
            });
        }
        match self.poll_ticket(&ticket, None) {
            Poll::Ready(Ok(reply)) => Ok(reply),
            Poll::Ready(Err(error)) => Err(Rejected {
                error,
                value: ticket,
            }),
            Poll::Pending => Err(Rejected {
                error: Error::NotReady,
                value: ticket,
            }),
        }
    }

    /// Checks one ticket; registers `waker` if not complete.
    pub(super) fn poll_ticket(
        &self,
        ticket: &Ticket,
        waker: Option<&Waker>,
    ) -> Poll<Result<Reply, Error>> {
        if ticket.owner != self.owner {
            return Poll::Ready(Err(Error::Foreign));
        }
        // Cloned only when the slot holds no waker that wakes the same
        // task, and outside the lock (a clone is a call out to the
        // executor): then the lock is taken again and the state looked at
        // afresh.
        let mut new: Option<Waker> = None;
        loop {
            let mut inner = self.inner.lock();
            let replaced = match inner.table.poll(ticket.tag, waker, &mut new) {
                Err(e) => return Poll::Ready(Err(e)),
                Ok(Polled::Reply(reply)) => {
                    let wake = inner.released();
                    drop(inner);
                    self.wake(wake);
                    return Poll::Ready(Ok(reply));
                }
                Ok(Polled::NeedsWaker) => {
                    drop(inner);
                    new = waker.cloned();
                    continue;
                }
                Ok(Polled::Pending { replaced }) => replaced,
            };
            let failure = inner.failure();
            // A failure latched (by the driving thread) after our reply was
            // posted but before anyone routed it: the reply is on the ring,
            // so route it and look again rather than report the peer gone.
            // This ends: a tag completes at most once (a second completion
            // latches `Corrupted`), and nothing is submitted once the failure
            // is latched.
            let unrouted = failure == Some(Error::PeerGone) && !inner.cq.is_empty();
            drop(inner);
            drop(replaced);
            if unrouted {
                if let Err(e) = self.poll_completions() {
                    return Poll::Ready(Err(e));
                }
                continue;
            }
            drop(new);
            return match failure {
                Some(e) => Poll::Ready(Err(e)),
                None => Poll::Pending,
            };
        }
    }

    /// Waits for a submitted request's reply (spinning, then parking).
    ///
    /// # Errors
    ///
    /// [`Error::PeerGone`] (the server went away before replying),
    /// [`Error::Corrupted`], [`Error::Foreign`] for another client's ticket.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[cfg(feature = "alloc")] {
    /// use uring_queue::uring::{Config, Request, Spin, Uring};
    /// use uring_queue::AlignedBuf;
    ///
    /// let mut mem = AlignedBuf::zeroed(8192).unwrap();
    /// let uring = Uring::init(mem.region(), Config::new(4, 4, 0)).unwrap();
    /// let (client, mut server) = uring.split::<4, _, _>(Spin, Spin);
    /// std::thread::scope(|s| {
    ///     let ticket = client.try_submit(Request::new(4)).unwrap();
    ///     s.spawn(move || {
    ///         let incoming = server.recv().unwrap();
    ///         server.complete(incoming, 40, 0).unwrap();
    ///     });
    ///     // Blocks until the server thread has answered.
    ///     assert_eq!(client.wait(ticket).unwrap().result, 40);
    /// });
    /// # }
    /// ```
    pub fn wait(&self, ticket: Ticket) -> Result<Reply, Error> {
        loop {
            self.poll_completions()?;
            if let Poll::Ready(r) = self.poll_ticket(&ticket, None) {
                return r;
            }
            self.park_on(Target::Reply(ticket.tag))?;
        }
    }

    /// Gives a request up. Its slot (and blocks) stay reserved until the
    /// completion arrives, which is then discarded, so its tag is never
    /// reused while the server may still answer it.
    ///
    /// # Errors
    ///
    /// [`Error::Foreign`] for another client's ticket.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[cfg(feature = "alloc")] {
    /// # use uring_queue::uring::{Config, Request, Spin, Uring};
    /// # use uring_queue::AlignedBuf;
    /// # let mut mem = AlignedBuf::zeroed(8192).unwrap();
    /// # let uring = Uring::init(mem.region(), Config::new(4, 4, 1024)).unwrap();
    /// # let (client, mut server) = uring.split::<4, _, _>(Spin, Spin);
    /// use uring_queue::uring::Error;
    ///
    /// let body = client.alloc(64).unwrap();
    /// let ticket = client.try_submit(Request::new(1).with_payload(body)).unwrap();
    /// let user_data = ticket.user_data();
    /// client.cancel(ticket).unwrap();
    /// // The server may still answer it: the slot and the block stay taken
    /// // until it does, and the late reply is then discarded.
    /// assert_eq!((client.in_flight(), client.blocks_in_use()), (1, 1));
    /// let incoming = server.try_recv().unwrap().unwrap();
    /// assert_eq!(incoming.user_data(), user_data);
    /// server.complete(incoming, 0, 0).unwrap();
    /// client.poll_completions().unwrap();
    /// assert_eq!((client.in_flight(), client.blocks_in_use()), (0, 0));
    /// # }
    /// ```
    pub fn cancel(&self, ticket: Ticket) -> Result<(), Error> {
        if ticket.owner != self.owner {
            return Err(Error::Foreign);
        }
        let mut inner = self.inner.lock();
        let (old, wake) = match inner.table.cancel(ticket.tag)? {
            Cancelled::Abandoned { waker } => (waker, Wakeups::default()),
            Cancelled::Released { payload, response } => {
                inner.alloc.free(payload);
                inner.alloc.free(response);
                (None, inner.released())
            }
        };
        drop(inner);
        drop(old);
        self.wake(wake);
        Ok(())
    }

    /// Submits a request and blocks until its reply is back: waits for a
    /// credit first if all are in use ([`submit`](Self::submit)), then for
    /// the reply ([`wait`](Self::wait)). [`call_async`](Self::call_async) is
    /// its async twin.
    ///
    /// # Errors
    ///
    /// As [`try_submit`](Self::try_submit) (except [`Error::Busy`], which it
    /// waits out) and [`wait`](Self::wait).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[cfg(feature = "alloc")] {
    /// use uring_queue::uring::{Config, Request, Spin, Uring};
    /// use uring_queue::AlignedBuf;
    ///
    /// let mut mem = AlignedBuf::zeroed(8192).unwrap();
    /// let uring = Uring::init(mem.region(), Config::new(1, 1, 0)).unwrap();
    /// let (client, mut server) = uring.split::<1, _, _>(Spin, Spin);
    /// std::thread::scope(|s| {
    ///     s.spawn(move || {
    ///         while let Ok(incoming) = server.recv() {
    ///             let op = incoming.opcode() as i32;
    ///             server.complete(incoming, op * op, 0).unwrap();
    ///         }
    ///     });
    ///     // One credit: each call waits for it, then for its reply.
    ///     let squares: Vec<i32> = (1..=4).map(|i| client.call(Request::new(i)).unwrap().result).collect();
    ///     assert_eq!(squares, [1, 4, 9, 16]);
    ///     // The server's `recv` ends with `PeerGone`.
    ///     drop(client);
    /// });
    /// # }
    /// ```
    pub fn call(&self, request: Request) -> Result<Reply, Error> {
        let ticket = self.submit(request)?;
        self.wait(ticket)
    }

    /// Runs `future` to completion on this thread: polls it, and while it is
    /// pending routes completions and parks on the client's wake flag. A
    /// minimal executor for the futures of this client.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[cfg(feature = "alloc")] {
    /// # use uring_queue::uring::{Config, Request, Spin, Uring};
    /// # use uring_queue::AlignedBuf;
    /// # let mut mem = AlignedBuf::zeroed(8192).unwrap();
    /// # let uring = Uring::init(mem.region(), Config::new(4, 4, 1024)).unwrap();
    /// # let (client, mut server) = uring.split::<4, _, _>(Spin, Spin);
    /// use core::future::Future;
    /// use core::pin::pin;
    /// use core::task::{Context, Poll, Waker};
    ///
    /// let mut first = pin!(client.call_async(Request::new(1)));
    /// let mut second = pin!(client.call_async(Request::new(2)));
    /// let mut cx = Context::from_waker(Waker::noop());
    /// // Both submitted, neither answered yet.
    /// assert!(first.as_mut().poll(&mut cx).is_pending());
    /// assert!(second.as_mut().poll(&mut cx).is_pending());
    /// for _ in 0..2 {
    ///     let incoming = server.try_recv().unwrap().unwrap();
    ///     let op = incoming.opcode() as i32;
    ///     server.complete(incoming, op + 100, 0).unwrap();
    /// }
    /// // Runs both to completion on this thread.
    /// let (a, b) = client.block_on(async { (first.await, second.await) });
    /// assert_eq!((a.unwrap().result, b.unwrap().result), (101, 102));
    /// # }
    /// ```
    pub fn block_on<F: Future>(&self, future: F) -> F::Output {
        let mut future = pin!(future);
        let mut cx = Context::from_waker(Waker::noop());
        loop {
            if let Poll::Ready(out) = future.as_mut().poll(&mut cx) {
                return out;
            }
            // Errors are latched: the pending futures report them when
            // polled next.
            if let Ok(0) = self.poll_completions() {
                let _ = self.park();
            }
        }
    }
}
