//! The client's side on tokio: connecting by name without blocking the
//! runtime, and calls that wait on the reactor.

use crate::uring::service::offer::Offer;
use crate::uring::service::passing::recv_offer;
use crate::uring::service::{ClientConfig, ConnectError, Connection, Name};
use crate::uring::tokio::{CallDriver, register};
use crate::uring::{Block, Client, Error, EventFd, Reply, Request};
use alloc::vec::Vec;
use core::fmt;
use rustix::fd::{AsFd, OwnedFd};
use rustix::net::SocketFlags;
use std::io;

/// A client connected to a service by name, on the tokio runtime: its
/// [`call`](Self::call)s wait on the reactor, with no thread of their own.
///
/// The connection's socket is registered with the reactor beside the
/// client's eventfd: a server that goes away (even by `SIGKILL`) ends every
/// waiting call with [`Error::PeerGone`] as soon as the reactor runs, not a
/// park timeout later. To reach a restarted server, connect again: the new
/// connection has a new region, so nothing of the old one is answered by
/// the new server. Dropping it closes the connection.
///
/// The blocking client underneath is [`client`](Self::client), for
/// submitting without waiting and for its blocks.
///
/// # Examples
///
/// See [`AsyncService`](super::AsyncService); a body both ways:
///
/// ```
/// # #[cfg(not(miri))] {
/// use uring_queue::uring::Request;
/// use uring_queue::uring::service::{AsyncService, BindOptions, ClientConfig, connect_async};
///
/// let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
/// rt.block_on(async {
///     let name = format!("doc-async-connection-{}", std::process::id());
///     let service = AsyncService::bind(name.as_str(), BindOptions::default()).unwrap();
///     let serve = async {
///         let mut session = service.accept().await.unwrap();
///         session.handle(|_, body, out| {
///             out[..body.len()].copy_from_slice(body);
///             (0, body.len())
///         }).await.unwrap();
///     };
///     let call = async {
///         let client = connect_async::<4>(name.as_str(), ClientConfig::default()).await.unwrap();
///         let mut body = client.alloc(5).unwrap();
///         client.bytes_mut(&mut body).unwrap().copy_from_slice(b"hello");
///         let out = client.alloc(5).unwrap();
///         let reply = client.call(Request::new(0).with_payload(body).with_response(out)).await.unwrap();
///         assert_eq!(client.response(&reply).unwrap(), b"hello");
///         client.free_reply(reply);
///     };
///     tokio::join!(serve, call);
/// });
/// # }
/// ```
pub struct AsyncConnection<const N: usize> {
    connection: Connection<N>,
    driver: CallDriver,
}

impl<const N: usize> fmt::Debug for AsyncConnection<N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AsyncConnection")
            .field("connection", &self.connection)
            .finish_non_exhaustive()
    }
}

/// Connects to the service `name` as [`connect`](super::super::connect)
/// does, waiting for the server's answer on the reactor: an
/// [`AsyncConnection`] with `N` in-flight slots.
///
/// # Errors
///
/// As [`connect`](super::super::connect): nobody serving the name, a
/// refusal with its reason ([`ConnectError::Refused`]), an answer that is
/// not a service's, a region that fails the checks; `WouldBlock` while the
/// server's backlog of connecting clients is full; outside a tokio runtime.
///
/// # Examples
///
/// See [`AsyncService`](super::AsyncService) and [`AsyncConnection`].
pub async fn connect_async<const N: usize>(
    name: impl Into<Name>,
    config: ClientConfig,
) -> Result<AsyncConnection<N>, ConnectError> {
    let socket = name.into().connect_with(SocketFlags::NONBLOCK)?;
    let (offer, fds) = answer(&socket).await?;
    let connection = Connection::attach(socket, offer, fds, config)?;
    let driver = CallDriver::new(&connection)?;
    Ok(AsyncConnection { connection, driver })
}

/// Waits on the reactor for the server's answer on `socket`.
async fn answer(socket: &OwnedFd) -> Result<(Offer, Vec<OwnedFd>), ConnectError> {
    let ready = register(socket.as_fd())?;
    loop {
        let mut guard = ready.readable().await?;
        match recv_offer(socket) {
            Err(ConnectError::Io(e)) if e.kind() == io::ErrorKind::WouldBlock => {
                guard.clear_ready();
            }
            other => return other,
        }
    }
}

impl<const N: usize> AsyncConnection<N> {
    /// Submits `request` (waiting for a credit if none is free) and waits
    /// for its reply, both through the runtime, as
    /// [`AsyncClient::call`](crate::uring::tokio::AsyncClient::call).
    /// Dropped before the reply, the call cancels the request.
    ///
    /// # Errors
    ///
    /// [`Error::PeerGone`] once the server closed, exited or restarted;
    /// [`Error::Corrupted`]; [`Error::Foreign`] for blocks of another
    /// client.
    ///
    /// # Examples
    ///
    /// See [`AsyncConnection`].
    pub async fn call(&self, request: Request) -> Result<Reply, Error> {
        self.driver.call(&self.connection, request).await
    }

    /// The blocking client underneath: [`Client::try_submit`],
    /// [`Client::credits`] and the rest. Its blocking waits block the
    /// runtime's thread; [`call`](Self::call) is the one that waits on the
    /// reactor.
    pub fn client(&self) -> &Client<'static, N, EventFd> {
        &self.connection
    }

    /// As [`Client::alloc`]: a block of the region's payload area.
    ///
    /// # Errors
    ///
    /// As [`Client::alloc`].
    pub fn alloc(&self, len: usize) -> Result<Block, Error> {
        self.connection.alloc(len)
    }

    /// As [`Client::free`].
    pub fn free(&self, block: Block) {
        self.connection.free(block);
    }

    /// As [`Client::free_reply`]: frees both blocks of a reply.
    pub fn free_reply(&self, reply: Reply) {
        self.connection.free_reply(reply);
    }

    /// As [`Client::bytes`].
    ///
    /// # Errors
    ///
    /// As [`Client::bytes`].
    pub fn bytes<'b>(&'b self, block: &'b Block) -> Result<&'b [u8], Error> {
        self.connection.bytes(block)
    }

    /// As [`Client::bytes_mut`].
    ///
    /// # Errors
    ///
    /// As [`Client::bytes_mut`].
    pub fn bytes_mut<'b>(&'b self, block: &'b mut Block) -> Result<&'b mut [u8], Error> {
        self.connection.bytes_mut(block)
    }

    /// As [`Client::response`]: the response bytes of a reply.
    ///
    /// # Errors
    ///
    /// As [`Client::response`].
    pub fn response<'b>(&'b self, reply: &'b Reply) -> Result<&'b [u8], Error> {
        self.connection.response(reply)
    }

    /// Bytes of the region.
    pub fn region_len(&self) -> usize {
        self.connection.region_len()
    }

    /// As [`Client::set_options`]: the park timeout is how often the
    /// liveness checks run without news.
    pub fn set_options(&mut self, options: crate::uring::Options) {
        self.connection.set_options(options);
    }
}
