//! A [`Notifier`] a reactor can wait on: one eventfd per side, written by
//! the peer when it finds that side's "needs wakeup" flag armed.
//!
//! The flags and the handshake of [`WakeFlag`] are the same as with a
//! [`Futex`](super::Futex): a side that finds its peer's flag down makes no system call.
//! Only the sleeping differs. A side waits on its own eventfd (readable once
//! the peer wrote it), through [`Notifier::wait`] or through any reactor that
//! watches [`AsFd::as_fd`]; the peer wakes it by writing to that eventfd.
//! Flags that are not the connection's two (the client's process-local
//! flags, for threads that share it) wait and wake through a futex, as
//! before.
//!
//! Which of the three a flag is comes from the addresses [`Notifier::bind`]
//! records ([`Binding`]). They are stored and loaded `Relaxed`: the client
//! and the server bind in their constructors, while they own the notifier,
//! and any other thread reaches it only through the side, handed over by a
//! spawn, a channel or an `Arc`, which orders the bind before its first use
//! (`eventfd/loom.rs` models it).

use super::kind::NotifierKind;
use super::wake::{Notifier, WakeFlag};
use crate::loom::sync::atomic::{AtomicUsize, Ordering};
use core::time::Duration;
use rustix::event::{EventfdFlags, PollFd, PollFlags, eventfd, poll};
use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use std::io;

/// Where process-local flags sleep: a futex on the flag's word. Under loom
/// that word is loom's model of one, which no kernel is handed: the loom
/// models wait on those flags by spinning, and wake them with no call.
#[cfg(not(loom))]
type Local = super::Futex;
#[cfg(loom)]
type Local = super::Spin;

/// Wakes through eventfds: `wait` on the connection's own flag polls this
/// side's eventfd, `wake` of the peer's flag writes the peer's. Liveness
/// (the peer's process, through a pidfd) is the [`Futex`](super::Futex)'s.
///
/// Both eventfds are made by one process with [`pair`](Self::pair); the
/// other side's half reaches its process the way the region's memfd does:
/// inherited across `fork`/`exec` ([`set_inheritable`](Self::set_inheritable),
/// the numbers in [`raw_fds`](Self::raw_fds) passed on the command line),
/// then rebuilt with [`from_fds`](Self::from_fds). Both processes must use
/// eventfds: the region records the kind ([`Config::with_notifier`](super::Config::with_notifier))
/// and [`Uring::attach_with`](super::Uring::attach_with) refuses a mismatch.
///
/// # Examples
///
/// ```
/// # #[cfg(not(miri))] { // Miri cannot make these system calls.
/// use uring_queue::uring::{Config, EventFd, NotifierKind, Request, Uring};
/// use uring_queue::AlignedBuf;
///
/// let mut mem = AlignedBuf::zeroed(8192).unwrap();
/// let config = Config::new(4, 4, 0).with_notifier(NotifierKind::EventFd);
/// let (for_client, for_server) = EventFd::pair().unwrap();
/// let (client, mut server) = Uring::init(mem.region(), config)
///     .unwrap()
///     .split::<4, _, _>(for_client, for_server);
/// std::thread::scope(|s| {
///     s.spawn(move || {
///         let incoming = server.recv().unwrap();
///         server.complete(incoming, 7, 0).unwrap();
///     });
///     assert_eq!(client.call(Request::new(1)).unwrap().result, 7);
/// });
/// # }
/// ```
#[derive(Debug)]
pub struct EventFd {
    /// Readable once the peer woke this side.
    own: OwnedFd,
    /// Written to wake the peer.
    peer: OwnedFd,
    /// Which flags are the connection's, set by [`Notifier::bind`].
    binding: Binding,
    /// Process-local flags, and the view of the peer's process.
    futex: Local,
    /// A descriptor that turns readable when the peer is gone (the socket
    /// a service connection was made over): waited on beside `own`, so a
    /// peer's death ends a wait at once, not a park timeout later.
    hangup: Option<OwnedFd>,
}

/// The addresses of the connection's two flags, which tell them from
/// process-local ones; 0 until bound (no flag has address 0, so an unbound
/// notifier treats every flag as local).
#[derive(Debug)]
struct Binding {
    own: AtomicUsize,
    peer: AtomicUsize,
}

/// How a flag is waited on and woken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Route {
    /// The connection's flag this side parks on: its own eventfd.
    Own,
    /// The connection's flag the peer parks on: the peer's eventfd.
    Peer,
    /// Any other flag (a thread of this process parks on it): the futex.
    Local,
}

impl Binding {
    fn new() -> Self {
        Self {
            own: AtomicUsize::new(0),
            peer: AtomicUsize::new(0),
        }
    }

    fn bind(&self, own: &WakeFlag, peer: &WakeFlag) {
        self.own.store(addr(own), Ordering::Relaxed);
        self.peer.store(addr(peer), Ordering::Relaxed);
    }

    fn route(&self, flag: &WakeFlag) -> Route {
        let at = addr(flag);
        if self.own.load(Ordering::Relaxed) == at {
            Route::Own
        } else if self.peer.load(Ordering::Relaxed) == at {
            Route::Peer
        } else {
            Route::Local
        }
    }
}

