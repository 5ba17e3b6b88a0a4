//! The direct route: a window of at most `F` ops that are one fragment
//! each, none merging with the one before it, goes to the backend as it is,
//! with no fragment table and no plan. Its results and counters are exactly
//! those of the general route.

use core::mem::{self, MaybeUninit};

use super::general::record;
use super::outcome::{Outcome, fill_unreported};
use super::scan::{scan_lean, scan_window};
use super::{Done, Merge, Reader};
use crate::{Completion, Counters, Geometry, ReadBackend, ReadErrorKind, ReadOp};

/// What the copying form of the direct route made of a window.
enum Copied {
    /// The first call was made: the bytes the window requests, and how
    /// many ops the call took.
    Called(u64, usize),
    /// Some ops merge through a scattering backend: the scattered direct
    /// route's (with the bytes the window requests).
    Merges(u64),
    /// Not a direct-route window; nothing was done.
    NotDirect,
}

/// Raw reports by window index, each op "not reported" (which reads as
/// `Incomplete`, as [`Outcome::normalized`] says) until its report comes.
/// A report is stored under its tag, so that reports in any order, twice
/// or with unknown tags need no path of their own: the last one for an op
/// counts, as on the general route. (Two lists rather than one of
/// [`Outcome`]s: each store is then one move, and the fills are two plain
/// runs of bytes.)
struct Reports<'a> {
    valids: &'a mut [usize],
    errors: &'a mut [Option<ReadErrorKind>],
}

impl Reports<'_> {
    /// The first call of the direct route: `ops` (tagged by their index)
    /// to the backend, each report stored under its tag; reports past the
    /// lists are ignored. Returns what the backend returned.
    #[inline(always)]
    fn call<B: ReadBackend>(&mut self, backend: &mut B, ops: &mut [ReadOp<'_>]) -> usize {
        let (valids, errors) = (&mut *self.valids, &mut *self.errors);
        backend.read_batch(ops, |r| {
            if let (Some(v), Some(e)) = (valids.get_mut(r.tag), errors.get_mut(r.tag)) {
                *v = r.valid;
                *e = r.error;
            }
        })
    }

    /// The outcomes, in window order.
    #[inline(always)]
    fn outcomes(&self) -> impl Iterator<Item = Outcome> + '_ {
        let pairs = self.valids.iter().zip(self.errors.iter());
        pairs.map(|(&valid, &error)| Outcome { valid, error })
    }
}

