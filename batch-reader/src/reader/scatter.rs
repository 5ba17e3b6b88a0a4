//! The scattered direct route: a window of single-fragment ops some of
//! which merge, on a backend that scatters merged reads straight into the
//! callers' buffers (gap 0). The runs of adjacent ops go to the backend in
//! one call; a window whose runs are not all read whole continues on the
//! general route from exactly where that call left it.

use super::general::{Plan, Route, Slot, State, apply_plan, call_scattered, push, record};
use super::outcome::Outcome;
use super::{Done, Reader};
use crate::completion::FragRecord;
use crate::{Completion, Counters, Geometry, ReadBackend, ReadOp};

impl<B: ReadBackend, S: AsMut<[u8]>, const N: usize, const F: usize> Reader<B, S, N, F> {
    /// The direct route for a window of single-fragment ops (requesting
    /// `bytes`) some of which merge, on a backend that scatters (gap 0):
    /// the runs of adjacent ops that the planner would merge become one
    /// scatter op each and go to the backend in one call. When every run
    /// is taken and read whole, each op is complete; otherwise the window
    /// goes on as [`scattered_rest`](Self::scattered_rest) says.
    ///
    /// Returns `false`, having done nothing, if the runs do not fit in one
    /// call (`max_ops`).
    #[inline(never)]
    pub(super) fn read_scattered_direct(
        &mut self,
        geometry: Geometry,
        window: &mut [ReadOp<'_>],
        bytes: u64,
        done: &mut Done<'_>,
    ) -> bool {
        // Filled in place: returned by value, the table would be copied
        // (one `memcpy` of F plans per window, a tenth of a 1 MiB read's
        // time in the `file` benchmark).
        let mut runs = crate::stack::Stack::<Plan, F>::new();
        scatter_runs(window, geometry, &mut runs);
        if runs.len() > geometry.max_ops() {
            return false;
        }
        let k = window.len() as u64;
        let mut n = Counters {
            ops: k,
            fragments: k,
            bytes_requested: bytes,
            backend_calls: 1,
            ..Counters::default()
        };
        let accepted = {
            let mut parts: crate::stack::Stack<&mut [u8], F> = crate::stack::Stack::new();
            for op in window.iter_mut() {
                // Cannot fail: at most F ops.
                let _ = parts.push(&mut *op.buf);
            }
            let mut batch = crate::stack::Stack::<_, F>::new();
            call_scattered(
                &mut self.backend,
                &mut parts,
                &mut runs,
                batch.as_mut_view(),
            )
        };
        let whole = accepted == runs.len() && runs.iter().all(|r| r.outcome.valid >= r.span);
        if !whole {
            self.scattered_rest(geometry, window, &runs, accepted, n, done);
            return true;
        }
        for run in &runs {
            n.count_backend_op(run.count, run.span);
        }
        self.counters.add(&n);
        for (index, op) in window.iter().enumerate() {
            let len = op.buf.len();
            let read = record(
                index,
                0,
                len,
                Outcome {
                    valid: len,
                    error: None,
                },
            );
            done(Completion::of(op, core::slice::from_ref(&read)));
        }
        true
    }

    /// [`read_scattered_direct`](Self::read_scattered_direct) when its call
    /// did not read every run whole: the call's outcome is applied as the
    /// general route applies a batch (members read are complete, the others
    /// of a failed run are retried alone, runs not taken wait; a call that
    /// took nothing rejects the window), and the general route finishes the
    /// window.
    #[cold]
    #[inline(never)]
    fn scattered_rest(
        &mut self,
        geometry: Geometry,
        window: &mut [ReadOp<'_>],
        runs: &[Plan],
        accepted: usize,
        mut n: Counters,
        done: &mut Done<'_>,
    ) {
        let mut records: crate::stack::Stack<FragRecord, F> = crate::stack::Stack::new();
        let mut slots: crate::stack::Stack<Slot<'_>, F> = crate::stack::Stack::new();
        for (index, op) in window.iter_mut().enumerate() {
            let unread = Outcome {
                valid: 0,
                error: None,
            };
            let slot = Slot {
                addr: op.addr,
                buf: &mut *op.buf,
                state: State::Pending,
            };
            push(
                records.as_mut_view(),
                slots.as_mut_view(),
                record(index, 0, slot.buf.len(), unread),
                slot,
            );
        }
        for run in runs.iter().take(accepted) {
            apply_plan(run, &mut slots, &mut records, &[], &mut n);
        }
        self.counters.add(&n);
        if accepted == 0 {
            super::general::reject_pending(&mut slots, &mut records, 0);
        } else {
            self.execute(geometry, &mut slots, &mut records);
        }
        drop(slots);
        for (op, record) in window.iter().zip(records.iter()) {
            done(Completion::of(op, core::slice::from_ref(record)));
        }
    }
}

/// The runs of a window of single-fragment ops that the planner would
/// merge with gap 0 (each op starting where the run ends, the run staying
/// within `max_transfer` and one boundary unit), as the plans of one
/// scatter call, pushed onto `runs` (empty, with room for one run per op).
fn scatter_runs<const F: usize>(
    window: &[ReadOp<'_>],
    geometry: Geometry,
    runs: &mut crate::stack::Stack<Plan, F>,
) {
    let room = geometry.max_transfer() as u64;
    for (index, op) in window.iter().enumerate() {
        let (addr, len) = (op.addr, op.buf.len());
        // Cannot wrap: each op is one fragment.
        let end = addr.wrapping_add(len as u64);
        if let Some(run) = runs.last_mut() {
            let run_end = run.addr.wrapping_add(run.span as u64);
            if addr == run_end
                && end.wrapping_sub(run.addr) <= room
                && geometry.same_unit(run.addr, end)
            {
                run.count += 1;
                run.span += len;
                run.route = Route::Scatter;
                continue;
            }
        }
        // Cannot fail: at most one run per op.
        let _ = runs.push(Plan {
            first: index,
            count: 1,
            addr,
            span: len,
            route: Route::Alone,
            outcome: Outcome::UNREPORTED,
        });
    }
}
