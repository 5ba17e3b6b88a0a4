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
#[cfg(not(loom))]
use super::park::SpinBudget;
use super::wake::Notifier;

// The tokio sides' spin; under loom, their models'.
#[cfg_attr(
    not(any(feature = "tokio", loom)),
    allow(
        dead_code,
        reason = "the tokio sides' and their models'; a hub's spin is one poll"
    )
)]
pub(crate) mod spread;

/// Before a side returns to the reactor: spins for the side's adaptive
/// budget of checks of `ready` (see [`SpinBudget`]), then arms its flag and
/// looks once more. Returns whether `ready` held (then the caller goes on
/// without waiting).
// A hub's (which loom does not build); the tokio sides spread theirs.
#[cfg(not(loom))]
#[inline]
pub(crate) fn arm(
    own: &SideLine,
    options: &Options,
    budget: &mut SpinBudget,
    mut ready: impl FnMut() -> bool,
) -> bool {
    if budget.spin(options, &mut ready) {
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

// Plain unit tests: loom's atomics work only inside a model.
#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::uring::{Link, Options, Spin};

    fn no_spin() -> Options {
        Options {
            spin: 0,
            ..Options::default()
        }
    }

    #[test]
    fn arm_raises_the_flag_only_when_the_spin_found_nothing() {
        let link = Link::new();
        // Ready while spinning: the flag stays down (no wake-up owed).
        assert!(arm(
            &link.client,
            &Options::default(),
            &mut SpinBudget::new(),
            || true
        ));
        assert!(!link.client.wake.is_armed());
        // Once raised, it stays up even if the look after it finds work:
        // another task of this side may rely on it; the peer lowers it.
        assert!(arm(
            &link.client,
            &no_spin(),
            &mut SpinBudget::new(),
            || true
        ));
        assert!(link.client.wake.is_armed());
        link.client.wake.disarm();
        assert!(!arm(
            &link.client,
            &no_spin(),
            &mut SpinBudget::new(),
            || false
        ));
        assert!(link.client.wake.is_armed());
        // The peer's notify takes it down again, once.
        assert!(link.client.wake.notify(&Spin));
        assert!(!link.client.wake.is_armed());
    }

    #[test]
    fn arm_looks_again_after_the_flag_is_up() {
        let link = Link::new();
        let mut looks = 0;
        // Empty through the spin, ready at the look after arming: the
        // handshake's re-check.
        let ready = arm(
            &link.client,
            &Options::default(),
            &mut SpinBudget::new(),
            || {
                looks += 1;
                link.client.wake.is_armed()
            },
        );
        assert!(ready);
        assert_eq!(looks, Options::default().spin + 1);
    }

    #[test]
    fn check_beats_and_sees_a_closed_peer() {
        let link = Link::new();
        link.server.open(0);
        let mut watch = Watch::new(&link.server);
        let options = no_spin();
        let beat = |l: &Link| {
            l.client
                .heartbeat
                .0
                .load(crate::loom::sync::atomic::Ordering::Relaxed)
        };
        let before = beat(&link);
        assert!(check(
            &link.client,
            &link.server,
            &Spin,
            &options,
            &mut watch,
            true
        ));
        assert_eq!(beat(&link), before.wrapping_add(1));
        link.server.close();
        assert!(!check(
            &link.client,
            &link.server,
            &Spin,
            &options,
            &mut watch,
            false
        ));
        // Latched.
        assert!(watch.is_gone());
    }
}
