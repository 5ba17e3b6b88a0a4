//! A hostile peer: fuzz-chosen header bytes for `attach`, then fuzz-chosen
//! writes to the index words and slots of a ring in use. Nothing may crash,
//! read out of bounds (the sanitizer watches) or hang; a detected violation
//! stays latched; without interference every value arrives in order.
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, Ordering};
use uring_queue::{FrameConsumer, FrameProducer, Region, RingError, SharedRing};

const WORDS: usize = 512; // 2 KiB of region

#[derive(Debug, Arbitrary)]
enum Action {
    Push,
    PushSlice(u8),
    Pop,
    PopSlice(u8),
    Chunks {
        write: u8,
        read: u8,
    },
    Send(u8),
    Recv,
    /// The peer writes `value` to 32-bit word `word % WORDS` of the region.
    Poke {
        word: u16,
        value: u32,
    },
    /// The peer writes `delta` added to the tail (or head) word.
    Nudge {
        tail: bool,
        delta: i8,
    },
}

#[derive(Debug, Arbitrary)]
struct Input {
    header: [u32; 16],
    lines: [u32; 4],
    log2_capacity: u8,
    frames: bool,
    actions: Vec<Action>,
}

struct Mem {
    _buf: Vec<u64>,
    ptr: NonNull<u8>,
}

impl Mem {
    fn new() -> Self {
        let mut buf = vec![0u64; WORDS / 2];
        let ptr = NonNull::new(buf.as_mut_ptr().cast::<u8>()).unwrap();
        Self { _buf: buf, ptr }
    }

    fn region(&self) -> Region<'_> {
        // SAFETY: the buffer lives as long as `self` and is reached only
        // through `ptr`; each use below builds one producer and one consumer.
        unsafe { Region::from_raw_parts(self.ptr, WORDS * 4) }
    }

    fn word(&self, k: usize) -> &AtomicU32 {
        assert!(k < WORDS);
        // SAFETY: `k < WORDS` keeps the aligned word inside the buffer.
        unsafe { AtomicU32::from_ptr(self.ptr.as_ptr().cast::<u32>().add(k)) }
    }
}

fuzz_target!(|input: Input| {
    // 1. Attach to a region whose header and index lines the peer chose.
    let mem = Mem::new();
    for (k, &v) in input.header.iter().enumerate() {
        mem.word(k).store(v, Ordering::Relaxed);
    }
    for (k, &v) in input.lines.iter().enumerate() {
        mem.word([32, 33, 64, 65][k]).store(v, Ordering::Relaxed);
    }
    if let Ok(ring) = SharedRing::<u64>::attach(mem.region()) {
        assert!(ring.capacity().is_power_of_two());
        assert!((1..=ring.capacity()).contains(&ring.release_every()));
        // The peer chose the indices: the slots hold no values we sent.
        exercise(&mem, ring, &input, true);
    }

    // 2. A well-formed ring, then a peer that scribbles while it is in use.
    let mem = Mem::new();
    let capacity = 1usize << (input.log2_capacity % 7);
    if let Ok(ring) = SharedRing::<u64>::init(mem.region(), capacity) {
        exercise(&mem, ring, &input, false);
    }
});

fn exercise(mem: &Mem, ring: SharedRing<'_, u64>, input: &Input, hostile: bool) {
    let (tx, rx) = ring.split();
    if input.frames {
        let (tx, rx) = (FrameProducer::new(tx), FrameConsumer::new(rx));
        frames(mem, tx, rx, &input.actions, hostile);
    } else {
        elements(mem, tx, rx, &input.actions, hostile);
    }
}

fn poke(mem: &Mem, action: &Action) -> bool {
    match *action {
        Action::Poke { word, value } => {
            mem.word(usize::from(word) % WORDS)
                .store(value, Ordering::Relaxed);
            true
        }
        Action::Nudge { tail, delta } => {
            let w = mem.word(if tail { 32 } else { 64 });
            let v = w.load(Ordering::Relaxed);
            w.store(v.wrapping_add(delta as i32 as u32), Ordering::Relaxed);
            true
        }
        _ => false,
    }
}

/// Checks the latch: once `Corrupted` was returned, it is returned again.
fn latched<T>(seen: &mut bool, r: &Result<T, RingError>) {
    if *seen {
        assert!(
            matches!(r, Err(RingError::Corrupted)),
            "corruption not latched"
        );
    }
    if matches!(r, Err(RingError::Corrupted)) {
        *seen = true;
    }
}

