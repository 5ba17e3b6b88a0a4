//! A receive pipeline: one thread frames messages into a `BufferPool`, hands
//! each finished message (a `Slice`) through a ring to a worker thread, which
//! checks it and lets it go. Dropping a slice on the worker returns its bytes
//! to the pool, so in steady state no message is allocated and none copied.
//!
//! ```text
//! cargo run --release -p ncio-uring-queue --features std --example pool_pipeline
//! ```

use buffer_pool::{Buffer, BufferFromSystemMemory, BufferPool, Slice};
use std::thread;
use std::time::Instant;
use uring_queue::{HeapRing, RingError};

/// Messages moved through the pipeline.
const MESSAGES: u32 = 200_000;
/// Pool bytes: room for every message that can be in flight (at most 268
/// bytes each; the ring's slots, the worker's batch and the one being written).
const POOL_BYTES: usize = 64 * 1024;
/// Ring slots: how many finished messages may wait for the worker. The
/// sizing rule (README, "Sizing a ring of pool slices"): the ring's slots
/// plus the messages held outside it (one the producer is writing, one the
/// worker is reading) must not exceed the pool's 64 slots (a `u64` slot
/// map), or messages silently go to the heap. 64 + 2 would exceed it; the
/// largest power of two that fits is 32.
const RING_SLOTS: usize = 32;
/// The worker tells the producer about freed slots every 16 messages.
const RELEASE_EVERY: usize = 16;

/// The bytes of message `seq`: a 4-byte sequence number, then a payload of
/// 8 to 263 bytes derived from it (what a driver would copy off the wire).
fn write_message(pool: &mut BufferPool<BufferFromSystemMemory, u64>, seq: u32) {
    let len = 8 + (seq.wrapping_mul(2_654_435_761) >> 24) as usize;
    let buf = pool.get_writable(4 + len);
    buf[..4].copy_from_slice(&seq.to_le_bytes());
    for (k, b) in buf[4..].iter_mut().enumerate() {
        *b = (seq as u8).wrapping_add(k as u8);
    }
}

/// What the worker does with a message: checks its sequence number and every
/// payload byte, and returns the payload length.
fn handle(slice: &Slice<u64>, expected: u32) -> usize {
    let bytes: &[u8] = slice.as_ref();
    let seq = u32::from_le_bytes(bytes[..4].try_into().expect("4-byte header"));
    assert_eq!(seq, expected, "out of order or lost");
    for (k, &b) in bytes[4..].iter().enumerate() {
        assert_eq!(b, (seq as u8).wrapping_add(k as u8), "corrupted payload");
    }
    bytes.len() - 4
}

fn main() -> Result<(), RingError> {
    let (mut tx, mut rx) = HeapRing::<Slice<u64>>::new_deferred::<RELEASE_EVERY>(RING_SLOTS)
        .expect("capacity is a power of two");
    let start = Instant::now();

    let producer = thread::spawn(move || -> Result<usize, RingError> {
        let mut pool = BufferPool::<_, u64>::with_slot_map(POOL_BYTES);
        let mut pooled = 0;
        for seq in 0..MESSAGES {
            write_message(&mut pool, seq);
            let slice = pool.get_data_owned();
            pooled += usize::from(slice.is_pooled());
            // A full ring: wait for the worker (spinning briefly, then
            // yielding the CPU, which the worker may need).
            tx.push_blocking(slice)?;
        }
        Ok(pooled)
    });

    let worker = thread::spawn(move || -> Result<u64, RingError> {
        let mut payload_bytes = 0u64;
        let mut next = 0;
        while next < MESSAGES {
            // Everything readable now, in one go; the ring hears about the
            // freed slots once, when the batch ends.
            let mut got = 0;
            for slice in rx.batch()? {
                payload_bytes += handle(&slice, next) as u64;
                next += 1;
                got += 1;
                // `slice` drops here: its bytes go back to the pool.
            }
            if got == 0 {
                if rx.is_abandoned() && rx.is_empty() {
                    break;
                }
                thread::yield_now();
            }
        }
        assert_eq!(next, MESSAGES, "the producer stopped early");
        Ok(payload_bytes)
    });

    let pooled = producer.join().expect("producer panicked")?;
    let payload_bytes = worker.join().expect("worker panicked")?;
    let expected: u64 = (0..MESSAGES)
        .map(|seq| 8 + u64::from(seq.wrapping_mul(2_654_435_761) >> 24))
        .sum();
    assert_eq!(payload_bytes, expected);
    println!(
        "{MESSAGES} messages, {payload_bytes} payload bytes, {pooled} in pool memory ({:.1}%), in {:.0?}",
        100.0 * pooled as f64 / f64::from(MESSAGES),
        start.elapsed()
    );
    // The pool has a slot and room for every message that can be in flight,
    // so it should serve nearly all of them (all, in every run so far).
    assert!(
        pooled * 2 > MESSAGES as usize,
        "the pool served too few messages"
    );
    Ok(())
}
