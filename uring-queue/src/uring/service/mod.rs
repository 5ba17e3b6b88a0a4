//! Services by name (Linux, `std`): a server binds a name, clients connect
//! to it from any process, and each admitted client gets a region of its
//! own, handed over a Unix socket with its eventfds (`SCM_RIGHTS`).
//!
//! - **Names.** A name in the abstract socket namespace by default (nothing
//!   on any filesystem, so nothing is left behind by a crash), or a socket
//!   file with permission bits ([`Name`]).
//! - **Admission.** The server reads each client's credentials from the
//!   kernel (`SO_PEERCRED`) before it lays out anything; by default only
//!   its own user is admitted, and a rule of its own can decide otherwise
//!   ([`Admission`]). A refused client is told why ([`Refusal`]).
//! - **Checked hand-over.** The client maps the region only once it is
//!   sealed against any change of size and is the size announced, then
//!   attaches and validates the layout as any attacher does.
//! - **Lifecycle.** Each side waits on the socket beside its eventfd: a
//!   peer that dies, even by `SIGKILL`, ends the other's waits with
//!   [`Error::PeerGone`](super::Error::PeerGone) at once. Every resource of
//!   a connection (mapping, memfd, eventfds, socket) is a descriptor or a
//!   mapping of the two processes, freed when they close it or die.
//! - **Many clients, one thread.** [`Hub`] serves every client of a service
//!   from one thread with epoll, a bounded batch of requests per client per
//!   round.
//! - **On tokio** (feature `tokio`): `AsyncService` accepts clients as
//!   they come, each an `AsyncSession` to serve as a task of its own;
//!   `AsyncHub` serves them all from one task; `connect_async` gives an
//!   `AsyncConnection`. Admission, refusals and lifecycle are the same.
//!
//! Layout, threat model and limits: `docs/uring-queue.md`, "Services by
//! name".

mod admission;
mod connection;
mod error;
mod hub;
mod listener;
mod name;
mod offer;
mod passing;
mod session;
#[cfg(feature = "tokio")]
mod tokio;

pub use admission::{Admission, Peer, Refusal, Rule};
pub use connection::{ClientConfig, Connection, connect};
pub use error::{AcceptError, ConnectError};
pub use hub::{Hub, Turn};
pub use listener::{ACCEPT_RETRY, BindOptions, Service};
pub use name::Name;
pub use session::Session;
#[cfg(feature = "tokio")]
pub use tokio::{AsyncConnection, AsyncHub, AsyncService, AsyncSession, connect_async};
