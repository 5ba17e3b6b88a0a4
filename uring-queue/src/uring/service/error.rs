//! Why connecting to a service, or accepting a client, did not happen.

use super::admission::{Peer, Refusal};
use crate::uring::Error;
use core::fmt;
use std::io;

/// Why [`connect`](super::connect) failed.
///
/// # Examples
///
/// ```
/// # #[cfg(not(miri))] {
/// use uring_queue::uring::service::{ClientConfig, ConnectError, connect};
///
/// // Nobody serves this name.
/// let err = connect::<4>("no-such-service-here", ClientConfig::default()).unwrap_err();
/// assert!(matches!(err, ConnectError::Io(ref e) if e.kind() == std::io::ErrorKind::ConnectionRefused));
/// # }
/// ```
#[derive(Debug)]
pub enum ConnectError {
    /// The socket could not be made or connected (nobody serves the name:
    /// `ConnectionRefused` or `NotFound`), or the server hung up before it
    /// answered.
    Io(io::Error),
    /// The server turned this client away, and said why.
    Refused(Refusal),
    /// What came back is not a service's answer (too short, another magic).
    NotAService,
    /// The server speaks another version of the handshake.
    Version {
        /// The version the server sent.
        found: u32,
    },
    /// An admitted answer without exactly the three descriptors it must
    /// carry (the region, and the two eventfds).
    Descriptors {
        /// How many came.
        found: usize,
    },
    /// The region is not sealed against shrinking, growing and further
    /// seals: the server (or whoever holds the file) could truncate it under
    /// the mapping.
    NotSealed,
    /// The region's size is not the size the server announced.
    Size {
        /// The size in the server's answer.
        announced: u64,
        /// The file's size.
        actual: u64,
    },
    /// The region did not attach (its layout failed validation).
    Attach(Error),
}

impl fmt::Display for ConnectError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Io(e) => write!(f, "connecting to the service: {e}"),
            Self::Refused(why) => write!(f, "refused by the service: {why}"),
            Self::NotAService => f.write_str("the socket's answer is not a service's"),
            Self::Version { found } => write!(f, "the service speaks handshake version {found}"),
            Self::Descriptors { found } => {
                write!(f, "the service sent {found} descriptors instead of 3")
            }
            Self::NotSealed => f.write_str("the service's region is not sealed"),
            Self::Size { announced, actual } => write!(
                f,
                "the service announced a region of {announced} bytes and sent {actual}"
            ),
            Self::Attach(e) => write!(f, "the service's region: {e}"),
        }
    }
}

// No `source`: every wrapping variant shows its cause in its own message.
impl core::error::Error for ConnectError {}

impl From<io::Error> for ConnectError {
    fn from(e: io::Error) -> Self {
        Self::Io(e)
    }
}

impl From<rustix::io::Errno> for ConnectError {
    fn from(e: rustix::io::Errno) -> Self {
        Self::Io(e.into())
    }
}

/// Why a server did not take on a client.
///
/// # Examples
///
/// ```
/// use uring_queue::uring::service::{AcceptError, Peer, Refusal};
///
/// let peer = Peer { pid: 9, uid: 1001, gid: 1001 };
/// let e = AcceptError::Refused { peer, why: Refusal::Denied };
/// assert_eq!(
///     e.to_string(),
///     "refused pid 9 (uid 1001, gid 1001): the service's admission rule refused this client"
/// );
/// ```
#[derive(Debug)]
pub enum AcceptError {
    /// A client was turned away (and told why). The service goes on.
    Refused {
        /// Who it was.
        peer: Peer,
        /// Why.
        why: Refusal,
    },
    /// The listening socket, or setting up the client's connection, failed.
    Io(io::Error),
}

impl fmt::Display for AcceptError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Refused { peer, why } => write!(f, "refused {peer}: {why}"),
            Self::Io(e) => write!(f, "accepting a client: {e}"),
        }
    }
}

impl core::error::Error for AcceptError {}

impl From<io::Error> for AcceptError {
    fn from(e: io::Error) -> Self {
        Self::Io(e)
    }
}

impl From<rustix::io::Errno> for AcceptError {
    fn from(e: rustix::io::Errno) -> Self {
        Self::Io(e.into())
    }
}
