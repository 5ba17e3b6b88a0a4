//! The client's side of a service: connecting by name, checking what the
//! server sent before mapping it, and the client that owns its region.

use super::error::ConnectError;
use super::name::Name;
use super::offer::Offer;
use super::passing::{OFFER_FDS, recv_offer};
use crate::SharedMemory;
use crate::uring::{Client, EventFd, NotifierKind, Options, Uring};
use alloc::vec::Vec;
use core::fmt;
use core::ops::Deref;
use rustix::fd::OwnedFd;
use rustix::fs::{SealFlags, fcntl_get_seals, fstat};

/// How a client connects.
///
/// # Examples
///
/// ```
/// use uring_queue::uring::Options;
/// use uring_queue::uring::service::ClientConfig;
///
/// let config = ClientConfig { options: Options { spin: 256, ..Options::default() } };
/// assert_eq!(config.options.spin, 256);
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct ClientConfig {
    /// The client's spin and park settings ([`Client::set_options`]).
    pub options: Options,
}

/// The seals a service's region must carry before it is mapped: no size
/// change by anyone, and no seal added later.
const REQUIRED_SEALS: SealFlags = SealFlags::SHRINK
    .union(SealFlags::GROW)
    .union(SealFlags::SEAL);

/// A client connected to a service by name, owning its region: a
/// [`Client`] (through `Deref`) with `N` in-flight slots.
///
/// Dropping it closes the connection: the server sees the socket hang up
/// at once and drops its end. A server that goes away (even by `SIGKILL`)
/// ends every waiting call with [`Error::PeerGone`](crate::uring::Error::PeerGone)
/// at once: the client waits on the socket beside its eventfd. To reach a
/// restarted server, connect again: the new connection has a new region,
/// so nothing of the old one is answered by the new server.
///
/// # Examples
///
/// See [`Service`](super::Service).
pub struct Connection<const N: usize> {
    /// Borrows `shm`'s mapping: declared first, so dropped first.
    client: Client<'static, N, EventFd>,
    shm: SharedMemory,
}

impl<const N: usize> fmt::Debug for Connection<N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Connection")
            .field("client", &self.client)
            .field("region_len", &self.shm.len())
            .finish()
    }
}

/// Connects to the service `name` (a `&str` is a name in the abstract
/// namespace, see [`Name`]) and attaches to the region it sends, as a
/// client with `N` in-flight slots.
///
/// Blocks until the server answers: it does as it accepts the connection.
///
/// # Errors
///
/// See [`ConnectError`]: nobody serving the name, a refusal (with its
/// reason), an answer that is not a service's, or a region that fails the
/// checks (seals, size, layout).
///
/// # Examples
///
/// See [`Service`](super::Service).
pub fn connect<const N: usize>(
    name: impl Into<Name>,
    config: ClientConfig,
) -> Result<Connection<N>, ConnectError> {
    let socket = name.into().connect()?;
    let (offer, fds) = recv_offer(&socket)?;
    Connection::attach(socket, offer, fds, config)
}

impl<const N: usize> Connection<N> {
    /// Checks the server's answer and what came with it, then maps the
    /// region and takes the client role in it.
    pub(crate) fn attach(
        socket: OwnedFd,
        offer: Offer,
        fds: Vec<OwnedFd>,
        config: ClientConfig,
    ) -> Result<Self, ConnectError> {
        let region_len = match offer {
            Offer::Refused(why) => return Err(ConnectError::Refused(why)),
            Offer::Admitted { region_len } => region_len,
        };
        let [memfd, own, peer]: [OwnedFd; OFFER_FDS] = fds
            .try_into()
            .map_err(|fds: Vec<_>| ConnectError::Descriptors { found: fds.len() })?;
        check_region(&memfd, region_len)?;
        let mut shm = SharedMemory::open(memfd).map_err(|_| ConnectError::NotSealed)?;
        let mut notifier = EventFd::from_fds(own, peer);
        notifier.watch_hangup(socket);
        // SAFETY: the region lives in `shm`, which this connection owns and
        // drops after `client` (field order), the only thing built on it;
        // `shm` is never lent out again.
        let region = unsafe { shm.region_unbounded() };
        let uring =
            Uring::attach_with(region, NotifierKind::EventFd).map_err(ConnectError::Attach)?;
        let mut client = uring.into_client::<N, _>(notifier);
        client.set_options(config.options);
        Ok(Self { client, shm })
    }

    /// As [`Client::set_options`].
    pub fn set_options(&mut self, options: Options) {
        self.client.set_options(options);
    }

    /// Bytes of the region.
    pub fn region_len(&self) -> usize {
        self.shm.len()
    }
}

/// The region must be sealed against any change of size and any further
/// seal, and be as large as announced, before it is mapped: a file the
/// server (or anyone holding it) could shrink would crash us with `SIGBUS`.
fn check_region(memfd: &OwnedFd, announced: u64) -> Result<(), ConnectError> {
    let seals = fcntl_get_seals(memfd).map_err(|_| ConnectError::NotSealed)?;
    if !seals.contains(REQUIRED_SEALS) {
        return Err(ConnectError::NotSealed);
    }
    let actual = u64::try_from(fstat(memfd)?.st_size).unwrap_or(0);
    if actual != announced {
        return Err(ConnectError::Size { announced, actual });
    }
    Ok(())
}

impl<const N: usize> Deref for Connection<N> {
    type Target = Client<'static, N, EventFd>;

    fn deref(&self) -> &Self::Target {
        &self.client
    }
}
