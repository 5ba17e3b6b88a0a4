//! A reactor-driven side's spin, spread over its polls so that it never
//! holds the runtime's worker (see [`Spread`]).

use crate::uring::Options;
use crate::uring::link::SideLine;
use crate::uring::park::{SpinBudget, SpinPlan, spin_step};

/// The checks a reactor-driven side makes in one poll of its spin before it
/// yields to the runtime. One under loom, so that a model's short spin
/// yields between its checks.
pub(crate) const CHECKS_PER_TURN: u32 = if cfg!(loom) { 1 } else { 32 };

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
#[derive(Debug, Default)]
pub(crate) struct Spread {
    /// The phase under way and the checks it made, if one is.
    phase: Option<(SpinPlan, u32)>,
}

/// What a side does after one step of a [`Spread`] spin.
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

impl Spread {
    /// No phase under way.
    pub(crate) const fn new() -> Self {
        Self { phase: None }
    }

    /// One poll's step: up to [`CHECKS_PER_TURN`] checks of `ready`; once
    /// the budget's checks are made, the flag armed and one more look (as
    /// [`arm`](super::arm)). On [`Step::Yield`], the task of `waker` is woken first.
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

    /// Whether a phase is under way: a step made checks and yielded.
    pub(crate) fn is_under_way(&self) -> bool {
        self.phase.is_some()
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
pub(crate) mod tests {
    use super::*;
    use crate::uring::Link;
    use alloc::sync::Arc;
    use core::sync::atomic::{AtomicUsize, Ordering};
    use core::task::Waker;

    /// A waker that counts its wake-ups; the reactor-driven sides' tests'.
    #[derive(Default)]
    pub(crate) struct Count(AtomicUsize);

    impl alloc::task::Wake for Count {
        fn wake(self: Arc<Self>) {
            self.wake_by_ref();
        }
        fn wake_by_ref(self: &Arc<Self>) {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }

    impl Count {
        /// Wake-ups so far.
        pub(crate) fn get(&self) -> usize {
            self.0.load(Ordering::Relaxed)
        }
    }

    /// A waker, and the count of its wake-ups.
    pub(crate) fn counting() -> (Arc<Count>, Waker) {
        let count = Arc::new(Count::default());
        (count.clone(), count.into())
    }

    #[test]
    fn a_spread_spin_yields_between_turns_then_arms() {
        let link = Link::new();
        let (count, waker) = counting();
        let woken = || count.get();
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
}
