//! `faster`: the common cases of `buffer_pool::BufferPool` in a small input
//! space. Pools of 0..=255 bytes with 8 or 64 slots; messages of 0..=255
//! bytes written in chunks; each finished message is dropped at once, kept on
//! this thread, or sent to one of two threads that hold it for a random time
//! (0..64 µs) and drop it there. Every slice must still hold its bytes when
//! it arrives and when it is dropped; after all are dropped, a message that
//! fits must be pooled in Back mode.
//!
//! ```text
//! cd fuzz && cargo +nightly fuzz run faster corpus/faster -- -rss_limit_mb=2048 -max_total_time=30
//! ```
#![no_main]

use arbitrary::Arbitrary;
use buffer_pool::{Buffer, BufferPool, Slice, SlotMap};
use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;
use std::sync::mpsc::{self, Sender};
use std::thread;
use std::time::{Duration, Instant};

#[derive(Arbitrary, Debug)]
struct Input {
    capacity: u8,
    wide: bool,
    messages: Vec<Message>,
}

#[derive(Arbitrary, Debug)]
struct Message {
    len: u8,
    /// Bytes per `get_writable` call (0 means 1).
    chunk: u8,
    /// 0: drop now; 1: keep here; 2, 3: send to worker 0, 1.
    to: u8,
    /// Worker: hold time in µs (mod 64). Here: which kept slice to drop.
    hold: u8,
}

#[path = "common/holder.rs"]
mod holder;
use holder::{Cmd, worker};

fn workers() -> &'static [Sender<Cmd>] {
    static WORKERS: OnceLock<Vec<Sender<Cmd>>> = OnceLock::new();
    WORKERS.get_or_init(|| {
        (0..2)
            .map(|_| {
                let (tx, rx) = mpsc::channel();
                thread::spawn(move || worker(rx, "thread"));
                tx
            })
            .collect()
    })
}

fn run<M: SlotMap>(input: &Input) {
    let capacity = usize::from(input.capacity);
    let mut pool = BufferPool::<_, M>::with_slot_map(capacity);
    let mut kept: Vec<(Slice<M>, Vec<u8>)> = Vec::new();
    for (i, m) in input.messages.iter().enumerate() {
        let bytes: Vec<u8> = (0..m.len).map(|k| (i as u8).wrapping_mul(31) ^ k).collect();
        for chunk in bytes.chunks(usize::from(m.chunk.max(1))) {
            pool.get_writable(chunk.len()).copy_from_slice(chunk);
        }
        assert_eq!(pool.get_data_by_ref_(usize::MAX), &bytes[..]);
        let slice = pool.get_data_owned();
        assert_eq!(slice.as_ref(), &bytes[..]);
        assert_eq!(slice.len(), bytes.len());
        if slice.is_pooled() {
            assert!(bytes.len() <= capacity && !pool.is_alloc_mode());
        }
        match m.to % 4 {
            0 => drop(slice),
            1 => {
                kept.push((slice, bytes));
                if kept.len() > 4 {
                    let (s, b) = kept.swap_remove(usize::from(m.hold) % kept.len());
                    assert_eq!(s.as_ref(), &b[..], "kept slice changed");
                }
            }
            w => {
                let due = Instant::now() + Duration::from_micros(u64::from(m.hold % 64));
                workers()[usize::from(w - 2)]
                    .send(Cmd::Hold(Box::new(slice), bytes, due))
                    .unwrap();
            }
        }
        for (s, b) in &kept {
            assert_eq!(s.as_ref(), &b[..], "kept slice changed");
        }
    }
    kept.clear();
    for w in workers() {
        let (ack, done) = mpsc::channel();
        w.send(Cmd::Flush(ack)).unwrap();
        done.recv().unwrap();
    }
    if capacity > 0 {
        pool.get_writable(capacity).fill(1);
        assert!(
            pool.is_back_mode(),
            "all slices dropped, yet not in Back mode"
        );
        assert!(pool.get_data_owned().is_pooled());
    }
}

fuzz_target!(|input: Input| {
    if input.wide {
        run::<u64>(&input);
    } else {
        run::<u8>(&input);
    }
});
