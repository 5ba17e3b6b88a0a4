//! The general route: any window of ops, split into fragments at the
//! backend's boundaries, merged where the policy allows, and read in
//! batches until every fragment has its outcome. Each batch is three
//! steps: [plan](plan_batch) which fragments go into which backend op,
//! [submit](submit) them in one call, and [apply](apply_plan) each taken
//! op's outcome to its fragments.

use core::mem;

use crate::stack::StackView;

use super::outcome::Outcome;
use super::{Cursor, Done, Merge, Reader};
use crate::completion::FragRecord;
use crate::{
    Completion, Counters, Geometry, ReadBackend, ReadErrorKind, ReadOp, Report, ScatterOp,
};

/// Where a fragment stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum State {
    /// Not yet read; may merge with neighbours.
    Pending,
    /// Its merged read failed before its last byte: read it alone.
    Retry,
    /// Has its outcome.
    Done,
}

/// A fragment's place in the backend's address space and the caller's buffer.
#[derive(Debug)]
pub(super) struct Slot<'w> {
    pub(super) addr: u64,
    pub(super) buf: &'w mut [u8],
    pub(super) state: State,
}

/// How a backend op of a batch reaches the callers' buffers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Route {
    /// One fragment, read straight into its buffer.
    Alone,
    /// One fragment whose merged read failed before its end, read again
    /// straight into its buffer.
    Retry,
    /// Several fragments, read into scratch at this offset, then copied out.
    Scratch(usize),
    /// Several adjacent fragments, read straight into their buffers by a
    /// scattering backend.
    Scatter,
}

/// One backend op: fragments `first..first + count` of the table, read as
/// `span` bytes at `addr`, and what the backend said of it.
#[derive(Debug, Clone, Copy)]
pub(super) struct Plan {
    pub(super) first: usize,
    pub(super) count: usize,
    pub(super) addr: u64,
    pub(super) span: usize,
    pub(super) route: Route,
    /// [`Outcome::UNREPORTED`] until its report comes.
    pub(super) outcome: Outcome,
}

/// The backend ops of one call.
#[derive(Debug)]
struct Batch<'p> {
    plans: &'p mut StackView<Plan>,
    /// The scratch bytes the batch's merged reads take, from the start.
    scratch_used: usize,
    /// Some merged read scatters: the batch goes as scatter ops.
    scatter: bool,
}

/// A fragment the table took, with the index of its op.
#[derive(Debug)]
struct Fragment<'w> {
    op: usize,
    offset: usize,
    addr: u64,
    buf: &'w mut [u8],
}

/// How far [`split_op`] got.
#[derive(Debug, Clone, Copy)]
enum Split {
    /// Every byte of the op is in the table.
    Whole,
    /// The table filled up; the op goes on from this offset.
    At(usize),
}

