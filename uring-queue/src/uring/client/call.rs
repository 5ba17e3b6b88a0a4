//! The future of an async call: submits when first polled, resolves to the
//! reply, and cancels the request if dropped before.

use super::{CREDIT_WAITERS, Client, Inner};
use crate::uring::request::{Reply, Request, Ticket};
use crate::uring::wake::Notifier;
use crate::uring::{Error, Rejected};
use core::fmt;
use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll, Waker};

impl<'a, const N: usize, W: Notifier, const K: usize> Client<'a, N, W, K> {
    /// The async twin of [`call`](Self::call): a future that submits the
    /// request (waiting for a credit if none is free) and resolves to its
    /// reply, on any executor. The client wakes the future when its
    /// completion is routed ([`poll_completions`](Self::poll_completions),
    /// which every poll of a [`Call`] and [`block_on`](Self::block_on) run).
    /// While no thread drives (see [`Client`], "Who drives"), a pending
    /// `Call` wakes its own task, so the executor polls it again and the
    /// poll routes what has arrived: it completes under a busy `block_on`,
    /// a parking one, `FuturesUnordered` or `join_all`, with no thread of
    /// its own, at the cost of a task that keeps its executor polling until
    /// the reply is there. Dropping the future cancels the request
    /// ([`cancel`](Self::cancel)).
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
    /// std::thread::scope(|s| {
    ///     s.spawn(move || {
    ///         for _ in 0..2 {
    ///             let inc = server.recv().unwrap();
    ///             let op = inc.opcode() as i32;
    ///             server.complete(inc, op + 1, 0).unwrap();
    ///         }
    ///     });
    ///     let (a, b) = client.block_on(async {
    ///         let a = client.call_async(Request::new(1)).await.unwrap();
    ///         let b = client.call_async(Request::new(2)).await.unwrap();
    ///         (a.result, b.result)
    ///     });
    ///     assert_eq!((a, b), (2, 3));
    /// });
    /// # }
    /// ```
    pub fn call_async(&self, request: Request) -> Call<'_, 'a, N, W, K> {
        Call {
            client: self,
            state: CallState::Start(request),
            reactor: false,
        }
    }

    /// [`call_async`](Self::call_async) for a caller that waits on a
    /// reactor (the tokio client's): the future never wakes its own task.
    /// Its waker is woken when its reply is routed or a credit comes back;
    /// the caller must make sure that someone routes (the call the reactor
    /// wakes, `reactor_waiter`), or its task waits for good.
    #[cfg_attr(any(not(feature = "tokio"), loom), allow(dead_code))]
    pub(crate) fn call_on_reactor(&self, request: Request) -> Call<'_, 'a, N, W, K> {
        Call {
            client: self,
            state: CallState::Start(request),
            reactor: true,
        }
    }
}

impl<const N: usize, W: Notifier, const K: usize> Client<'_, N, W, K> {
    /// Before a [`Call`] that waits for its reply returns `Pending`: makes
    /// sure it is polled again. While a thread drives, the driver routes
    /// the reply (which wakes the task) and, when it leaves the role, wakes
    /// every task that counted on it. With nobody driving, nothing else
    /// would drain the completion ring, so the task wakes itself: the
    /// executor polls it again, and each poll routes what has arrived;
    /// unless a `reactor` wakes a waiting call to route (see
    /// [`call_on_reactor`](Self::call_on_reactor)).
    fn keep_polled(&self, cx: &Context<'_>, reactor: bool) {
        let driven = {
            let mut inner = self.inner.lock();
            inner.tasks_wait_on_driver |= inner.driving;
            inner.driving
        };
        if !driven && !reactor {
            cx.waker().wake_by_ref();
        }
    }

    /// Has the task of `cx` woken when a credit comes back (a thread
    /// drives), or at once if one came back since the submission found
    /// none or nobody drives and no `reactor` routes for it (the task polls
    /// again, as in [`keep_polled`](Self::keep_polled)).
    fn wake_on_credit(&self, cx: &Context<'_>, reactor: bool) {
        // Cloned outside the lock (a call out to the executor), and only
        // when it is to be kept; then the state is looked at afresh.
        let mut waker: Option<Waker> = None;
        let (displaced, unused) = loop {
            let mut inner = self.inner.lock();
            // Checked under the lock that registers the waker: a credit
            // that came back since `try_submit` found none has woken nobody.
            if inner.table.has_credit() || !(inner.driving || reactor) {
                drop(inner);
                drop(waker);
                cx.waker().wake_by_ref();
                return;
            }
            let Some(kept) = waker.take() else {
                drop(inner);
                waker = Some(cx.waker().clone());
                continue;
            };
            inner.tasks_wait_on_driver |= inner.driving;
            break inner.add_credit_waiter(kept);
        };
        drop(unused);
        // Displaced: let that task poll again rather than lose its wake-up.
        if let Some(w) = displaced {
            w.wake();
        }
    }
}

