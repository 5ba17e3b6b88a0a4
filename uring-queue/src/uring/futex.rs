//! The Linux implementation of [`Notifier`]: a futex on the wake flag (the
//! flag lives in memory shared by both processes, so the futex is a shared
//! one, not `FUTEX_PRIVATE`), and a pidfd to tell whether the peer's process
//! has exited.

use super::wake::{Notifier, WakeFlag};
use core::time::Duration;
use rustix::event::{PollFd, PollFlags, poll};
use rustix::fd::OwnedFd;
use rustix::io::Errno;
use rustix::process::{Pid, PidfdFlags, getpid, pidfd_open, test_kill_process};
use rustix::thread::futex;
use std::sync::Mutex;

/// Parks on the wake flag with `futex(FUTEX_WAIT)` and wakes with
/// `futex(FUTEX_WAKE)`; publishes this process's id and watches the peer's
/// through a pidfd (so a peer killed with `SIGKILL`, which never sets its
/// close flag, is noticed at the next park round, even while it is a
/// zombie).
///
/// # Examples
///
/// ```
/// # #[cfg(not(miri))] { // Miri cannot make these system calls.
/// use core::time::Duration;
/// use std::time::Instant;
/// use uring_queue::uring::{Futex, Notifier, WakeFlag};
///
/// let futex = Futex::new();
/// assert_eq!(futex.process_id(), std::process::id());
/// assert!(!futex.has_exited(std::process::id()));
/// let flag = WakeFlag::new();
/// flag.arm();
/// // Nobody wakes us: the wait ends at its timeout.
/// let start = Instant::now();
/// futex.wait(&flag, Duration::from_millis(20));
/// assert!(start.elapsed() >= Duration::from_millis(10));
/// # }
/// ```
#[derive(Debug, Default)]
pub struct Futex {
    /// The peer's pid and a pidfd for it, opened at the first check. Behind
    /// a mutex: threads sharing a client run liveness checks through `&self`.
    peer: Mutex<Option<(u32, Option<OwnedFd>)>>,
}

impl Futex {
    /// A notifier with no peer process watched yet.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[cfg(not(miri))] { // Miri cannot make these system calls.
    /// use core::time::Duration;
    /// use uring_queue::uring::{Futex, Notifier, WakeFlag};
    ///
    /// let futex = Futex::new();
    /// let flag = WakeFlag::new();
    /// // Not armed: the wait returns at once, whatever the timeout.
    /// futex.wait(&flag, Duration::from_secs(3600));
    /// // Nobody waits: a wake-up finds no one, and is harmless.
    /// futex.wake(&flag);
    /// # }
    /// ```
    pub fn new() -> Self {
        Self {
            peer: Mutex::new(None),
        }
    }
}

/// The flag's word as `core`'s atomic, the type rustix's futex calls take
/// (the crate's `loom` facade would give `portable-atomic`'s).
fn word(flag: &WakeFlag) -> &core::sync::atomic::AtomicU32 {
    // SAFETY: the flag is a `u32` word, aligned, only ever accessed
    // atomically, and valid for the borrow of `flag`.
    unsafe { core::sync::atomic::AtomicU32::from_ptr(flag.as_ptr()) }
}

impl Notifier for Futex {
    fn wait(&self, flag: &WakeFlag, timeout: Duration) {
        let ts = futex::Timespec {
            tv_sec: timeout.as_secs().try_into().unwrap_or(i64::MAX),
            tv_nsec: timeout.subsec_nanos().into(),
        };
        // Returns at once if the flag is no longer armed (EAGAIN), on a
        // wake, a signal (EINTR) or the timeout: the caller re-checks in
        // every case.
        let _ = futex::wait(word(flag), futex::Flags::empty(), 1, Some(&ts));
    }

    fn wake(&self, flag: &WakeFlag) {
        // One side parks on a flag; wake every waiter all the same.
        let _ = futex::wake(word(flag), futex::Flags::empty(), i32::MAX as u32);
    }

    fn process_id(&self) -> u32 {
        getpid().as_raw_nonzero().get() as u32
    }

    fn has_exited(&self, pid: u32) -> bool {
        let Some(raw) = i32::try_from(pid).ok().and_then(Pid::from_raw) else {
            return false;
        };
        // A poisoned cache is still a valid cache: it only holds an fd.
        let mut peer = self.peer.lock().unwrap_or_else(|e| e.into_inner());
        if peer.as_ref().is_none_or(|(p, _)| *p != pid) {
            match pidfd_open(raw, PidfdFlags::empty()) {
                Ok(fd) => *peer = Some((pid, Some(fd))),
                Err(Errno::SRCH) => return true,
                // No pidfds here (old kernel, seccomp): fall back to kill(0).
                Err(_) => *peer = Some((pid, None)),
            }
        }
        match &*peer {
            Some((_, Some(fd))) => {
                let mut fds = [PollFd::new(fd, PollFlags::IN)];
                let zero = rustix::event::Timespec {
                    tv_sec: 0,
                    tv_nsec: 0,
                };
                // Readable once the process has exited.
                matches!(poll(&mut fds, Some(&zero)), Ok(n) if n > 0)
            }
            _ => test_kill_process(raw) == Err(Errno::SRCH),
        }
    }
}