impl<B: ReadBackend, S: AsMut<[u8]>, const N: usize, const F: usize> Reader<B, S, N, F> {
    /// Every op of `ops` by the general route, one table-full after another.
    #[inline(never)]
    pub(super) fn general_windows(&mut self, ops: &mut [ReadOp<'_>], done: &mut Done<'_>) {
        let geometry = self.backend.geometry();
        let mut cursor = Cursor { op: 0, offset: 0 };
        while cursor.op < ops.len() {
            self.general_window(geometry, ops, &mut cursor, done);
        }
    }

    /// One table-full from `cursor` by the general route, and its
    /// completions. Kept out of line: its tables are large, and callers whose
    /// windows take the direct route should not carry them on their stack.
    #[cfg_attr(not(feature = "small"), inline(never))]
    pub(super) fn general_window(
        &mut self,
        geometry: Geometry,
        ops: &mut [ReadOp<'_>],
        cursor: &mut Cursor,
        done: &mut Done<'_>,
    ) {
        let mut records: crate::stack::Stack<FragRecord, F> = crate::stack::Stack::new();
        let mut slots: crate::stack::Stack<Slot<'_>, F> = crate::stack::Stack::new();
        counted(&mut self.counters, |n| {
            fill_table(
                geometry,
                ops,
                cursor,
                records.as_mut_view(),
                slots.as_mut_view(),
                n,
            );
        });
        self.execute(geometry, &mut slots, &mut records);
        drop(slots);
        complete_records(ops, &records, done);
    }

    /// Reads every slot, merging neighbours, until each has its outcome:
    /// batch after batch, each planned, submitted and applied. The loop
    /// ([`run_batches`]) knows neither the reader's type nor `F`, so that
    /// readers with other tables (an [`AsyncReader`](crate::AsyncReader)'s
    /// beside a `Reader`'s, in one firmware) share one copy of it; only the
    /// backend call is made here, through `submit`.
    pub(super) fn execute(
        &mut self,
        geometry: Geometry,
        slots: &mut [Slot<'_>],
        records: &mut [FragRecord],
    ) {
        let merge = self.merge_limits(geometry);
        let mut plans: crate::stack::Stack<Plan, F> = crate::stack::Stack::new();
        let Reader {
            backend,
            scratch,
            counters,
            ..
        } = self;
        let scratch: &mut [u8] = scratch.as_mut();
        let planner = Planner {
            merge,
            scratch_len: scratch.len(),
            geometry,
        };
        let mut submit = |slots: &mut [Slot<'_>], scratch: &mut [u8], batch: &mut Batch<'_>| {
            submit::<B, F>(backend, slots, scratch, batch)
        };
        let table = Table { slots, records };
        counted(counters, |n| {
            run_batches(planner, scratch, table, plans.as_mut_view(), &mut submit, n);
        });
    }
}

/// Hands one planned batch to the backend: [`submit`] at the reader's
/// backend and `F`.
type Submit<'s> = dyn FnMut(&mut [Slot<'_>], &mut [u8], &mut Batch<'_>) -> usize + 's;

/// Runs `count` with the counters it adds to. With `small`, they are the
/// reader's own: no second set to clear and add up. Otherwise a local set,
/// added to the reader's at the end, so that the loops do not store
/// through the reader per op.
#[inline(always)]
fn counted(counters: &mut Counters, count: impl FnOnce(&mut Counters)) {
    if cfg!(feature = "small") {
        count(counters);
    } else {
        let mut n = Counters::default();
        count(&mut n);
        counters.add(&n);
    }
}

/// A window's fragments: the slots to read into and the records of what
/// each read.
struct Table<'t, 'w> {
    slots: &'t mut [Slot<'w>],
    records: &'t mut [FragRecord],
}

/// [`Reader::execute`]'s loop: batch after batch, each planned into `plans`
/// (refilled in place: a table of plans returned by value would be copied
/// every round), submitted and applied, until every slot has its outcome.
/// Adds what it counts to `n`. Out of line, so that every reader shares it.
#[inline(never)]
fn run_batches(
    planner: Planner,
    scratch: &mut [u8],
    table: Table<'_, '_>,
    plans: &mut StackView<Plan>,
    submit: &mut Submit<'_>,
    n: &mut Counters,
) {
    let Table { slots, records } = table;
    let mut batch = Batch {
        plans,
        scratch_used: 0,
        scatter: false,
    };
    let mut first = 0;
    loop {
        first = next_pending(slots, first);
        if first >= slots.len() {
            break;
        }
        plan_batch(&mut batch, slots, first, planner);
        n.backend_calls += 1;
        let accepted = submit(slots, scratch, &mut batch);
        if accepted == 0 {
            reject_pending(slots, records, first);
            break;
        }
        for plan in batch.plans.iter().take(accepted) {
            apply_plan(plan, slots, records, scratch, n);
        }
    }
}

/// The completions of a table-full: one per op, over its records.
// Out of line: it knows no table size, so every reader shares it.
#[inline(never)]
fn complete_records(ops: &[ReadOp<'_>], records: &[FragRecord], done: &mut Done<'_>) {
    let mut rest = records;
    while let Some(first) = rest.first() {
        let end = rest.iter().position(|r| r.op != first.op);
        let (frags, tail) = rest
            .split_at_checked(end.unwrap_or(rest.len()))
            .unwrap_or((rest, &[]));
        if let Some(op) = ops.get(first.op) {
            done(Completion::of(op, frags));
        }
        rest = tail;
    }
}

/// Puts the ops from `cursor` into the table, fragment by fragment, until
/// they are all in or the table is full, and moves `cursor` past them.
/// Adds what they count for to `n`: ops, bytes requested and fragments.
fn fill_table<'w>(
    geometry: Geometry,
    ops: &'w mut [ReadOp<'_>],
    cursor: &mut Cursor,
    records: &mut StackView<FragRecord>,
    slots: &mut StackView<Slot<'w>>,
    n: &mut Counters,
) {
    for (op_index, op) in ops.iter_mut().enumerate().skip(cursor.op) {
        if records.is_full() {
            break;
        }
        if cursor.offset == 0 {
            n.ops += 1;
            n.bytes_requested += op.buf.len() as u64;
            if let Some(error) = unreadable(op) {
                let record = record(op_index, 0, op.buf.len(), Outcome { valid: 0, error });
                push(records, slots, record, Slot::done(op.addr));
                cursor.op = op_index + 1;
                continue;
            }
        }
        let (fragments, split) = split_op(geometry, op_index, op, cursor.offset, records, slots);
        n.fragments += fragments;
        match split {
            Split::Whole => {
                *cursor = Cursor {
                    op: op_index + 1,
                    offset: 0,
                };
            }
            Split::At(offset) => {
                *cursor = Cursor {
                    op: op_index,
                    offset,
                };
                break;
            }
        }
    }
}

/// `Some` (with the error to record, `None` for an empty op) if `op` is
/// complete without a read: empty, or past the end of the address space.
#[inline]
fn unreadable(op: &ReadOp<'_>) -> Option<Option<ReadErrorKind>> {
    if op.buf.is_empty() {
        Some(None)
    } else if op.end().is_none() {
        Some(Some(ReadErrorKind::AddressOverflow))
    } else {
        None
    }
}

/// Splits op `op_index` from `offset` into fragments of `geometry` and
/// puts them into the table until it is full. Returns how many it put,
/// and whether the op is in whole.
fn split_op<'w>(
    geometry: Geometry,
    op_index: usize,
    op: &'w mut ReadOp<'_>,
    mut offset: usize,
    records: &mut StackView<FragRecord>,
    slots: &mut StackView<Slot<'w>>,
) -> (u64, Split) {
    let mut fragments = 0;
    let mut rest: &mut [u8] = op.buf.get_mut(offset..).unwrap_or(&mut []);
    let mut addr = op.addr.wrapping_add(offset as u64);
    while !rest.is_empty() && !records.is_full() {
        let len = geometry.fragment_len(addr, rest.len());
        let Some((head, tail)) = mem::take(&mut rest).split_at_mut_checked(len) else {
            break;
        };
        rest = tail;
        let fragment = Fragment {
            op: op_index,
            offset,
            addr,
            buf: head,
        };
        push(records, slots, fragment.record(), fragment.slot());
        fragments += 1;
        offset += len;
        addr = addr.wrapping_add(len as u64);
    }
    let split = if rest.is_empty() {
        Split::Whole
    } else {
        Split::At(offset)
    };
    (fragments, split)
}

