//! `pool_ring`: pool slices carried by the ring between two threads. The
//! producer writes fuzz-chosen messages into a `buffer_pool::BufferPool` (in
//! fuzz-chosen pieces) and pushes each finished `Slice` into a `HeapRing`; the
//! consumer pops them one by one or in batches, checks every byte, holds them
//! and drops them in a fuzz-chosen order and timing, while the producer keeps
//! reusing whatever pool memory comes back. Every message must arrive once,
//! in order, with its bytes, and keep them until it is dropped; slices left in
//! the ring when it goes are dropped with it.
//!
//! ```text
//! cd fuzz && cargo +nightly fuzz run pool_ring corpus/pool_ring -- -max_total_time=30
//! ```
#![no_main]

use arbitrary::Arbitrary;
use buffer_pool::{Buffer, BufferPool, Slice, SlotMap};
use libfuzzer_sys::fuzz_target;
use std::hint::spin_loop;
use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread;
use uring_queue::{Consumer, HeapRing, Producer, PushError, RingError};

type Job = Box<dyn FnOnce() + Send>;

/// The producer's and the consumer's threads: started once and reused for
/// every input (as the holder threads of `faster` and `slower`), because a
/// thread that exits while LeakSanitizer checks the run is reported as a leak
/// of its thread-local bookkeeping.
fn workers() -> &'static [Mutex<Sender<Job>>; 2] {
    static WORKERS: OnceLock<[Mutex<Sender<Job>>; 2]> = OnceLock::new();
    WORKERS.get_or_init(|| {
        [0, 1].map(|_| {
            let (tx, rx) = mpsc::channel::<Job>();
            thread::spawn(move || {
                for job in rx {
                    job();
                }
            });
            Mutex::new(tx)
        })
    })
}

/// Runs the two jobs on the two worker threads and waits for both.
fn on_workers(a: impl FnOnce() + Send + 'static, b: impl FnOnce() + Send + 'static) {
    let (done, finished) = mpsc::channel();
    let jobs: [Job; 2] = [
        {
            let done = done.clone();
            Box::new(move || {
                a();
                done.send(()).unwrap();
            })
        },
        Box::new(move || {
            b();
            done.send(()).unwrap();
        }),
    ];
    for (worker, job) in workers().iter().zip(jobs) {
        worker.lock().unwrap().send(job).unwrap();
    }
    // A panic on a worker aborts the process (libFuzzer's hook), so both
    // acknowledgements come unless the run already failed.
    finished.recv().unwrap();
    finished.recv().unwrap();
}

#[derive(Debug, Clone, Arbitrary)]
struct Message {
    /// Length: `len % 1024`.
    len: u16,
    /// Bytes per `get_writable` call (0: the whole message at once).
    chunk: u16,
    fill: u8,
    /// Spin this many times (mod 64) after pushing.
    pause: u8,
}

#[derive(Debug, Clone, Arbitrary)]
enum ConsumerOp {
    /// Pop one message and hold it.
    Pop,
    /// Take everything readable through a batch, holding it all.
    Batch,
    /// Take at most this many from a batch, leaving the rest in the ring.
    PartialBatch(u8),
    /// Drop the held slice at this position (mod the number held).
    DropAt(u8),
    DropOldest,
    DropNewest,
    /// Drop every held slice, newest first.
    DropAll,
    /// Publish the head now.
    Release,
    /// Spin this many times (mod 256).
    Spin(u8),
    Yield,
}

#[derive(Debug, Clone, Arbitrary)]
struct Input {
    /// Pool capacity in bytes.
    pool_bytes: u16,
    /// 8 or 64 slots.
    wide: bool,
    log2_capacity: u8,
    /// 0: exact release; otherwise a consumer publishing every 4 pops.
    deferred: bool,
    /// Stop consuming after this many messages (mod messages + 1), leaving
    /// the rest for the ring to drop.
    stop_after: u16,
    messages: Vec<Message>,
    consumer: Vec<ConsumerOp>,
}

/// Most slices the consumer holds at once; past this it drops the oldest, so
/// a hoarding input cannot grow memory without bound.
const MAX_HELD: usize = 256;

/// Byte `k` of message `seq`.
fn byte(m: &Message, seq: usize, k: usize) -> u8 {
    m.fill ^ (seq as u8).wrapping_mul(13) ^ (k as u8).wrapping_mul(7)
}

fn check(slice: &[u8], m: &Message, seq: usize, when: &str) {
    assert_eq!(
        slice.len(),
        usize::from(m.len % 1024),
        "message {seq}: length {when}"
    );
    for (k, &b) in slice.iter().enumerate() {
        assert_eq!(b, byte(m, seq, k), "message {seq}: byte {k} {when}");
    }
}

fuzz_target!(|input: Input| {
    let input = Arc::new(input);
    if input.wide {
        run::<u64>(input);
    } else {
        run::<u8>(input);
    }
});

fn run<M: SlotMap + 'static>(input: Arc<Input>) {
    let capacity = 1usize << (input.log2_capacity % 6);
    if input.deferred {
        let (tx, rx) = HeapRing::<Slice<M>>::new_deferred::<4>(capacity).unwrap();
        pipeline(input, tx, rx);
    } else {
        let (tx, rx) = HeapRing::<Slice<M>>::new(capacity).unwrap();
        pipeline(input, tx, rx);
    }
}

