//! A [`Notifier`] a reactor can wait on: one eventfd per side, written by
//! the peer when it finds that side's "needs wakeup" flag armed.
//!
//! The flags and the handshake of [`WakeFlag`] are the same as with a
//! [`Futex`]: a side that finds its peer's flag down makes no system call.
//! Only the sleeping differs. A side waits on its own eventfd (readable once
//! the peer wrote it), through [`Notifier::wait`] or through any reactor that
//! watches [`AsFd::as_fd`]; the peer wakes it by writing to that eventfd.
//! Flags that are not the connection's two (the client's process-local
//! flags, for threads that share it) wait and wake through a futex, as
//! before.

use super::Futex;
use super::kind::NotifierKind;
use super::wake::{Notifier, WakeFlag};
use crate::loom::sync::atomic::{AtomicUsize, Ordering};
use core::time::Duration;
use rustix::event::{EventfdFlags, PollFd, PollFlags, eventfd, poll};
use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use std::io;

/// Wakes through eventfds: `wait` on the connection's own flag polls this
/// side's eventfd, `wake` of the peer's flag writes the peer's. Liveness
/// (the peer's process, through a pidfd) is the [`Futex`]'s.
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
/// use uring_queue::Region;
///
/// #[repr(C, align(128))]
/// struct Mem([u8; 8192]);
/// let mut mem = Box::new(Mem([0; 8192]));
/// let config = Config::new(4, 4, 0).with_notifier(NotifierKind::EventFd);
/// let (for_client, for_server) = EventFd::pair().unwrap();
/// let (client, mut server) = Uring::init(Region::new(&mut mem.0), config)
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
    /// Addresses of the connection's own and peer flags, set by
    /// [`Notifier::bind`]; 0 until then.
    own_flag: AtomicUsize,
    peer_flag: AtomicUsize,
    /// Process-local flags, and the view of the peer's process.
    futex: Futex,
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
            own_flag: AtomicUsize::new(0),
            peer_flag: AtomicUsize::new(0),
            futex: Futex::new(),
        }
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

    fn is_own(&self, flag: &WakeFlag) -> bool {
        self.own_flag.load(Ordering::Relaxed) == addr(flag)
    }

    fn is_peer(&self, flag: &WakeFlag) -> bool {
        self.peer_flag.load(Ordering::Relaxed) == addr(flag)
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
        if !self.is_own(flag) {
            return self.futex.wait(flag, timeout);
        }
        if !flag.is_armed() {
            return;
        }
        let ts = rustix::event::Timespec {
            tv_sec: timeout.as_secs().try_into().unwrap_or(i64::MAX),
            tv_nsec: timeout.subsec_nanos().into(),
        };
        let mut fds = [PollFd::new(&self.own, PollFlags::IN)];
        // Woken, timed out or interrupted: the caller re-checks in every
        // case. A wake-up written while nobody waited makes this one return
        // at once: spurious, and harmless.
        if matches!(poll(&mut fds, Some(&ts)), Ok(n) if n > 0) {
            drain(self.own.as_fd());
        }
    }

    fn wake(&self, flag: &WakeFlag) {
        let fd = if self.is_peer(flag) {
            &self.peer
        } else if self.is_own(flag) {
            // Another thread of this side parks on the connection's flag.
            &self.own
        } else {
            return self.futex.wake(flag);
        };
        // Fails only when the counter would overflow, which leaves the
        // eventfd readable anyway.
        let _ = rustix::io::write(fd, &1u64.to_ne_bytes());
    }

    fn process_id(&self) -> u32 {
        self.futex.process_id()
    }

    fn has_exited(&self, pid: u32) -> bool {
        self.futex.has_exited(pid)
    }

    fn kind(&self) -> NotifierKind {
        NotifierKind::EventFd
    }

    fn bind(&self, own: &WakeFlag, peer: &WakeFlag) {
        self.own_flag.store(addr(own), Ordering::Relaxed);
        self.peer_flag.store(addr(peer), Ordering::Relaxed);
    }
}