impl<'w> Fragment<'w> {
    fn record(&self) -> FragRecord {
        record(self.op, self.offset, self.buf.len(), Outcome::UNREPORTED)
    }

    fn slot(self) -> Slot<'w> {
        Slot {
            addr: self.addr,
            buf: self.buf,
            state: State::Pending,
        }
    }
}

impl Slot<'_> {
    /// The slot of an op complete without a read.
    fn done(addr: u64) -> Self {
        Slot {
            addr,
            buf: &mut [],
            state: State::Done,
        }
    }
}

/// The record of `len` bytes at `offset` of op `op`, with `outcome` as it
/// stands (a pending fragment's is replaced before it is completed).
#[inline(always)]
pub(super) fn record(op: usize, offset: usize, len: usize, outcome: Outcome) -> FragRecord {
    FragRecord {
        op,
        offset,
        len,
        valid: outcome.valid,
        error: outcome.error,
    }
}

/// Adds a fragment to the table (the caller has checked there is room).
#[inline]
pub(super) fn push<'w>(
    records: &mut StackView<FragRecord>,
    slots: &mut StackView<Slot<'w>>,
    record: FragRecord,
    slot: Slot<'w>,
) {
    if records.push(record).is_ok() {
        let _ = slots.push(slot);
    }
}

