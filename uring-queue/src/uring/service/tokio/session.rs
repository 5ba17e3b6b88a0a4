//! One client's connection, served on tokio.

use crate::uring::service::{Peer, Session};
use crate::uring::tokio::RecvDriver;
use crate::uring::{Error, Incoming, Options, Rejected};
use core::fmt;
use core::future::poll_fn;
use core::task::{Context, Poll};
use std::io;

/// One admitted client, served on the tokio runtime: a [`Session`] whose
/// [`recv`](Self::recv) waits on the reactor.
///
/// A client that dies (even by `SIGKILL`) ends a waiting `recv` with
/// [`Error::PeerGone`] as soon as the reactor runs: its socket is
/// registered beside the eventfd. Requests it sent before it went are
/// still received first. Dropping the session unmaps the client's region
/// and closes every descriptor of the connection.
///
/// Fair: after a batch of requests handed over in a row
/// ([`AsyncService::set_batch`](super::AsyncService::set_batch)), `recv`
/// yields to the runtime once, so a client that keeps its ring full does
/// not keep the thread from the other clients' tasks.
///
/// # Examples
///
/// See [`AsyncService`](super::AsyncService).
pub struct AsyncSession {
    session: Session,
    driver: RecvDriver,
}

impl fmt::Debug for AsyncSession {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AsyncSession")
            .field("session", &self.session)
            .finish_non_exhaustive()
    }
}

impl AsyncSession {
    /// Registers `session`'s eventfd and socket with the current runtime.
    pub(crate) fn new(mut session: Session, batch: usize) -> io::Result<Self> {
        let driver = RecvDriver::new(session.server_mut(), batch)?;
        Ok(Self { session, driver })
    }

    /// Who the client is (`SO_PEERCRED`, at connect time).
    pub fn peer(&self) -> Peer {
        self.session.peer()
    }

    /// Bytes of the client's region.
    pub fn region_len(&self) -> usize {
        self.session.region_len()
    }

    /// As [`Session::try_recv`]: the next request if one waits.
    ///
    /// # Errors
    ///
    /// As [`Session::try_recv`].
    pub fn try_recv(&mut self) -> Result<Option<Incoming>, Error> {
        self.session.try_recv()
    }

    /// Waits, through the runtime, for the next request.
    ///
    /// # Errors
    ///
    /// [`Error::PeerGone`] once the client went away and every request it
    /// sent was received; [`Error::Corrupted`].
    ///
    /// # Examples
    ///
    /// See [`AsyncService`](super::AsyncService).
    pub async fn recv(&mut self) -> Result<Incoming, Error> {
        poll_fn(|cx| self.poll_recv(cx)).await
    }

    /// The poll behind [`recv`](Self::recv): ready with the next request
    /// (or an error); otherwise the task of `cx` is woken when one may have
    /// come, or the client is gone. After a batch handed over in a row it
    /// is pending once, and wakes the task at once.
    ///
    /// # Errors
    ///
    /// As [`recv`](Self::recv).
    pub fn poll_recv(&mut self, cx: &mut Context<'_>) -> Poll<Result<Incoming, Error>> {
        self.driver.poll_recv(self.session.server_mut(), cx)
    }

    /// As [`Session::buffers`]: a request's body and response block.
    ///
    /// # Errors
    ///
    /// As [`Session::buffers`].
    pub fn buffers(&mut self, incoming: &Incoming) -> Result<(&[u8], &mut [u8]), Error> {
        self.session.buffers(incoming)
    }

    /// As [`Session::complete`].
    ///
    /// # Errors
    ///
    /// As [`Session::complete`].
    pub fn complete(
        &mut self,
        incoming: Incoming,
        result: i32,
        response_len: usize,
    ) -> Result<(), Rejected<Incoming>> {
        self.session.complete(incoming, result, response_len)
    }

    /// As [`Session::payload_mut`]: the request body, to transform in
    /// place before answering with [`complete_in_place`](Self::complete_in_place).
    ///
    /// # Errors
    ///
    /// As [`Session::payload_mut`].
    pub fn payload_mut(&mut self, incoming: &Incoming) -> Result<&mut [u8], Error> {
        self.session.payload_mut(incoming)
    }

    /// As [`Session::complete_in_place`]: posts the completion of
    /// `incoming` with its response written over the request body.
    ///
    /// # Errors
    ///
    /// As [`Session::complete_in_place`].
    pub fn complete_in_place(
        &mut self,
        incoming: Incoming,
        result: i32,
        response_len: usize,
    ) -> Result<(), Rejected<Incoming>> {
        self.session
            .complete_in_place(incoming, result, response_len)
    }

    /// Waits for one request, hands its body and response block to
    /// `handler`, completes it (as [`Session::handle`]).
    ///
    /// # Errors
    ///
    /// As [`Session::handle`]: [`Error::PeerGone`] once the client is gone.
    ///
    /// # Examples
    ///
    /// See [`AsyncService`](super::AsyncService).
    pub async fn handle<F>(&mut self, handler: F) -> Result<(), Error>
    where
        F: FnOnce(&Incoming, &[u8], &mut [u8]) -> (i32, usize),
    {
        let incoming = self.recv().await?;
        self.session.server_mut().answer(incoming, handler)
    }

    /// As [`Session::set_options`]: the park timeout is how often the
    /// liveness checks run without news.
    pub fn set_options(&mut self, options: Options) {
        self.session.set_options(options);
        self.driver.restart_timer(options.park_timeout);
    }

    /// The session back, to serve without the runtime.
    pub fn into_inner(self) -> Session {
        self.session
    }
}
