//! The reactor-driven client: calls whose completions the runtime's
//! reactor routes, so that no thread of the caller's has to drive.

use super::wakeup::{Wakeup, tick};
use crate::uring::reactor_waiter::{OnReactor, ReactorWaiter};
use crate::uring::{Block, Client, Error, EventFd, Reply, Request};
use ::tokio::time::{Sleep, sleep};
use core::fmt;
use core::future::poll_fn;
use core::pin::pin;
use core::task::Poll;
use std::io;

/// A [`Client`] whose calls are driven by the tokio runtime they run on:
/// [`call`](Self::call)`.await` needs no other thread, on a `current_thread`
/// runtime too.
///
/// A waiting call spins a turn per poll, yielding to the runtime between
/// turns (so a server task on the same runtime runs meanwhile), then arms
/// the client's "needs wakeup" flag and returns to the runtime; the reactor
/// wakes it when the server writes the client's
/// eventfd, and it routes every completion that arrived (waking the calls
/// they belong to). One waiting call at a time is the one the reactor
/// wakes; one that leaves while it is hands that on. A timer of the
/// client's park timeout ([`Options::park_timeout`](crate::uring::Options))
/// runs the liveness checks, so a server that closes, exits (even by
/// `SIGKILL`), restarts or goes stale gives every waiting call
/// [`Error::PeerGone`] within about one park timeout (at once for a
/// service's connection, whose socket the reactor watches too:
/// [`AsyncConnection`](crate::uring::service::AsyncConnection)).
///
/// The runtime needs its I/O and time drivers (`enable_all`). The
/// payload blocks and the counters are methods of its own (as
/// [`Client`]'s); the blocking [`Client`] underneath, with its blocking
/// calls and [`Client::call_async`] futures for code that drives itself, is
/// [`client`](Self::client), by name, so that a blocking wait on the
/// runtime's thread is never picked by accident.
///
/// # Examples
///
/// Client and server as two tasks of one `current_thread` runtime:
///
/// ```
/// # #[cfg(not(miri))] {
/// use uring_queue::uring::tokio::{AsyncClient, AsyncServer};
/// use uring_queue::uring::{Config, EventFd, NotifierKind, Request, Uring};
/// use uring_queue::AlignedBuf;
///
/// let mut mem = AlignedBuf::zeroed(8192).unwrap();
/// let config = Config::new(4, 4, 0).with_notifier(NotifierKind::EventFd);
/// let (for_client, for_server) = EventFd::pair().unwrap();
/// let (client, server) = Uring::init(mem.region(), config)
///     .unwrap()
///     .split::<4, _, _>(for_client, for_server);
/// let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
/// rt.block_on(async {
///     let client = AsyncClient::new(client).unwrap();
///     let mut server = AsyncServer::new(server).unwrap();
///     let serve = async {
///         let incoming = server.recv().await.unwrap();
///         let op = incoming.opcode() as i32;
///         server.complete(incoming, op * 10, 0).unwrap();
///     };
///     let (reply, ()) = tokio::join!(client.call(Request::new(4)), serve);
///     assert_eq!(reply.unwrap().result, 40);
/// });
/// # }
/// ```
pub struct AsyncClient<'a, const N: usize, const K: usize = 1> {
    client: Client<'a, N, EventFd, K>,
    driver: CallDriver,
}

/// What drives a client's calls on the runtime: its wake-ups registered
/// with the reactor, and which waiting call the reactor wakes. One home for
/// [`AsyncClient`] and a service's async connection.
#[derive(Debug)]
pub(crate) struct CallDriver {
    wakeup: Wakeup,
    /// Which waiting call the reactor wakes.
    waiter: ReactorWaiter,
}

impl<const N: usize, const K: usize> fmt::Debug for AsyncClient<'_, N, K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AsyncClient")
            .field("client", &self.client)
            .finish_non_exhaustive()
    }
}

