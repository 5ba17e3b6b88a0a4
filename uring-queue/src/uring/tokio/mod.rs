//! Reactor-driven async on tokio (feature `tokio`, Linux): an
//! [`AsyncClient`] whose calls complete on the runtime's reactor alone, and
//! an [`AsyncServer`] that runs as a task.
//!
//! Both sides wake through [`EventFd`](super::EventFd)s: lay the region out
//! with [`Config::with_notifier`](super::Config::with_notifier)`(`[`NotifierKind::EventFd`](super::NotifierKind::EventFd)`)`,
//! attach with [`Uring::attach_with`](super::Uring::attach_with), and make
//! the notifiers with [`EventFd::pair`](super::EventFd::pair) (the peer
//! process inherits its half). The wire protocol is the same as with a
//! `Futex`: a blocking server serves an async client, and the other way
//! round, as long as both use eventfds.
//!
//! No request allocates: a call's future holds its state and timer, the
//! server's timer is made once.

mod client;
mod server;
mod wakeup;

pub use client::AsyncClient;
pub(crate) use client::CallDriver;
pub use server::AsyncServer;
pub(crate) use server::RecvDriver;
pub(crate) use wakeup::register;
