//! How a side waits for its inbound ring: spin for a while, then park on
//! its wake flag. The server's `recv` and the client's driving thread run
//! the same [`park_round`], so a fix to the round (a missed wake-up, a
//! liveness check in the wrong place) reaches both sides at once.

use super::Options;
use super::link::SideLine;
use super::liveness::Watch;
use super::wake::Notifier;
use crate::loom::{hint, thread};

/// Step `i` (from 0) of a busy wait that yields the CPU after every
/// `yield_every` steps (0: never; a yield without `std` is a spin hint).
#[inline]
pub(crate) fn spin_step(i: u32, yield_every: u32) {
    if yield_every != 0 && (i + 1).is_multiple_of(yield_every) {
        thread::yield_now();
    } else {
        hint::spin_loop();
    }
}

/// The spinning phase: checks `ready` up to `options.spin` times, a
/// [`spin_step`] apart. Returns whether it became ready.
#[inline]
pub(crate) fn spin(options: &Options, mut ready: impl FnMut() -> bool) -> bool {
    for i in 0..options.spin {
        if ready() {
            return true;
        }
        spin_step(i, options.yield_every);
    }
    false
}

/// How a park round ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use]
pub(crate) enum Round {
    /// The side's inbound ring (or whatever `ready` looks at) was ready.
    Ready,
    /// The side slept until woken or the park timeout, found nothing ready,
    /// and the peer still looks alive.
    Slept,
    /// The peer closed, exited, restarted or went stale (latched in the
    /// [`Watch`]).
    PeerGone,
}

/// One park round of a side on its own line's wake flag.
///
/// 1. Arm the flag (the handshake of [`WakeFlag`](super::WakeFlag)), then
///    look at `ready` again: an entry the peer published before it saw the
///    flag up is seen here.
/// 2. Check the peer's liveness words. The peer's close, like its pushes,
///    comes before its wake-up: one that closed before the flag went up
///    did not wake us, so it is seen now (the fence in `arm` orders these
///    loads after the flag) instead of after a park timeout.
/// 3. Beat, and wait on the flag for at most the park timeout.
/// 4. After an empty wait, judge the peer again, this time counting the
///    round towards a stale heartbeat and asking the notifier about the
///    peer's process.
///
/// The caller publishes what it consumed from its inbound ring before the
/// round (so the peer, which may be waiting for room, can go on).
#[inline]
pub(crate) fn park_round<W: Notifier + ?Sized>(
    own: &SideLine,
    peer: &SideLine,
    notifier: &W,
    options: &Options,
    watch: &mut Watch,
    mut ready: impl FnMut() -> bool,
) -> Round {
    let mut early = Round::Ready;
    let skipped = own.wake.park(notifier, options.park_timeout, || {
        if ready() {
            return true;
        }
        if !watch.check(peer, notifier, options, false) {
            early = Round::PeerGone;
            return true;
        }
        own.beat();
        false
    });
    if skipped {
        early
    } else if ready() {
        Round::Ready
    } else if watch.check(peer, notifier, options, true) {
        Round::Slept
    } else {
        Round::PeerGone
    }
}