/// A non-blocking, close-on-exec eventfd.
fn new_eventfd() -> io::Result<OwnedFd> {
    Ok(eventfd(0, EventfdFlags::CLOEXEC | EventfdFlags::NONBLOCK)?)
}

/// The address a bound flag is known by.
fn addr(flag: &WakeFlag) -> usize {
    flag.as_ptr() as usize
}

/// Empties an eventfd's counter, so that it polls readable only after the
/// next write. The descriptor is non-blocking: an empty one answers
/// `EAGAIN`, which is as good.
pub(crate) fn drain(fd: BorrowedFd<'_>) {
    let mut buf = [0u8; 8];
    let _ = rustix::io::read(fd, &mut buf);
}

/// Whether `socket`, whose peer sends nothing after the handshake, is
/// readable now: its peer's process is gone (or broke the protocol).
pub(crate) fn hung_up(socket: BorrowedFd<'_>) -> bool {
    let mut fds = [PollFd::new(&socket, PollFlags::IN | PollFlags::RDHUP)];
    let zero = rustix::event::Timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    matches!(poll(&mut fds, Some(&zero)), Ok(n) if n > 0)
}

impl EventFd {
    /// The two notifiers of a connection: the client's and the server's,
    /// each waiting on its own eventfd and writing the other's.
    ///
    /// # Errors
    ///
    /// The system's, when it cannot make an eventfd (out of descriptors).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[cfg(not(miri))] {
    /// use std::os::fd::{AsFd, AsRawFd};
    /// use uring_queue::uring::EventFd;
    ///
    /// let (client, _server) = EventFd::pair().unwrap();
    /// // The descriptor a reactor watches is the one the client waits on;
    /// // the server holds a descriptor of its own for each eventfd.
    /// let (own, peer) = client.raw_fds();
    /// assert_eq!(client.as_fd().as_raw_fd(), own);
    /// assert_ne!(own, peer);
    /// # }
    /// ```
    pub fn pair() -> io::Result<(Self, Self)> {
        let client = new_eventfd()?;
        let server = new_eventfd()?;
        let client_dup = client.try_clone()?;
        let server_dup = server.try_clone()?;
        Ok((
            Self::from_fds(client, server),
            Self::from_fds(server_dup, client_dup),
        ))
    }

    /// A notifier from descriptors received from the process that made the
    /// [`pair`](Self::pair): `own` is the eventfd this side waits on, `peer`
    /// the one it writes to wake its peer (the first and second of
    /// [`raw_fds`](Self::raw_fds) on the sending side).
    ///
    /// Both must be non-blocking eventfds (as [`pair`](Self::pair) makes
    /// them); other descriptors make waits and wake-ups fail silently, and
    /// the sides fall back on their park timeouts.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[cfg(not(miri))] {
    /// use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    /// use uring_queue::uring::EventFd;
    ///
    /// let (_client, server) = EventFd::pair().unwrap();
    /// let (own, peer) = server.into_fds();
    /// // What a child process does with the numbers it inherited.
    /// let rebuilt = EventFd::from_fds(own, peer);
    /// assert!(rebuilt.raw_fds().0 >= 0);
    /// # }
    /// ```
    pub fn from_fds(own: OwnedFd, peer: OwnedFd) -> Self {
        Self {
            own,
            peer,
            binding: Binding::new(),
            futex: Local::default(),
            hangup: None,
        }
    }

    /// Also waits on `socket`, whose peer sends nothing after the handshake:
    /// once it turns readable (the peer's process is gone, or it broke the
    /// protocol), the peer counts as exited.
    #[cfg(not(loom))]
    pub(crate) fn watch_hangup(&mut self, socket: OwnedFd) {
        self.hangup = Some(socket);
    }

