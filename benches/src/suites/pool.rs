//! `pool`: buffer-pool against buffer_sv2 3.0.1 on buffer_sv2's own patterns.
//!
//! A pool of 327,680 bytes; each iteration writes two messages of
//! `2^14 - rand(0..12000)` bytes, 10 bytes per `get_writable`, and hands each
//! out. Patterns:
//! - `single`: both slices dropped at the end of the iteration, same thread;
//! - `held_10us` / `held_1ms`: each slice is sent to a long-lived thread that
//!   holds it 10 µs (1 ms) and drops it; the producer does not wait;
//! - `wait_drop`: as `held_10us`, but the producer waits until both slices of
//!   the iteration are dropped before the next iteration.
//!
//! Variants: `buffer_pool` (8 slots), `buffer_pool_64` (64 slots),
//! `buffer_sv2` (its `BufferPool`, the anchor), `sv2_system_memory` (its
//! `BufferFromSystemMemory`), `vec` (a plain `Vec` per message, written with
//! `extend_from_slice`) and `max_efficiency` (one reused array, nothing
//! handed out: a floor). Pools are created once per variant and reused across
//! samples; a sample times the producer loop only (in `held_*`, the holder's
//! backlog is drained untimed after each sample).
//!
//! Rows: `pool <pattern>.<variant>.t_vs_buffer_sv2` (median paired time
//! ratio), `.median` (µs per sample), `.heap_share` (fraction of messages
//! whose bytes came from the heap rather than pool memory), and for the two
//! buffer-pool variants the median paired time ratio to the other
//! yardsticks: `.t_vs_vec`, or `.t_vs_sv2_system_memory` for `held_1ms`, and
//! for `single` also `.t_vs_max_efficiency` (the floor).

use crate::harness::{Compare, Ctx, paired_logged, row};
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::hint::black_box;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, Sender, TryRecvError};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

const CAPACITY: usize = 327_680;
const CHUNK: usize = 10;
const DATA_LEN: usize = 1 << 12;

/// One way of producing messages.
trait Variant {
    /// What a finished message is handed out as.
    type Out: Send + 'static;
    /// Appends a message of `len` bytes, `CHUNK` bytes per call, from `data`.
    fn write(&mut self, len: usize, data: &[u8]);
    /// Hands the message out.
    fn take(&mut self) -> Self::Out;
    /// Whether the message's bytes are on the heap rather than pool memory.
    fn on_heap(out: &Self::Out) -> bool;
}

/// The chunks a message of `len` bytes is written in: `len / 10` of them,
/// as buffer_sv2's benchmark does.
#[inline(always)]
fn chunks(len: usize, data: &[u8]) -> impl Iterator<Item = &[u8]> {
    (0..len / CHUNK).map(move |k| {
        let at = (k * 7) % (DATA_LEN - CHUNK);
        &data[at..at + CHUNK]
    })
}

impl<M: buffer_pool::SlotMap> Variant
    for buffer_pool::BufferPool<buffer_pool::BufferFromSystemMemory, M>
{
    type Out = buffer_pool::Slice<M>;
    #[inline(always)]
    fn write(&mut self, len: usize, data: &[u8]) {
        for c in chunks(len, data) {
            io_traits::Buffer::get_writable(self, CHUNK).copy_from_slice(c);
        }
    }
    fn take(&mut self) -> Self::Out {
        io_traits::Buffer::get_data_owned(self)
    }
    fn on_heap(out: &Self::Out) -> bool {
        !out.is_pooled()
    }
}

type Sv2Pool = buffer_sv2::BufferPool<buffer_sv2::BufferFromSystemMemory>;

impl Variant for Sv2Pool {
    type Out = buffer_sv2::Slice;
    #[inline(always)]
    fn write(&mut self, len: usize, data: &[u8]) {
        for c in chunks(len, data) {
            buffer_sv2::Buffer::get_writable(self, CHUNK).copy_from_slice(c);
        }
    }
    fn take(&mut self) -> Self::Out {
        buffer_sv2::Buffer::get_data_owned(self)
    }
    fn on_heap(out: &Self::Out) -> bool {
        out.owned.is_some()
    }
}

