//! The reactor's side of a wait, shared by the async client and server:
//! the notifier's eventfd registered with tokio, and the liveness timer.

use crate::uring::eventfd::drain;
use ::tokio::io::Interest;
use ::tokio::io::unix::AsyncFd;
use ::tokio::runtime::Handle;
use ::tokio::time::{Instant, Sleep};
use core::pin::Pin;
use core::task::{Context, Poll};
use core::time::Duration;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

/// A side's eventfd (a duplicate of its notifier's), registered with the
/// current runtime's reactor.
#[derive(Debug)]
pub(super) struct Wakeup {
    fd: AsyncFd<OwnedFd>,
}

impl Wakeup {
    /// Registers `fd` with the runtime this is called in.
    ///
    /// # Errors
    ///
    /// Outside a tokio runtime, or when the descriptor cannot be duplicated
    /// or registered.
    pub(super) fn new(fd: BorrowedFd<'_>) -> io::Result<Self> {
        Handle::try_current().map_err(io::Error::other)?;
        let owned = fd.try_clone_to_owned()?;
        // SAFETY: the `OwnedFd` keeps its descriptor open, naming the same
        // eventfd, until the `AsyncFd` that owns it drops it, and its
        // `as_raw_fd` always answers that descriptor.
        let fd = unsafe { AsyncFd::register_with_interest(owned, Interest::READABLE) }?;
        Ok(Self { fd })
    }

    /// Ready once the peer wrote the eventfd since the last time this was
    /// ready (the eventfd is emptied then); otherwise the task of `cx` is
    /// woken when it does.
    pub(super) fn poll(&self, cx: &mut Context<'_>) -> Poll<()> {
        match self.fd.poll_read_ready(cx) {
            Poll::Ready(Ok(mut guard)) => {
                // Emptied before the readiness is cleared: a write after the
                // read sets it again (tokio compares its event ticks).
                drain(guard.get_inner().as_fd());
                guard.clear_ready();
                Poll::Ready(())
            }
            // The reactor is gone (the runtime shuts down): only the timer,
            // or the future's drop, ends the wait now.
            Poll::Ready(Err(_)) | Poll::Pending => Poll::Pending,
        }
    }
}

/// Whether the liveness timer `sleep` fired; then it is set again, `period`
/// from now. Otherwise the task of `cx` is woken when it fires.
pub(super) fn tick(mut sleep: Pin<&mut Sleep>, period: Duration, cx: &mut Context<'_>) -> bool {
    if sleep.as_mut().poll(cx).is_pending() {
        return false;
    }
    sleep.reset(Instant::now() + period);
    true
}
