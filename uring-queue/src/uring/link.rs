//! The control words of a connection: each side's wake flag, close flag,
//! epoch, process id and heartbeat, on lines of their own.

use super::wake::WakeFlag;
use crate::loom::sync::atomic::{AtomicU32, Ordering};
use core::fmt;

/// The words one side owns in shared memory, on lines of their own.
///
/// The heartbeat, stored on every request, has a line to itself: the peer
/// reads the wake flag on every push it makes, and a heartbeat beside it
/// would take that line away from the peer's cache at every beat.
#[repr(C, align(128))]
pub(crate) struct SideLine {
    /// Futex word: armed while this side parks.
    pub(crate) wake: WakeFlag,
    /// 1 once this side closed (dropped) its end.
    pub(crate) closed: AtomicU32,
    /// Bumped each time a new instance attaches as this side.
    pub(crate) epoch: AtomicU32,
    /// The attached process's id, 0 if unknown.
    pub(crate) pid: AtomicU32,
    /// Bumped as this side parks and works.
    pub(crate) heartbeat: Beat,
}

/// The epoch of the first instance to attach as a side of a fresh
/// connection (the words start at 0, and each instance bumps them).
pub(crate) const FIRST_EPOCH: u32 = 1;

/// A heartbeat word on its own 128-byte line.
#[repr(C, align(128))]
pub(crate) struct Beat(pub(crate) AtomicU32);

impl SideLine {
    fn new() -> Self {
        Self {
            wake: WakeFlag::new(),
            closed: AtomicU32::new(0),
            epoch: AtomicU32::new(0),
            pid: AtomicU32::new(0),
            heartbeat: Beat(AtomicU32::new(0)),
        }
    }

    /// Fresh words, stored atomically (a peer may already map the region).
    // Only the shared-memory layout calls it, which loom does not build.
    #[cfg_attr(loom, allow(dead_code))]
    pub(crate) fn reset(&self) {
        self.wake.disarm();
        for word in [&self.closed, &self.epoch, &self.pid, &self.heartbeat.0] {
            word.store(0, Ordering::Relaxed);
        }
    }

    /// A new instance takes this side: returns its epoch.
    pub(crate) fn open(&self, pid: u32) -> u32 {
        self.pid.store(pid, Ordering::Relaxed);
        self.closed.store(0, Ordering::Relaxed);
        let mut epoch = self.epoch.load(Ordering::Relaxed).wrapping_add(1);
        if epoch == 0 {
            epoch = FIRST_EPOCH;
        }
        // Release: a peer that sees the new epoch sees the pid and flag too.
        self.epoch.store(epoch, Ordering::Release);
        epoch
    }

    pub(crate) fn beat(&self) {
        let beat = self.heartbeat.0.load(Ordering::Relaxed).wrapping_add(1);
        self.heartbeat.0.store(beat, Ordering::Relaxed);
    }

    pub(crate) fn close(&self) {
        // Release: everything this side published before is visible to a
        // peer that sees the flag.
        self.closed.store(1, Ordering::Release);
    }
}

/// The control words of one connection: a client line and a server line,
/// each with its "needs wakeup" flag, close flag, heartbeat, epoch and
/// process id. Inside a [`Uring`](super::Uring) region it sits in shared
/// memory; for a connection within one process it can live anywhere.
///
/// # Examples
///
/// ```
/// use uring_queue::uring::Link;
///
/// // Two lines of 128 bytes a side (the heartbeat on its own): neither
/// // side's stores touch the other's lines.
/// assert_eq!(core::mem::size_of::<Link>(), 512);
/// assert_eq!(core::mem::align_of::<Link>(), 128);
/// // No side has attached yet.
/// let link = Link::new();
/// assert!(format!("{link:?}").contains("client_epoch: 0"));
/// ```
#[repr(C)]
pub struct Link {
    pub(crate) client: SideLine,
    pub(crate) server: SideLine,
}

impl fmt::Debug for Link {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Link")
            .field("client_epoch", &self.client.epoch.load(Ordering::Relaxed))
            .field("server_epoch", &self.server.epoch.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl Default for Link {
    fn default() -> Self {
        Self::new()
    }
}

impl Link {
    /// Fresh control words: no side attached.
    ///
    /// # Examples
    ///
    /// ```
    /// let link = uring_queue::uring::Link::new();
    /// assert!(format!("{link:?}").contains("client_epoch: 0"));
    /// ```
    pub fn new() -> Self {
        Self {
            client: SideLine::new(),
            server: SideLine::new(),
        }
    }
}
