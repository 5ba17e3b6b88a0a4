//! Many clients, one task: the hub's epoll set on the reactor.

use super::readable_now;
use crate::uring::Incoming;
use crate::uring::service::{BindOptions, Hub, Name, Peer, Service, Turn};
use crate::uring::tokio::register;
use ::tokio::io::unix::AsyncFd;
use ::tokio::time::timeout_at;
use core::time::Duration;
use rustix::fd::OwnedFd;
use std::io;

/// Serves every client of a [`Service`] from one task: a [`Hub`] whose
/// epoll set is registered with the tokio reactor.
///
/// Each [`turn`](Self::turn) waits on the reactor until a client's
/// eventfd or socket, or the listening socket, is ready, then serves one
/// round as [`Hub::turn`] does: at most a batch of requests per client
/// ([`set_batch`](Self::set_batch)), so a client that floods cannot starve
/// the others; clients whose sockets hung up (even by `SIGKILL`) are
/// dropped in the same round; new clients are admitted by the service's
/// rule (refused ones are told why). While a client has requests left
/// over, a turn yields to the runtime once and serves at once.
///
/// # Examples
///
/// ```
/// # #[cfg(not(miri))] { // Miri cannot make these system calls.
/// use uring_queue::uring::Request;
/// use uring_queue::uring::service::{AsyncHub, BindOptions, ClientConfig, connect_async};
///
/// let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
/// rt.block_on(async {
///     let name = format!("doc-async-hub-{}", std::process::id());
///     let mut hub = AsyncHub::bind(name.as_str(), BindOptions::default()).unwrap();
///     tokio::spawn(async move {
///         loop {
///             hub.turn(&mut |_peer, incoming, _body, _out| (incoming.opcode() as i32 * 2, 0))
///                 .await
///                 .unwrap();
///         }
///     });
///     let a = connect_async::<4>(name.as_str(), ClientConfig::default()).await.unwrap();
///     let b = connect_async::<4>(name.as_str(), ClientConfig::default()).await.unwrap();
///     let (x, y) = tokio::join!(a.call(Request::new(1)), b.call(Request::new(20)));
///     assert_eq!((x.unwrap().result, y.unwrap().result), (2, 40));
/// });
/// # }
/// ```
#[derive(Debug)]
pub struct AsyncHub {
    hub: Hub,
    /// The hub's epoll set, registered with the reactor: readable while
    /// something waits to be served.
    ready: AsyncFd<OwnedFd>,
}

impl AsyncHub {
    /// Binds `name` as [`Service::bind`] does and serves it on the current
    /// runtime.
    ///
    /// # Errors
    ///
    /// As [`Service::bind`] and [`new`](Self::new).
    ///
    /// # Examples
    ///
    /// See [`AsyncHub`].
    pub fn bind(name: impl Into<Name>, options: BindOptions) -> io::Result<Self> {
        Self::new(Service::bind(name, options)?)
    }

    /// Serves `service`'s clients (those it admits from now on) on the
    /// current runtime.
    ///
    /// # Errors
    ///
    /// Outside a tokio runtime; when the epoll set cannot be made or
    /// registered.
    pub fn new(service: Service) -> io::Result<Self> {
        let hub = Hub::new(service)?;
        let ready = register(hub.epoll())?;
        Ok(Self { hub, ready })
    }

    /// The most requests served per client per round (at least 1; 16 by
    /// default).
    pub fn set_batch(&mut self, batch: usize) {
        self.hub.set_batch(batch);
    }

    /// Clients connected now.
    pub fn clients(&self) -> usize {
        self.hub.clients()
    }

    /// The service.
    pub fn service(&self) -> &Service {
        self.hub.service()
    }

    /// Waits on the reactor for clients to serve, then serves one round
    /// ([`Hub::turn`]): at most the batch of each client with requests,
    /// `handler` answering each (`(result, response_len)`). Returns once a
    /// round did something. Cancel-safe: dropped while it waits, it has
    /// taken nothing from any client.
    ///
    /// # Errors
    ///
    /// Only the epoll set's or the listening socket's failures; a client's
    /// failure drops that client.
    ///
    /// # Examples
    ///
    /// See [`AsyncHub`].
    pub async fn turn<F>(&mut self, handler: &mut F) -> io::Result<Turn>
    where
        F: FnMut(&Peer, &Incoming, &[u8], &mut [u8]) -> (i32, usize),
    {
        if self.hub.is_busy() {
            // Requests left over: the other tasks first, then at once.
            ::tokio::task::yield_now().await;
            return self.hub.turn(Some(Duration::ZERO), handler);
        }
        loop {
            let readable = self.ready.readable();
            // Out of descriptors, the hub watches its listening socket
            // again at `resume_at`: the reactor alone would not come back
            // for it.
            let mut guard = match self.hub.resume_at() {
                Some(at) => timeout_at(at.into(), readable).await.ok().transpose()?,
                None => Some(readable.await?),
            };
            let turn = self.hub.turn(Some(Duration::ZERO), handler)?;
            let idle = !self.hub.is_busy() && !readable_now(self.hub.epoll());
            if let (Some(guard), true) = (guard.as_mut(), idle) {
                guard.clear_ready();
            }
            if turn != Turn::default() {
                return Ok(turn);
            }
        }
    }
}