impl<'a, const N: usize, const K: usize> AsyncClient<'a, N, K> {
    /// Registers the client's eventfd with the current tokio runtime.
    ///
    /// # Errors
    ///
    /// Outside a tokio runtime, or when the eventfd cannot be registered.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[cfg(not(miri))] {
    /// use uring_queue::uring::tokio::AsyncClient;
    /// use uring_queue::uring::{Config, EventFd, NotifierKind, Uring};
    /// use uring_queue::AlignedBuf;
    ///
    /// let mut mem = AlignedBuf::zeroed(8192).unwrap();
    /// let config = Config::new(4, 4, 0).with_notifier(NotifierKind::EventFd);
    /// let (for_client, _) = EventFd::pair().unwrap();
    /// let client = Uring::init(mem.region(), config)
    ///     .unwrap()
    ///     .into_client::<4, _>(for_client);
    /// // No runtime here: refused, not a panic.
    /// assert!(AsyncClient::new(client).is_err());
    /// # }
    /// ```
    pub fn new(client: Client<'a, N, EventFd, K>) -> io::Result<Self> {
        let driver = CallDriver::new(&client)?;
        Ok(Self { client, driver })
    }

    /// The client back, to use without the runtime.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[cfg(not(miri))] {
    /// # use uring_queue::uring::tokio::AsyncClient;
    /// # use uring_queue::uring::{Config, EventFd, NotifierKind, Uring};
    /// # use uring_queue::AlignedBuf;
    /// # let mut mem = AlignedBuf::zeroed(8192).unwrap();
    /// # let config = Config::new(4, 4, 0).with_notifier(NotifierKind::EventFd);
    /// # let (for_client, _) = EventFd::pair().unwrap();
    /// # let client = Uring::init(mem.region(), config).unwrap().into_client::<4, _>(for_client);
    /// let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    /// let client = rt.block_on(async { AsyncClient::new(client).unwrap().into_inner() });
    /// assert_eq!(client.in_flight(), 0);
    /// # }
    /// ```
    pub fn into_inner(self) -> Client<'a, N, EventFd, K> {
        self.client
    }

    /// Submits `request` (waiting for a credit if none is free) and waits
    /// for its reply, both through the runtime. Dropped before the reply,
    /// the call cancels the request ([`Client::cancel`]); its credit comes
    /// back when the reply arrives, and later calls are unaffected.
    ///
    /// # Errors
    ///
    /// As [`Client::call`]: [`Error::PeerGone`] once the server closed,
    /// exited, restarted or went stale; [`Error::Corrupted`];
    /// [`Error::Foreign`] for blocks of another client.
    ///
    /// # Examples
    ///
    /// See [`AsyncClient`].
    pub async fn call(&self, request: Request) -> Result<Reply, Error> {
        self.driver.call(&self.client, request).await
    }

    /// The blocking client underneath: [`Client::try_submit`],
    /// [`Client::options`] and the rest. Its blocking waits
    /// ([`Client::call`], [`Client::wait`]) block the runtime's thread;
    /// [`call`](Self::call) is the one that waits on the reactor.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[cfg(not(miri))] {
    /// # use uring_queue::uring::tokio::AsyncClient;
    /// # use uring_queue::uring::{Config, EventFd, NotifierKind, Request, Uring};
    /// # use uring_queue::AlignedBuf;
    /// # let mut mem = AlignedBuf::zeroed(8192).unwrap();
    /// # let config = Config::new(4, 4, 0).with_notifier(NotifierKind::EventFd);
    /// # let (for_client, _) = EventFd::pair().unwrap();
    /// # let client = Uring::init(mem.region(), config).unwrap().into_client::<4, _>(for_client);
    /// let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    /// rt.block_on(async {
    ///     let client = AsyncClient::new(client).unwrap();
    ///     client.client().try_submit(Request::new(1)).unwrap();
    ///     assert_eq!(client.in_flight(), 1);
    /// });
    /// # }
    /// ```
    pub fn client(&self) -> &Client<'a, N, EventFd, K> {
        &self.client
    }

    /// As [`Client::alloc`]: a block of the region's payload area.
    ///
    /// # Errors
    ///
    /// As [`Client::alloc`].
    pub fn alloc(&self, len: usize) -> Result<Block, Error> {
        self.client.alloc(len)
    }

    /// As [`Client::free`].
    pub fn free(&self, block: Block) {
        self.client.free(block);
    }

    /// As [`Client::free_reply`]: frees both blocks of a reply.
    pub fn free_reply(&self, reply: Reply) {
        self.client.free_reply(reply);
    }

    /// As [`Client::bytes`].
    ///
    /// # Errors
    ///
    /// As [`Client::bytes`].
    pub fn bytes<'b>(&'b self, block: &'b Block) -> Result<&'b [u8], Error> {
        self.client.bytes(block)
    }

    /// As [`Client::bytes_mut`].
    ///
    /// # Errors
    ///
    /// As [`Client::bytes_mut`].
    pub fn bytes_mut<'b>(&'b self, block: &'b mut Block) -> Result<&'b mut [u8], Error> {
        self.client.bytes_mut(block)
    }

    /// As [`Client::response`]: the response bytes of a reply.
    ///
    /// # Errors
    ///
    /// As [`Client::response`].
    pub fn response<'b>(&'b self, reply: &'b Reply) -> Result<&'b [u8], Error> {
        self.client.response(reply)
    }

    /// As [`Client::credits`]: requests that may be submitted now.
    pub fn credits(&self) -> usize {
        self.client.credits()
    }

    /// As [`Client::in_flight`]: requests submitted whose replies were not
    /// taken yet.
    pub fn in_flight(&self) -> usize {
        self.client.in_flight()
    }

    /// As [`Client::blocks_in_use`]: payload blocks allocated and not freed.
    pub fn blocks_in_use(&self) -> usize {
        self.client.blocks_in_use()
    }
}

