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
    if yield_every != 0 && (i + 1) % yield_every == 0 {
        thread::yield_now();
    } else {
        hint::spin_loop();
    }
}

/// A side's spin budget: how many checks of its inbound ring its next
/// spinning phase makes, between `Options::min_spin` and `Options::spin`.
///
/// Spinning pays when the peer answers while we look, which it does at
/// once when it has a CPU of its own; on a busy machine it may have to wait
/// for one, and every check we make then keeps a CPU from it or from
/// whoever else needs it. So a spin that ends in a park halves the budget,
/// and the budget doubles again when spinning shows it would pay: an entry
/// found in the second half of the budget, or right after it ran out (the
/// park round's first look, before it sleeps).
///
/// A budget that has fallen cannot see an entry that comes later than it
/// looks but sooner than the ceiling would have: a peer that takes some
/// tens of microseconds (a large body checked and copied) would then cost
/// a park and a wake-up every time. So every [`PROBE_EVERY`]th spin below
/// the ceiling is a probe that looks for up to `Options::spin` checks; an
/// entry it finds sets the budget to twice the checks it took.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SpinBudget {
    /// Checks of the next spin (clamped to the options when used).
    checks: u32,
    /// Spins since the last probe.
    since_probe: u32,
}

/// One spinning phase of a [`SpinBudget`]: the budget it started from, and
/// the checks it makes (the ceiling's when it probes).
#[derive(Debug, Clone, Copy)]
pub(crate) struct SpinPlan {
    checks: u32,
    /// The checks this phase makes.
    pub(crate) limit: u32,
}

/// How often a fallen budget probes with the full ceiling.
pub(crate) const PROBE_EVERY: u32 = 16;

impl SpinBudget {
    /// A full budget (`Options::spin`) to start with.
    pub(crate) const fn new() -> Self {
        Self {
            checks: u32::MAX,
            since_probe: 0,
        }
    }

    fn checks(self, options: &Options) -> u32 {
        self.checks
            .clamp(options.min_spin.min(options.spin), options.spin)
    }

    /// The spinning phase: checks `ready` up to the budget's number of
    /// times (the ceiling's, when it probes), a [`spin_step`] apart, and
    /// adapts the budget. Returns whether it became ready.
    #[inline]
    pub(crate) fn spin(&mut self, options: &Options, mut ready: impl FnMut() -> bool) -> bool {
        let plan = self.plan(options);
        for i in 0..plan.limit {
            if ready() {
                self.settle(plan, Some(i));
                return true;
            }
            spin_step(i, options.yield_every);
        }
        self.settle(plan, None);
        false
    }

    /// Starts a spinning phase: how many checks it makes.
    pub(crate) fn plan(&mut self, options: &Options) -> SpinPlan {
        let checks = self.checks(options);
        let mut limit = checks;
        if checks < options.spin {
            self.since_probe += 1;
            if self.since_probe >= PROBE_EVERY {
                self.since_probe = 0;
                limit = options.spin;
            }
        }
        SpinPlan { checks, limit }
    }

    /// Ends the spinning phase `plan`: the entry was found at check
    /// `found` (from 0), or not at all; adapts the budget.
    pub(crate) fn settle(&mut self, plan: SpinPlan, found: Option<u32>) {
        let checks = plan.checks;
        self.checks = match found {
            Some(i) if i >= checks / 2 => checks.max(i.saturating_add(1)).saturating_mul(2),
            Some(_) => checks,
            None => checks / 2,
        };
    }

    /// The entry came right after the spin gave up: spin longer next time.
    pub(crate) fn came_just_after(&mut self, options: &Options) {
        self.checks = self.checks(options).saturating_mul(2);
    }
}

/// How a park round ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use]
pub(crate) enum Round {
    /// The side's inbound ring (or whatever `ready` looks at) was ready
    /// at the round's first look, before it slept.
    Ready,
    /// It was ready after the side slept.
    Woken,
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
        Round::Woken
    } else if watch.check(peer, notifier, options, true) {
        Round::Slept
    } else {
        Round::PeerGone
    }
}

// Plain unit tests: loom's atomics work only inside a model.
#[cfg(all(test, not(loom)))]
mod tests {
    use super::{Options, SpinBudget};

    /// Spins with `budget` until `ready` says yes at check `at` (never if
    /// `None`); returns whether it became ready and the checks it made.
    fn run(budget: &mut SpinBudget, options: &Options, at: Option<u32>) -> (bool, u32) {
        let mut checks = 0;
        let ready = budget.spin(options, || {
            checks += 1;
            Some(checks - 1) == at
        });
        (ready, checks)
    }

    #[test]
    fn spins_that_end_in_a_park_halve_the_budget_down_to_the_floor() {
        let options = Options {
            spin: 256,
            min_spin: 32,
            yield_every: 0,
            ..Options::default()
        };
        let mut budget = SpinBudget::new();
        for expected in [256, 128, 64, 32, 32] {
            assert_eq!(run(&mut budget, &options, None), (false, expected));
        }
        // An early success keeps the budget; a late one doubles it.
        assert_eq!(run(&mut budget, &options, Some(3)), (true, 4));
        assert_eq!(run(&mut budget, &options, None), (false, 32));
        assert_eq!(run(&mut budget, &options, Some(20)), (true, 21));
        assert_eq!(run(&mut budget, &options, None), (false, 64));
        // The entry right after the spin gave up: double, up to the ceiling.
        for _ in 0..10 {
            budget.came_just_after(&options);
        }
        assert_eq!(run(&mut budget, &options, None), (false, 256));
    }

    #[test]
    fn a_fallen_budget_probes_with_the_ceiling_and_keeps_what_pays() {
        let options = Options {
            spin: 4096,
            min_spin: 64,
            yield_every: 0,
            ..Options::default()
        };
        let mut budget = SpinBudget::new();
        // The entry never comes while spinning: the budget falls to the
        // floor, and one spin in PROBE_EVERY looks for the whole ceiling.
        let mut made = [0u32; 2 * super::PROBE_EVERY as usize + 1];
        for m in &mut made {
            *m = run(&mut budget, &options, None).1;
        }
        assert_eq!(made[..7], [4096, 2048, 1024, 512, 256, 128, 64]);
        let probes = made.iter().filter(|&&m| m == 4096).count();
        assert_eq!(probes, 3, "the first spin and two probes: {made:?}");
        // An entry at check 3000 (later than the floor, sooner than the
        // ceiling): the next probe finds it, and the budget covers it.
        let mut caught = None;
        for n in 0..super::PROBE_EVERY {
            if run(&mut budget, &options, Some(3000)).0 {
                caught = Some(n);
                break;
            }
        }
        assert!(caught.is_some(), "a probe finds the entry");
        assert_eq!(run(&mut budget, &options, Some(3000)), (true, 3001));
        assert_eq!(run(&mut budget, &options, Some(3000)), (true, 3001));
    }

    #[test]
    fn a_floor_at_the_ceiling_is_a_fixed_budget() {
        let options = Options {
            spin: 100,
            min_spin: 100,
            yield_every: 0,
            ..Options::default()
        };
        let mut budget = SpinBudget::new();
        for _ in 0..3 {
            assert_eq!(run(&mut budget, &options, None), (false, 100));
        }
        // A floor above the ceiling is the ceiling; no spin at all stays so.
        let none = Options { spin: 0, ..options };
        assert_eq!(run(&mut budget, &none, Some(0)), (false, 0));
    }
}
