//! The blocking push and pop: every value arrives once and in order between
//! two threads, also with both threads on one CPU and with a deferred
//! consumer; and each returns (rather than waits forever) once the other
//! half is gone and nothing more can happen.

use std::thread;
use uring_queue::{HeapRing, PushError, Ring, RingError};

const N: u64 = if cfg!(miri) { 200 } else { 100_000 };

/// Pushes `0..N` with `push_blocking` on one thread while this one pops
/// with `pop_blocking`; returns what was popped, in order.
fn transfer<const K: usize>(
    mut tx: uring_queue::Producer<'static, u64>,
    mut rx: uring_queue::Consumer<'static, u64, K>,
    pin: fn(),
) -> Vec<u64> {
    let producer = thread::spawn(move || {
        pin();
        for i in 0..N {
            tx.push_blocking(i).unwrap();
        }
    });
    pin();
    let mut got = Vec::with_capacity(N as usize);
    // Until the producer is gone and the ring drained.
    while let Ok(v) = rx.pop_blocking() {
        got.push(v);
    }
    producer.join().unwrap();
    got
}

fn no_pin() {}

#[test]
fn every_value_arrives_once_in_order() {
    let (tx, rx) = HeapRing::<u64>::new(4).unwrap();
    assert_eq!(transfer(tx, rx, no_pin), (0..N).collect::<Vec<_>>());
}

#[test]
fn a_deferred_consumer_releases_while_the_producer_waits() {
    // The consumer publishes only every 4 pops, or when it finds the ring
    // empty: a producer waiting for room is never stuck behind it.
    let (tx, rx) = HeapRing::<u64>::new_deferred::<4>(4).unwrap();
    assert_eq!(transfer(tx, rx, no_pin), (0..N).collect::<Vec<_>>());
}

/// Pins the calling thread to the first CPU it may run on.
#[cfg(all(target_os = "linux", not(miri)))]
fn pin_to_one_cpu() {
    use rustix::thread::{CpuSet, sched_getaffinity, sched_setaffinity};
    let allowed = sched_getaffinity(None).expect("sched_getaffinity");
    let cpu = (0..CpuSet::MAX_CPU)
        .find(|&c| allowed.is_set(c))
        .expect("some CPU is allowed");
    let mut one = CpuSet::new();
    one.set(cpu);
    sched_setaffinity(None, &one).expect("sched_setaffinity");
}

#[test]
#[cfg(all(target_os = "linux", not(miri)))]
fn both_halves_on_one_cpu() {
    let (tx, rx) = HeapRing::<u64>::new(4).unwrap();
    assert_eq!(transfer(tx, rx, pin_to_one_cpu), (0..N).collect::<Vec<_>>());
}

#[test]
fn a_full_ring_without_a_consumer_hands_the_value_back() {
    let mut ring = Ring::<String, 1>::new();
    let (mut tx, rx) = ring.split();
    tx.push_blocking("kept".to_string()).unwrap();
    drop(rx);
    match tx.push_blocking("back".to_string()) {
        Err(PushError::Full(v)) => assert_eq!(v, "back"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_producer_that_fills_the_ring_after_its_consumer_left_stops() {
    let (mut tx, mut rx) = HeapRing::<u64>::new(4).unwrap();
    let consumer = thread::spawn(move || {
        for i in 0..10 {
            assert_eq!(rx.pop_blocking(), Ok(i));
        }
        // Dropped here, with the producer still pushing.
    });
    let mut next = 0;
    let back = loop {
        match tx.push_blocking(next) {
            Ok(()) => next += 1,
            Err(e) => break e,
        }
    };
    consumer.join().unwrap();
    // The ring filled up behind the departed consumer: the value comes back.
    assert!(next >= 10);
    assert_eq!(back.error(), RingError::Full);
    assert_eq!(back.into_inner(), next);
}

#[test]
fn pop_blocking_drains_what_a_departed_producer_left() {
    let mut ring = Ring::<u8, 4>::new();
    let (mut tx, mut rx) = ring.split();
    tx.push_slice(&[1, 2, 3]).unwrap();
    drop(tx);
    for v in 1..=3 {
        assert_eq!(rx.pop_blocking(), Ok(v));
    }
    assert_eq!(rx.pop_blocking(), Err(RingError::Empty));
}
