//! Wake-ups without busy spinning: the per-side "needs wakeup" flag, the
//! [`Notifier`] that parks and wakes, and the shared control words of a
//! connection ([`Link`]).
//!
//! The handshake (checked by `tests/loom_uring.rs`):
//!
//! ```text
//! waiter (inbound ring R, own flag F)      peer (pushes to R)
//!   F := ARMED            (SeqCst)           publish R's tail (Release)
//!   fence(SeqCst)                             fence(SeqCst)
//!   R empty? else disarm, return             F armed? then F := 0, wake(F)
//!   wait(F) while F == ARMED, with timeout
//! ```
//!
//! The two fences order each side's store before its load, so at least one
//! side sees the other's store: the waiter sees the new entry, or the peer
//! sees the armed flag. The peer clears the flag *before* waking, so a waiter
//! that has not yet reached `wait` returns from it at once (the word is no
//! longer `ARMED`): no wake-up is lost even without the kernel's help.

use crate::loom::hint;
use crate::loom::sync::atomic::{AtomicU32, Ordering, fence};
use core::fmt;
use core::time::Duration;

const ARMED: u32 = 1;

/// One side's "needs wakeup" word (like io_uring's `SQ_NEED_WAKEUP`): set
/// while that side is about to park or parked, and a futex word for it.
///
/// # Examples
///
/// ```
/// use uring_queue::uring::{Spin, WakeFlag};
///
/// let flag = WakeFlag::new();
/// // Nobody is parked: the pusher's check makes no call.
/// assert!(!flag.notify(&Spin));
/// flag.arm();
/// assert!(flag.is_armed());
/// // Armed: the pusher clears it and wakes the parked side.
/// assert!(flag.notify(&Spin));
/// assert!(!flag.is_armed());
/// ```
#[repr(transparent)]
pub struct WakeFlag(AtomicU32);

impl fmt::Debug for WakeFlag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("WakeFlag").field(&self.is_armed()).finish()
    }
}

impl Default for WakeFlag {
    fn default() -> Self {
        Self::new()
    }
}

impl WakeFlag {
    /// A flag that is not armed.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(!uring_queue::uring::WakeFlag::new().is_armed());
    /// ```
    pub fn new() -> Self {
        Self(AtomicU32::new(0))
    }

    /// The waiter announces it is about to park. It must check its inbound
    /// ring again afterwards, and park only if that is still empty.
    ///
    /// # Examples
    ///
    /// ```
    /// let flag = uring_queue::uring::WakeFlag::new();
    /// flag.arm();
    /// assert!(flag.is_armed());
    /// ```
    pub fn arm(&self) {
        self.0.store(ARMED, Ordering::SeqCst);
        // Orders the store above before the caller's re-check of its ring
        // (pairs with the fence in `notify`).
        fence(Ordering::SeqCst);
    }

    /// The waiter is awake again.
    ///
    /// # Examples
    ///
    /// ```
    /// let flag = uring_queue::uring::WakeFlag::new();
    /// flag.arm();
    /// flag.disarm();
    /// assert!(!flag.is_armed());
    /// ```
    pub fn disarm(&self) {
        self.0.store(0, Ordering::Relaxed);
    }

    /// Whether the owner announced it parks.
    ///
    /// # Examples
    ///
    /// ```
    /// let flag = uring_queue::uring::WakeFlag::new();
    /// assert!(!flag.is_armed());
    /// ```
    pub fn is_armed(&self) -> bool {
        self.0.load(Ordering::Relaxed) == ARMED
    }

    /// Called by the peer after it published an entry to the flag owner's
    /// inbound ring: if the owner armed the flag, clears it and wakes the
    /// owner through `notifier`. Returns whether it woke. The fast path (not
    /// armed) is a fence and a load, no system call.
    ///
    /// # Examples
    ///
    /// ```
    /// use uring_queue::uring::{Spin, WakeFlag};
    ///
    /// let flag = WakeFlag::new();
    /// flag.arm();
    /// assert!(flag.notify(&Spin));
    /// // Once: the flag is cleared.
    /// assert!(!flag.notify(&Spin));
    /// ```
    pub fn notify<W: Notifier + ?Sized>(&self, notifier: &W) -> bool {
        // Orders the caller's publish before the load below (pairs with the
        // fence in `arm`).
        fence(Ordering::SeqCst);
        if self.0.load(Ordering::Relaxed) != ARMED {
            return false;
        }
        // Clear before waking: a waiter between its re-check and its wait
        // then finds the word changed and does not sleep. A plain store, not
        // a swap (targets without compare-and-swap need no emulation): if
        // the waiter disarmed and armed again meanwhile, it just gets an
        // early wake and re-checks.
        self.0.store(0, Ordering::Relaxed);
        notifier.wake(self);
        true
    }