/// The first slot from `from` on that is not done (`slots.len()` if none).
// Out of line with `small`, like `apply_plan`: fewer bytes than inlined.
#[cfg_attr(feature = "small", inline(never))]
#[cfg_attr(not(feature = "small"), inline)]
fn next_pending(slots: &[Slot<'_>], from: usize) -> usize {
    let rest = slots.get(from..).unwrap_or(&[]);
    from + rest.iter().take_while(|s| s.state == State::Done).count()
}

/// What the planner plans with: the merge policy, the scratch space and
/// the backend's geometry.
#[derive(Debug, Clone, Copy)]
struct Planner {
    merge: Option<Merge>,
    scratch_len: usize,
    geometry: Geometry,
}

/// Plans one batch from slot `first` on into `batch` (whose earlier plans
/// it drops): which slots go together into which backend op, at most
/// `max_ops` of them.
fn plan_batch(batch: &mut Batch<'_>, slots: &[Slot<'_>], first: usize, planner: Planner) {
    batch.plans.clear();
    batch.scratch_used = 0;
    batch.scatter = false;
    let mut i = first;
    while batch.plans.len() < planner.geometry.max_ops() {
        let Some(s) = slots.get(i) else {
            break;
        };
        if s.state == State::Done {
            i += 1;
            continue;
        }
        let plan = plan_op(slots, i, planner, batch);
        i = plan.first + plan.count;
        // Cannot fail: each plan takes at least one of at most F slots.
        let _ = batch.plans.push(plan);
    }
}

