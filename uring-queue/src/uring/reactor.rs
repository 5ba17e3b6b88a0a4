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
use super::park::{SpinBudget, SpinPlan, spin_step};
use super::wake::Notifier;

/// Before a side returns to the reactor: spins for the side's adaptive
/// budget of checks of `ready` (see [`SpinBudget`]), then arms its flag and
/// looks once more. Returns whether `ready` held (then the caller goes on
/// without waiting).
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

#[cfg_attr(
    not(any(feature = "tokio", loom)),
    allow(
        dead_code,
        reason = "the tokio sides' and their models'; a hub's spin is one poll"
    )
)]
/// The checks a reactor-driven side makes in one poll of its spin before it
/// yields to the runtime. One under loom, so that a model's short spin
/// yields between its checks.
#[cfg(not(loom))]
pub(crate) const CHECKS_PER_TURN: u32 = 32;
#[cfg_attr(
    not(any(feature = "tokio", loom)),
    allow(
        dead_code,
        reason = "the tokio sides' and their models'; a hub's spin is one poll"
    )
)]
/// The checks a reactor-driven side makes in one poll of its spin (see
/// the other build's).
#[cfg(loom)]
pub(crate) const CHECKS_PER_TURN: u32 = 1;

/// A reactor-driven side's spin, spread over its polls.
///
/// A spin inside one poll keeps the runtime's worker from every other task:
/// a peer on the same runtime (a server task beside its clients) cannot
/// answer while it spins, and the spin only delays the answer it waits
/// for. So the side checks its ring [`CHECKS_PER_TURN`] times per poll and
/// then yields (its task woken at once, queued behind the worker's other
/// tasks), until the spin budget's checks are made; then it arms its flag
/// and waits on the reactor. A peer with a CPU of its own is seen as soon
/// as with a spin in one poll, give or take one turn of the runtime.
#[cfg_attr(
    not(any(feature = "tokio", loom)),
    allow(
        dead_code,
        reason = "the tokio sides' and their models'; a hub's spin is one poll"
    )
)]
#[derive(Debug, Default)]
pub(crate) struct Spread {
    /// The phase under way and the checks it made, if one is.
    phase: Option<(SpinPlan, u32)>,
}

/// What a side does after one step of a [`Spread`] spin.
#[cfg_attr(
    not(any(feature = "tokio", loom)),
    allow(
        dead_code,
        reason = "the tokio sides' and their models'; a hub's spin is one poll"
    )
)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use]
pub(crate) enum Step {
    /// Its ring is ready: go on without waiting.
    Ready,
    /// Nothing yet: yield to the runtime (the task is woken already) and
    /// take the next step when polled again.
    Yield,
    /// The spin is over and the flag is armed, with nothing ready: wait on
    /// the reactor.
    Wait,
}

#[cfg_attr(
    not(any(feature = "tokio", loom)),
    allow(
        dead_code,
        reason = "the tokio sides' and their models'; a hub's spin is one poll"
    )
)]
impl Spread {
    /// No phase under way.
    pub(crate) const fn new() -> Self {
        Self { phase: None }
    }

    /// One poll's step: up to [`CHECKS_PER_TURN`] checks of `ready`; once
    /// the budget's checks are made, the flag armed and one more look (as
    /// [`arm`]). On [`Step::Yield`], the task of `waker` is woken first.
    pub(crate) fn step(
        &mut self,
        own: &SideLine,
        options: &Options,
        budget: &mut SpinBudget,
        waker: &core::task::Waker,
        mut ready: impl FnMut() -> bool,
    ) -> Step {
        let (plan, mut done) = *self.phase.get_or_insert_with(|| (budget.plan(options), 0));
        let end = done.saturating_add(CHECKS_PER_TURN).min(plan.limit);
        while done < end {
            if ready() {
                budget.settle(plan, Some(done));
                self.phase = None;
                return Step::Ready;
            }
            spin_step(done, options.yield_every);
            done += 1;
        }
        if done < plan.limit {
            self.phase = Some((plan, done));
            waker.wake_by_ref();
            return Step::Yield;
        }
        budget.settle(plan, None);
        self.phase = None;
        own.wake.arm();
        if ready() { Step::Ready } else { Step::Wait }
    }