    /// The word's address, for a [`Notifier`] that hands it to the kernel
    /// (a futex). Only ever accessed atomically.
    ///
    /// # Examples
    ///
    /// ```
    /// let flag = uring_queue::uring::WakeFlag::new();
    /// assert!(!flag.as_ptr().is_null());
    /// ```
    pub fn as_ptr(&self) -> *mut u32 {
        // The flag is a `repr(transparent)` atomic word, and the atomics of
        // `core` and `portable-atomic` are a `u32` in memory. (Under loom the
        // word is loom's model of one, which no kernel is handed.)
        core::ptr::from_ref(self).cast::<u32>().cast_mut()
    }
}

/// How a side parks and wakes its peer: no_std, so the platform decides
/// (a futex under Linux, `Futex` with `std`; an RTOS event; or
/// [`Spin`]). Also the platform's view of processes, for liveness.
///
/// # Examples
///
/// A notifier that counts wake-ups and never sleeps:
///
/// ```
/// use core::cell::Cell;
/// use core::time::Duration;
/// use uring_queue::uring::{Notifier, WakeFlag};
///
/// #[derive(Default)]
/// struct Counting(Cell<u32>);
/// impl Notifier for Counting {
///     fn wait(&self, _flag: &WakeFlag, _timeout: Duration) {}
///     fn wake(&self, _flag: &WakeFlag) {
///         self.0.set(self.0.get() + 1);
///     }
/// }
///
/// let n = Counting::default();
/// let flag = WakeFlag::new();
/// flag.arm();
/// flag.notify(&n);
/// assert_eq!(n.0.get(), 1);
/// assert!(!n.has_exited(1)); // no view of processes by default
/// ```
pub trait Notifier {
    /// Parks the caller while `flag` is armed, for at most `timeout`. May
    /// return early (spuriously); callers re-check. Takes `&self`: threads
    /// sharing one [`Client`](super::Client) park at once, each on its own
    /// flag.
    fn wait(&self, flag: &WakeFlag, timeout: Duration);

    /// Wakes the side parked on `flag` (which the caller has just cleared).
    fn wake(&self, flag: &WakeFlag);

    /// This process's id, published for the peer's liveness checks; 0 when
    /// the platform has none.
    fn process_id(&self) -> u32 {
        0
    }

    /// Whether process `pid` (a peer's published id, never 0) is known to
    /// have exited. `false` when unknown.
    fn has_exited(&self, pid: u32) -> bool {
        let _ = pid;
        false
    }
}

/// A [`Notifier`] that never sleeps: `wait` is one spin-loop hint. For
/// bare-metal targets, tests, and peers that poll.
///
/// # Examples
///
/// ```
/// use core::time::Duration;
/// use uring_queue::uring::{Notifier, Spin, WakeFlag};
///
/// let flag = WakeFlag::new();
/// flag.arm();
/// // Returns at once, flag or not.
/// Spin.wait(&flag, Duration::from_secs(3600));
/// assert!(flag.is_armed());
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct Spin;

impl Notifier for Spin {
    fn wait(&self, _flag: &WakeFlag, _timeout: Duration) {
        hint::spin_loop();
    }

    fn wake(&self, _flag: &WakeFlag) {}
}