/// The backend op that starts at slot `i` (not done): the slots after it
/// that merge with it, if it is pending and the policy merges, else it
/// alone. Takes the scratch a merged read needs from `batch`.
fn plan_op(slots: &[Slot<'_>], i: usize, planner: Planner, batch: &mut Batch<'_>) -> Plan {
    let Planner {
        merge,
        scratch_len,
        geometry,
    } = planner;
    let Some(s) = slots.get(i) else {
        // Not reachable: the caller found slot `i`.
        return alone(i, 0, 0, Route::Alone);
    };
    let start = s.addr;
    let mut end = start.wrapping_add(s.buf.len() as u64);
    let mut j = i + 1;
    if let (State::Pending, Some(m)) = (s.state, merge) {
        let room = if m.scatter {
            m.room
        } else {
            m.room
                .min(scratch_len.saturating_sub(batch.scratch_used) as u64)
        };
        (j, end) = extend_run(slots, j, start, end, m.gap, room, geometry);
    }
    if j - i < 2 {
        let route = if s.state == State::Retry {
            Route::Retry
        } else {
            Route::Alone
        };
        return alone(i, start, s.buf.len(), route);
    }
    let span = end.wrapping_sub(start) as usize;
    let route = if merge.is_some_and(|m| m.scatter) {
        batch.scatter = true;
        Route::Scatter
    } else {
        batch.scratch_used += span;
        Route::Scratch(batch.scratch_used - span)
    };
    Plan {
        first: i,
        count: j - i,
        addr: start,
        span,
        route,
        outcome: Outcome::UNREPORTED,
    }
}

/// The plan of slot `i` read alone.
#[inline]
fn alone(i: usize, addr: u64, span: usize, route: Route) -> Plan {
    Plan {
        first: i,
        count: 1,
        addr,
        span,
        route,
        outcome: Outcome::UNREPORTED,
    }
}

/// Extends a merged read from `start` to `end` by the pending slots from
/// `j` on that start within `gap` after its end and keep it within `room`
/// bytes and one boundary unit. Returns the slot after the last one taken
/// and the read's new end.
fn extend_run(
    slots: &[Slot<'_>],
    mut j: usize,
    start: u64,
    mut end: u64,
    gap: u64,
    room: u64,
    geometry: Geometry,
) -> (usize, u64) {
    while let Some(t) = slots.get(j) {
        if t.state != State::Pending || t.addr < end || t.addr - end > gap {
            break;
        }
        let t_end = t.addr.wrapping_add(t.buf.len() as u64);
        if t_end.wrapping_sub(start) > room || !geometry.same_unit(start, t_end) {
            break;
        }
        end = t_end;
        j += 1;
    }
    (j, end)
}

/// Hands a planned batch to the backend in one call: as scatter ops if any
/// merged read scatters, else as plain ops. Stores each report's outcome
/// in its plan and returns how many plans the backend took.
fn submit<B: ReadBackend, const F: usize>(
    backend: &mut B,
    slots: &mut [Slot<'_>],
    scratch: &mut [u8],
    batch: &mut Batch<'_>,
) -> usize {
    // The tables live here, sized by `F`; what fills them does not know
    // `F`, so readers with other tables share it.
    if batch.scatter {
        let mut parts = crate::stack::Stack::<_, F>::new();
        planned_parts(slots, batch.plans, parts.as_mut_view());
        let mut ops = crate::stack::Stack::<_, F>::new();
        call_scattered(backend, &mut parts, batch.plans, ops.as_mut_view())
    } else {
        let scratch = scratch.get_mut(..batch.scratch_used).unwrap_or_default();
        let mut ops = crate::stack::Stack::<_, F>::new();
        call_plain(backend, slots, scratch, batch.plans, ops.as_mut_view())
    }
}

/// The buffers of every planned slot, in plan order, pushed onto `parts`
/// (filled in place: a table returned by value would be copied).
fn planned_parts<'s>(
    slots: &'s mut [Slot<'_>],
    plans: &[Plan],
    parts: &mut StackView<&'s mut [u8]>,
) {
    let mut plans = plans.iter().peekable();
    for (index, s) in slots.iter_mut().enumerate() {
        while plans.next_if(|p| p.first + p.count <= index).is_some() {}
        match plans.peek() {
            Some(p) if index >= p.first => {
                // Cannot fail: at most F slots.
                let _ = parts.push(&mut *s.buf);
            }
            Some(_) => {}
            None => break,
        }
    }
}

/// Sends `plans` to the backend as scatter ops in one call, plan `k` (tag
/// `k`) taking the next `count` of `parts` (the planned buffers, in plan
/// order), and stores each report's outcome in its plan. Returns how many
/// plans the backend took. The one place a scatter batch is built, in
/// `batch` (empty, with room for every plan).
pub(super) fn call_scattered<'a, 'b, B: ReadBackend>(
    backend: &mut B,
    parts: &'a mut [&'b mut [u8]],
    plans: &mut [Plan],
    batch: &mut StackView<ScatterOp<'a, 'b>>,
) -> usize {
    let mut rest = parts;
    for (tag, p) in plans.iter().enumerate() {
        let Some((head, tail)) = mem::take(&mut rest).split_at_mut_checked(p.count) else {
            break;
        };
        rest = tail;
        let _ = batch.push(ScatterOp {
            addr: p.addr,
            parts: head,
            tag,
        });
    }
    let accepted = backend.read_scattered(batch, store_outcomes(plans));
    accepted.min(batch.len())
}

