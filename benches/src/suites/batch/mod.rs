//! `batch`: the batching reader against the ways people read today.
//!
//! 1. `seed`: seed 000's calls-per-second table — a bare function call, a
//!    deque used sequentially, one and two channels used sequentially, and
//!    this crate's batch API per op (64 ops per `read_many`), all reading
//!    8 bytes at the same addresses of an in-memory source; the batch API
//!    both with its ops built afresh per batch and with one op array reused,
//!    and each of those shapes filled by hand without the crate (the floor);
//!    then the table's async rows, on one current-thread tokio runtime: one
//!    channel and two channels used sequentially in one task, two tasks
//!    exchanging request and response, and this crate's `AsyncReader`
//!    awaiting each read in turn (`auto_reader`) and as 8 and 64 joined
//!    chains (`auto_reader_x8`, `auto_reader_x64`). More floors: the backend
//!    alone on the same ops, fresh and reused (a batch without the reader),
//!    the same after the pass that tests every op is one fragment of the
//!    backend's geometry (`backend_checked`: the test no reader can skip),
//!    the by-hand loop with that test folded into each op's copy
//!    (`ops_by_hand_checked`, which a reader cannot do: it hands the ops to
//!    a backend and tests them before the call),
//!    one synchronous `read_val` per address (the calls `auto_reader`
//!    makes, without the futures), and the same after one Pending per read
//!    polled again at once (`yield_read_val`: the yield any reader batching
//!    on `.await` makes per read in that shape, without a queue).
//! 2. `syscall`: pieces of 8–64 bytes of another process's memory — one
//!    `process_vm_readv` per piece, the raw call and this crate's
//!    `ProcessBackend` each batched 16/64/256 pieces at a time; then the
//!    same with the pieces being adjacent fields of a few structs, where
//!    coalescing merges them.
//! 3. `file`: seed 002 — a file read 4 KiB at a time with a fresh buffer per
//!    read, one 1 MiB read at a time into a reused buffer (the ceiling), and
//!    `read_iter` of 4 KiB ops coalesced into one reused buffer; with the
//!    memcpy of the same volume as the reference for GB/s.

mod file;
mod ops;
mod seed;
mod syscall;

use crate::harness::{Ctx, paired_logged, row};
use std::cell::RefCell;
use std::time::Duration;

/// Runs the suite.
pub fn run(ctx: &Ctx) {
    seed::run(ctx);
    syscall::run(ctx);
    file::run(ctx);
}

/// A small deterministic generator, so every variant reads the same places.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
}

/// One variant's sample times, in order, so that two variants that are not
/// the anchor can be compared round by round.
type Log = RefCell<Vec<Duration>>;

/// Records `t` in `log` and returns it.
fn logged(log: &Log, t: Duration) -> Duration {
    log.borrow_mut().push(t);
    t
}

/// Median over rounds of `a`'s time divided by `b`'s in the same round (the
/// harness's untimed warm-up sample, the first, left out).
fn paired(a: &Log, b: &Log) -> f64 {
    paired_logged(&a.borrow(), &b.borrow())
}

/// One `batch` row per `(name, a, b)`: the paired ratio of `a`'s time over
/// `b`'s (for a rate ratio, `a` is the reference and `b` the contender).
fn paired_rows(rows: &[(&str, &Log, &Log)]) {
    for &(name, a, b) in rows {
        row("batch", name, paired(a, b), "x");
    }
}
