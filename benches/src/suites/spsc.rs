//! `spsc`: `uring-queue` against rtrb, ringbuf, crossbeam's `ArrayQueue`,
//! `heapless::spsc` and std's `sync_channel`, in the same rounds.
//!
//! - `elementwise`: one producer thread pushes `M` `u64`s one at a time, one
//!   consumer thread pops them one at a time (`uring_queue_deferred`: a
//!   consumer that publishes its head every 32 pops);
//! - `batch64`: the same volume moved in slices of 64 (each crate's batch API;
//!   element loops where it has none; `[u64; 64]` messages for the channel);
//! - `roundtrip`: a client sends a value, the server echoes it back through a
//!   second queue, `K` times in a row.
//!
//! The two threads are pinned to different cores. The consumer adds up every
//! value it receives and the sum is checked, so no load can be optimised away.
//! Ratios are against rtrb.

use crate::harness::{Compare, Ctx, row};
use crossbeam_queue::ArrayQueue;
use ringbuf::traits::{Consumer as _, Producer as _, Split as _};
use std::hint::{black_box, spin_loop};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::sync_channel;
use std::thread;
use std::time::{Duration, Instant};

/// Slots in every queue (heapless holds one fewer).
const CAP: usize = 1024;
const BATCH: usize = 64;
/// Release interval of the deferred-release consumer (`uring_queue_deferred`).
const DEFERRED_K: usize = 32;

fn pin(k: usize) {
    if let Some(ids) = core_affinity::get_core_ids() {
        if ids.len() >= 2 {
            core_affinity::set_for_current(ids[k % ids.len()]);
        }
    }
}

/// Runs `producer` and `consumer` on threads pinned to cores 0 and 1, both
/// released at once; returns the time until the consumer is done.
fn timed_pair(producer: impl FnOnce() + Send, consumer: impl FnOnce() + Send) -> Duration {
    let go = AtomicBool::new(false);
    let ready = AtomicUsize::new(0);
    let wait = || {
        ready.fetch_add(1, Ordering::AcqRel);
        while !go.load(Ordering::Acquire) {
            spin_loop();
        }
    };
    let wait = &wait;
    thread::scope(|s| {
        let p = s.spawn(move || {
            pin(0);
            wait();
            producer();
        });
        let c = s.spawn(move || {
            pin(1);
            wait();
            consumer();
            Instant::now()
        });
        while ready.load(Ordering::Acquire) < 2 {
            spin_loop();
        }
        let start = Instant::now();
        go.store(true, Ordering::Release);
        let end = c.join().expect("consumer panicked");
        p.join().expect("producer panicked");
        end - start
    })
}

fn expected_sum(m: u64) -> u64 {
    m * (m - 1) / 2
}

/// The consumer's check that it saw every value exactly once.
fn done(sum: u64, m: u64) {
    assert_eq!(black_box(sum), expected_sum(m), "values lost or duplicated");
}

/// Runs the suite.
pub fn run(ctx: &Ctx) {
    let m: u64 = ctx.pick(2_000_000, 200_000);
    let rounds = ctx.rounds(21, 3);
    elementwise(m, rounds);
    batch64(m, rounds);
    roundtrip(ctx.pick(20_000, 2_000), rounds);
}

/// Producer side of `elementwise`: pushes `0..m` one at a time, spinning
/// while `push` (one attempt) fails.
#[inline(always)]
fn push_each(m: u64, mut push: impl FnMut(u64) -> bool) {
    for i in 0..m {
        while !push(i) {
            spin_loop();
        }
    }
}

/// Consumer side of `elementwise`: pops `m` values one at a time, spinning
/// while `pop` (one attempt) finds nothing, and checks their sum.
#[inline(always)]
fn pop_each(m: u64, mut pop: impl FnMut() -> Option<u64>) {
    let (mut sum, mut n) = (0u64, 0);
    while n < m {
        match pop() {
            Some(v) => {
                sum = sum.wrapping_add(v);
                n += 1;
            }
            None => spin_loop(),
        }
    }
    done(sum, m);
}

