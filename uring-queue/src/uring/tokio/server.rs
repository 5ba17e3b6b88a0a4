//! The reactor-driven server: a task that awaits requests.

use super::wakeup::{Wake, Wakeup, tick};
use crate::uring::reactor::spread::{Spread, Step};
use crate::uring::{Error, EventFd, Incoming, Rejected, Server};
use ::tokio::task::coop;
use ::tokio::time::{Sleep, sleep};
use alloc::boxed::Box;
use core::fmt;
use core::future::poll_fn;
use core::pin::Pin;
use core::task::{Context, Poll, ready};
use std::io;

/// A [`Server`] that runs as a task: [`recv`](Self::recv)`.await`, then
/// [`complete`](Self::complete) (as [`Server::complete`]). The blocking
/// [`Server`] underneath is [`server`](Self::server), by name.
///
/// While no request waits, `recv` arms the server's "needs wakeup" flag and
/// returns to the runtime, whose reactor wakes it when the client writes
/// the server's eventfd. A timer of the park timeout runs the liveness
/// checks: a client that closes, exits, restarts or goes stale ends `recv`
/// with [`Error::PeerGone`] (after every request it sent was received).
/// The runtime needs its I/O and time drivers (`enable_all`).
///
/// # Examples
///
/// See [`AsyncClient`](super::AsyncClient); across processes,
/// `examples/tokio_echo.rs`.
pub struct AsyncServer<'a, const K: usize = 1> {
    server: Server<'a, EventFd, K>,
    driver: RecvDriver,
}

/// What drives a server's waits on the runtime: its wake-ups registered
/// with the reactor, the liveness timer, and the fairness bound. One home
/// for [`AsyncServer`] and a service's async session.
#[derive(Debug)]
pub(crate) struct RecvDriver {
    wakeup: Wakeup,
    /// The liveness timer: made once, so that no `recv` allocates.
    timer: Pin<Box<Sleep>>,
    /// Requests received in a row without returning to the runtime.
    streak: usize,
    /// The most requests received in a row before the task yields once;
    /// `usize::MAX`: never.
    batch: usize,
    /// The wait's spin, spread over polls.
    spread: Spread,
}

impl<const K: usize> fmt::Debug for AsyncServer<'_, K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AsyncServer")
            .field("server", &self.server)
            .finish_non_exhaustive()
    }
}

impl<'a, const K: usize> AsyncServer<'a, K> {
    /// Registers the server's eventfd with the current tokio runtime.
    ///
    /// # Errors
    ///
    /// Outside a tokio runtime, or when the eventfd cannot be registered.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[cfg(not(miri))] {
    /// use uring_queue::uring::tokio::AsyncServer;
    /// use uring_queue::uring::{Config, EventFd, NotifierKind, Uring};
    /// use uring_queue::AlignedBuf;
    ///
    /// let mut mem = AlignedBuf::zeroed(8192).unwrap();
    /// let config = Config::new(4, 4, 0).with_notifier(NotifierKind::EventFd);
    /// let (_, for_server) = EventFd::pair().unwrap();
    /// let server = Uring::init(mem.region(), config).unwrap().into_server(for_server);
    /// let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    /// rt.block_on(async {
    ///     let mut server = AsyncServer::new(server).unwrap();
    ///     assert_eq!(server.try_recv(), Ok(None));
    /// });
    /// # }
    /// ```
    pub fn new(server: Server<'a, EventFd, K>) -> io::Result<Self> {
        let driver = RecvDriver::new(&server, usize::MAX)?;
        Ok(Self { server, driver })
    }

