//! The reactor's side of a wait, shared by the async client and server:
//! the notifier's eventfd (and the socket of a service's connection)
//! registered with tokio, and the liveness timer.

use crate::uring::EventFd;
use crate::uring::eventfd::{drain, hung_up};
pub(crate) use crate::uring::reactor_waiter::Wake;
use ::tokio::io::Interest;
use ::tokio::io::unix::AsyncFd;
use ::tokio::runtime::Handle;
use ::tokio::time::{Instant, Sleep};
use core::pin::Pin;
use core::task::{Context, Poll};
use core::time::Duration;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

/// A side's eventfd (a duplicate of its notifier's), and the socket its
/// notifier watches if it has one, registered with the current runtime's
/// reactor.
#[derive(Debug)]
pub(crate) struct Wakeup {
    fd: AsyncFd<OwnedFd>,
    hangup: Option<AsyncFd<OwnedFd>>,
}

/// Registers a duplicate of `fd` with the current runtime's reactor, for
/// readiness to read.
///
/// # Errors
///
/// Outside a tokio runtime, or when the descriptor cannot be duplicated or
/// registered.
pub(crate) fn register(fd: BorrowedFd<'_>) -> io::Result<AsyncFd<OwnedFd>> {
    // Registering outside a runtime panics: refuse first.
    Handle::try_current().map_err(io::Error::other)?;
    let owned = fd.try_clone_to_owned()?;
    // SAFETY: the `OwnedFd` keeps its descriptor open, naming the same
    // file, until the `AsyncFd` that owns it drops it, and its `as_raw_fd`
    // always answers that descriptor.
    Ok(unsafe { AsyncFd::register_with_interest(owned, Interest::READABLE) }?)
}

impl Wakeup {
    /// Registers `notifier`'s eventfd, and the socket it watches, with the
    /// runtime this is called in.
    ///
    /// # Errors
    ///
    /// Outside a tokio runtime, or when a descriptor cannot be duplicated
    /// or registered.
    pub(crate) fn new(notifier: &EventFd) -> io::Result<Self> {
        let fd = register(notifier.as_fd())?;
        let hangup = notifier.hangup().map(register).transpose()?;
        Ok(Self { fd, hangup })
    }

    /// Ready once the socket hung up, or once the peer wrote the eventfd
    /// since the last time this was ready (the eventfd is emptied then);
    /// otherwise the task of `cx` is woken when either happens.
    pub(crate) fn poll(&self, cx: &mut Context<'_>) -> Poll<Wake> {
        if self.poll_hangup(cx).is_ready() {
            return Poll::Ready(Wake::HungUp);
        }
        match self.fd.poll_read_ready(cx) {
            Poll::Ready(Ok(mut guard)) => {
                // Emptied before the readiness is cleared: a write after the
                // read sets it again (tokio compares its event ticks).
                drain(guard.get_inner().as_fd());
                guard.clear_ready();
                Poll::Ready(Wake::Notified)
            }
            // The reactor is gone (the runtime shuts down): only the timer,
            // or the future's drop, ends the wait now.
            Poll::Ready(Err(_)) | Poll::Pending => Poll::Pending,
        }
    }

    /// Ready while the watched socket is readable. Its readiness is left
    /// set: a peer gone stays gone, for every side that asks.
    fn poll_hangup(&self, cx: &mut Context<'_>) -> Poll<()> {
        let Some(socket) = &self.hangup else {
            return Poll::Pending;
        };
        loop {
            match socket.poll_read_ready(cx) {
                Poll::Ready(Ok(mut guard)) => {
                    if hung_up(guard.get_inner().as_fd()) {
                        return Poll::Ready(());
                    }
                    // Stale readiness: wait for the next event.
                    guard.clear_ready();
                }
                Poll::Ready(Err(_)) | Poll::Pending => return Poll::Pending,
            }
        }
    }
}

/// Whether the liveness timer `sleep` fired; then it is set again, `period`
/// from now. Otherwise the task of `cx` is woken when it fires.
pub(crate) fn tick(mut sleep: Pin<&mut Sleep>, period: Duration, cx: &mut Context<'_>) -> bool {
    if sleep.as_mut().poll(cx).is_pending() {
        return false;
    }
    sleep.reset(Instant::now() + period);
    true
}