    /// What the side waited for came some other way while a phase was
    /// under way (a reply routed by another call, a request found at the
    /// next poll's first look): the phase ends as a spin that found it.
    pub(crate) fn found(&mut self, budget: &mut SpinBudget) {
        if let Some((plan, done)) = self.phase.take() {
            budget.settle(plan, Some(done));
        }
    }
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

    /// A waker that counts its wake-ups.
    #[derive(Default)]
    struct Count(core::sync::atomic::AtomicUsize);

    impl alloc::task::Wake for Count {
        fn wake(self: alloc::sync::Arc<Self>) {
            self.wake_by_ref();
        }
        fn wake_by_ref(self: &alloc::sync::Arc<Self>) {
            self.0.fetch_add(1, core::sync::atomic::Ordering::Relaxed);
        }
    }

    #[test]
    fn a_spread_spin_yields_between_turns_then_arms() {
        let link = Link::new();
        let count = alloc::sync::Arc::new(Count::default());
        let waker = core::task::Waker::from(count.clone());
        let woken = || count.0.load(core::sync::atomic::Ordering::Relaxed);
        // A fixed budget of three turns and a bit.
        let spin = 3 * CHECKS_PER_TURN + 4;
        let options = Options {
            spin,
            min_spin: spin,
            ..Options::default()
        };
        let mut budget = SpinBudget::new();
        let mut spread = Spread::new();
        let mut looks = 0;
        let mut step = |spread: &mut Spread, budget: &mut SpinBudget| {
            spread.step(&link.client, &options, budget, &waker, || {
                looks += 1;
                false
            })
        };
        for turn in 1..=3 {
            assert_eq!(step(&mut spread, &mut budget), Step::Yield);
            // Each turn checks its share and wakes the task to be polled
            // again; the flag stays down while it spins.
            assert_eq!(woken(), turn);
            assert!(!link.client.wake.is_armed());
        }
        // The last checks, the flag armed, one more look: wait.
        assert_eq!(step(&mut spread, &mut budget), Step::Wait);
        assert_eq!(woken(), 3);
        assert!(link.client.wake.is_armed());
        assert_eq!(looks, spin + 1);
        // A fresh wait starts a fresh phase: found at its fifth check.
        link.client.wake.disarm();
        let mut looks = 0;
        let found = spread.step(&link.client, &options, &mut budget, &waker, || {
            looks += 1;
            looks == 5
        });
        assert_eq!(found, Step::Ready);
        assert_eq!(woken(), 3);
        assert!(!link.client.wake.is_armed());
    }

    /// Steps a fresh phase through to its end; returns how many times it
    /// yielded.
    fn yields_of_a_phase(link: &Link, options: &Options, budget: &mut SpinBudget) -> u32 {
        let mut spread = Spread::new();
        let mut yields = 0;
        loop {
            match spread.step(
                &link.client,
                options,
                budget,
                core::task::Waker::noop(),
                || false,
            ) {
                Step::Yield => yields += 1,
                Step::Wait => break,
                Step::Ready => unreachable!("nothing is ever ready here"),
            }
        }
        link.client.wake.disarm();
        yields
    }

    #[test]
    fn a_spread_spin_found_another_way_counts_as_found() {
        let link = Link::new();
        let options = Options {
            spin: 4 * CHECKS_PER_TURN,
            min_spin: 1,
            ..Options::default()
        };
        // Nothing found: four turns, and the budget halves to two.
        let mut budget = SpinBudget::new();
        assert_eq!(yields_of_a_phase(&link, &options, &mut budget), 3);
        let fallen = budget;
        // A phase of two turns whose entry comes another way after its
        // first (the second half of the budget): it pays, the budget
        // doubles back to the ceiling.
        let mut spread = Spread::new();
        let noop = core::task::Waker::noop();
        assert_eq!(
            spread.step(&link.client, &options, &mut budget, noop, || false),
            Step::Yield
        );
        spread.found(&mut budget);
        assert_eq!(yields_of_a_phase(&link, &options, &mut budget), 3);
        // The same phase left without `found` leaves the budget fallen.
        let mut budget = fallen;
        let step = Spread::new().step(&link.client, &options, &mut budget, noop, || false);
        assert_eq!(step, Step::Yield);
        assert_eq!(yields_of_a_phase(&link, &options, &mut budget), 1);
        // `found` with no phase under way changes nothing.
        let mut idle = Spread::new();
        idle.found(&mut budget);
        assert_eq!(yields_of_a_phase(&link, &options, &mut budget), 0);
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