fn elementwise(m: u64, rounds: usize) {
    let mut c = Compare::new("spsc", "elementwise", "rtrb");
    c.variant("rtrb", || {
        let (mut tx, mut rx) = rtrb::RingBuffer::<u64>::new(CAP);
        timed_pair(
            move || push_each(m, |v| tx.push(v).is_ok()),
            move || pop_each(m, || rx.pop().ok()),
        )
    });
    c.variant("ringbuf", || {
        let (mut tx, mut rx) = ringbuf::HeapRb::<u64>::new(CAP).split();
        timed_pair(
            move || push_each(m, |v| tx.try_push(v).is_ok()),
            move || pop_each(m, || rx.try_pop()),
        )
    });
    c.variant("crossbeam", || {
        let q = ArrayQueue::<u64>::new(CAP);
        let q = &q;
        timed_pair(
            move || push_each(m, |v| q.push(v).is_ok()),
            move || pop_each(m, || q.pop()),
        )
    });
    c.variant("heapless", || {
        let mut q = Box::new(heapless::spsc::Queue::<u64, CAP>::new());
        let (mut tx, mut rx) = q.split();
        timed_pair(
            move || push_each(m, |v| tx.enqueue(v).is_ok()),
            move || pop_each(m, || rx.dequeue()),
        )
    });
    c.variant("sync_channel", || {
        // Blocking calls: each attempt succeeds unless the other side is gone.
        let (tx, rx) = sync_channel::<u64>(CAP);
        timed_pair(
            move || push_each(m, |v| tx.send(v).is_ok()),
            move || pop_each(m, || rx.recv().ok()),
        )
    });
    c.variant("uring_queue", || {
        let (mut tx, mut rx) = uring_queue::HeapRing::<u64>::new(CAP).expect("power of two");
        timed_pair(
            move || push_each(m, |v| tx.push(v).is_ok()),
            move || pop_each(m, || rx.pop().ok()),
        )
    });
    c.variant("uring_queue_deferred", || {
        let (mut tx, mut rx) =
            uring_queue::HeapRing::<u64>::new_deferred::<DEFERRED_K>(CAP).expect("power of two");
        timed_pair(
            move || push_each(m, |v| tx.push(v).is_ok()),
            move || pop_each(m, || rx.pop().ok()),
        )
    });
    c.run(rounds).emit_rate_ratio(m as f64 / 1e6, "Mops/s");
}

/// Yields the values `0..m` as slices of at most `BATCH`.
fn batches(m: u64, mut f: impl FnMut(&[u64])) {
    let mut buf = [0u64; BATCH];
    let mut next = 0;
    while next < m {
        let n = (m - next).min(BATCH as u64) as usize;
        for (k, slot) in buf[..n].iter_mut().enumerate() {
            *slot = next + k as u64;
        }
        f(&buf[..n]);
        next += n as u64;
    }
}

/// Producer side of `batch64` for a queue with a batch API: pushes `0..m`
/// in slices of `BATCH`; `push` appends a prefix of what it is given and
/// returns its length, spinning while that is 0.
#[inline(always)]
fn push_batches(m: u64, mut push: impl FnMut(&[u64]) -> usize) {
    batches(m, |mut rest| {
        while !rest.is_empty() {
            let k = push(rest);
            rest = &rest[k..];
            if k == 0 {
                spin_loop();
            }
        }
    })
}

/// Consumer side of `batch64` for a queue with a batch API: `pop` fills a
/// prefix of a `BATCH` buffer and returns its length; checks the sum.
#[inline(always)]
fn pop_batches(m: u64, mut pop: impl FnMut(&mut [u64]) -> usize) {
    let (mut sum, mut n) = (0u64, 0);
    let mut buf = [0u64; BATCH];
    while n < m {
        let k = pop(&mut buf);
        if k == 0 {
            spin_loop();
        }
        n += k as u64;
        sum = buf[..k].iter().fold(sum, |s, &v| s.wrapping_add(v));
    }
    done(sum, m);
}

/// `push_each` fed from `batches`, for queues without a batch API.
#[inline(always)]
fn push_batches_one_by_one(m: u64, mut push: impl FnMut(u64) -> bool) {
    batches(m, |batch| {
        for &v in batch {
            while !push(v) {
                spin_loop();
            }
        }
    })
}

fn batch64(m: u64, rounds: usize) {
    let mut c = Compare::new("spsc", "batch64", "rtrb");
    c.variant("rtrb", || {
        let (mut tx, mut rx) = rtrb::RingBuffer::<u64>::new(CAP);
        timed_pair(
            move || push_batches(m, |rest| rest.len() - tx.push_partial_slice(rest).1.len()),
            move || pop_batches(m, |buf| rx.pop_partial_slice(buf).0.len()),
        )
    });
    c.variant("ringbuf", || {
        let (mut tx, mut rx) = ringbuf::HeapRb::<u64>::new(CAP).split();
        timed_pair(
            move || push_batches(m, |rest| tx.push_slice(rest)),
            move || pop_batches(m, |buf| rx.pop_slice(buf)),
        )
    });
    c.variant("crossbeam", || {
        let q = ArrayQueue::<u64>::new(CAP);
        let q = &q;
        timed_pair(
            move || push_batches_one_by_one(m, |v| q.push(v).is_ok()),
            move || pop_each(m, || q.pop()),
        )
    });
    c.variant("heapless", || {
        let mut q = Box::new(heapless::spsc::Queue::<u64, CAP>::new());
        let (mut tx, mut rx) = q.split();
        timed_pair(
            move || push_batches_one_by_one(m, |v| tx.enqueue(v).is_ok()),
            move || pop_each(m, || rx.dequeue()),
        )
    });
    c.variant("sync_channel", || {
        let (tx, rx) = sync_channel::<([u64; BATCH], usize)>(CAP / BATCH);
        timed_pair(
            move || {
                batches(m, |batch| {
                    let mut msg = [0u64; BATCH];
                    msg[..batch.len()].copy_from_slice(batch);
                    tx.send((msg, batch.len())).expect("receiver alive");
                })
            },
            move || {
                let (mut sum, mut n) = (0u64, 0);
                while n < m {
                    let (msg, k) = rx.recv().expect("sender alive");
                    n += k as u64;
                    sum = msg[..k].iter().fold(sum, |s, &v| s.wrapping_add(v));
                }
                done(sum, m);
            },
        )
    });
    c.variant("uring_queue", || {
        let (mut tx, mut rx) = uring_queue::HeapRing::<u64>::new(CAP).expect("power of two");
        timed_pair(
            move || push_batches(m, |rest| tx.push_slice(rest).expect("in-process ring")),
            move || pop_batches(m, |buf| rx.pop_slice(buf).expect("in-process ring")),
        )
    });
    c.run(rounds).emit_rate_ratio(m as f64 / 1e6, "Mops/s");
}

