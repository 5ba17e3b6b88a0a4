//! Two threads: every value arrives exactly once and in order, through each
//! API and storage; abandonment is seen after the last element.

use std::thread;
use uring_queue::{FrameConsumer, FrameProducer, HeapRing, Region, Ring, RingError, SharedRing};

const N: u64 = if cfg!(miri) { 300 } else { 200_000 };

fn spin() {
    if cfg!(miri) {
        thread::yield_now();
    } else {
        core::hint::spin_loop();
    }
}

#[test]
fn elementwise_in_order_through_a_small_inline_ring() {
    let mut ring = Ring::<u64, 4>::new();
    let (mut tx, mut rx) = ring.split();
    thread::scope(|s| {
        s.spawn(move || {
            for i in 0..N {
                while tx.push(i).is_err() {
                    spin();
                }
            }
        });
        let mut next = 0;
        while next < N {
            match rx.pop() {
                Ok(v) => {
                    assert_eq!(v, next);
                    next += 1;
                }
                Err(e) => {
                    assert_eq!(e, RingError::Empty);
                    spin();
                }
            }
        }
        assert_eq!(rx.pop(), Err(RingError::Empty));
    });
}

#[test]
fn batches_and_chunks_in_order_through_a_heap_ring() {
    let (mut tx, mut rx) = HeapRing::<u64>::new(16).unwrap();
    let producer = thread::spawn(move || {
        let mut next = 0u64;
        let mut round = 0usize;
        while next < N {
            round += 1;
            if round % 2 == 0 {
                let batch: Vec<u64> = (next..(next + 7).min(N)).collect();
                next += tx.push_slice(&batch).unwrap() as u64;
            } else if let Ok(mut chunk) = tx.write_chunk(((N - next) as usize).min(5)) {
                let (a, b) = chunk.as_mut_slices();
                for slot in a.iter_mut().chain(b.iter_mut()) {
                    *slot = next;
                    next += 1;
                }
                chunk.commit_all();
            }
            spin();
        }
    });
    let mut next = 0u64;
    let mut buf = [0u64; 6];
    let mut round = 0usize;
    while next < N {
        round += 1;
        if round % 2 == 0 {
            let n = rx.pop_slice(&mut buf).unwrap();
            for &v in &buf[..n] {
                assert_eq!(v, next);
                next += 1;
            }
        } else if let Ok(chunk) = rx.read_chunk(((N - next) as usize).min(3)) {
            let (a, b) = chunk.as_slices();
            for &v in a.iter().chain(b) {
                assert_eq!(v, next);
                next += 1;
            }
            chunk.commit_all();
        }
        spin();
    }
    producer.join().unwrap();
    assert!(rx.is_abandoned());
    assert_eq!(rx.pop(), Err(RingError::Empty));
}

#[test]
fn drain_after_abandonment_gets_everything() {
    let (mut tx, mut rx) = HeapRing::<u32>::new(64).unwrap();
    let producer = thread::spawn(move || {
        for i in 0..40 {
            tx.push(i).unwrap();
        }
    });
    let mut got = Vec::new();
    loop {
        let abandoned = rx.is_abandoned();
        while let Ok(v) = rx.pop() {
            got.push(v);
        }
        if abandoned {
            break;
        }
        spin();
    }
    producer.join().unwrap();
    assert_eq!(got, (0..40).collect::<Vec<_>>());
}

#[test]
fn frames_cross_threads_intact_through_wraps() {
    let count = if cfg!(miri) { 60 } else { 50_000 };
    let mut mem = vec![0u64; 128];
    let region = Region::new(zerocopy::IntoBytes::as_mut_bytes(&mut mem[..]));
    let (tx, rx) = SharedRing::<u64>::init(region, 32).unwrap().split();
    let (mut tx, mut rx) = (FrameProducer::new(tx), FrameConsumer::new(rx));
    thread::scope(|s| {
        s.spawn(move || {
            for seq in 0..count {
                let len = 8 + seq as usize % 53;
                loop {
                    match tx.grant(len) {
                        Ok(mut g) => {
                            let bytes = g.as_mut_bytes();
                            bytes[..8].copy_from_slice(&u64::to_le_bytes(seq));
                            for (k, b) in bytes[8..].iter_mut().enumerate() {
                                *b = (seq as usize + k) as u8;
                            }
                            g.commit();
                            break;
                        }
                        Err(e) => {
                            assert_eq!(e, RingError::Full);
                            spin();
                        }
                    }
                }
            }
        });
        let mut seq = 0u64;
        while seq < count {
            match rx.recv() {
                Ok(frame) => {
                    assert_eq!(frame.len(), 8 + seq as usize % 53);
                    assert_eq!(frame[..8], u64::to_le_bytes(seq));
                    for (k, &b) in frame[8..].iter().enumerate() {
                        assert_eq!(b, (seq as usize + k) as u8);
                    }
                    seq += 1;
                }
                Err(e) => {
                    assert_eq!(e, RingError::Empty);
                    spin();
                }
            }
        }
    });
}

#[test]
fn a_deferred_consumer_in_order_with_pops_and_batches() {
    let mut ring = Ring::<u64, 8>::new();
    let (mut tx, mut rx) = ring.split_deferred::<4>();
    thread::scope(|s| {
        s.spawn(move || {
            for i in 0..N {
                while tx.push(i).is_err() {
                    spin();
                }
            }
        });
        let mut next = 0;
        let mut round = 0u32;
        while next < N {
            round += 1;
            let before = next;
            if round % 3 == 0 {
                for v in rx.batch().unwrap() {
                    assert_eq!(v, next);
                    next += 1;
                }
            } else if let Ok(v) = rx.pop() {
                assert_eq!(v, next);
                next += 1;
            }
            assert!(rx.pending() < 4);
            if next == before {
                spin();
            }
        }
        assert_eq!(rx.pop(), Err(RingError::Empty));
        // Finding it empty published everything.
        assert_eq!(rx.pending(), 0);
    });
}