fn elements(
    mem: &Mem,
    mut tx: uring_queue::Producer<'_, u64>,
    mut rx: uring_queue::Consumer<'_, u64>,
    actions: &[Action],
    hostile: bool,
) {
    let (mut tx_bad, mut rx_bad) = (false, false);
    let mut poked = hostile;
    let (mut sent, mut next) = (0u64, 0u64);
    let cap = tx.capacity();
    for action in actions {
        if poke(mem, action) {
            poked = true;
            continue;
        }
        match *action {
            Action::Push | Action::Send(_) => {
                let r = tx.push(sent).map_err(RingError::from);
                latched(&mut tx_bad, &r);
                sent += r.is_ok() as u64;
            }
            Action::PushSlice(n) => {
                let batch: Vec<u64> = (sent..sent + u64::from(n)).collect();
                let r = tx.push_slice(&batch);
                latched(&mut tx_bad, &r);
                let n = r.unwrap_or(0);
                assert!(n <= batch.len() && n <= cap);
                sent += n as u64;
            }
            Action::Pop | Action::Recv => {
                let r = rx.pop();
                latched(&mut rx_bad, &r);
                if let Ok(v) = r {
                    if !poked {
                        assert_eq!(v, next);
                    }
                    next += 1;
                }
            }
            Action::PopSlice(n) => {
                let mut out = vec![0; n.into()];
                let r = rx.pop_slice(&mut out);
                latched(&mut rx_bad, &r);
                let got = r.unwrap_or(0);
                assert!(got <= out.len() && got <= cap);
                for &v in &out[..got] {
                    if !poked {
                        assert_eq!(v, next);
                    }
                    next += 1;
                }
            }
            Action::Chunks { write, read } => {
                let r = tx.write_chunk(write.into()).map(|mut c| {
                    let (a, b) = c.as_mut_slices();
                    assert_eq!(a.len() + b.len(), usize::from(write));
                    for (k, s) in a.iter_mut().chain(b.iter_mut()).enumerate() {
                        *s = sent + k as u64;
                    }
                    c.commit_all();
                });
                latched(&mut tx_bad, &r);
                sent += if r.is_ok() { u64::from(write) } else { 0 };
                let r = rx.read_chunk(read.into()).map(|c| {
                    let (a, b) = c.as_slices();
                    assert_eq!(a.len() + b.len(), usize::from(read));
                    for &v in a.iter().chain(b) {
                        if !poked {
                            assert_eq!(v, next);
                        }
                        next += 1;
                    }
                    c.commit_all();
                });
                latched(&mut rx_bad, &r);
            }
            Action::Poke { .. } | Action::Nudge { .. } => unreachable!("handled by poke"),
        }
        assert!(tx.len() <= cap && rx.len() <= cap);
    }
    if !poked {
        assert!(
            !tx_bad && !rx_bad,
            "corruption reported without interference"
        );
    }
}

fn frames(
    mem: &Mem,
    mut tx: FrameProducer<'_>,
    mut rx: FrameConsumer<'_>,
    actions: &[Action],
    hostile: bool,
) {
    let (mut tx_bad, mut rx_bad) = (false, false);
    let mut poked = hostile;
    let max = tx.max_len();
    for action in actions {
        if poke(mem, action) {
            poked = true;
            continue;
        }
        match *action {
            Action::Send(n) | Action::PushSlice(n) => {
                let r = tx.send(&vec![n; n.into()]);
                latched(&mut tx_bad, &r);
                if let Err(RingError::TooLarge { max: m }) = r {
                    assert!(usize::from(n) > m);
                }
            }
            Action::Recv | Action::Pop | Action::PopSlice(_) | Action::Push => {
                let r = rx.recv().map(|f| {
                    assert!(f.len() <= max || poked);
                    if !poked {
                        assert!(f.iter().all(|&b| usize::from(b) == f.len()));
                    }
                });
                latched(&mut rx_bad, &r);
            }
            Action::Chunks { write, .. } => {
                let r = tx.grant(write.into()).map(|mut g| {
                    assert_eq!(g.as_mut_bytes().len(), usize::from(write));
                    g.as_mut_bytes().fill(write);
                    g.commit();
                });
                latched(&mut tx_bad, &r);
            }
            Action::Poke { .. } | Action::Nudge { .. } => unreachable!("handled by poke"),
        }
    }
    if !poked {
        assert!(
            !tx_bad && !rx_bad,
            "corruption reported without interference"
        );
    }
}