impl<const N: usize, const K: usize> Inner<'_, N, K> {
    /// Keeps `waker` until a credit comes back. Returns a waker displaced
    /// to make room (to wake, so that its task polls again) and `waker` if
    /// one that wakes the same task is already kept (to drop); both after
    /// the lock is released.
    fn add_credit_waiter(&mut self, waker: Waker) -> (Option<Waker>, Option<Waker>) {
        self.credit_waiting = true;
        let wakers = &mut self.credit_wakers;
        if wakers.iter().flatten().any(|w| w.will_wake(&waker)) {
            (None, Some(waker))
        } else if let Some(free) = wakers.iter_mut().find(|w| w.is_none()) {
            *free = Some(waker);
            (None, None)
        } else {
            // Full: the waker kept longest makes room.
            let oldest = wakers[0].take();
            wakers.rotate_left(1);
            wakers[CREDIT_WAITERS - 1] = Some(waker);
            (oldest, None)
        }
    }
}

#[derive(Debug)]
enum CallState {
    Start(Request),
    Waiting(Ticket),
    Finished,
}

/// The future of [`Client::call_async`]: submits the request when first
/// polled (waiting for a credit if none is free), then resolves to its
/// reply. Dropped before that, it cancels the request.
///
/// # Examples
///
/// ```
/// # #[cfg(feature = "alloc")] {
/// # use uring_queue::uring::{Config, Request, Spin, Uring};
/// # use uring_queue::AlignedBuf;
/// # let mut mem = AlignedBuf::zeroed(8192).unwrap();
/// # let uring = Uring::init(mem.region(), Config::new(4, 4, 0)).unwrap();
/// # let (client, mut server) = uring.split::<4, _, _>(Spin, Spin);
/// use core::future::Future;
/// use core::pin::pin;
/// use core::task::{Context, Waker};
///
/// let mut cx = Context::from_waker(Waker::noop());
/// {
///     let mut call = pin!(client.call_async(Request::new(1)));
///     // The first poll submits; the reply is not there yet.
///     assert!(call.as_mut().poll(&mut cx).is_pending());
///     assert_eq!(client.in_flight(), 1);
/// }
/// // Dropped before its reply: the request is cancelled, and its reply
/// // discarded when it comes.
/// let incoming = server.try_recv().unwrap().unwrap();
/// server.complete(incoming, 0, 0).unwrap();
/// client.poll_completions().unwrap();
/// assert_eq!(client.in_flight(), 0);
/// # }
/// ```
#[must_use = "futures do nothing unless polled"]
pub struct Call<'c, 'a, const N: usize, W: Notifier, const K: usize = 1> {
    client: &'c Client<'a, N, W, K>,
    state: CallState,
    /// A reactor routes for this call's task: it never wakes itself.
    reactor: bool,
}

impl<const N: usize, W: Notifier, const K: usize> fmt::Debug for Call<'_, '_, N, W, K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Call")
            .field("state", &self.state)
            .field("reactor", &self.reactor)
            .finish()
    }
}

impl<const N: usize, W: Notifier, const K: usize> Future for Call<'_, '_, N, W, K> {
    type Output = Result<Reply, Error>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let client = this.client;
        // Completions are routed at most once per poll, and only when the
        // state cannot move without them: no credit, or no reply yet.
        // `Ok(true)`: some arrived, so look again.
        let mut routed = false;
        let mut route = || -> Result<bool, Error> {
            if core::mem::replace(&mut routed, true) {
                return Ok(false);
            }
            client.poll_completions().map(|n| n > 0)
        };
        loop {
            match core::mem::replace(&mut this.state, CallState::Finished) {
                // Submitted with the waker in place: the reply cannot be
                // back yet, and whoever routes it wakes this task.
                CallState::Start(request) => {
                    match client.submit_with(request, Some(cx.waker().clone())) {
                        Ok(ticket) => {
                            this.state = CallState::Waiting(ticket);
                            client.keep_polled(cx, this.reactor);
                            return Poll::Pending;
                        }
                        Err(Rejected {
                            error: Error::Busy,
                            value,
                        }) => match route() {
                            // Credits may have come back: try again.
                            Ok(true) => this.state = CallState::Start(value),
                            Ok(false) => {
                                this.state = CallState::Start(value);
                                client.wake_on_credit(cx, this.reactor);
                                return Poll::Pending;
                            }
                            Err(e) => return Poll::Ready(Err(e)),
                        },
                        Err(r) => return Poll::Ready(Err(r.error)),
                    }
                }
                CallState::Waiting(ticket) => {
                    if let Poll::Ready(r) = client.poll_ticket(&ticket, Some(cx.waker())) {
                        return Poll::Ready(r);
                    }
                    match route() {
                        // Ours may be among them: look again.
                        Ok(true) => this.state = CallState::Waiting(ticket),
                        Ok(false) => {
                            this.state = CallState::Waiting(ticket);
                            client.keep_polled(cx, this.reactor);
                            return Poll::Pending;
                        }
                        Err(e) => return Poll::Ready(Err(e)),
                    }
                }
                CallState::Finished => return Poll::Ready(Err(Error::Foreign)),
            }
        }
    }
}

impl<const N: usize, W: Notifier, const K: usize> Drop for Call<'_, '_, N, W, K> {
    fn drop(&mut self) {
        if let CallState::Waiting(ticket) = core::mem::replace(&mut self.state, CallState::Finished)
        {
            let _ = self.client.cancel(ticket);
        }
    }
}
