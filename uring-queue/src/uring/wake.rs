//! Wake-ups without busy spinning: the per-side "needs wakeup" flag and
//! the [`Notifier`] that parks and wakes.
//!
//! The handshake (checked by `uring/tests/loom.rs`):
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

use super::kind::NotifierKind;
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

    /// The waiter's half of the handshake, in one place for every waiter:
    /// arms the flag, asks `before_sleep` (which re-checks the inbound ring,
    /// and whatever else must be looked at after the flag is up) whether to
    /// skip the wait, waits through `notifier` for at most `timeout` unless
    /// told to skip, and disarms. Returns whether the wait was skipped.
    #[inline]
    pub(crate) fn park<W: Notifier + ?Sized>(
        &self,
        notifier: &W,
        timeout: Duration,
        before_sleep: impl FnOnce() -> bool,
    ) -> bool {
        self.arm();
        let skip = before_sleep();
        if !skip {
            notifier.wait(self, timeout);
        }
        self.disarm();
        skip
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
/// assert!(!n.peer_hung_up()); // nor a channel to the peer
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

    /// Whether a channel of the notifier's own to the peer says the peer
    /// is gone, whatever the peer published in the region (a service's
    /// socket that hung up, even before the peer attached). Default:
    /// `false`, no such channel.
    fn peer_hung_up(&self) -> bool {
        false
    }

    /// How this notifier sleeps and wakes; both sides of a connection must
    /// agree. Default: [`NotifierKind::Word`], a wait on the flag's word.
    fn kind(&self) -> NotifierKind {
        NotifierKind::Word
    }

    /// Called once as a side takes its role, with the connection's two
    /// flags: `own`, the one this side parks on, and `peer`, the one it
    /// notifies. A notifier that sleeps on something other than the flag's
    /// word (an eventfd) learns here which flags are the connection's; every
    /// other flag it is handed is process-local. Default: nothing.
    fn bind(&self, own: &WakeFlag, peer: &WakeFlag) {
        let _ = (own, peer);
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
