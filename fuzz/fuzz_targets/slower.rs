//! `slower`: `buffer_pool::BufferPool` over a large input space. Capacities
//! from 0 up to 2^32 - 1 bytes (spread over every magnitude), all four slot
//! map widths, messages of up to 64 KiB written in chunks of any size, and
//! releases in any order: each finished message is dropped at once, kept on
//! this thread, or sent to one of three threads pinned to cores other than
//! the producer's, which hold it for a random time (0..1000 µs) and drop it.
//! Every slice must still hold its bytes when it arrives and when it is
//! dropped; after all are dropped, a message that fits must be pooled in Back
//! mode.
//!
//! Pool memory is allocated zeroed, so a 4 GiB pool costs address space, not
//! resident memory: only the bytes messages write are ever touched. The
//! allocation itself (up to 2^32 - 1 bytes) is above libFuzzer's default
//! malloc limit (which equals `-rss_limit_mb`, 2048 by default), hence:
//!
//! ```text
//! cd fuzz && cargo +nightly fuzz run slower corpus/slower -- -rss_limit_mb=4096 -max_total_time=30
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
    /// The capacity is `raw >> (shift % 33)`.
    raw: u32,
    shift: u8,
    /// Slot map width: 8, 16, 32 or 64 slots.
    width: u8,
    messages: Vec<Message>,
}

#[derive(Arbitrary, Debug)]
struct Message {
    len: u16,
    /// Bytes per `get_writable` call (0 means the whole message at once).
    chunk: u16,
    /// 0: drop now; 1: keep here; 2..=4: send to worker 0..=2.
    to: u8,
    /// Worker: hold time in µs (mod 1000). Here: which kept slice to drop.
    hold: u16,
    fill: u8,
}

#[path = "common/holder.rs"]
mod holder;
use holder::{Cmd, worker};

/// Three workers pinned to cores other than the producer's (round robin
/// over the other cores; on a one-core machine they share it).
fn workers() -> &'static [Sender<Cmd>] {
    static WORKERS: OnceLock<Vec<Sender<Cmd>>> = OnceLock::new();
    WORKERS.get_or_init(|| {
        let cores = core_affinity::get_core_ids().unwrap_or_default();
        if let Some(first) = cores.first() {
            core_affinity::set_for_current(*first);
        }
        let others: Vec<_> = cores.iter().skip(1).copied().collect();
        (0..3)
            .map(|i| {
                let (tx, rx) = mpsc::channel();
                let core = others.get(i % others.len().max(1)).copied();
                thread::spawn(move || {
                    if let Some(core) = core {
                        core_affinity::set_for_current(core);
                    }
                    worker(rx, "core")
                });
                tx
            })
            .collect()
    })
}

fn run<M: SlotMap>(input: &Input) {
    let capacity = (u64::from(input.raw) >> (input.shift % 33)) as usize;
    let mut pool = BufferPool::<_, M>::with_slot_map(capacity);
    let mut kept: Vec<(Slice<M>, Vec<u8>)> = Vec::new();
    for (i, m) in input.messages.iter().take(64).enumerate() {
        let bytes: Vec<u8> = (0..usize::from(m.len))
            .map(|k| m.fill ^ (i as u8) ^ (k as u8).rotate_left(3))
            .collect();
        let chunk = if m.chunk == 0 {
            bytes.len().max(1)
        } else {
            usize::from(m.chunk)
        };
        for piece in bytes.chunks(chunk) {
            pool.get_writable(piece.len()).copy_from_slice(piece);
        }
        let slice = pool.get_data_owned();
        assert!(slice.as_ref() == &bytes[..], "handed-out bytes differ");
        if slice.is_pooled() {
            assert!(bytes.len() <= capacity && !pool.is_alloc_mode());
        } else {
            assert!(bytes.is_empty() || pool.is_alloc_mode());
        }
        match m.to % 5 {
            0 => drop(slice),
            1 => {
                kept.push((slice, bytes));
                if kept.len() > 8 {
                    let (s, b) = kept.swap_remove(usize::from(m.hold) % kept.len());
                    assert!(s.as_ref() == &b[..], "kept slice changed");
                }
            }
            w => {
                let due = Instant::now() + Duration::from_micros(u64::from(m.hold % 1000));
                workers()[usize::from(w - 2)]
                    .send(Cmd::Hold(Box::new(slice), bytes, due))
                    .unwrap();
            }
        }
        for (s, b) in &kept {
            assert!(s.as_ref() == &b[..], "kept slice changed");
        }
    }
    kept.clear();
    for w in workers() {
        let (ack, done) = mpsc::channel();
        w.send(Cmd::Flush(ack)).unwrap();
        done.recv().unwrap();
    }
    let probe = capacity.min(1 << 16);
    if probe > 0 {
        pool.get_writable(probe).fill(1);
        assert!(
            pool.is_back_mode(),
            "all slices dropped, yet not in Back mode"
        );
        assert!(pool.get_data_owned().is_pooled());
    }
}

fuzz_target!(|input: Input| {
    match input.width % 4 {
        0 => run::<u8>(&input),
        1 => run::<u16>(&input),
        2 => run::<u32>(&input),
        _ => run::<u64>(&input),
    }
});