/// Runs `f` with report lists for `k` ops (at most `F`), each filled "not
/// reported": on the stack, with only the `k` entries used written.
#[inline(always)]
fn with_reports<const F: usize, R>(k: usize, f: impl FnOnce(Reports<'_>) -> R) -> R {
    let k = k.min(F);
    let mut valids = [const { MaybeUninit::<usize>::uninit() }; F];
    let mut errors = [const { MaybeUninit::<Option<ReadErrorKind>>::uninit() }; F];
    for (v, e) in valids.iter_mut().zip(errors.iter_mut()).take(k) {
        v.write(Outcome::UNREPORTED.valid);
        e.write(Outcome::UNREPORTED.error);
    }
    // SAFETY: `valids[..k]` and `errors[..k]` were written just now, with
    // `k <= F`; `MaybeUninit<T>` has the layout of `T`, and the arrays are
    // not used again but through these slices, which live no longer than
    // this call.
    let (valids, errors) = unsafe {
        (
            core::slice::from_raw_parts_mut(valids.as_mut_ptr().cast::<usize>(), k),
            core::slice::from_raw_parts_mut(errors.as_mut_ptr().cast::<Option<ReadErrorKind>>(), k),
        )
    };
    f(Reports { valids, errors })
}

impl<B: ReadBackend, S: AsMut<[u8]>, const N: usize, const F: usize> Reader<B, S, N, F> {
    /// The direct route for a window of at most `F` ops that the table would
    /// hold as one fragment each, none of which would merge with the one
    /// before it. Then the plan is one backend op per caller op, in order,
    /// so the ops go to the backend as they are and each report is its op's
    /// completion. Results and counters are exactly those of the general
    /// route.
    ///
    /// On a backend that [reports in order](ReadBackend::reports_in_order)
    /// the window goes as it is, whatever its tags
    /// ([`read_in_order`](Self::read_in_order)). Otherwise the backend's
    /// ops are tagged by their index in the window: where the caller's tags
    /// are those already, the call takes the caller's own ops, with nothing
    /// copied; otherwise it takes copies so tagged. (A backend that changed
    /// an op's address, buffer or tag, which no backend has cause to, would
    /// then change the caller's op itself.)
    ///
    /// Returns `false`, having done nothing, if the window does not qualify.
    #[inline]
    pub(super) fn read_direct<D: FnMut(Completion<'_>)>(
        &mut self,
        geometry: Geometry,
        window: &mut [ReadOp<'_>],
        done: &mut D,
    ) -> bool {
        if window.len() > F {
            // Not reachable: the direct route takes at most `F` ops.
            return false;
        }
        let merge = self.merge_limits(geometry);
        let near = merge.map(|m| m.gap);
        let max_transfer = geometry.max_transfer() as u64;
        // Bits above the boundary unit: an op stays in one unit when its
        // first and last byte agree on them.
        let unit = geometry.unit_mask();
        // `passed <= k`; the `min` tells the compiler.
        let passed = window.len().min(geometry.max_ops());
        let indexed = if self.backend.reports_in_order() {
            if let Some(bytes) = scan_lean::<false>(window, max_transfer, unit, near) {
                // Every op is one fragment and none is near the one before
                // it: the window's ops go to the backend as they are, and
                // each is completed in its report, whatever its tag.
                self.read_in_order(geometry, window, passed, bytes, done);
                return true;
            }
            // The tag test would only add to the test just failed.
            None
        } else {
            scan_lean::<true>(window, max_transfer, unit, near)
        };
        with_reports::<F, _>(window.len(), |mut reports| {
            let (bytes, accepted) = match indexed {
                // Every op is one fragment, none is near the one before it,
                // and each is tagged by its index already: the window's ops
                // go to the backend as they are, with nothing copied.
                Some(bytes) => {
                    let ops = window.get_mut(..passed).unwrap_or_default();
                    (bytes, reports.call(&mut self.backend, ops))
                }
                None => match self.read_copied(geometry, window, merge, passed, &mut reports) {
                    Copied::Called(bytes, accepted) => (bytes, accepted),
                    Copied::Merges(bytes) => {
                        return self.read_scattered_direct(geometry, window, bytes, done);
                    }
                    Copied::NotDirect => return false,
                },
            };
            self.finish_direct(
                geometry,
                window,
                &reports,
                accepted.min(passed),
                bytes,
                done,
            );
            true
        })
    }

    /// The direct route's first call with copies of the window's ops tagged
    /// by index, built in the one pass that scans the window (a window that
    /// fails the scan goes the general route, which costs far more than
    /// this). Where some op starts within the gap after its predecessor's
    /// end, the planner's full merge test decides: a window that merges
    /// goes the scattered direct route on a backend that scatters, and the
    /// general route on others.
    #[inline(always)]
    fn read_copied(
        &mut self,
        geometry: Geometry,
        window: &mut [ReadOp<'_>],
        merge: Option<Merge>,
        passed: usize,
        reports: &mut Reports<'_>,
    ) -> Copied {
        let mut batch: crate::stack::Stack<ReadOp<'_>, F> = crate::stack::Stack::new();
        let max_transfer = geometry.max_transfer() as u64;
        let near = merge.map(|m| m.gap);
        let scan = scan_window(window, &mut batch, max_transfer, geometry.unit_mask(), near);
        if !scan.one_fragment {
            return Copied::NotDirect;
        }
        if let Some(m) = merge {
            if scan.near && any_merge(&batch, m, geometry) {
                return if m.scatter {
                    Copied::Merges(scan.bytes)
                } else {
                    Copied::NotDirect
                };
            }
        }
        let ops = batch.get_mut(..passed).unwrap_or_default();
        Copied::Called(scan.bytes, reports.call(&mut self.backend, ops))
    }

    /// The direct route after its first call took `accepted` ops: counters
    /// and completions, with the rest resubmitted first if the call did not
    /// take the whole window.
    #[inline(always)]
    fn finish_direct<D: FnMut(Completion<'_>)>(
        &mut self,
        geometry: Geometry,
        window: &mut [ReadOp<'_>],
        reports: &Reports<'_>,
        accepted: usize,
        bytes: u64,
        done: &mut D,
    ) {
        let k = window.len();
        let mut n = first_call_counters(k, bytes);
        if accepted == k {
            n.backend_ops = k as u64;
            self.counters.add(&n);
            complete_direct(window, reports.outcomes(), done);
        } else {
            let mut outcomes: crate::stack::Stack<Outcome, F> = crate::stack::Stack::new();
            for outcome in reports.outcomes() {
                let _ = outcomes.push(outcome);
            }
            self.direct_rest(geometry, window, &mut outcomes, accepted, &mut n);
            self.counters.add(&n);
            complete_direct(window, outcomes.iter().copied(), done);
        }
    }

    /// The direct route's call for a window of ops that go to the backend
    /// as they are (each one fragment, none near the one before it), on a
    /// backend that [reports in order](ReadBackend::reports_in_order): each
    /// op is completed in its report, so nothing is kept per op, and the
    /// ops' tags need not be their indices. Results and counters are those
    /// of the general route for a backend that keeps its promise. One that
    /// does not still gets one completion per op, in order: a report that
    /// does not come with the next op of the window (the caller's op itself,
    /// not a copy) is ignored, and that op completes as not reported; ops it
    /// reported past what it says it took count as taken.
    ///
    /// `passed` (at most the window's length) is how many ops the first call
    /// may take, `bytes` what the window's ops request.
    #[inline(always)]
    fn read_in_order<D: FnMut(Completion<'_>)>(
        &mut self,
        geometry: Geometry,
        window: &mut [ReadOp<'_>],
        passed: usize,
        bytes: u64,
        done: &mut D,
    ) {
        let k = window.len();
        // Where the window's ops are, and where the next op to complete is
        // (every op before it has its completion), to tell that a reported
        // op is that one. Only compared, never read through.
        let first = window.as_ptr();
        let mut at = first;
        let ops = window.get_mut(..passed).unwrap_or_default();
        let taken = self.backend.read_batch_in_order(ops, |op, r| {
            if core::ptr::eq((op as *const ReadOp<'_>).cast::<u8>(), at.cast::<u8>()) {
                let index = (at as usize - first as usize) / mem::size_of::<ReadOp<'_>>();
                complete_one(index, op, Outcome::of(&r), done);
                at = at.wrapping_add(1);
            }
        });
        let next = (at as usize - first as usize) / mem::size_of::<ReadOp<'_>>();
        let mut n = first_call_counters(k, bytes);
        // Ops reported past what the call says it took count as taken: they
        // have their completions. (Only the window's first `passed` ops can
        // have been reported.)
        let next = next.min(passed);
        let taken = taken.min(passed).max(next);
        for (index, op) in window.iter().enumerate().take(taken).skip(next) {
            complete_one(index, op, Outcome::UNREPORTED, done);
        }
        if taken == k {
            n.backend_ops = k as u64;
            self.counters.add(&n);
        } else {
            self.in_order_rest(geometry, window, taken, n, done);
        }
    }

    /// The rest of a window on the in-order route after a first call that
    /// took only `taken` of its ops (backpressure, or `max_ops`): as
    /// [`direct_rest`](Self::direct_rest), then the rest's completions.
    #[cold]
    #[inline(never)]
    fn in_order_rest(
        &mut self,
        geometry: Geometry,
        window: &mut [ReadOp<'_>],
        taken: usize,
        mut n: Counters,
        done: &mut Done<'_>,
    ) {
        // `direct_rest` fills the completed ops' entries, never read.
        let mut outcomes: crate::stack::Stack<Outcome, F> = crate::stack::Stack::new();
        self.direct_rest(geometry, window, &mut outcomes, taken, &mut n);
        self.counters.add(&n);
        let rest = window.iter().zip(outcomes.iter()).enumerate().skip(taken);
        for (index, (op, &outcome)) in rest {
            complete_one(index, op, outcome, done);
        }
    }

    /// The direct route after a first call that took only `first` of the
    /// window's ops (backpressure, or `max_ops`): resubmits the rest as the
    /// general route would, until all are read or a call takes none.
    #[cold]
    #[inline(never)]
    fn direct_rest(
        &mut self,
        geometry: Geometry,
        window: &mut [ReadOp<'_>],
        outcomes: &mut crate::stack::Stack<Outcome, F>,
        mut first: usize,
        n: &mut Counters,
    ) {
        let k = window.len();
        // What the last call took.
        let mut accepted = first;
        fill_unreported(outcomes, first);
        while accepted > 0 && first < k {
            outcomes.truncate(first);
            let passed = (k - first).min(geometry.max_ops());
            let mut batch: crate::stack::Stack<ReadOp<'_>, F> = crate::stack::Stack::new();
            for (tag, op) in window.iter_mut().skip(first).take(passed).enumerate() {
                // Cannot fail: at most F ops.
                let _ = batch.push(ReadOp::new(op.addr, &mut *op.buf, tag));
            }
            fill_unreported(outcomes, first + passed);
            let reports = outcomes.get_mut(first..).unwrap_or_default();
            accepted = self.backend.read_batch(&mut batch, |r| {
                if let Some(slot) = reports.get_mut(r.tag) {
                    *slot = Outcome::of(&r);
                }
            });
            n.backend_calls += 1;
            accepted = accepted.min(passed);
            first += accepted;
        }
        n.backend_ops = first as u64;
        // As the general route: what is left when a call takes nothing fails.
        outcomes.truncate(first);
        for op in window.iter().skip(first) {
            n.bytes_read -= op.buf.len() as u64;
            let _ = outcomes.push(Outcome::REJECTED);
        }
    }
}

/// Whether some op of `batch` (one fragment each, in window order) extends
/// the read of the op before it, by the planner's full test: it starts
/// within the gap after its predecessor's end, and the two stay within the
/// room and one boundary unit. Without branches, as the scan's rest.
#[inline]
fn any_merge(batch: &[ReadOp<'_>], merge: Merge, geometry: Geometry) -> bool {
    let mut any = false;
    let (mut prev_start, mut prev_end) = (0u64, u64::MAX);
    for op in batch {
        // Cannot wrap: each op is one fragment.
        let (addr, end) = (op.addr, op.addr.wrapping_add(op.buf.len() as u64));
        // Where `addr < prev_end` the other parts may wrap; their values
        // then do not matter.
        any |= (addr.wrapping_sub(prev_end) <= merge.gap)
            & (addr >= prev_end)
            & (end.wrapping_sub(prev_start) <= merge.room)
            & geometry.same_unit(prev_start, end);
        (prev_start, prev_end) = (addr, end);
    }
    any
}

/// The counters of a direct-route window of `k` ops requesting `bytes`
/// after its first backend call, before its ops taken are known.
#[inline(always)]
fn first_call_counters(k: usize, bytes: u64) -> Counters {
    Counters {
        ops: k as u64,
        fragments: k as u64,
        bytes_requested: bytes,
        bytes_read: bytes,
        backend_calls: 1,
        ..Counters::default()
    }
}

/// The completions of a direct-route window from its ops' raw outcomes.
#[inline(always)]
fn complete_direct<D: FnMut(Completion<'_>)>(
    window: &[ReadOp<'_>],
    outcomes: impl Iterator<Item = Outcome>,
    done: &mut D,
) {
    for (index, (op, outcome)) in window.iter().zip(outcomes).enumerate() {
        complete_one(index, op, outcome, done);
    }
}

/// The completion of a direct-route op, `index` in its window, from its
/// raw outcome.
#[inline(always)]
fn complete_one<D: FnMut(Completion<'_>) + ?Sized>(
    index: usize,
    op: &ReadOp<'_>,
    outcome: Outcome,
    done: &mut D,
) {
    let len = op.buf.len();
    let read = record(index, 0, len, outcome.normalized(len));
    done(Completion::of(op, core::slice::from_ref(&read)));
}