    /// The socket watched beside the eventfd, if any: a reactor waits on
    /// it too, and asks [`hung_up`] once it turns readable.
    #[cfg(all(feature = "tokio", not(loom)))]
    pub(crate) fn hangup(&self) -> Option<BorrowedFd<'_>> {
        self.hangup.as_ref().map(AsFd::as_fd)
    }

    /// Whether the watched socket says the peer is gone.
    fn hung_up(&self) -> bool {
        self.hangup.as_ref().is_some_and(|s| hung_up(s.as_fd()))
    }

    /// The descriptors, to hand to the peer's process: `(own, peer)`.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[cfg(not(miri))] {
    /// let (client, _server) = uring_queue::uring::EventFd::pair().unwrap();
    /// let (own, peer) = client.into_fds();
    /// assert_ne!(std::os::fd::AsRawFd::as_raw_fd(&own), std::os::fd::AsRawFd::as_raw_fd(&peer));
    /// # }
    /// ```
    pub fn into_fds(self) -> (OwnedFd, OwnedFd) {
        (self.own, self.peer)
    }

    /// The descriptor numbers `(own, peer)`, to pass to a child process
    /// that inherits them (see [`set_inheritable`](Self::set_inheritable)).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[cfg(not(miri))] {
    /// let (client, server) = uring_queue::uring::EventFd::pair().unwrap();
    /// // Four descriptors: each side has its own pair.
    /// let (a, b) = (client.raw_fds(), server.raw_fds());
    /// assert!(a.0 != a.1 && b.0 != b.1 && a != b);
    /// # }
    /// ```
    pub fn raw_fds(&self) -> (i32, i32) {
        use rustix::fd::AsRawFd;
        (self.own.as_raw_fd(), self.peer.as_raw_fd())
    }

    /// Whether both descriptors survive `exec` (they are made close-on-exec):
    /// set it on the half meant for a child process just before spawning it.
    ///
    /// # Errors
    ///
    /// The system's, from `fcntl`.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[cfg(not(miri))] {
    /// let (_client, server) = uring_queue::uring::EventFd::pair().unwrap();
    /// server.set_inheritable(true).unwrap();
    /// # }
    /// ```
    pub fn set_inheritable(&self, inheritable: bool) -> io::Result<()> {
        use rustix::io::{FdFlags, fcntl_getfd, fcntl_setfd};
        for fd in [&self.own, &self.peer] {
            let mut flags = fcntl_getfd(fd)?;
            flags.set(FdFlags::CLOEXEC, !inheritable);
            fcntl_setfd(fd, flags)?;
        }
        Ok(())
    }
}

/// This side's eventfd: readable once the peer woke it. Register it with a
/// reactor (epoll, mio, tokio's `AsyncFd`), and empty it (read its eight
/// bytes) once woken.
impl AsFd for EventFd {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.own.as_fd()
    }
}

impl Notifier for EventFd {
    fn wait(&self, flag: &WakeFlag, timeout: Duration) {
        if self.binding.route(flag) != Route::Own {
            return self.futex.wait(flag, timeout);
        }
        if !flag.is_armed() {
            return;
        }
        let ts = rustix::event::Timespec {
            tv_sec: timeout.as_secs().try_into().unwrap_or(i64::MAX),
            tv_nsec: timeout.subsec_nanos().into(),
        };
        let hangup = PollFlags::IN | PollFlags::RDHUP;
        let mut fds = [
            PollFd::new(&self.own, PollFlags::IN),
            PollFd::new(&self.own, hangup),
        ];
        let watched = match &self.hangup {
            Some(socket) => {
                fds[1] = PollFd::new(socket, hangup);
                &mut fds[..]
            }
            None => &mut fds[..1],
        };
        // Woken, timed out or interrupted: the caller re-checks in every
        // case. A wake-up written while nobody waited makes this one return
        // at once: spurious, and harmless. A hung-up socket ends the wait
        // too; the liveness check after it asks `has_exited`.
        if matches!(poll(watched, Some(&ts)), Ok(n) if n > 0) {
            drain(self.own.as_fd());
        }
    }

    fn wake(&self, flag: &WakeFlag) {
        let fd = match self.binding.route(flag) {
            Route::Peer => &self.peer,
            // Another thread of this side parks on the connection's flag.
            Route::Own => &self.own,
            Route::Local => return self.futex.wake(flag),
        };
        // Fails only when the counter would overflow, which leaves the
        // eventfd readable anyway.
        let _ = rustix::io::write(fd, &1u64.to_ne_bytes());
    }

    fn process_id(&self) -> u32 {
        self.futex.process_id()
    }

    fn has_exited(&self, pid: u32) -> bool {
        self.hung_up() || self.futex.has_exited(pid)
    }

    fn peer_hung_up(&self) -> bool {
        self.hung_up()
    }

    fn kind(&self) -> NotifierKind {
        NotifierKind::EventFd
    }

    fn bind(&self, own: &WakeFlag, peer: &WakeFlag) {
        self.binding.bind(own, peer);
    }
}

// Loom model of the binding; once on real threads without loom. Not under
// Miri, which cannot make eventfds.
#[cfg(all(test, not(miri)))]
mod loom;

// Plain unit tests: loom's atomics work only inside a model.
#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::uring::Link;

    #[test]
    fn an_unbound_notifier_routes_every_flag_to_the_futex() {
        let binding = Binding::new();
        let link = Link::new();
        for flag in [&link.client.wake, &link.server.wake, &WakeFlag::new()] {
            assert_eq!(binding.route(flag), Route::Local);
        }
    }

    #[test]
    fn a_bound_notifier_routes_the_connections_flags_to_the_eventfds() {
        let link = Link::new();
        let local = WakeFlag::new();
        let client = Binding::new();
        client.bind(&link.client.wake, &link.server.wake);
        let server = Binding::new();
        server.bind(&link.server.wake, &link.client.wake);
        assert_eq!(client.route(&link.client.wake), Route::Own);
        assert_eq!(client.route(&link.server.wake), Route::Peer);
        assert_eq!(client.route(&local), Route::Local);
        assert_eq!(server.route(&link.server.wake), Route::Own);
        assert_eq!(server.route(&link.client.wake), Route::Peer);
        assert_eq!(server.route(&local), Route::Local);
    }
}