impl Variant for buffer_sv2::BufferFromSystemMemory {
    type Out = Vec<u8>;
    #[inline(always)]
    fn write(&mut self, len: usize, data: &[u8]) {
        for c in chunks(len, data) {
            buffer_sv2::Buffer::get_writable(self, CHUNK).copy_from_slice(c);
        }
    }
    fn take(&mut self) -> Self::Out {
        buffer_sv2::Buffer::get_data_owned(self)
    }
    fn on_heap(_: &Self::Out) -> bool {
        true
    }
}

/// A plain `Vec` per message.
struct PlainVec(Vec<u8>);

impl Variant for PlainVec {
    type Out = Vec<u8>;
    #[inline(always)]
    fn write(&mut self, len: usize, data: &[u8]) {
        for c in chunks(len, data) {
            self.0.extend_from_slice(c);
        }
    }
    fn take(&mut self) -> Self::Out {
        std::mem::take(&mut self.0)
    }
    fn on_heap(_: &Self::Out) -> bool {
        true
    }
}

/// One reused array: messages are written and forgotten; only their length
/// is handed out.
struct MaxEfficiency {
    bytes: Box<[u8]>,
    len: usize,
}

impl Variant for MaxEfficiency {
    type Out = usize;
    #[inline(always)]
    fn write(&mut self, len: usize, data: &[u8]) {
        for c in chunks(len, data) {
            let at = self.len;
            self.bytes[at..at + CHUNK].copy_from_slice(c);
            self.len = at + CHUNK;
        }
    }
    fn take(&mut self) -> Self::Out {
        black_box(&self.bytes[..self.len]);
        std::mem::take(&mut self.len)
    }
    fn on_heap(_: &Self::Out) -> bool {
        false
    }
}

/// A long-lived thread that holds each item it is sent for `hold`, then
/// drops it.
struct Holder<T: Send + 'static> {
    tx: Option<Sender<T>>,
    outstanding: Arc<AtomicUsize>,
    thread: Option<JoinHandle<()>>,
}

impl<T: Send + 'static> Holder<T> {
    fn new(hold: Duration) -> Self {
        let (tx, rx) = mpsc::channel::<T>();
        let outstanding = Arc::new(AtomicUsize::new(0));
        let count = Arc::clone(&outstanding);
        let thread = thread::spawn(move || {
            // On the last core, so that the scheduler does not leave the
            // holder sharing a core with the producer (the pattern is about
            // slices dropped on another core).
            if let Some(core) = core_affinity::get_core_ids().and_then(|c| c.last().copied()) {
                core_affinity::set_for_current(core);
            }
            let mut held: VecDeque<(Instant, T)> = VecDeque::new();
            loop {
                if held.is_empty() {
                    match rx.recv() {
                        Ok(item) => held.push_back((Instant::now() + hold, item)),
                        Err(_) => return,
                    }
                }
                loop {
                    match rx.try_recv() {
                        Ok(item) => held.push_back((Instant::now() + hold, item)),
                        Err(TryRecvError::Empty) => break,
                        Err(TryRecvError::Disconnected) => {
                            held.clear();
                            count.store(0, Ordering::Release);
                            return;
                        }
                    }
                }
                let now = Instant::now();
                while held.front().is_some_and(|(due, _)| *due <= now) {
                    drop(held.pop_front());
                    count.fetch_sub(1, Ordering::Release);
                }
                // Poll rather than sleep, so a 10 µs hold is not a timer's
                // slack, but yield, so a loaded machine still runs the
                // producer.
                thread::yield_now();
            }
        });
        Self {
            tx: Some(tx),
            outstanding,
            thread: Some(thread),
        }
    }

    #[inline]
    fn send(&self, item: T) {
        self.outstanding.fetch_add(1, Ordering::Relaxed);
        if let Some(tx) = &self.tx {
            tx.send(item).expect("holder thread alive");
        }
    }

    /// Waits until every item sent has been dropped: spins briefly, then
    /// yields, so a machine with no spare core still runs the holder.
    fn wait_idle(&self) {
        loop {
            for _ in 0..256 {
                if self.outstanding.load(Ordering::Acquire) == 0 {
                    return;
                }
                std::hint::spin_loop();
            }
            thread::yield_now();
        }
    }
}