fn pipeline<M: SlotMap + 'static, const K: usize>(
    input: Arc<Input>,
    tx: Producer<'static, Slice<M>>,
    mut rx: Consumer<'static, Slice<M>, K>,
) {
    let total = input.messages.len();
    let stop_after = usize::from(input.stop_after) % (total + 1);
    let for_consumer = input.clone();
    on_workers(
        move || produce(&input, tx),
        move || consume(&for_consumer, &mut rx, stop_after),
    );
}

fn produce<M: SlotMap>(input: &Input, mut tx: Producer<'static, Slice<M>>) {
    let mut pool = BufferPool::<_, M>::with_slot_map(usize::from(input.pool_bytes));
    for (seq, m) in input.messages.iter().enumerate() {
        let len = usize::from(m.len % 1024);
        let step = match usize::from(m.chunk) {
            0 => len.max(1),
            c => c,
        };
        let mut done = 0;
        while done < len {
            let n = step.min(len - done);
            let buf = pool.get_writable(n);
            for (k, b) in buf.iter_mut().enumerate() {
                *b = byte(m, seq, done + k);
            }
            done += n;
        }
        let mut slice = pool.get_data_owned();
        check(&slice, m, seq, "before it was pushed");
        loop {
            match tx.push(slice) {
                Ok(()) => break,
                Err(PushError::Full(back)) => {
                    // A consumer that stopped leaves the ring full:
                    // the rest of the messages are never sent.
                    if tx.is_abandoned() {
                        return;
                    }
                    slice = back;
                    thread::yield_now();
                }
                Err(e) => panic!("push: {e}"),
            }
        }
        for _ in 0..m.pause % 64 {
            spin_loop();
        }
    }
}

fn consume<M: SlotMap, const K: usize>(
    input: &Input,
    rx: &mut Consumer<'static, Slice<M>, K>,
    stop_after: usize,
) {
    let messages = &input.messages;
    let mut held: Vec<(usize, Slice<M>)> = Vec::new();
    let mut next = 0;
    let take = |held: &mut Vec<(usize, Slice<M>)>, next: &mut usize, slice: Slice<M>| {
        check(&slice, &messages[*next], *next, "on arrival");
        held.push((*next, slice));
        *next += 1;
        if held.len() > MAX_HELD {
            let (seq, old) = held.remove(0);
            check(&old, &messages[seq], seq, "while held");
        }
    };
    let drop_at = |held: &mut Vec<(usize, Slice<M>)>, i: usize| {
        if !held.is_empty() {
            let (seq, slice) = held.remove(i % held.len());
            check(&slice, &messages[seq], seq, "while held");
        }
    };
    let mut ops = input.consumer.iter().cycle();
    while next < stop_after {
        // An implicit pop after every op (and with no ops), so the consumer
        // always makes progress.
        let op = if input.consumer.is_empty() {
            None
        } else {
            ops.next()
        };
        let want = stop_after - next;
        match op {
            Some(ConsumerOp::Batch) | Some(ConsumerOp::PartialBatch(_)) => {
                let limit = match op {
                    Some(ConsumerOp::PartialBatch(n)) => usize::from(*n).min(want),
                    _ => want,
                };
                let batch = rx.batch().expect("batch");
                let readable = batch.len();
                let mut got = 0;
                for slice in batch.take(limit) {
                    take(&mut held, &mut next, slice);
                    got += 1;
                }
                assert_eq!(got, readable.min(limit));
            }
            Some(ConsumerOp::DropAt(i)) => drop_at(&mut held, usize::from(*i)),
            Some(ConsumerOp::DropOldest) => drop_at(&mut held, 0),
            Some(ConsumerOp::DropNewest) => {
                let n = held.len();
                drop_at(&mut held, n.wrapping_sub(1));
            }
            Some(ConsumerOp::DropAll) => {
                while let Some((seq, slice)) = held.pop() {
                    check(&slice, &messages[seq], seq, "while held");
                }
            }
            Some(ConsumerOp::Release) => rx.release(),
            Some(ConsumerOp::Spin(n)) => {
                for _ in 0..*n {
                    spin_loop();
                }
            }
            Some(ConsumerOp::Yield) => thread::yield_now(),
            Some(ConsumerOp::Pop) | None => {}
        }
        if next < stop_after {
            match rx.pop() {
                Ok(slice) => take(&mut held, &mut next, slice),
                Err(RingError::Empty) => thread::yield_now(),
                Err(e) => panic!("pop: {e}"),
            }
        }
    }
    assert_eq!(next, stop_after);
    // The rest of the held slices go in the order the ops say, then all.
    for op in &input.consumer {
        if let ConsumerOp::DropAt(i) = op {
            drop_at(&mut held, usize::from(*i));
        }
    }
    for (seq, slice) in held.drain(..) {
        check(&slice, &messages[seq], seq, "while held");
    }
    // Whatever is still in the ring (when the consumer stopped early) is
    // dropped with it, once, by whichever half goes last.
}
