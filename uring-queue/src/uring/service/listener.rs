//! The server's side of a service: the listening socket under a name, the
//! admission of each client by its credentials, and the hand-over of a
//! fresh region to each admitted one.

use super::admission::{Admission, Peer, Refusal};
use super::error::AcceptError;
use super::name::Name;
use super::offer::Offer;
use super::passing::send_offer;
use super::session::Session;
use crate::loom::sync::atomic::{AtomicUsize, Ordering};
use crate::uring::Config;
use alloc::sync::Arc;
use core::time::Duration;
use rustix::event::{PollFd, PollFlags, poll};
use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use rustix::io::Errno;
use rustix::net::SocketFlags;
use std::io;

/// How a service lays out and admits its clients.
///
/// # Examples
///
/// ```
/// use uring_queue::uring::Config;
/// use uring_queue::uring::service::{Admission, BindOptions};
///
/// let options = BindOptions {
///     config: Config::new(16, 16, 64 << 10),
///     admission: Admission::Anyone,
///     max_clients: 8,
///     ..BindOptions::default()
/// };
/// assert_eq!(options.mode, 0o600);
/// ```
#[derive(Debug)]
pub struct BindOptions {
    /// The layout of each client's region (its notifier is always
    /// eventfds). Default: 64 entries each way, a payload area of 1 MiB.
    pub config: Config,
    /// Who may connect. Default: the server's own user only.
    pub admission: Admission,
    /// The most clients served at once; more are refused with
    /// [`Refusal::Full`]. Default: 1024.
    pub max_clients: u32,
    /// Permission bits of a socket file ([`Name::Path`]). Default `0o600`:
    /// the server's user only, as the default admission.
    pub mode: u32,
}

impl Default for BindOptions {
    fn default() -> Self {
        Self {
            config: Config::new(64, 64, 1 << 20),
            admission: Admission::SameUser,
            max_clients: 1024,
            mode: 0o600,
        }
    }
}

/// A service bound to a name: clients [`connect`](super::connect) to it,
/// and each one admitted gets a region of its own
/// ([`Session`]), with no descriptor number, `fork` or `unsafe` on either
/// side.
///
/// # Examples
///
/// ```
/// # #[cfg(not(miri))] { // Miri cannot make these system calls.
/// use uring_queue::uring::Request;
/// use uring_queue::uring::service::{BindOptions, ClientConfig, Service, connect};
///
/// let name = format!("doc-service-{}", std::process::id());
/// let service = Service::bind(name.as_str(), BindOptions::default()).unwrap();
/// std::thread::scope(|s| {
///     s.spawn(|| {
///         let mut session = service.accept().unwrap();
///         assert_eq!(session.peer().pid, std::process::id());
///         session.handle(|incoming, _, _| (incoming.opcode() as i32 + 1, 0)).unwrap();
///     });
///     let client = connect::<4>(name.as_str(), ClientConfig::default()).unwrap();
///     assert_eq!(client.call(Request::new(41)).unwrap().result, 42);
/// });
/// # }
/// ```
#[derive(Debug)]
pub struct Service {
    listener: OwnedFd,
    name: Name,
    options: BindOptions,
    uid: u32,
    clients: Arc<AtomicUsize>,
}

impl Service {
    /// Binds `name` (a `&str` is a name in the abstract namespace; see
    /// [`Name`]) and listens on it.
    ///
    /// # Errors
    ///
    /// `AddrInUse` while another server holds the name; the socket's other
    /// errors; a socket file's permission errors.
    pub fn bind(name: impl Into<Name>, options: BindOptions) -> io::Result<Self> {
        let name = name.into();
        let listener = name.listen(options.mode)?;
        Ok(Self {
            listener,
            name,
            options,
            uid: rustix::process::getuid().as_raw(),
            clients: Arc::new(AtomicUsize::new(0)),
        })
    }

    /// The name it serves.
    pub fn name(&self) -> &Name {
        &self.name
    }

    /// Sessions alive now (each ends when dropped).
    pub fn clients(&self) -> usize {
        self.clients.load(Ordering::Relaxed)
    }

