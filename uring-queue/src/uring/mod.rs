//! Request/response over shared memory, in the manner of io_uring: a
//! submission ring (client to server) and a completion ring (server to
//! client) in one region, each entry tagged with a `user_data` word, large
//! bodies passed as blocks of a payload area in the same region.
//!
//! - **Four ways to send.** [`Client::try_submit`] (never blocks; a
//!   [`Ticket`], or the request back), [`Client::submit`] (blocks for a
//!   credit; a `Ticket`), [`Client::call`] (blocks for the reply) and
//!   [`Client::call_async`] (a future of the reply, on any executor).
//! - **Tags and the in-flight table.** The client keeps a fixed table of `N`
//!   slots (no allocation); a request's tag is its slot index and the slot's
//!   generation, so completions reach their submitter in any order, and a
//!   tag is never reused while its request is in flight. A cancelled request
//!   (a dropped [`Call`] future) keeps its slot until the completion
//!   arrives, which is then discarded.
//! - **Credits.** The client never has more requests in flight than the
//!   completion ring holds, so the server can always post a completion
//!   ([`Error::CompletionRingFull`] if a client breaks this).
//! - **Wake-ups.** Each side spins for a while, then arms its "needs wakeup"
//!   flag and parks through a [`Notifier`] (`Futex` or, for a reactor to
//!   wait on, `EventFd` on Linux, with `std`); the peer
//!   wakes it only when the flag is armed, so the busy path makes no system
//!   call.
//! - **Sharing.** The [`Client`] is `Sync`: threads and tasks share one,
//!   and its [`Call`] futures are `Send`. Its state sits behind a short
//!   spin lock; one thread at a time parks on the client's wake flag and
//!   drains, the others park on flags of their own and are woken when their
//!   reply is routed.
//! - **Liveness.** Close flags, per-side epochs, heartbeats and the
//!   notifier's view of processes: a side whose peer closed, exited (even by
//!   `SIGKILL`) or restarted gets [`Error::PeerGone`] within a park round
//!   instead of hanging.
//! - **Hostile peers.** Every offset, length and tag read from the region is
//!   validated before use; a bad one latches [`Error::Corrupted`].
//!
//! The wire format is [`Sqe`] and [`Cqe`]: plain `#[repr(C)]` data, so the
//! two sides need not be the same build. Layout and protocol:
//! `docs/uring-queue.md`.
//!
//! # Examples
//!
//! ```
//! # #[cfg(feature = "alloc")] {
//! use uring_queue::uring::{Config, Request, Spin, Uring};
//! use uring_queue::AlignedBuf;
//!
//! let config = Config::new(8, 8, 4096);
//! let mut mem = AlignedBuf::for_uring(&config).unwrap();
//! let (client, mut server) = Uring::init(mem.region(), config)
//!     .unwrap()
//!     .split::<8, _, _>(Spin, Spin);
//! let ticket = client.try_submit(Request::new(7)).unwrap();
//! let incoming = server.try_recv().unwrap().unwrap();
//! server.complete(incoming, 70, 0).unwrap();
//! assert_eq!(client.wait(ticket).unwrap().result, 70);
//! # }
//! ```

mod client;
#[cfg(not(loom))]
mod connection;
mod entry;
mod error;
// Built under loom too, with real eventfds (loom models only its own
// primitives): process-local flags spin there instead of using the futex.
#[cfg(all(feature = "std", target_os = "linux"))]
mod eventfd;
// Not built under loom: the futex is a system call on a real word, and the
// region layout keeps its atomics in a region of bytes, where loom's
// atomics cannot live. Loom models the connection over in-process rings.
#[cfg(all(feature = "std", target_os = "linux", not(loom)))]
mod futex;
mod kind;
#[cfg(not(loom))]
mod layout;
mod link;
mod liveness;
mod options;
mod park;
mod payload;
// The reactor-driven sides' (tokio's); under loom (which the tokio sides
// do not build under) the models' of their waiting calls.
#[cfg(any(all(feature = "std", target_os = "linux", not(loom)), all(test, loom)))]
mod reactor;
// The tokio client's; under loom (which the tokio client does not build
// under) its models'.
#[cfg(any(
    all(test, loom),
    all(feature = "tokio", target_os = "linux", not(loom))
))]
mod reactor_waiter;
mod request;
mod server;
#[cfg(all(feature = "std", target_os = "linux", not(loom)))]
pub mod service;
mod table;
// Loom models of the request/response layer (wake flags, credits, a shared
// client); once on real threads without loom. Not under Miri.
#[cfg(all(test, feature = "std", not(miri)))]
mod tests {
    mod loom;
}
#[cfg(all(feature = "tokio", target_os = "linux", not(loom)))]
pub mod tokio;
mod wake;

pub use client::{Call, Client};
#[cfg(not(loom))]
pub use connection::{URING_ALIGN, Uring};
pub use entry::{CQE_IN_PLACE, Cqe, Sqe};
pub use error::{Error, Rejected};
#[cfg(all(feature = "std", target_os = "linux"))]
pub use eventfd::EventFd;
#[cfg(all(feature = "std", target_os = "linux", not(loom)))]
pub use futex::Futex;
pub use kind::NotifierKind;
#[cfg(not(loom))]
pub use layout::{Config, URING_MAGIC, URING_VERSION};
pub use link::Link;
pub use options::Options;
pub use payload::{BLOCK_ALIGN, Block};
pub use request::{Reply, Request, Ticket};
pub use server::{Incoming, Server};
pub use wake::{Notifier, Spin, WakeFlag};