impl<T: Send + 'static> Drop for Holder<T> {
    fn drop(&mut self) {
        self.wait_idle();
        drop(self.tx.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Pattern {
    Single,
    Held(Duration),
    WaitDrop(Duration),
}

/// Heap and total message counts over every sample of one variant, and the
/// time of each sample in order (the first is the harness's warm-up; the
/// `k`-th of every variant belong to the same round).
#[derive(Default)]
struct Record {
    counts: Cell<(u64, u64)>,
    times: RefCell<Vec<Duration>>,
}

type Tally = Rc<Record>;

/// Times one sample of `pattern` with `v`.
fn sample<V: Variant>(
    v: &mut V,
    pattern: Pattern,
    holder: Option<&Holder<V::Out>>,
    lens: &[usize],
    data: &[u8],
    tally: &Tally,
) -> Duration {
    let mut heap = 0u64;
    let t = Instant::now();
    for &len in lens {
        v.write(len, data);
        let a = v.take();
        heap += u64::from(V::on_heap(&a));
        v.write(len, data);
        let b = v.take();
        heap += u64::from(V::on_heap(&b));
        match (pattern, holder) {
            (Pattern::Single, _) | (_, None) => {
                black_box(&a);
                black_box(&b);
            }
            (Pattern::Held(_), Some(h)) => {
                h.send(a);
                h.send(b);
            }
            (Pattern::WaitDrop(_), Some(h)) => {
                h.send(a);
                h.send(b);
                h.wait_idle();
            }
        }
    }
    let elapsed = t.elapsed();
    if let Some(h) = holder {
        h.wait_idle();
    }
    let (h, n) = tally.counts.get();
    tally.counts.set((h + heap, n + 2 * lens.len() as u64));
    tally.times.borrow_mut().push(elapsed);
    elapsed
}

/// Adds variant `name` built by `make` to `c`, tallying into a new counter.
fn add<'a, V: Variant + 'a>(
    c: &mut Compare<'a>,
    tallies: &mut Vec<(&'static str, Tally)>,
    name: &'static str,
    pattern: Pattern,
    lens: &'a [usize],
    data: &'a [u8],
    mut v: V,
) {
    let tally: Tally = Rc::default();
    tallies.push((name, Rc::clone(&tally)));
    let holder = match pattern {
        Pattern::Single => None,
        Pattern::Held(d) | Pattern::WaitDrop(d) => Some(Holder::<V::Out>::new(d)),
    };
    c.variant(name, move || {
        sample(&mut v, pattern, holder.as_ref(), lens, data, &tally)
    });
}

/// buffer_sv2's message lengths: `2^14 - rand(0..12000)` per iteration.
fn lengths(iterations: usize, seed: u64) -> Vec<usize> {
    let mut x = seed | 1;
    (0..iterations)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (1 << 14) - (x % 12_000) as usize
        })
        .collect()
}

fn run_pattern(ctx: &Ctx, test: &str, pattern: Pattern, iterations: usize, rounds: usize) {
    let lens = lengths(iterations, 0x5eed_b0ff);
    let data: Vec<u8> = (0..DATA_LEN).map(|i| (i * 31 % 251) as u8).collect();
    let mut tallies = Vec::new();
    let results = {
        let mut c = Compare::new("pool", test, "buffer_sv2");
        let mut add = Adder {
            c: &mut c,
            tallies: &mut tallies,
            pattern,
            lens: &lens,
            data: &data,
        };
        add.variant("buffer_pool", buffer_pool::BufferPool::new(CAPACITY));
        add.variant(
            "buffer_pool_64",
            buffer_pool::BufferPool::<_, u64>::with_slot_map(CAPACITY),
        );
        add.variant("buffer_sv2", Sv2Pool::new(CAPACITY));
        add.variant(
            "sv2_system_memory",
            buffer_sv2::BufferFromSystemMemory::new(0),
        );
        add.variant("vec", PlainVec(Vec::new()));
        add.variant(
            "max_efficiency",
            MaxEfficiency {
                bytes: vec![0; CAPACITY].into_boxed_slice(),
                len: 0,
            },
        );
        c.run(rounds)
        // `c` drops here: each holder drains before its pool goes, so no
        // buffer_sv2 slice outlives its pool (its `Drop` would spin forever).
    };
    let _ = ctx;
    results.emit_time_ratio();
    yardstick_rows(test, &tallies);
    heap_share_rows(test, &tallies);
}

/// Adds the variants of one pattern to a comparison, each with its tally.
struct Adder<'c, 'a> {
    c: &'c mut Compare<'a>,
    tallies: &'c mut Vec<(&'static str, Tally)>,
    pattern: Pattern,
    lens: &'a [usize],
    data: &'a [u8],
}

