//! The steps a side takes when a reactor, not a parked thread, waits for
//! its inbound ring: in one place for the client and the server, as the
//! park round is for parked threads (`park`).
//!
//! A reactor-driven side never sleeps in [`Notifier::wait`]: it arms its
//! wake flag and re-checks its ring (the handshake of
//! [`WakeFlag`](super::WakeFlag)), then returns to the reactor, which wakes
//! it when the peer's [`Notifier::wake`] makes its notifier ready (an
//! eventfd written). The flag stays armed until the peer clears it: a
//! side never disarms a flag another of its tasks may be relying on. A
//! timer of the park timeout runs the liveness checks.

use super::Options;
use super::link::SideLine;
use super::liveness::Watch;
use super::park;
use super::wake::Notifier;

/// Before a side returns to the reactor: spins for `options.spin` checks of
/// `ready`, then arms its flag and looks once more. Returns whether `ready`
/// held (then the caller goes on without waiting).
#[inline]
pub(crate) fn arm(own: &SideLine, options: &Options, mut ready: impl FnMut() -> bool) -> bool {
    if park::spin(options, &mut ready) {
        return true;
    }
    own.wake.arm();
    ready()
}

/// The liveness checks a reactor-driven side runs when its timer fires
/// (`parked`: after a round without news, which counts towards a stale
/// heartbeat and asks the notifier about the peer's process) or as it
/// arms. Beats first, as a parked side does each round. Returns whether
/// the peer still looks alive.
pub(crate) fn check<W: Notifier + ?Sized>(
    own: &SideLine,
    peer: &SideLine,
    notifier: &W,
    options: &Options,
    watch: &mut Watch,
    parked: bool,
) -> bool {
    own.beat();
    watch.check(peer, notifier, options, parked)
}