    /// The server back, to use without the runtime.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[cfg(not(miri))] {
    /// # use uring_queue::uring::tokio::AsyncServer;
    /// # use uring_queue::uring::{Config, EventFd, NotifierKind, Uring};
    /// # use uring_queue::AlignedBuf;
    /// # let mut mem = AlignedBuf::zeroed(8192).unwrap();
    /// # let config = Config::new(4, 4, 0).with_notifier(NotifierKind::EventFd);
    /// # let (_, for_server) = EventFd::pair().unwrap();
    /// # let server = Uring::init(mem.region(), config).unwrap().into_server(for_server);
    /// let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    /// let mut server = rt.block_on(async { AsyncServer::new(server).unwrap().into_inner() });
    /// assert_eq!(server.try_recv(), Ok(None));
    /// # }
    /// ```
    pub fn into_inner(self) -> Server<'a, EventFd, K> {
        self.server
    }

    /// Waits, through the runtime, for the next request.
    ///
    /// Cooperative, as tokio's own channels are: each request taken spends
    /// a unit of the task's budget, and with the budget spent the task
    /// yields once before it takes more. The wait spins a turn per poll,
    /// yielding between turns, before it arms the flag and waits on the
    /// reactor ([`Options::spin`](crate::uring::Options::spin)).
    ///
    /// # Errors
    ///
    /// As [`Server::recv`]: [`Error::PeerGone`] once the client went away
    /// and every request it sent was received; [`Error::Corrupted`].
    ///
    /// # Examples
    ///
    /// See [`AsyncClient`](super::AsyncClient).
    pub async fn recv(&mut self) -> Result<Incoming, Error> {
        poll_fn(|cx| self.poll_recv(cx)).await
    }

    /// The poll behind [`recv`](Self::recv), for hand-written futures and
    /// streams: ready with the next request (or an error); otherwise the
    /// task of `cx` is woken when one may have come.
    ///
    /// # Errors
    ///
    /// As [`recv`](Self::recv).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[cfg(not(miri))] {
    /// # use uring_queue::uring::tokio::AsyncServer;
    /// # use uring_queue::uring::{Config, EventFd, NotifierKind, Uring};
    /// # use uring_queue::AlignedBuf;
    /// # let mut mem = AlignedBuf::zeroed(8192).unwrap();
    /// # let config = Config::new(4, 4, 0).with_notifier(NotifierKind::EventFd);
    /// # let (for_client, for_server) = EventFd::pair().unwrap();
    /// # let (client, server) = Uring::init(mem.region(), config).unwrap().split::<4, _, _>(for_client, for_server);
    /// use core::task::{Context, Waker};
    /// use uring_queue::uring::Request;
    ///
    /// let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    /// rt.block_on(async {
    ///     let mut server = AsyncServer::new(server).unwrap();
    ///     let mut cx = Context::from_waker(Waker::noop());
    ///     assert!(server.poll_recv(&mut cx).is_pending());
    ///     client.try_submit(Request::new(3)).unwrap();
    ///     let incoming = server.poll_recv(&mut cx);
    ///     assert!(matches!(incoming, core::task::Poll::Ready(Ok(ref i)) if i.opcode() == 3));
    /// # });
    /// # }
    /// ```
    pub fn poll_recv(&mut self, cx: &mut Context<'_>) -> Poll<Result<Incoming, Error>> {
        self.driver.poll_recv(&mut self.server, cx)
    }

    /// As [`Server::try_recv`]: the next request if one is waiting, without
    /// waiting.
    ///
    /// # Errors
    ///
    /// As [`Server::try_recv`].
    ///
    /// # Examples
    ///
    /// See [`new`](Self::new).
    pub fn try_recv(&mut self) -> Result<Option<Incoming>, Error> {
        self.server.try_recv()
    }

    /// As [`Server::buffers`]: a request's body and response block.
    ///
    /// # Errors
    ///
    /// As [`Server::buffers`].
    pub fn buffers(&mut self, incoming: &Incoming) -> Result<(&[u8], &mut [u8]), Error> {
        self.server.buffers(incoming)
    }

    /// As [`Server::complete`]: posts the completion of `incoming`.
    ///
    /// # Errors
    ///
    /// As [`Server::complete`].
    ///
    /// # Examples
    ///
    /// See [`AsyncClient`](super::AsyncClient).
    pub fn complete(
        &mut self,
        incoming: Incoming,
        result: i32,
        response_len: usize,
    ) -> Result<(), Rejected<Incoming>> {
        self.server.complete(incoming, result, response_len)
    }

    /// As [`Server::payload_mut`]: the request body, to transform in
    /// place before answering with [`complete_in_place`](Self::complete_in_place).
    ///
    /// # Errors
    ///
    /// As [`Server::payload_mut`].
    pub fn payload_mut(&mut self, incoming: &Incoming) -> Result<&mut [u8], Error> {
        self.server.payload_mut(incoming)
    }

    /// As [`Server::complete_in_place`]: posts the completion of
    /// `incoming` with its response written over the request body.
    ///
    /// # Errors
    ///
    /// As [`Server::complete_in_place`].
    pub fn complete_in_place(
        &mut self,
        incoming: Incoming,
        result: i32,
        response_len: usize,
    ) -> Result<(), Rejected<Incoming>> {
        self.server
            .complete_in_place(incoming, result, response_len)
    }

    /// The blocking server underneath, to read its state
    /// ([`Server::options`], ...).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[cfg(not(miri))] {
    /// # use uring_queue::uring::tokio::AsyncServer;
    /// # use uring_queue::uring::{Config, EventFd, NotifierKind, Uring};
    /// # use uring_queue::AlignedBuf;
    /// # let mut mem = AlignedBuf::zeroed(8192).unwrap();
    /// # let config = Config::new(4, 4, 0).with_notifier(NotifierKind::EventFd);
    /// # let (_, for_server) = EventFd::pair().unwrap();
    /// # let server = Uring::init(mem.region(), config).unwrap().into_server(for_server);
    /// let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    /// rt.block_on(async {
    ///     let server = AsyncServer::new(server).unwrap();
    ///     assert!(!server.server().options().park_timeout.is_zero());
    /// });
    /// # }
    /// ```
    pub fn server(&self) -> &Server<'a, EventFd, K> {
        &self.server
    }

    /// The blocking server underneath, for code written against
    /// [`Server`] (a handler shared with a blocking loop). Its blocking
    /// [`Server::recv`] blocks the runtime's thread; [`recv`](Self::recv)
    /// is the one that waits on the reactor.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[cfg(not(miri))] {
    /// # use uring_queue::uring::tokio::AsyncServer;
    /// # use uring_queue::uring::{Config, EventFd, NotifierKind, Uring};
    /// # use uring_queue::AlignedBuf;
    /// # let mut mem = AlignedBuf::zeroed(8192).unwrap();
    /// # let config = Config::new(4, 4, 0).with_notifier(NotifierKind::EventFd);
    /// # let (_, for_server) = EventFd::pair().unwrap();
    /// # let server = Uring::init(mem.region(), config).unwrap().into_server(for_server);
    /// let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    /// rt.block_on(async {
    ///     let mut server = AsyncServer::new(server).unwrap();
    ///     assert_eq!(server.server_mut().try_recv(), Ok(None));
    /// });
    /// # }
    /// ```
    pub fn server_mut(&mut self) -> &mut Server<'a, EventFd, K> {
        &mut self.server
    }
}

