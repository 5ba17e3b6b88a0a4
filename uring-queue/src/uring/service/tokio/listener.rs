//! The server's side on tokio: a service whose clients are accepted on the
//! reactor.

use super::readable_now;
use super::session::AsyncSession;
use crate::uring::service::listener::is_exhaustion;
use crate::uring::service::{ACCEPT_RETRY, AcceptError, BindOptions, Name, Service};
use crate::uring::tokio::register;
use ::tokio::io::unix::AsyncFd;
use ::tokio::time::{Sleep, sleep};
use alloc::boxed::Box;
use core::future::{Future, poll_fn};
use core::pin::Pin;
use core::task::{Context, Poll, ready};
use rustix::fd::OwnedFd;
use std::io;
use std::sync::{Mutex, PoisonError};

/// A [`Service`] that accepts clients on the tokio runtime: each admitted
/// client is an [`AsyncSession`], to serve as a task of its own.
///
/// Admission is the blocking service's: the client's credentials
/// (`SO_PEERCRED`) are judged before anything is laid out for it, and a
/// refused client is told why ([`Refusal`](super::super::Refusal)).
///
/// # Examples
///
/// A task per client:
///
/// ```
/// # #[cfg(not(miri))] { // Miri cannot make these system calls.
/// use uring_queue::uring::Request;
/// use uring_queue::uring::service::{AsyncService, BindOptions, ClientConfig, connect_async};
///
/// let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
/// rt.block_on(async {
///     let name = format!("doc-async-service-{}", std::process::id());
///     let service = AsyncService::bind(name.as_str(), BindOptions::default()).unwrap();
///     tokio::spawn(async move {
///         while let Ok(mut session) = service.accept().await {
///             tokio::spawn(async move {
///                 // Until the client goes: `PeerGone`.
///                 while session.handle(|incoming, _, _| (incoming.opcode() as i32 + 1, 0)).await.is_ok() {}
///             });
///         }
///     });
///     let client = connect_async::<4>(name.as_str(), ClientConfig::default()).await.unwrap();
///     assert_eq!(client.call(Request::new(41)).await.unwrap().result, 42);
/// });
/// # }
/// ```
#[derive(Debug)]
pub struct AsyncService {
    service: Service,
    /// The listening socket, registered with the reactor.
    listener: AsyncFd<OwnedFd>,
    batch: usize,
    /// Set while accepting waits for descriptors (or memory) to come back:
    /// the listening socket stays readable meanwhile, so the reactor would
    /// report it at once, again and again.
    backoff: Mutex<Option<Pin<Box<Sleep>>>>,
}

impl AsyncService {
    /// Binds `name` as [`Service::bind`] does, on the current runtime.
    ///
    /// # Errors
    ///
    /// As [`Service::bind`]; outside a tokio runtime.
    ///
    /// # Examples
    ///
    /// See [`AsyncService`].
    pub fn bind(name: impl Into<Name>, options: BindOptions) -> io::Result<Self> {
        Self::new(Service::bind(name, options)?)
    }

    /// Accepts `service`'s clients on the current runtime.
    ///
    /// # Errors
    ///
    /// Outside a tokio runtime, or when the socket cannot be registered.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[cfg(not(miri))] {
    /// use uring_queue::uring::service::{AsyncService, BindOptions, Service};
    ///
    /// let name = format!("doc-async-new-{}", std::process::id());
    /// let service = Service::bind(name.as_str(), BindOptions::default()).unwrap();
    /// // No runtime here: refused, not a panic.
    /// let service = AsyncService::new(service).unwrap_err();
    /// # }
    /// ```
    pub fn new(service: Service) -> io::Result<Self> {
        let listener = register(service.listener())?;
        Ok(Self {
            service,
            listener,
            batch: 16,
            backoff: Mutex::new(None),
        })
    }

    /// The name it serves.
    pub fn name(&self) -> &Name {
        self.service.name()
    }

    /// Sessions alive now.
    pub fn clients(&self) -> usize {
        self.service.clients()
    }

    /// The most requests a session accepted from now on hands over in a row
    /// before its task yields to the runtime (at least 1; 16 by default).
    pub fn set_batch(&mut self, batch: usize) {
        self.batch = batch.max(1);
    }

    /// Waits for the next client and admits it, or refuses it (which tells
    /// it why): [`Service::accept`] on the reactor. Cancel-safe: dropped
    /// while it waits, no client is lost.
    ///
    /// # Errors
    ///
    /// As [`Service::accept`]: [`AcceptError::Refused`] for a client turned
    /// away (call again for the next one). Not when the process is out of
    /// descriptors or memory: then it waits, trying again every
    /// [`ACCEPT_RETRY`], and the clients stay in the backlog.
    ///
    /// # Examples
    ///
    /// See [`AsyncService`].
    pub async fn accept(&self) -> Result<AsyncSession, AcceptError> {
        poll_fn(|cx| self.poll_accept(cx)).await
    }

    /// The poll behind [`accept`](Self::accept), for hand-written futures
    /// and streams: ready with the next client (or a refusal, or an error);
    /// otherwise the task of `cx` is woken when a client connects.
    ///
    /// # Errors
    ///
    /// As [`accept`](Self::accept).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[cfg(not(miri))] {
    /// use core::task::{Context, Waker};
    /// use uring_queue::uring::service::{AsyncService, BindOptions};
    ///
    /// let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    /// rt.block_on(async {
    ///     let name = format!("doc-async-poll-{}", std::process::id());
    ///     let service = AsyncService::bind(name.as_str(), BindOptions::default()).unwrap();
    ///     // Nobody connected yet.
    ///     assert!(service.poll_accept(&mut Context::from_waker(Waker::noop())).is_pending());
    /// });
    /// # }
    /// ```
    pub fn poll_accept(&self, cx: &mut Context<'_>) -> Poll<Result<AsyncSession, AcceptError>> {
        loop {
            ready!(self.poll_backoff(cx));
            let mut guard = ready!(self.listener.poll_read_ready(cx))?;
            match self.service.try_accept() {
                Ok(Some(session)) => {
                    return Poll::Ready(AsyncSession::new(session, self.batch).map_err(Into::into));
                }
                // Nobody to serve: a client that gave up, or none left.
                Ok(None) if readable_now(self.service.listener()) => {}
                Ok(None) => guard.clear_ready(),
                Err(AcceptError::Io(e)) if is_exhaustion(&e) => self.start_backoff(),
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
    }

    /// Waits [`ACCEPT_RETRY`] before the next try to accept.
    fn start_backoff(&self) {
        let mut backoff = self.backoff.lock().unwrap_or_else(PoisonError::into_inner);
        *backoff = Some(Box::pin(sleep(ACCEPT_RETRY)));
    }

    /// Ready unless a backoff is running; pending until it ends.
    fn poll_backoff(&self, cx: &mut Context<'_>) -> Poll<()> {
        let mut backoff = self.backoff.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(wait) = backoff.as_mut() {
            ready!(wait.as_mut().poll(cx));
            *backoff = None;
        }
        Poll::Ready(())
    }

    /// The service, to serve without the runtime.
    pub fn into_inner(self) -> Service {
        self.service
    }
}