/// One queue type's ping-pong: `$req` and `$resp` are (producer, consumer)
/// pairs; `$push` and `$pop` try once (`$pop` yields an `Option`).
macro_rules! ping_pong {
    ($k:expr, $req:expr, $resp:expr, |$tx:ident, $v:ident| $push:expr, |$rx:ident| $pop:expr) => {{
        let k: u64 = $k;
        let (mut req_tx, mut req_rx) = $req;
        let (mut resp_tx, mut resp_rx) = $resp;
        timed_pair(
            move || {
                // The server: echo `k` values.
                for _ in 0..k {
                    let v = loop {
                        let $rx = &mut req_rx;
                        match $pop {
                            Some(v) => break v,
                            None => spin_loop(),
                        }
                    };
                    loop {
                        let ($tx, $v) = (&mut resp_tx, v);
                        if $push {
                            break;
                        }
                        spin_loop();
                    }
                }
            },
            move || {
                // The client: send, wait for the echo, `k` times.
                let mut sum = 0u64;
                for i in 0..k {
                    loop {
                        let ($tx, $v) = (&mut req_tx, i);
                        if $push {
                            break;
                        }
                        spin_loop();
                    }
                    let v = loop {
                        let $rx = &mut resp_rx;
                        match $pop {
                            Some(v) => break v,
                            None => spin_loop(),
                        }
                    };
                    sum = sum.wrapping_add(v);
                }
                done(sum, k);
            },
        )
    }};
}

fn roundtrip(k: u64, rounds: usize) {
    const RT_CAP: usize = 64;
    let mut c = Compare::new("spsc", "roundtrip", "rtrb");
    c.variant("rtrb", || {
        ping_pong!(
            k,
            rtrb::RingBuffer::<u64>::new(RT_CAP),
            rtrb::RingBuffer::<u64>::new(RT_CAP),
            |tx, v| tx.push(v).is_ok(),
            |rx| rx.pop().ok()
        )
    });
    c.variant("ringbuf", || {
        ping_pong!(
            k,
            ringbuf::HeapRb::<u64>::new(RT_CAP).split(),
            ringbuf::HeapRb::<u64>::new(RT_CAP).split(),
            |tx, v| tx.try_push(v).is_ok(),
            |rx| rx.try_pop()
        )
    });
    c.variant("crossbeam", || {
        let (a, b) = (
            ArrayQueue::<u64>::new(RT_CAP),
            ArrayQueue::<u64>::new(RT_CAP),
        );
        let (a, b) = (&a, &b);
        ping_pong!(k, (a, a), (b, b), |tx, v| tx.push(v).is_ok(), |rx| rx.pop())
    });
    c.variant("heapless", || {
        let mut qa = Box::new(heapless::spsc::Queue::<u64, RT_CAP>::new());
        let mut qb = Box::new(heapless::spsc::Queue::<u64, RT_CAP>::new());
        ping_pong!(
            k,
            qa.split(),
            qb.split(),
            |tx, v| tx.enqueue(v).is_ok(),
            |rx| rx.dequeue()
        )
    });
    c.variant("sync_channel", || {
        ping_pong!(
            k,
            sync_channel::<u64>(RT_CAP),
            sync_channel::<u64>(RT_CAP),
            |tx, v| tx.send(v).is_ok(),
            |rx| rx.recv().ok()
        )
    });
    c.variant("uring_queue", || {
        ping_pong!(
            k,
            uring_queue::HeapRing::<u64>::new(RT_CAP).expect("power of two"),
            uring_queue::HeapRing::<u64>::new(RT_CAP).expect("power of two"),
            |tx, v| tx.push(v).is_ok(),
            |rx| rx.pop().ok()
        )
    });
    let r = c.run(rounds);
    r.emit_time_ratio();
    for name in [
        "rtrb",
        "ringbuf",
        "crossbeam",
        "heapless",
        "sync_channel",
        "uring_queue",
    ] {
        let ns = r.median(name).as_secs_f64() * 1e9 / k as f64;
        row(
            "spsc",
            &format!("roundtrip.{name}.ns_per_round_trip"),
            ns,
            "ns",
        );
    }
}
