//! Slices sent to other threads, held there for a while and dropped there in
//! an order the producer does not control, while the producer keeps reusing
//! pool memory; the pool itself goes before the last slices do.
#![cfg(not(loom))]
#![allow(
    clippy::std_instead_of_core,
    clippy::std_instead_of_alloc,
    reason = "tests use std"
)]

use buffer_pool::{Buffer, BufferPool, Slice, SlotMap};
use std::collections::VecDeque;
use std::sync::mpsc;
use std::thread;

/// The bytes of message `id`: its length and contents follow from the id.
fn bytes_of(id: u32, max: usize) -> Vec<u8> {
    let mut x = id.wrapping_mul(2_654_435_761) | 1;
    let len = (x as usize) % (max + 1);
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x as u8
        })
        .collect()
}

fn stress<M: SlotMap>(cap: usize, max_len: usize, messages: u32, hold: usize) {
    let mut pool = BufferPool::<_, M>::with_slot_map(cap);
    let mut senders = Vec::new();
    let mut consumers = Vec::new();
    for c in 0..3usize {
        let (tx, rx) = mpsc::channel::<(u32, Slice<M>)>();
        senders.push(tx);
        consumers.push(thread::spawn(move || {
            let mut held = VecDeque::new();
            let mut pooled = 0u32;
            for (id, slice) in rx {
                pooled += u32::from(slice.is_pooled());
                held.push_back((id, slice));
                // Each consumer holds a different number of slices, and
                // drops the oldest or the newest, so releases interleave.
                while held.len() > hold + c {
                    let (id, slice) = if id % 2 == 0 {
                        held.pop_front().unwrap()
                    } else {
                        held.pop_back().unwrap()
                    };
                    assert_eq!(slice.as_ref(), &bytes_of(id, max_len)[..], "message {id}");
                }
            }
            for (id, slice) in held {
                assert_eq!(slice.as_ref(), &bytes_of(id, max_len)[..], "message {id}");
            }
            pooled
        }));
    }
    for id in 0..messages {
        let bytes = bytes_of(id, max_len);
        for chunk in bytes.chunks(7) {
            pool.get_writable(chunk.len()).copy_from_slice(chunk);
        }
        let slice = pool.get_data_owned();
        assert_eq!(slice.as_ref(), &bytes[..]);
        senders[id as usize % 3].send((id, slice)).unwrap();
    }
    drop(pool);
    drop(senders);
    let pooled: u32 = consumers.into_iter().map(|c| c.join().unwrap()).sum();
    assert!(pooled > 0, "no message was served from the pool");
}

fn messages() -> u32 {
    if cfg!(miri) { 60 } else { 20_000 }
}

#[test]
fn eight_slots_across_threads() {
    stress::<u8>(256, 40, messages(), 1);
}

#[test]
fn sixty_four_slots_across_threads() {
    stress::<u64>(1024, 40, messages(), 6);
}

#[test]
fn tiny_pool_across_threads() {
    stress::<u8>(8, 9, messages(), 0);
}
