//! One client's connection as the server holds it: the region the server
//! laid out for that client (a sealed memfd of its own), the server's end
//! of the request/response pair in it, and the client's socket.

use super::admission::Peer;
use super::offer::Offer;
use super::passing::send_offer;
use crate::SharedMemory;
use crate::loom::sync::atomic::{AtomicUsize, Ordering};
use crate::uring::{
    Config, Error, EventFd, Incoming, NotifierKind, Options, Rejected, Server, Uring,
};
use alloc::sync::Arc;
use core::fmt;
use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use std::io;

/// One connected client, served by [`recv`](Self::recv) and
/// [`complete`](Self::complete) as a [`Server`] is. Dropping it unmaps the
/// client's region and closes every descriptor of the connection: the
/// client's calls end with [`Error::PeerGone`].
///
/// The region is this client's alone: no other client can see or write
/// it, and what this client writes there reaches only its own requests.
///
/// A client that dies (even by `SIGKILL`) ends a waiting
/// [`recv`](Self::recv) with [`Error::PeerGone`] at once: the server waits on
/// the client's socket beside its eventfd, and the socket hangs up when the
/// client's process is gone.
///
/// # Examples
///
/// See [`Service`](super::Service).
pub struct Session {
    /// Borrows `shm`'s mapping: declared first, so dropped first.
    server: Server<'static, EventFd>,
    shm: SharedMemory,
    socket: OwnedFd,
    peer: Peer,
    /// The service's count of live sessions, which this one leaves on drop.
    count: Arc<AtomicUsize>,
}

impl fmt::Debug for Session {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Session")
            .field("peer", &self.peer)
            .field("region_len", &self.shm.len())
            .finish_non_exhaustive()
    }
}

impl Session {
    /// Lays out a region for the client on `socket` and sends it, with the
    /// client's two eventfds, in the admitted answer.
    pub(crate) fn host(
        socket: OwnedFd,
        peer: Peer,
        config: Config,
        count: Arc<AtomicUsize>,
    ) -> io::Result<Self> {
        let config = config.with_notifier(NotifierKind::EventFd);
        let len = Uring::required_size(&config).map_err(|e| io::Error::other(Error::from(e)))?;
        let mut shm = SharedMemory::create("uring-service", len)?;
        let (for_client, mut for_server) = EventFd::pair()?;
        for_server.watch_hangup(socket.try_clone()?);
        // SAFETY: the region lives in `shm`, which this session owns and
        // drops after `server` (field order), the only thing built on it;
        // `shm` is never lent out again.
        let region = unsafe { shm.region_unbounded() };
        let server = Uring::init(region, config)
            .map_err(io::Error::other)?
            .into_server(for_server);
        let (own, peer_fd) = for_client.into_fds();
        let offer = Offer::Admitted {
            region_len: len as u64,
        };
        send_offer(
            socket.as_fd(),
            &offer,
            &[shm.fd(), own.as_fd(), peer_fd.as_fd()],
        )?;
        count.fetch_add(1, Ordering::Relaxed);
        Ok(Self {
            server,
            shm,
            socket,
            peer,
            count,
        })
    }

    /// Who the client is (`SO_PEERCRED`, at connect time).
    ///
    /// # Examples
    ///
    /// See [`Service`](super::Service).
    pub fn peer(&self) -> Peer {
        self.peer
    }

    /// Bytes of the client's region.
    pub fn region_len(&self) -> usize {
        self.shm.len()
    }

    /// As [`Server::try_recv`].
    ///
    /// # Errors
    ///
    /// As [`Server::try_recv`].
    pub fn try_recv(&mut self) -> Result<Option<Incoming>, Error> {
        self.server.try_recv()
    }

    /// As [`Server::recv`]: waits for the next request; [`Error::PeerGone`]
    /// at once when the client's process is gone.
    ///
    /// # Errors
    ///
    /// As [`Server::recv`].
    pub fn recv(&mut self) -> Result<Incoming, Error> {
        self.server.recv()
    }

    /// As [`Server::buffers`].
    ///
    /// # Errors
    ///
    /// As [`Server::buffers`].
    pub fn buffers(&mut self, incoming: &Incoming) -> Result<(&[u8], &mut [u8]), Error> {
        self.server.buffers(incoming)
    }

    /// As [`Server::complete`].
    ///
    /// # Errors
    ///
    /// As [`Server::complete`].
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

    /// As [`Server::handle`]: receives one request, hands its body and
    /// response block to `handler`, completes it.
    ///
    /// # Errors
    ///
    /// As [`Server::handle`].
    pub fn handle<F>(&mut self, handler: F) -> Result<(), Error>
    where
        F: FnOnce(&Incoming, &[u8], &mut [u8]) -> (i32, usize),
    {
        self.server.handle(handler)
    }

    /// As [`Server::set_options`].
    pub fn set_options(&mut self, options: Options) {
        self.server.set_options(options);
    }

    /// The server's end, for the hub and the async session.
    pub(crate) fn server_mut(&mut self) -> &mut Server<'static, EventFd> {
        &mut self.server
    }

    /// The client's socket, readable once the client is gone.
    pub(crate) fn socket(&self) -> BorrowedFd<'_> {
        self.socket.as_fd()
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.count.fetch_sub(1, Ordering::Relaxed);
    }
}
