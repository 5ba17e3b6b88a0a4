//! Loom models of the ring protocol. Every slot access is announced to loom,
//! so a missing Release/Acquire pair shows up as a causality violation.
//! Without `--cfg loom` each model runs once, on real threads.
//!
//! ```text
//! RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 CARGO_TARGET_DIR=target/loom \
//!     cargo test -p ncio-uring-queue --release --all-features --lib tests::loom
//! ```

use crate::loom::{model, thread};
use buffer_pool::{Buffer, BufferPool, Slice};

use crate::{FrameConsumer, FrameProducer, HeapRing, PushError, RingError};
use alloc::vec::Vec;

/// Pops `n` values, yielding while empty, and returns them.
fn pop_n(rx: &mut crate::Consumer<'static, u32>, n: usize) -> Vec<u32> {
    let mut got = Vec::new();
    while got.len() < n {
        match rx.pop() {
            Ok(v) => got.push(v),
            Err(e) => {
                assert_eq!(e, RingError::Empty);
                thread::yield_now();
            }
        }
    }
    got
}

#[test]
fn push_pop_in_order() {
    model(|| {
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
    model(|| {
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
    model(|| {
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
                    assert_eq!(e, RingError::Insufficient { available: 0 });
                    thread::yield_now();
                }
            }
        }
        t.join().unwrap();
    });
}

#[test]
fn abandonment_is_seen_after_the_last_element() {
    model(|| {
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
    model(|| {
        let (mut tx, mut rx) = HeapRing::<u32>::new(2).unwrap();
        // Full from the producer's cached view.
        tx.push(1).unwrap();
        tx.push(2).unwrap();
        let t = thread::spawn(move || {
            // Reuses the slot the consumer frees: only sound if the consumer's
            // read happens before this write (head Release / Acquire).
            while tx.push(3) == Err(PushError::Full(3)) {
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
    model(|| {
        let (tx, rx) = HeapRing::<u64>::new(4).unwrap();
        let (mut tx, mut rx) = (FrameProducer::new(tx), FrameConsumer::new(rx));
        // One header word at slot 0 moves the tail so the next 2-word record
        // does not fit before the end: it goes behind a padding record.
        tx.send(&[]).unwrap();
        assert_eq!(rx.recv().unwrap().len(), 0);
        tx.send(&[7; 8]).unwrap();
        let t = thread::spawn(move || {
            while tx.send(&[9; 8]) == Err(RingError::Full) {
                thread::yield_now();
            }
        });
        let mut got = Vec::new();
        while got.len() < 2 {
            match rx.recv() {
                Ok(frame) => got.push(frame[0]),
                Err(e) => {
                    assert_eq!(e, RingError::Empty);
                    thread::yield_now();
                }
            }
        }
        assert_eq!(got, [7, 9]);
        t.join().unwrap();
    });
}

/// Pushes `value`, yielding while the ring is full.
fn push_yielding<T>(tx: &mut crate::Producer<'static, T>, mut value: T) {
    loop {
        match tx.push(value) {
            Ok(()) => return,
            Err(PushError::Full(back)) => {
                value = back;
                thread::yield_now();
            }
            Err(e) => panic!("{e}"),
        }
    }
}

/// Pool slices handed through the ring: the producer writes its second
/// message into pool memory the consumer may just have returned by dropping
/// the first slice (the pool holds one message; if the first is not back yet,
/// the second goes to system memory). Both crates' memory is loom-tracked, so
/// a write into returned bytes not ordered after the consumer's reads fails
/// the model, as does a double free or a leak. A one-slot ring also makes the
/// second push wait for the consumer's pop.
#[test]
fn pool_slices_cross_the_ring() {
    model(|| {
        let (mut tx, mut rx) = HeapRing::<Slice>::new(1).unwrap();
        let producer = thread::spawn(move || {
            let mut pool = BufferPool::new(2);
            for seq in 0..2u8 {
                pool.get_writable(2).copy_from_slice(&[seq, !seq]);
                push_yielding(&mut tx, pool.get_data_owned());
            }
        });
        for seq in 0..2u8 {
            let slice = loop {
                match rx.pop() {
                    Ok(s) => break s,
                    Err(e) => {
                        assert_eq!(e, RingError::Empty);
                        thread::yield_now();
                    }
                }
            };
            assert_eq!(slice.as_ref(), &[seq, !seq]);
            drop(slice);
        }
        producer.join().unwrap();
    });
}

/// A slice still in the ring when both halves are gone is dropped with the
/// ring's storage, on whichever thread lets go last.
#[test]
fn a_slice_left_in_the_ring_is_dropped_once() {
    model(|| {
        let (mut tx, rx) = HeapRing::<Slice>::new(2).unwrap();
        let mut pool = BufferPool::new(4);
        pool.get_writable(2).copy_from_slice(&[1, 2]);
        let a = pool.get_data_owned();
        let producer = thread::spawn(move || {
            push_yielding(&mut tx, a);
        });
        drop(rx);
        producer.join().unwrap();
        // The slice went down with the ring: its memory is back, so the next
        // message fits in the pool again.
        pool.get_writable(4).copy_from_slice(&[3; 4]);
        assert!(pool.get_data_owned().is_pooled());
    });
}

/// A deferred-release consumer (K = 2 on a 2-slot ring): the producer's third
/// push needs the consumer to publish, which it does on its second pop, and
/// the slot it reuses was read before (head Release / Acquire, deferred).
#[test]
fn a_deferred_consumer_publishes_every_k_and_when_empty() {
    model(|| {
        let (mut tx, mut rx) = HeapRing::<u32>::new_deferred::<4>(2).unwrap();
        let t = thread::spawn(move || {
            for v in 1..=3 {
                push_yielding(&mut tx, v);
            }
        });
        // K = 4 > capacity: only finding the ring empty publishes, so the
        // producer's third push relies on that.
        let mut got = Vec::new();
        while got.len() < 3 {
            match rx.pop() {
                Ok(v) => got.push(v),
                Err(e) => {
                    assert_eq!(e, RingError::Empty);
                    thread::yield_now();
                }
            }
        }
        assert_eq!(got, [1, 2, 3]);
        t.join().unwrap();
    });
}

/// A batch publishes once, when it ends; the producer waiting for room sees
/// the slots only then, and reuses them after the batch's reads.
#[test]
fn a_batch_publishes_when_it_ends() {
    model(|| {
        let (mut tx, mut rx) = HeapRing::<u32>::new(2).unwrap();
        tx.push(1).unwrap();
        tx.push(2).unwrap();
        let t = thread::spawn(move || {
            push_yielding(&mut tx, 3);
            push_yielding(&mut tx, 4);
        });
        let mut got = Vec::new();
        while got.len() < 4 {
            let before = got.len();
            got.extend(rx.batch().unwrap());
            if got.len() == before {
                thread::yield_now();
            }
        }
        assert_eq!(got, [1, 2, 3, 4]);
        t.join().unwrap();
    });
}

/// The blocking push and pop on a ring of one slot: each waits for the
/// other (the producer for room, the consumer for an element), and a
/// consumer whose producer is gone stops waiting once it has drained.
#[test]
fn blocking_halves_wait_for_each_other() {
    model(|| {
        let (mut tx, mut rx) = HeapRing::<u32>::new(1).unwrap();
        let t = thread::spawn(move || {
            for v in 1..=2 {
                tx.push_blocking(v).unwrap();
            }
        });
        assert_eq!(rx.pop_blocking(), Ok(1));
        assert_eq!(rx.pop_blocking(), Ok(2));
        assert_eq!(rx.pop_blocking(), Err(RingError::Empty));
        t.join().unwrap();
    });
}