    /// Waits for the next client and admits it, or refuses it (which
    /// tells it why).
    ///
    /// # Errors
    ///
    /// [`AcceptError::Refused`] for a client turned away (call again for
    /// the next one); [`AcceptError::Io`] when the socket fails, or the
    /// client's region cannot be made.
    pub fn accept(&self) -> Result<Session, AcceptError> {
        loop {
            if let Some(session) = self.try_accept()? {
                return Ok(session);
            }
            let mut fds = [PollFd::new(&self.listener, PollFlags::IN)];
            match poll(&mut fds, None) {
                Ok(_) | Err(Errno::INTR) => {}
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// Admits or refuses the next client waiting, if any.
    ///
    /// # Errors
    ///
    /// As [`accept`](Self::accept).
    pub fn try_accept(&self) -> Result<Option<Session>, AcceptError> {
        match self.try_admit() {
            Ok(session) => Ok(session),
            Err(Failure::Listener(e)) => Err(AcceptError::Io(e)),
            Err(Failure::Client(e)) => Err(e),
        }
    }

    /// As [`try_accept`](Self::try_accept), telling the listening socket's
    /// failures from one client's.
    pub(crate) fn try_admit(&self) -> Result<Option<Session>, Failure> {
        let socket = match rustix::net::accept_with(
            &self.listener,
            SocketFlags::CLOEXEC | SocketFlags::NONBLOCK,
        ) {
            Ok(socket) => socket,
            Err(Errno::AGAIN | Errno::INTR) => return Ok(None),
            // The client gave up before we accepted: nothing to serve.
            Err(Errno::CONNABORTED) => return Ok(None),
            Err(e) => return Err(Failure::Listener(e.into())),
        };
        match self.admit(socket) {
            // The client hung up before it got its answer (a probe, or a
            // client that gave up): nothing to serve, and nothing kept.
            Err(AcceptError::Io(e)) if is_hang_up(&e) => Ok(None),
            Err(e) => Err(Failure::Client(e)),
            Ok(session) => Ok(Some(session)),
        }
    }

    /// Decides on the client on `socket` and answers it. Whatever fails
    /// after the decision (no descriptor or memory left for its region)
    /// is told to the client as [`Refusal::Unavailable`].
    fn admit(&self, socket: OwnedFd) -> Result<Session, AcceptError> {
        let peer = peer_of(&socket)?;
        if let Err(why) = self.decide(&peer) {
            // The client may have gone already; the refusal stands anyway.
            let _ = send_offer(socket.as_fd(), &Offer::Refused(why), &[]);
            return Err(AcceptError::Refused { peer, why });
        }
        let hosted = socket
            .try_clone()
            .and_then(|own| Session::host(own, peer, self.options.config, self.clients.clone()));
        hosted.map_err(|e| {
            let _ = send_offer(socket.as_fd(), &Offer::Refused(Refusal::Unavailable), &[]);
            e.into()
        })
    }

    fn decide(&self, peer: &Peer) -> Result<(), Refusal> {
        self.options.admission.decide(peer, self.uid)?;
        let max = self.options.max_clients;
        if self.clients() >= max as usize {
            return Err(Refusal::Full { max });
        }
        Ok(())
    }

    /// The listening socket, readable while a client waits.
    pub(crate) fn listener(&self) -> BorrowedFd<'_> {
        self.listener.as_fd()
    }
}

/// How long a server that ran out of descriptors (or memory) to accept
/// with waits before it tries again, unless one of its own clients leaves
/// first: [`Hub`](super::Hub) and
/// [`AsyncService`](super::AsyncService) stop watching the listening
/// socket, which stays readable while clients wait, for this long.
pub const ACCEPT_RETRY: Duration = Duration::from_millis(100);

/// Whether `accept` failed for want of descriptors or memory, which
/// clients leaving (or the rest of the process) give back.
pub(crate) fn is_exhaustion(e: &io::Error) -> bool {
    [Errno::MFILE, Errno::NFILE, Errno::NOBUFS, Errno::NOMEM]
        .iter()
        .any(|errno| e.raw_os_error() == Some(errno.raw_os_error()))
}

/// Why [`Service::try_admit`] took no client.
#[derive(Debug)]
pub(crate) enum Failure {
    /// The listening socket failed (in `accept`).
    Listener(io::Error),
    /// One client was refused, or its connection could not be set up; the
    /// service goes on.
    Client(AcceptError),
}

/// Whether a send failed because the client's end is closed.
fn is_hang_up(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::BrokenPipe | io::ErrorKind::ConnectionReset
    )
}

/// The credentials the kernel recorded when the client connected.
fn peer_of(socket: &OwnedFd) -> io::Result<Peer> {
    let cred = rustix::net::sockopt::socket_peercred(socket)?;
    Ok(Peer {
        pid: rustix::process::Pid::as_raw(Some(cred.pid)).unsigned_abs(),
        uid: cred.uid.as_raw(),
        gid: cred.gid.as_raw(),
    })
}

impl Drop for Service {
    fn drop(&mut self) {
        self.name.remove();
    }
}