impl<'a> Adder<'_, 'a> {
    fn variant<V: Variant + 'a>(&mut self, name: &'static str, v: V) {
        add(
            self.c,
            self.tallies,
            name,
            self.pattern,
            self.lens,
            self.data,
            v,
        );
    }
}

/// The other yardsticks: the plain `Vec` for the single-thread pattern,
/// `BufferFromSystemMemory` for the 1 ms hold; and, single-threaded, the
/// floor (`max_efficiency`), a ratio that does not depend on how the
/// compiler builds buffer_sv2's loop. Paired as the anchor is: the median
/// over rounds of the two times of the same round.
fn yardstick_rows(test: &str, tallies: &[(&'static str, Tally)]) {
    let others: &[&str] = match test {
        "held_1ms" => &["sv2_system_memory"],
        "single" => &["vec", "max_efficiency"],
        _ => &["vec"],
    };
    let times = |name: &str| {
        tallies
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, t)| t.times.borrow().clone())
            .unwrap_or_default()
    };
    for &other in others {
        let theirs = times(other);
        for name in ["buffer_pool", "buffer_pool_64"] {
            let ratio = paired_logged(&times(name), &theirs);
            row("pool", &format!("{test}.{name}.t_vs_{other}"), ratio, "x");
        }
    }
}

/// The share of each variant's messages that went to the heap.
fn heap_share_rows(test: &str, tallies: &[(&'static str, Tally)]) {
    for (name, tally) in tallies {
        let (heap, total) = tally.counts.get();
        row(
            "pool",
            &format!("{test}.{name}.heap_share"),
            heap as f64 / total.max(1) as f64,
            "fraction",
        );
    }
}

/// Runs the suite.
pub fn run(ctx: &Ctx) {
    let iterations = ctx.pick(1000, 300);
    run_pattern(
        ctx,
        "single",
        Pattern::Single,
        iterations,
        ctx.rounds(31, 5),
    );
    run_pattern(
        ctx,
        "held_10us",
        Pattern::Held(Duration::from_micros(10)),
        iterations,
        ctx.rounds(21, 5),
    );
    run_pattern(
        ctx,
        "held_1ms",
        Pattern::Held(Duration::from_millis(1)),
        ctx.pick(1000, 200),
        ctx.rounds(15, 3),
    );
    run_pattern(
        ctx,
        "wait_drop",
        Pattern::WaitDrop(Duration::from_micros(10)),
        ctx.pick(1000, 100),
        ctx.rounds(11, 3),
    );
}