/// How long a side spins and parks, and when a silent peer counts as gone.
///
/// # Examples
///
/// ```
/// use core::time::Duration;
/// use uring_queue::uring::Options;
///
/// let o = Options { stale_after: Some(100), ..Options::default() };
/// assert_eq!(o.park_timeout, Duration::from_millis(10));
/// assert_eq!(o.stale_after, Some(100));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    /// Checks of the inbound ring before arming the wake flag and parking.
    /// Default: 4096.
    pub spin: u32,
    /// With `std`: while spinning, give the CPU to another thread
    /// (`yield_now`) after every this many checks; 0 never yields.
    ///
    /// Default: 64 when this process may run on one CPU only
    /// (`available_parallelism` is 1: pinned, or a cgroup quota of one CPU),
    /// else 0. A pinned side cannot tell whether its peer is pinned to the
    /// same CPU, where a plain spin would keep the peer from answering until
    /// the scheduler preempts it; with a CPU of its own the peer answers
    /// within the first checks, and a yield with nothing else to run
    /// returns at once.
    pub yield_every: u32,
    /// Longest single park; the liveness checks run after each.
    pub park_timeout: Duration,
    /// The peer is gone once its heartbeat word has not moved for this many
    /// consecutive empty park rounds. `None`: heartbeats are not watched
    /// (close flags, epochs and the [`Notifier`]'s process view still are).
    /// A side beats once per park round and once per request it submits
    /// (client) or receives (server), so choose more rounds than the
    /// longest request takes to handle.
    pub stale_after: Option<u32>,
}

/// How often a spinning side yields by default: only when this process
/// may run on one CPU only, where its peer may need that very CPU.
fn default_yield_every() -> u32 {
    if crate::loom::thread::on_one_cpu() {
        64
    } else {
        0
    }
}

impl Default for Options {
    fn default() -> Self {
        Self {
            spin: 1 << 12,
            yield_every: default_yield_every(),
            park_timeout: Duration::from_millis(10),
            stale_after: None,
        }
    }
}

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
        for word in [
            &self.wake.0,
            &self.closed,
            &self.epoch,
            &self.pid,
            &self.heartbeat.0,
        ] {
            word.store(0, Ordering::Relaxed);
        }
    }

    /// A new instance takes this side: returns its epoch.
    pub(crate) fn open(&self, pid: u32) -> u32 {
        self.pid.store(pid, Ordering::Relaxed);
        self.closed.store(0, Ordering::Relaxed);
        let mut epoch = self.epoch.load(Ordering::Relaxed).wrapping_add(1);
        if epoch == 0 {
            epoch = 1;
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
/// let link = Link::new();
/// // Two lines of 128 bytes a side (the heartbeat on its own): neither
/// // side's stores touch the other's lines.
/// assert_eq!(core::mem::size_of::<Link>(), 512);
/// # let _ = link;
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

/// One side's view of its peer's liveness words.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Watch {
    epoch: u32,
    beat: u32,
    silent_rounds: u32,
    gone: bool,
}

impl Watch {
    pub(crate) fn new(peer: &SideLine) -> Self {
        Self {
            epoch: peer.epoch.load(Ordering::Acquire),
            beat: peer.heartbeat.0.load(Ordering::Relaxed),
            silent_rounds: 0,
            gone: false,
        }
    }

    pub(crate) fn is_gone(&self) -> bool {
        self.gone
    }

    /// Whether the peer still looks alive. `parked` says this check follows
    /// an empty park round (the only time heartbeats are judged).
    pub(crate) fn check<W: Notifier + ?Sized>(
        &mut self,
        peer: &SideLine,
        notifier: &W,
        options: &Options,
        parked: bool,
    ) -> bool {
        if self.gone {
            return false;
        }
        let epoch = peer.epoch.load(Ordering::Acquire);
        if self.epoch == 0 {
            // The peer had not attached when we did: adopt its first epoch.
            self.epoch = epoch;
        }
        let closed = peer.closed.load(Ordering::Acquire) != 0;
        let restarted = epoch != self.epoch;
        let exited = parked && {
            let pid = peer.pid.load(Ordering::Relaxed);
            pid != 0 && self.epoch != 0 && notifier.has_exited(pid)
        };
        let beat = peer.heartbeat.0.load(Ordering::Relaxed);
        if beat != self.beat {
            self.beat = beat;
            self.silent_rounds = 0;
        } else if parked {
            self.silent_rounds = self.silent_rounds.saturating_add(1);
        }
        let stale = self.epoch != 0
            && options
                .stale_after
                .is_some_and(|rounds| self.silent_rounds >= rounds);
        self.gone = (self.epoch != 0 && closed) || restarted || exited || stale;
        !self.gone
    }
}