/// Sends `plans` to the backend as plain ops in one call (tag `k` for plan
/// `k`): a fragment read alone into its own buffer, a merged read into the
/// next `span` bytes of `scratch`. Stores each report's outcome in its plan
/// and returns how many plans the backend took. The batch is built in
/// `batch` (empty, with room for every plan).
fn call_plain<'s, B: ReadBackend>(
    backend: &mut B,
    slots: &'s mut [Slot<'_>],
    mut scratch: &'s mut [u8],
    plans: &mut [Plan],
    batch: &mut StackView<ReadOp<'s>>,
) -> usize {
    let mut slot_iter = slots.iter_mut().enumerate();
    for (k, p) in plans.iter().enumerate() {
        let buf = match p.route {
            Route::Alone | Route::Retry => slot_iter
                .by_ref()
                .find(|(index, _)| *index == p.first)
                .map(|(_, s)| &mut *s.buf),
            Route::Scratch(_) | Route::Scatter => mem::take(&mut scratch)
                .split_at_mut_checked(p.span)
                .map(|(head, tail)| {
                    scratch = tail;
                    head
                }),
        };
        let Some(buf) = buf else {
            break;
        };
        let _ = batch.push(ReadOp::new(p.addr, buf, k));
    }
    let accepted = backend.read_batch(batch, store_outcomes(plans));
    accepted.min(batch.len())
}

/// The report callback of a batch of `plans` (plan `k` tagged `k`): each
/// report's outcome stored in its plan; unknown tags are ignored, and the
/// last report of a plan counts.
fn store_outcomes(plans: &mut [Plan]) -> impl FnMut(Report) + '_ {
    |r| {
        if let Some(p) = plans.get_mut(r.tag) {
            p.outcome = Outcome::of(&r);
        }
    }
}

/// Fails every slot from `first` on that has no outcome yet: the call
/// took none of them.
pub(super) fn reject_pending(slots: &mut [Slot<'_>], records: &mut [FragRecord], first: usize) {
    let slots = slots.get_mut(first..).unwrap_or_default();
    let records = records.get_mut(first..).unwrap_or_default();
    for (s, r) in slots.iter_mut().zip(records.iter_mut()) {
        if s.state != State::Done {
            s.state = State::Done;
            r.valid = Outcome::REJECTED.valid;
            r.error = Outcome::REJECTED.error;
        }
    }
}

/// Applies a backend op the backend took to its slots and records, and
/// counts it: a fragment read alone gets the outcome; a merged read's
/// members go through [`apply_run`]. `scratch` holds the bytes of merged
/// reads made there.
// Out of line with `small`: inlined into the batch loop it costs more
// flash than the call.
#[cfg_attr(feature = "small", inline(never))]
pub(super) fn apply_plan(
    p: &Plan,
    slots: &mut [Slot<'_>],
    records: &mut [FragRecord],
    scratch: &[u8],
    n: &mut Counters,
) {
    let outcome = p.outcome.normalized(p.span);
    n.count_backend_op(p.count, p.span);
    match p.route {
        Route::Alone | Route::Retry => {
            if p.route == Route::Retry {
                n.retried_ops += 1;
            }
            if let (Some(s), Some(r)) = (slots.get_mut(p.first), records.get_mut(p.first)) {
                s.state = State::Done;
                r.valid = outcome.valid;
                r.error = outcome.error;
            }
        }
        Route::Scratch(off) => {
            let merged = scratch.get(off..).and_then(|s| s.get(..p.span));
            apply_run(p, outcome.valid, slots, records, merged.unwrap_or(&[]));
        }
        Route::Scatter => apply_run(p, outcome.valid, slots, records, &[]),
    }
}

/// Applies a merged read `p` of which `valid` bytes were read to its
/// members: each read whole is done (its bytes copied out of `merged`
/// where the read went to scratch), each other is to be read alone. The
/// one place a merged read's result reaches its members, on every route.
fn apply_run(
    p: &Plan,
    valid: usize,
    slots: &mut [Slot<'_>],
    records: &mut [FragRecord],
    merged: &[u8],
) {
    let members = p.first..p.first + p.count;
    let (Some(slots), Some(records)) = (slots.get_mut(members.clone()), records.get_mut(members))
    else {
        return;
    };
    for (s, r) in slots.iter_mut().zip(records) {
        let rel = s.addr.wrapping_sub(p.addr) as usize;
        let len = s.buf.len();
        if rel + len <= valid {
            if let Some(bytes) = merged.get(rel..rel + len) {
                s.buf.copy_from_slice(bytes);
            }
            s.state = State::Done;
            r.valid = len;
            r.error = None;
        } else {
            s.state = State::Retry;
        }
    }
}
