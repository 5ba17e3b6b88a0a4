//! Loom models of the ring protocol. Every slot access is announced to loom,
//! so a missing Release/Acquire pair shows up as a causality violation.
//!
//! ```text
//! RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 cargo test -p uring-queue --release --all-features --test loom
//! ```

#![cfg(loom)]

use loom::thread;
use uring_queue::{Error, FrameConsumer, FrameProducer, HeapRing};

/// Pops `n` values, yielding while empty, and returns them.
fn pop_n(rx: &mut uring_queue::Consumer<'static, u32>, n: usize) -> Vec<u32> {
    let mut got = Vec::new();
    while got.len() < n {
        match rx.pop() {
            Ok(v) => got.push(v),
            Err(e) => {
                assert_eq!(e, Error::Empty);
                thread::yield_now();
            }
        }
    }
    got
}

#[test]
fn push_pop_in_order() {
    loom::model(|| {
        let (mut tx, mut rx) = HeapRing::<u32>::new(2).unwrap();
        let t = thread::spawn(move || {
            for v in 1..=3 {
                while tx.push(v).is_err() {
                    thread::yield_now();
                }
            }
        });
        assert_eq!(pop_n(&mut rx, 3), [1, 2, 3]);
        t.join().unwrap();
    });
}

#[test]
fn a_batch_is_published_at_once() {
    loom::model(|| {
        let (mut tx, mut rx) = HeapRing::<u32>::new(4).unwrap();
        let t = thread::spawn(move || {
            assert_eq!(tx.push_slice(&[1, 2, 3]), Ok(3));
        });
        let mut out = [0; 4];
        loop {
            let n = rx.pop_slice(&mut out).unwrap();
            // One publish: the consumer sees none or all of the batch.
            assert!(n == 0 || n == 3);
            if n == 3 {
                assert_eq!(out[..3], [1, 2, 3]);
                break;
            }
            thread::yield_now();
        }
        t.join().unwrap();
    });
}

#[test]
fn chunks_across_the_wrap() {
    loom::model(|| {
        let (mut tx, mut rx) = HeapRing::<u32>::new(2).unwrap();
        // Move both indices to the last slot, so the next chunk wraps.
        tx.push(0).unwrap();
        assert_eq!(rx.pop(), Ok(0));
        let t = thread::spawn(move || {
            let mut chunk = tx.write_chunk(2).unwrap();
            let (a, b) = chunk.as_mut_slices();
            assert_eq!((a.len(), b.len()), (1, 1));
            a[0] = 1;
            b[0] = 2;
            chunk.commit_all();
        });
        loop {
            match rx.read_chunk(2) {
                Ok(chunk) => {
                    assert_eq!(chunk.as_slices(), (&[1][..], &[2][..]));
                    chunk.commit_all();
                    break;
                }
                Err(e) => {
                    assert_eq!(e, Error::Insufficient { available: 0 });
                    thread::yield_now();
                }
            }
        }
        t.join().unwrap();
    });
}

#[test]
fn abandonment_is_seen_after_the_last_element() {
    loom::model(|| {
        let (mut tx, mut rx) = HeapRing::<u32>::new(2).unwrap();
        let t = thread::spawn(move || {
            tx.push(1).unwrap();
            tx.push(2).unwrap();
            drop(tx);
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
            thread::yield_now();
        }
        assert_eq!(got, [1, 2]);
        t.join().unwrap();
    });
}

#[test]
fn the_cached_head_is_refreshed_when_full() {
    loom::model(|| {
        let (mut tx, mut rx) = HeapRing::<u32>::new(2).unwrap();
        // Full from the producer's cached view.
        tx.push(1).unwrap();
        tx.push(2).unwrap();
        let t = thread::spawn(move || {
            // Reuses the slot the consumer frees: only sound if the consumer's
            // read happens before this write (head Release / Acquire).
            while tx.push(3) == Err(Error::Full) {
                thread::yield_now();
            }
            tx
        });
        assert_eq!(rx.pop(), Ok(1));
        let tx = t.join().unwrap();
        assert_eq!(pop_n(&mut rx, 2), [2, 3]);
        drop(tx);
    });
}

#[test]
fn a_frame_wraps_behind_padding() {
    loom::model(|| {
        let (tx, rx) = HeapRing::<u64>::new(4).unwrap();
        let (mut tx, mut rx) = (FrameProducer::new(tx), FrameConsumer::new(rx));
        // One header word at slot 0 moves the tail so the next 2-word record
        // does not fit before the end: it goes behind a padding record.
        tx.send(&[]).unwrap();
        assert_eq!(rx.recv().unwrap().len(), 0);
        tx.send(&[7; 8]).unwrap();
        let t = thread::spawn(move || {
            while tx.send(&[9; 8]) == Err(Error::Full) {
                thread::yield_now();
            }
        });
        let mut got = Vec::new();
        while got.len() < 2 {
            match rx.recv() {
                Ok(frame) => got.push(frame[0]),
                Err(e) => {
                    assert_eq!(e, Error::Empty);
                    thread::yield_now();
                }
            }
        }
        assert_eq!(got, [7, 9]);
        t.join().unwrap();
    });
}