impl CallDriver {
    /// Registers `client`'s eventfd (and the socket its notifier watches)
    /// with the current tokio runtime.
    ///
    /// # Errors
    ///
    /// As [`Wakeup::new`].
    pub(crate) fn new<const N: usize, const K: usize>(
        client: &Client<'_, N, EventFd, K>,
    ) -> io::Result<Self> {
        Ok(Self {
            wakeup: Wakeup::new(client.notifier())?,
            waiter: ReactorWaiter::new(),
        })
    }

    /// [`AsyncClient::call`] on `client`, the client this was made for.
    pub(crate) async fn call<const N: usize, const K: usize>(
        &self,
        client: &Client<'_, N, EventFd, K>,
        request: Request,
    ) -> Result<Reply, Error> {
        // Declared before the call's future, so dropped after it: a call
        // cancelled with its future leaves with it.
        let mut on_reactor = OnReactor::new(client, &self.waiter);
        let mut call = pin!(client.call_on_reactor(request));
        let mut timer = pin!(None::<Sleep>);
        let mut submitted = false;
        poll_fn(|cx| {
            if !core::mem::replace(&mut submitted, true) {
                // The first poll submits and returns at once, without
                // spinning: the caller may have more calls to submit
                // before it waits (64 in flight). It is polled again at
                // once, and then spins and waits.
                let first = call.as_mut().poll(cx);
                if first.is_pending() {
                    cx.waker().wake_by_ref();
                }
                return first;
            }
            loop {
                if let Poll::Ready(reply) =
                    on_reactor.poll(call.as_mut(), cx, |cx| self.wakeup.poll(cx))
                {
                    return Poll::Ready(reply);
                }
                let period = client.options().park_timeout;
                if timer.is_none() {
                    timer.set(Some(sleep(period)));
                }
                let Some(sleep) = timer.as_mut().as_pin_mut() else {
                    return Poll::Pending;
                };
                if !tick(sleep, period, cx) {
                    return Poll::Pending;
                }
                // A park timeout without news: judge the server.
                let _ = client.reactor_check(true);
            }
        })
        .await
    }
}