impl RecvDriver {
    /// Registers `server`'s eventfd (and the socket its notifier watches)
    /// with the current tokio runtime; after `batch` requests in a row
    /// (at least 1) the task yields once.
    ///
    /// # Errors
    ///
    /// As [`Wakeup::new`].
    pub(crate) fn new<const K: usize>(
        server: &Server<'_, EventFd, K>,
        batch: usize,
    ) -> io::Result<Self> {
        Ok(Self {
            wakeup: Wakeup::new(server.notifier())?,
            timer: Box::pin(sleep(server.options().park_timeout)),
            streak: 0,
            batch: batch.max(1),
            spread: Spread::new(),
        })
    }

    /// Starts the liveness timer again with `period` (the server's park
    /// timeout, after a change of options).
    pub(crate) fn restart_timer(&mut self, period: core::time::Duration) {
        self.timer
            .as_mut()
            .reset(::tokio::time::Instant::now() + period);
    }

    /// [`AsyncServer::poll_recv`] on `server`, the server this was made
    /// for.
    pub(crate) fn poll_recv<const K: usize>(
        &mut self,
        server: &mut Server<'_, EventFd, K>,
        cx: &mut Context<'_>,
    ) -> Poll<Result<Incoming, Error>> {
        if self.streak >= self.batch {
            // A batch handed over in a row: the task yields once (woken at
            // once), so that a client that keeps its ring full cannot keep
            // the runtime's thread from other tasks.
            self.streak = 0;
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        // The runtime's budget: a request taken uses one unit, and with the
        // budget spent the task yields. A server whose clients keep it busy
        // would otherwise never return to the runtime, and the tasks queued
        // behind it on its worker (the clients' calls among them) would
        // wait until a spin of its came up empty.
        let coop = ready!(coop::poll_proceed(cx));
        loop {
            match server.try_recv() {
                Ok(Some(incoming)) => {
                    coop.made_progress();
                    server.reactor_found(&mut self.spread);
                    self.streak += 1;
                    return Poll::Ready(Ok(incoming));
                }
                Ok(None) => self.streak = 0,
                Err(e) => return Poll::Ready(Err(e)),
            }
            if server.is_peer_gone() {
                return Poll::Ready(Err(Error::PeerGone));
            }
            // A request, or the client gone: look again (requests it sent
            // before it went are still delivered).
            match server.reactor_step(&mut self.spread, cx.waker()) {
                Step::Ready => continue,
                Step::Yield => return Poll::Pending,
                Step::Wait => {}
            }
            if !server.reactor_check(false) {
                continue;
            }
            match self.wakeup.poll(cx) {
                Poll::Ready(Wake::Notified) => continue,
                // The socket hung up, or carried bytes the protocol never
                // sends: the peer is gone, attached or not.
                Poll::Ready(Wake::HungUp) => {
                    server.reactor_gone();
                    continue;
                }
                Poll::Pending => {}
            }
            let period = server.options().park_timeout;
            if !tick(self.timer.as_mut(), period, cx) {
                return Poll::Pending;
            }
            // A park timeout without news: judge the client.
            let _ = server.reactor_check(true);
        }
    }
}
