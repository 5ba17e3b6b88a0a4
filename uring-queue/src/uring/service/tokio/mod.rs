//! Services on tokio (feature `tokio`): the same names, admission, regions
//! and lifecycle as the blocking form, with every wait on the runtime's
//! reactor.
//!
//! - [`AsyncService`] accepts clients as they come; each is an
//!   [`AsyncSession`], served as a task of its own (it yields after a
//!   bounded batch, so a flooding client does not keep the thread).
//! - [`AsyncHub`] serves every client from one task, a bounded batch per
//!   client per round ([`Hub`](super::Hub) on the reactor).
//! - [`connect_async`] gives an [`AsyncConnection`], whose calls wait on the
//!   reactor.
//!
//! Each side registers the connection's socket with the reactor beside its
//! eventfd: a peer that dies, even by `SIGKILL`, ends the other's waits
//! with [`Error::PeerGone`](crate::uring::Error::PeerGone) as soon as the
//! reactor runs, not a park timeout later.

mod connection;
mod hub;
mod listener;
mod session;

pub use connection::{AsyncConnection, connect_async};
pub use hub::AsyncHub;
pub use listener::AsyncService;
pub use session::AsyncSession;

use rustix::event::{PollFd, PollFlags, Timespec, poll};
use rustix::fd::BorrowedFd;

/// Whether `fd` is readable now: a listener with clients waiting, an epoll
/// set with events.
fn readable_now(fd: BorrowedFd<'_>) -> bool {
    let mut fds = [PollFd::new(&fd, PollFlags::IN)];
    let zero = Timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    matches!(poll(&mut fds, Some(&zero)), Ok(n) if n > 0)
}
