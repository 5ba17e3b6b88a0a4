//! `batch`: the batching reader against the ways people read today.
//!
//! 1. `seed`: seed 000's calls-per-second table — a bare function call, a
//!    deque used sequentially, one and two channels used sequentially, and
//!    this crate's batch API per op (64 ops per `read_many`), all reading
//!    8 bytes at the same addresses of an in-memory source; the batch API
//!    both with its ops built afresh per batch and with one op array reused,
//!    and each of those shapes filled by hand without the crate (the floor);
//!    then the table's async rows, on one current-thread tokio runtime: one
//!    channel and two channels used sequentially in one task, two tasks
//!    exchanging request and response, and this crate's `AsyncReader`
//!    awaiting each read in turn (`auto_reader`) and as 8 and 64 joined
//!    chains (`auto_reader_x8`, `auto_reader_x64`). More floors: the backend
//!    alone on the same ops, fresh and reused (a batch without the reader),
//!    the same after the pass that tests every op is one fragment of the
//!    backend's geometry (`backend_checked`: the test no reader can skip),
//!    the by-hand loop with that test folded into each op's copy
//!    (`ops_by_hand_checked`, which a reader cannot do: it hands the ops to
//!    a backend and tests them before the call),
//!    one synchronous `read_val` per address (the calls `auto_reader`
//!    makes, without the futures), and the same after one Pending per read
//!    polled again at once (`yield_read_val`: the yield any reader batching
//!    on `.await` makes per read in that shape, without a queue).
//! 2. `syscall`: pieces of 8–64 bytes of another process's memory — one
//!    `process_vm_readv` per piece, the raw call and this crate's
//!    `ProcessBackend` each batched 16/64/256 pieces at a time; then the
//!    same with the pieces being adjacent fields of a few structs, where
//!    coalescing merges them.
//! 3. `file`: seed 002 — a file read 4 KiB at a time with a fresh buffer per
//!    read, one 1 MiB read at a time into a reused buffer (the ceiling), and
//!    `read_iter` of 4 KiB ops coalesced into one reused buffer; with the
//!    memcpy of the same volume as the reference for GB/s.

use crate::harness::{Compare, Ctx, row};
use batch_reader::backends::{FileBackend, MemoryBackend, ProcessBackend};
use batch_reader::{AsyncReader, Geometry, ReadBackend, ReadOp, Reader};
use std::cell::RefCell;
use std::collections::VecDeque;
use std::fs::File;
use std::hint::black_box;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Runs the suite.
pub fn run(ctx: &Ctx) {
    seed(ctx);
    syscall(ctx);
    file(ctx);
}

/// A small deterministic generator, so every variant reads the same places.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
}

/// One variant's sample times, in order, so that two variants that are not
/// the anchor can be compared round by round.
type Log = RefCell<Vec<Duration>>;

/// Records `t` in `log` and returns it.
fn logged(log: &Log, t: Duration) -> Duration {
    log.borrow_mut().push(t);
    t
}

/// Median over rounds of `a`'s time divided by `b`'s in the same round (the
/// harness's untimed warm-up sample, the first, left out).
fn paired(a: &Log, b: &Log) -> f64 {
    let (a, b) = (a.borrow(), b.borrow());
    let mut ratios: Vec<f64> = a
        .iter()
        .zip(b.iter())
        .skip(1)
        .map(|(x, y)| x.as_secs_f64() / y.as_secs_f64().max(1e-12))
        .collect();
    ratios.sort_by(f64::total_cmp);
    ratios.get(ratios.len() / 2).copied().unwrap_or(f64::NAN)
}

#[inline(never)]
fn bare_read(mem: &[u8], addr: usize) -> u64 {
    match mem.get(addr..addr + 8).map(<[u8; 8]>::try_from) {
        Some(Ok(b)) => u64::from_ne_bytes(b),
        _ => 0,
    }
}

/// `BATCH` ops, op `i` reading 8 bytes at `addrs[i]` (0 past its end) into
/// `bufs[i]`, tagged `i`.
fn fresh_ops<'b, const BATCH: usize>(
    bufs: &'b mut [[u8; 8]; BATCH],
    addrs: &[usize],
) -> [ReadOp<'b>; BATCH] {
    let mut it = bufs.iter_mut();
    core::array::from_fn(|i| {
        let buf: &mut [u8] = it.next().map_or(&mut [], |b| &mut b[..]);
        ReadOp::new(addrs.get(i).copied().unwrap_or(0) as u64, buf, i)
    })
}

/// Points the first `addrs.len()` ops at `addrs` and returns them.
fn set_addrs<'o, 'b>(ops: &'o mut [ReadOp<'b>], addrs: &[usize]) -> &'o mut [ReadOp<'b>] {
    let ops = &mut ops[..addrs.len()];
    for (op, &a) in ops.iter_mut().zip(addrs) {
        op.addr = a as u64;
    }
    ops
}

/// The value of a completed 8-byte read, 0 if it failed.
#[inline(always)]
fn completed_u64(done: &batch_reader::Completion<'_>) -> u64 {
    match <[u8; 8]>::try_from(done.data()) {
        Ok(v) if done.is_ok() => u64::from_ne_bytes(v),
        _ => 0,
    }
}

/// Fills `ops` by plain copies from `mem` and adds up their values. An
/// 8-byte op is copied as one 8-byte value, not through `memcpy`, as the
/// crate's in-memory backend copies short reads, so that this stays a floor.
#[inline(always)]
fn by_hand(mem: &[u8], ops: &mut [ReadOp<'_>]) -> u64 {
    for op in ops.iter_mut() {
        copy_by_hand(mem, op);
    }
    sum_of(ops)
}

/// Fills `op` by a plain copy from `mem` (see [`by_hand`]), if it lies
/// within it.
#[inline(always)]
fn copy_by_hand(mem: &[u8], op: &mut ReadOp<'_>) {
    let at = op.addr as usize;
    if let Some(src) = mem.get(at..at + op.buf.len()) {
        match (
            <&mut [u8; 8]>::try_from(&mut *op.buf),
            <[u8; 8]>::try_from(src),
        ) {
            (Ok(dst), Ok(src)) => *dst = src,
            _ => op.buf.copy_from_slice(src),
        }
    }
}

/// The values of the 8-byte ops of `ops`, added up.
#[inline(always)]
fn sum_of(ops: &[ReadOp<'_>]) -> u64 {
    ops.iter()
        .fold(0u64, |sum, op| match <[u8; 8]>::try_from(&*op.buf) {
            Ok(v) => sum.wrapping_add(u64::from_ne_bytes(v)),
            Err(_) => sum,
        })
}

/// Times reading `addrs` in batches of `BATCH` ops built afresh for each
/// batch; `read` performs one batch and returns the sum of its values.
#[inline(always)]
fn timed_fresh<const BATCH: usize>(
    addrs: &[usize],
    mut read: impl FnMut(&mut [ReadOp<'_>]) -> u64,
) -> Duration {
    let mut bufs = [[0u8; 8]; BATCH];
    let t = Instant::now();
    let mut sum = 0u64;
    for chunk in addrs.chunks(BATCH) {
        let mut ops = fresh_ops(&mut bufs, chunk);
        sum = sum.wrapping_add(read(&mut ops[..chunk.len()]));
    }
    black_box(sum);
    t.elapsed()
}

/// As [`timed_fresh`], with one op array built before timing and only its
/// addresses set for each batch.
#[inline(always)]
fn timed_reused<const BATCH: usize>(
    addrs: &[usize],
    read: impl FnMut(&mut [ReadOp<'_>]) -> u64,
) -> Duration {
    timed_reused_tagged::<BATCH>(addrs, |i| i, read)
}

/// As [`timed_reused`], with op `i` tagged `tag(i)`.
#[inline(always)]
fn timed_reused_tagged<const BATCH: usize>(
    addrs: &[usize],
    tag: impl Fn(usize) -> usize,
    mut read: impl FnMut(&mut [ReadOp<'_>]) -> u64,
) -> Duration {
    let mut bufs = [[0u8; 8]; BATCH];
    let mut ops = fresh_ops(&mut bufs, &[]);
    for (i, op) in ops.iter_mut().enumerate() {
        op.tag = tag(i);
    }
    let t = Instant::now();
    let mut sum = 0u64;
    for chunk in addrs.chunks(BATCH) {
        sum = sum.wrapping_add(read(set_addrs(&mut ops, chunk)));
    }
    black_box(sum);
    t.elapsed()
}

/// One `read_many` over `ops`: the sum of the completed values.
#[inline(always)]
fn read_sum<const N: usize, const F: usize>(
    reader: &mut Reader<MemoryBackend<'_>, Vec<u8>, N, F>,
    ops: &mut [ReadOp<'_>],
) -> u64 {
    let mut sum = 0u64;
    reader.read_many(ops, |done| sum = sum.wrapping_add(completed_u64(&done)));
    sum
}

/// The backend's `read_batch_in_order` called directly on `ops`, each
/// value added up in its op's report as `completed_u64` does: a batch
/// without the reader, taken as the reader's direct route takes it.
#[inline(always)]
fn backend_sum(backend: &mut MemoryBackend<'_>, ops: &mut [ReadOp<'_>]) -> u64 {
    let mut sum = 0u64;
    let ops = black_box(ops);
    backend.read_batch_in_order(ops, |op, r| {
        if let (Ok(v), true) = (<[u8; 8]>::try_from(&*op.buf), r.valid >= op.buf.len()) {
            sum = sum.wrapping_add(u64::from_ne_bytes(v));
        }
    });
    sum
}

/// Whether every op of `ops` is one fragment of `geometry`: not empty, at
/// most `max_transfer` long, not past the end of the address space, and
/// within one boundary unit. The test any reader that honours a backend's
/// geometry makes before it hands ops over as they are, in one pass without
/// branches, as the crate's reader makes it.
#[inline(always)]
fn one_fragment_each(ops: &[ReadOp<'_>], geometry: Geometry) -> bool {
    let test = FragmentTest::of(geometry);
    let mut ok = true;
    for op in ops {
        ok &= test.one_fragment(op.addr, op.buf.len() as u64).is_some();
    }
    ok
}

/// What an op is tested against to be one fragment of a geometry.
#[derive(Clone, Copy)]
struct FragmentTest {
    max_transfer: u64,
    /// The bits above the boundary unit (0 without a boundary).
    unit: u64,
}

impl FragmentTest {
    #[inline(always)]
    fn of(geometry: Geometry) -> Self {
        Self {
            max_transfer: geometry.max_transfer() as u64,
            unit: !geometry.boundary().map_or(u64::MAX, |b| b - 1),
        }
    }

    /// The end of an op of `len` bytes at `addr` if it is one fragment (see
    /// [`one_fragment_each`]), without branches.
    #[inline(always)]
    fn one_fragment(self, addr: u64, len: u64) -> Option<u64> {
        let (end, overflow) = addr.overflowing_add(len);
        let ok = (len.wrapping_sub(1) < self.max_transfer)
            & !overflow
            & ((addr ^ end.wrapping_sub(1)) & self.unit == 0);
        ok.then_some(end)
    }
}

/// [`by_hand`] with each op's one-fragment test (as [`one_fragment_each`])
/// and the test that it does not start where the op before it ends (where
/// it would merge) made in the loop that copies it: the check where only
/// code that reads the memory itself can put it. A reader hands its ops to a
/// backend, so it makes the check in a pass of its own before the call.
/// Stops at the first op that fails (none does here).
#[inline(always)]
fn by_hand_checked(mem: &[u8], geometry: Geometry, ops: &mut [ReadOp<'_>]) -> u64 {
    let test = FragmentTest::of(geometry);
    let mut prev_end = u64::MAX;
    for op in ops.iter_mut() {
        match test.one_fragment(op.addr, op.buf.len() as u64) {
            Some(end) if op.addr != prev_end => prev_end = end,
            _ => break,
        }
        copy_by_hand(mem, op);
    }
    sum_of(ops)
}

/// [`backend_sum`] after the one-fragment test of every op
/// ([`one_fragment_each`]): a batch without a reader's bookkeeping, but
/// with the check a reader cannot skip. 0 if an op fails it (none does
/// here).
#[inline(always)]
fn checked_backend_sum(backend: &mut MemoryBackend<'_>, ops: &mut [ReadOp<'_>]) -> u64 {
    let ops = black_box(ops);
    if !one_fragment_each(ops, backend.geometry()) {
        return 0;
    }
    backend_sum(backend, ops)
}

/// `K` chains joined, chain `k` awaiting the `k`-th `K`-th of `addrs` one
/// read after the other: `K` reads per flush. The sums of the chains.
async fn joined_chains<const K: usize, B: ReadBackend>(
    r: &AsyncReader<B, [u8; 0]>,
    addrs: &[usize],
) -> [u64; K] {
    let part = addrs.len().div_ceil(K);
    embassy_futures::join::join_array(core::array::from_fn::<_, K, _>(|k| async move {
        let mut sum = 0u64;
        for &a in addrs.chunks(part).nth(k).unwrap_or(&[]) {
            let v = r.read_val::<u64>(black_box(a) as u64).await;
            sum = sum.wrapping_add(v.unwrap_or(0));
        }
        sum
    }))
    .await
}

/// Returns Pending on its first poll, Ready on the next.
struct YieldOnce(bool);

impl std::future::Future for YieldOnce {
    type Output = ();

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<()> {
        if self.0 {
            std::task::Poll::Ready(())
        } else {
            self.0 = true;
            std::task::Poll::Pending
        }
    }
}

/// Polls its future again at once whenever it returns Pending, as
/// `AsyncReader::run` does after a flush.
struct Repoll<F>(F);

impl<F: std::future::Future + Unpin> std::future::Future for Repoll<F> {
    type Output = F::Output;

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<F::Output> {
        loop {
            if let std::task::Poll::Ready(v) = std::pin::Pin::new(&mut self.0).poll(cx) {
                return std::task::Poll::Ready(v);
            }
        }
    }
}

fn seed(ctx: &Ctx) {
    const BATCH: usize = 64;
    let calls: usize = ctx.pick(1 << 18, 1 << 16);
    let mem: Vec<u8> = (0..1usize << 20).map(|i| (i * 7) as u8).collect();
    let mut rng = Lcg(1);
    let addrs: Vec<usize> = (0..calls)
        .map(|_| (rng.next() as usize % ((1 << 20) - 8)) & !7)
        .collect();
    let (mem, addrs) = (&mem, &addrs);
    let logs: [Log; 16] = Default::default();
    let [
        deque_log,
        batch_log,
        reused_log,
        keyed_log,
        by_hand_log,
        by_hand_reused_log,
        channel_async_log,
        auto_log,
        read_val_log,
        backend_log,
        auto64_log,
        backend_fresh_log,
        yield_log,
        checked_log,
        checked_reused_log,
        by_hand_checked_log,
    ] = &logs;

    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("tokio runtime");
    let rt = &rt;

    let mut c = Compare::new("batch", "seed", "bare");
    c.variant("bare", || {
        let t = Instant::now();
        let mut sum = 0u64;
        for &a in addrs {
            sum = sum.wrapping_add(bare_read(mem, black_box(a)));
        }
        black_box(sum);
        t.elapsed()
    });
    let mut deque: VecDeque<usize> = VecDeque::with_capacity(16);
    c.variant("deque", move || {
        let t = Instant::now();
        let mut sum = 0u64;
        for &a in addrs {
            deque.push_back(black_box(a));
            if let Some(a) = deque.pop_front() {
                sum = sum.wrapping_add(bare_read(mem, a));
            }
        }
        black_box(sum);
        logged(deque_log, t.elapsed())
    });
    let (tx, rx) = mpsc::channel::<usize>();
    c.variant("channel", move || {
        let t = Instant::now();
        let mut sum = 0u64;
        for &a in addrs {
            let _ = tx.send(black_box(a));
            if let Ok(a) = rx.recv() {
                sum = sum.wrapping_add(bare_read(mem, a));
            }
        }
        black_box(sum);
        t.elapsed()
    });
    let (req_tx, req_rx) = mpsc::channel::<usize>();
    let (resp_tx, resp_rx) = mpsc::channel::<u64>();
    c.variant("two_channels", move || {
        let t = Instant::now();
        let mut sum = 0u64;
        for &a in addrs {
            let _ = req_tx.send(black_box(a));
            if let Ok(a) = req_rx.recv() {
                let _ = resp_tx.send(bare_read(mem, a));
            }
            if let Ok(v) = resp_rx.recv() {
                sum = sum.wrapping_add(v);
            }
        }
        black_box(sum);
        t.elapsed()
    });
    let geometry = Geometry::new(Some(4096), 4096, 1024).expect("valid geometry");
    let new_reader = || {
        Reader::<_, _, BATCH, BATCH>::with_window(
            MemoryBackend::new(mem, geometry),
            vec![0u8; 4096],
        )
    };
    // Each batch's ops built afresh, as in the seed's table.
    let mut reader = new_reader();
    c.variant("batch_api", move || {
        logged(
            batch_log,
            timed_fresh::<BATCH>(addrs, |ops| read_sum(&mut reader, ops)),
        )
    });
    // One op array for the whole run, only the addresses set per batch: what
    // a caller that reads the same shapes over and over can do.
    let mut reader = new_reader();
    c.variant("batch_api_reused", move || {
        logged(
            reused_log,
            timed_reused::<BATCH>(addrs, |ops| read_sum(&mut reader, ops)),
        )
    });
    // The same with each op tagged by a key that is not its index (as where
    // a tag names what its op reads): the reader then tags copies of the ops
    // by index for the backend, where ops tagged by their index go as they
    // are.
    let mut reader = new_reader();
    c.variant("batch_api_reused_keyed", move || {
        logged(
            keyed_log,
            timed_reused_tagged::<BATCH>(addrs, |i| !i, |ops| read_sum(&mut reader, ops)),
        )
    });
    // Not contenders: the two batch shapes without the crate. The same ops,
    // each filled by a plain copy from memory and consumed the same way.
    // What the caller's side of a batch costs, the floor under `batch_api`
    // and `batch_api_reused`.
    c.variant("ops_by_hand", move || {
        logged(
            by_hand_log,
            timed_fresh::<BATCH>(addrs, |ops| by_hand(mem, black_box(ops))),
        )
    });
    c.variant("ops_by_hand_reused", move || {
        logged(
            by_hand_reused_log,
            timed_reused::<BATCH>(addrs, |ops| by_hand(mem, black_box(ops))),
        )
    });
    // Not a contender either: the backend alone, called directly on the
    // reused op array, each value added up in its op's report, as the
    // reader's direct route calls it. What is left of a batch without the
    // reader.
    let mut backend = MemoryBackend::new(mem, geometry);
    c.variant("backend_only_reused", move || {
        logged(
            backend_log,
            timed_reused::<BATCH>(addrs, |ops| backend_sum(&mut backend, ops)),
        )
    });
    let mut backend = MemoryBackend::new(mem, geometry);
    c.variant("backend_only", move || {
        logged(
            backend_fresh_log,
            timed_fresh::<BATCH>(addrs, |ops| backend_sum(&mut backend, ops)),
        )
    });
    // Not a floor for a reader: the by-hand loop with the check folded into
    // each op's copy, which only code that reads the memory itself can do.
    // What the check costs where it is not a pass of its own.
    c.variant("ops_by_hand_checked", move || {
        logged(
            by_hand_checked_log,
            timed_fresh::<BATCH>(addrs, |ops| by_hand_checked(mem, geometry, black_box(ops))),
        )
    });
    // Floors too: the backend on the same ops after the one pass over them
    // that tests each is one fragment of the geometry, the test a reader
    // must make before it hands the ops over as they are (an op across a
    // boundary must be split). What is left of a batch when a reader keeps
    // nothing for its ops' completions.
    let mut backend = MemoryBackend::new(mem, geometry);
    c.variant("backend_checked", move || {
        logged(
            checked_log,
            timed_fresh::<BATCH>(addrs, |ops| checked_backend_sum(&mut backend, ops)),
        )
    });
    let mut backend = MemoryBackend::new(mem, geometry);
    c.variant("backend_checked_reused", move || {
        logged(
            checked_reused_log,
            timed_reused::<BATCH>(addrs, |ops| checked_backend_sum(&mut backend, ops)),
        )
    });
    // One synchronous `read_val` per address: one backend call per read,
    // the calls a sequence of awaited reads makes. The floor under
    // `auto_reader`.
    // The same reader type the async reader holds (no scratch, a fragment
    // table as long as its queue).
    let mut single = Reader::<
        _,
        _,
        { batch_reader::DEFAULT_WINDOW },
        { batch_reader::DEFAULT_QUEUE },
    >::with_window(MemoryBackend::new(mem, geometry), [0u8; 0]);
    c.variant("reader_read_val", move || {
        let t = Instant::now();
        let mut sum = 0u64;
        for &a in addrs {
            sum = sum.wrapping_add(single.read_val::<u64>(black_box(a) as u64).unwrap_or(0));
        }
        black_box(sum);
        logged(read_val_log, t.elapsed())
    });
    // Floor for `auto_reader`: the same synchronous reads, each after one
    // return of Pending that is polled again at once, as `Run` polls again
    // after a flush. Any reader that batches on `.await` yields once per
    // read in this shape; this is that yield without any queue.
    let mut yielding = Reader::<
        _,
        _,
        { batch_reader::DEFAULT_WINDOW },
        { batch_reader::DEFAULT_QUEUE },
    >::with_window(MemoryBackend::new(mem, geometry), [0u8; 0]);
    c.variant("yield_read_val", move || {
        let t = Instant::now();
        let reader = &mut yielding;
        let sum = rt.block_on(Repoll(std::pin::pin!(async move {
            let mut sum = 0u64;
            for &a in addrs {
                YieldOnce(false).await;
                sum = sum.wrapping_add(reader.read_val::<u64>(black_box(a) as u64).unwrap_or(0));
            }
            sum
        })));
        black_box(sum);
        logged(yield_log, t.elapsed())
    });
    // The async rows, all on one current-thread runtime.
    c.variant("channel_async", move || {
        rt.block_on(async move {
            let (tx, mut rx) = tokio::sync::mpsc::channel::<usize>(16);
            let t = Instant::now();
            let mut sum = 0u64;
            for &a in addrs {
                let _ = tx.send(black_box(a)).await;
                if let Some(a) = rx.recv().await {
                    sum = sum.wrapping_add(bare_read(mem, a));
                }
            }
            black_box(sum);
            logged(channel_async_log, t.elapsed())
        })
    });
    c.variant("two_channels_async", move || {
        rt.block_on(async move {
            let (req_tx, mut req_rx) = tokio::sync::mpsc::channel::<usize>(16);
            let (resp_tx, mut resp_rx) = tokio::sync::mpsc::channel::<u64>(16);
            let t = Instant::now();
            let mut sum = 0u64;
            for &a in addrs {
                let _ = req_tx.send(black_box(a)).await;
                if let Some(a) = req_rx.recv().await {
                    let _ = resp_tx.send(bare_read(mem, a)).await;
                }
                if let Some(v) = resp_rx.recv().await {
                    sum = sum.wrapping_add(v);
                }
            }
            black_box(sum);
            t.elapsed()
        })
    });
    // A spawned task needs memory it can own: the same bytes, shared.
    let shared: Arc<[u8]> = Arc::from(&mem[..]);
    c.variant("two_tasks", move || {
        let shared = Arc::clone(&shared);
        rt.block_on(async move {
            let (req_tx, mut req_rx) = tokio::sync::mpsc::channel::<usize>(16);
            let (resp_tx, mut resp_rx) = tokio::sync::mpsc::channel::<u64>(16);
            let server = tokio::spawn(async move {
                while let Some(a) = req_rx.recv().await {
                    if resp_tx.send(bare_read(&shared, a)).await.is_err() {
                        break;
                    }
                }
            });
            let t = Instant::now();
            let mut sum = 0u64;
            for &a in addrs {
                let _ = req_tx.send(black_box(a)).await;
                if let Some(v) = resp_rx.recv().await {
                    sum = sum.wrapping_add(v);
                }
            }
            let t = t.elapsed();
            drop(req_tx);
            let _ = server.await;
            black_box(sum);
            t
        })
    });
    // Each read awaited before the next: one op per flush, the same
    // request-response shape as the channel rows.
    let mut auto = AsyncReader::<_, _>::new(MemoryBackend::new(mem, geometry), [0u8; 0]);
    c.variant("auto_reader", move || {
        let t = Instant::now();
        let sum = rt.block_on(auto.run(|r| async move {
            let mut sum = 0u64;
            for &a in addrs {
                let v = r.read_val::<u64>(black_box(a) as u64).await;
                sum = sum.wrapping_add(v.unwrap_or(0));
            }
            sum
        }));
        black_box(sum);
        logged(auto_log, t.elapsed())
    });
    // The same reads as 8 and as 64 chains joined: 8 or 64 ops per flush
    // (64: the batch API's batch size).
    let mut auto = AsyncReader::<_, _>::new(MemoryBackend::new(mem, geometry), [0u8; 0]);
    c.variant("auto_reader_x8", move || {
        let t = Instant::now();
        black_box(rt.block_on(auto.run(|r| joined_chains::<8, _>(r, addrs))));
        t.elapsed()
    });
    let mut auto = AsyncReader::<_, _>::new(MemoryBackend::new(mem, geometry), [0u8; 0]);
    c.variant("auto_reader_x64", move || {
        let t = Instant::now();
        black_box(rt.block_on(auto.run(|r| joined_chains::<64, _>(r, addrs))));
        logged(auto64_log, t.elapsed())
    });
    let r = c.run(ctx.rounds(31, 7));
    r.emit_rate_ratio(calls as f64 / 1e6, "Mcalls/s");
    row(
        "batch",
        "seed.batch_api.rate_vs_deque",
        paired(deque_log, batch_log),
        "x",
    );
    // Rate ratios against the by-hand floors: time of the floor over time of
    // the crate, paired in the same rounds.
    row(
        "batch",
        "seed.batch_api.rate_vs_ops_by_hand",
        paired(by_hand_log, batch_log),
        "x",
    );
    row(
        "batch",
        "seed.batch_api_reused.rate_vs_ops_by_hand_reused",
        paired(by_hand_reused_log, reused_log),
        "x",
    );
    row(
        "batch",
        "seed.batch_api_reused_keyed.rate_vs_ops_by_hand_reused",
        paired(by_hand_reused_log, keyed_log),
        "x",
    );
    row(
        "batch",
        "seed.backend_only.rate_vs_ops_by_hand",
        paired(by_hand_log, backend_fresh_log),
        "x",
    );
    row(
        "batch",
        "seed.backend_only_reused.rate_vs_ops_by_hand_reused",
        paired(by_hand_reused_log, backend_log),
        "x",
    );
    row(
        "batch",
        "seed.backend_checked.rate_vs_ops_by_hand",
        paired(by_hand_log, checked_log),
        "x",
    );
    row(
        "batch",
        "seed.backend_checked_reused.rate_vs_ops_by_hand_reused",
        paired(by_hand_reused_log, checked_reused_log),
        "x",
    );
    row(
        "batch",
        "seed.ops_by_hand_checked.rate_vs_ops_by_hand",
        paired(by_hand_log, by_hand_checked_log),
        "x",
    );
    // The batch API against those floors: the reader's own share.
    row(
        "batch",
        "seed.batch_api.rate_vs_backend_checked",
        paired(checked_log, batch_log),
        "x",
    );
    row(
        "batch",
        "seed.batch_api_reused.rate_vs_backend_checked_reused",
        paired(checked_reused_log, reused_log),
        "x",
    );
    row(
        "batch",
        "seed.auto_reader.rate_vs_channel_async",
        paired(channel_async_log, auto_log),
        "x",
    );
    row(
        "batch",
        "seed.auto_reader.rate_vs_reader_read_val",
        paired(read_val_log, auto_log),
        "x",
    );
    row(
        "batch",
        "seed.auto_reader.rate_vs_yield_read_val",
        paired(yield_log, auto_log),
        "x",
    );
    row(
        "batch",
        "seed.auto_reader_x64.rate_vs_channel_async",
        paired(channel_async_log, auto64_log),
        "x",
    );
    row(
        "batch",
        "seed.auto_reader_x64.rate_vs_batch_api",
        paired(batch_log, auto64_log),
        "x",
    );
}

/// A forked child holding `len` bytes at `base` (the same address as in this
/// process), killed on drop.
struct Child {
    pid: libc::pid_t,
}

impl Drop for Child {
    fn drop(&mut self) {
        // SAFETY: `pid` is our child; killed and reaped exactly once.
        unsafe {
            libc::kill(self.pid, libc::SIGKILL);
            let mut status = 0;
            libc::waitpid(self.pid, &mut status, 0);
        }
    }
}

fn spawn_child(mem: &[u8]) -> Option<Child> {
    let mut ready = [0; 2];
    // SAFETY: the array has room for the two descriptors pipe writes.
    if unsafe { libc::pipe(ready.as_mut_ptr()) } != 0 {
        return None;
    }
    // SAFETY: the child calls only write and pause (async-signal-safe) on
    // memory and descriptors it inherited.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        let byte = 1u8;
        // SAFETY: writes a live one-byte local, then waits for SIGKILL.
        unsafe {
            libc::write(ready[1], (&raw const byte).cast(), 1);
            loop {
                libc::pause();
            }
        }
    }
    let mut byte = 0u8;
    // SAFETY: reads one byte into a live local, then closes our pipe ends.
    let got = unsafe {
        let n = libc::read(ready[0], (&raw mut byte).cast(), 1);
        libc::close(ready[0]);
        libc::close(ready[1]);
        n
    };
    // Keep `mem` alive and unmoved until the child exists.
    black_box(mem.as_ptr());
    (pid > 0 && got == 1).then_some(Child { pid })
}

/// One `process_vm_readv` over `pieces` (remote address, length) into `dst`.
fn raw_readv(pid: libc::pid_t, pieces: &[(usize, usize)], dst: &mut [u8]) -> isize {
    let mut local: heapless::Vec<libc::iovec, 256> = heapless::Vec::new();
    let mut remote: heapless::Vec<libc::iovec, 256> = heapless::Vec::new();
    let mut rest = dst;
    for &(addr, len) in pieces.iter().take(256) {
        let (head, tail) = std::mem::take(&mut rest).split_at_mut(len);
        rest = tail;
        let _ = local.push(libc::iovec {
            iov_base: head.as_mut_ptr().cast(),
            iov_len: len,
        });
        let _ = remote.push(libc::iovec {
            iov_base: addr as *mut libc::c_void,
            iov_len: len,
        });
    }
    // SAFETY: each local iovec describes a distinct part of `dst`, borrowed
    // mutably for this call; both arrays hold the same number of entries.
    unsafe {
        libc::process_vm_readv(
            pid,
            local.as_ptr(),
            local.len() as libc::c_ulong,
            remote.as_ptr(),
            remote.len() as libc::c_ulong,
            0,
        )
    }
}

fn syscall(ctx: &Ctx) {
    const BATCH: usize = 64;
    let pieces_per_sample: usize = ctx.pick(8192, 1024);
    let region = 8usize << 20;
    let mem: Vec<u8> = (0..region).map(|i| (i * 13) as u8).collect();
    let Some(child) = spawn_child(&mem) else {
        eprintln!("  batch syscall: fork failed, skipped");
        return;
    };
    let pid = child.pid;
    // Pages of the region, from its first page boundary (the allocation
    // itself need not start on one), so that "within a page" below is
    // within a page of the kernel's too.
    let base = (mem.as_ptr() as usize).next_multiple_of(4096);
    let pages = region / 4096 - 1;
    // Scattered: anywhere in the region, 8–64 bytes, never across a page.
    let mut rng = Lcg(7);
    let scattered: Vec<(usize, usize)> = (0..pieces_per_sample)
        .map(|_| {
            let len = 8 + (rng.next() as usize % 57);
            let page = rng.next() as usize % pages;
            let off = rng.next() as usize % (4096 - len);
            (base + page * 4096 + off, len)
        })
        .collect();
    // Structs: 8 structs of 8 adjacent fields (8–32 bytes each) per batch.
    let structs: Vec<(usize, usize)> = (0..pieces_per_sample / 8)
        .flat_map(|_| {
            let page = rng.next() as usize % pages;
            let mut addr = base + page * 4096 + (rng.next() as usize % 16) * 8;
            let sizes: Vec<usize> = (0..8).map(|_| 8 + (rng.next() as usize % 4) * 8).collect();
            sizes
                .into_iter()
                .map(move |len| {
                    let a = addr;
                    addr += len;
                    (a, len)
                })
                .collect::<Vec<_>>()
        })
        .collect();
    let dst = vec![0u8; 64 * 256];
    let logs: [Log; 5] = Default::default();
    let [
        raw64_log,
        crate64_log,
        single_structs_log,
        crate_structs_log,
        auto64_log,
    ] = &logs;
    let mut c = Compare::new("batch", "syscall", "single");
    let one_by_one = |pieces: &[(usize, usize)], dst: &mut [u8]| {
        let t = Instant::now();
        for &p in pieces {
            black_box(raw_readv(pid, &[p], &mut dst[..p.1]));
        }
        t.elapsed()
    };
    let pieces = scattered.clone();
    let mut d = dst.clone();
    c.variant("single", move || one_by_one(&pieces, &mut d));
    for (name, k) in [("raw16", 16usize), ("raw64", 64), ("raw256", 256)] {
        let pieces = scattered.clone();
        let mut d = dst.clone();
        let log = (k == 64).then_some(raw64_log);
        c.variant(name, move || {
            let t = Instant::now();
            for chunk in pieces.chunks(k) {
                black_box(raw_readv(pid, chunk, &mut d));
            }
            let t = t.elapsed();
            log.map_or(t, |log| logged(log, t))
        });
    }
    let mut reader =
        Reader::<_, _, BATCH, 256>::with_window(ProcessBackend::new(pid), vec![0u8; 4096]);
    let pieces = scattered.clone();
    let mut d = dst.clone();
    c.variant("crate64", move || {
        logged(crate64_log, crate_batches(&mut reader, &pieces, &mut d))
    });
    // The same calls with 16 and 256 pieces per batch, beside raw16 and
    // raw256: the crate's rate against the batch size.
    let mut reader =
        Reader::<_, _, 16, 256>::with_window(ProcessBackend::new(pid), vec![0u8; 4096]);
    let pieces = scattered.clone();
    let mut d = dst.clone();
    c.variant("crate16", move || {
        crate_batches(&mut reader, &pieces, &mut d)
    });
    let mut reader =
        Reader::<_, _, 256, 256>::with_window(ProcessBackend::new(pid), vec![0u8; 4096]);
    let pieces = scattered.clone();
    let mut d = dst.clone();
    c.variant("crate256", move || {
        crate_batches(&mut reader, &pieces, &mut d)
    });
    let pieces = structs.clone();
    let mut d = dst.clone();
    c.variant("single_structs", move || {
        logged(single_structs_log, one_by_one(&pieces, &mut d))
    });
    let mut reader =
        Reader::<_, _, BATCH, 256>::with_window(ProcessBackend::new(pid), vec![0u8; 4096]);
    let pieces = structs.clone();
    let mut d = dst.clone();
    c.variant("crate_structs", move || {
        logged(
            crate_structs_log,
            crate_batches(&mut reader, &pieces, &mut d),
        )
    });
    // The scattered pieces awaited through `AsyncReader`, as `K` chains
    // joined in one task, each awaiting its pieces one after the other: one
    // chain makes one call per piece (as `single`), 16 and 64 chains 16 and
    // 64 pieces per call (as `crate16` and `crate64`). What batching on
    // `.await` gains where a backend call is a system call.
    c.variant("auto1", timed_chains::<1>(pid, scattered.clone()));
    c.variant("auto16", timed_chains::<16>(pid, scattered.clone()));
    let mut auto64 = timed_chains::<64>(pid, scattered.clone());
    c.variant("auto64", move || logged(auto64_log, auto64()));
    // A sample is about 1.5 ms, so many rounds cost little and steady the
    // medians, whose run-to-run spread at 21 rounds was about ±2%.
    let r = c.run(ctx.rounds(101, 3));
    r.emit_rate_ratio(pieces_per_sample as f64 / 1e6, "Mpieces/s");
    row(
        "batch",
        "syscall.crate64.rate_vs_raw64",
        paired(raw64_log, crate64_log),
        "x",
    );
    row(
        "batch",
        "syscall.crate_structs.rate_vs_single_structs",
        paired(single_structs_log, crate_structs_log),
        "x",
    );
    row(
        "batch",
        "syscall.auto64.rate_vs_crate64",
        paired(crate64_log, auto64_log),
        "x",
    );
    drop(child);
    drop(dst);
}

/// A sample of [`piece_chains`] over `pieces` on an `AsyncReader` of
/// process `pid`: the time of one pass.
fn timed_chains<const K: usize>(
    pid: libc::pid_t,
    pieces: Vec<(usize, usize)>,
) -> impl FnMut() -> Duration {
    let mut auto = AsyncReader::<_, _>::new(ProcessBackend::new(pid), [0u8; 0]);
    move || {
        let t = Instant::now();
        black_box(embassy_futures::block_on(
            auto.run(|r| piece_chains::<K, _>(r, &pieces)),
        ));
        t.elapsed()
    }
}

/// `K` chains joined, chain `k` awaiting the pieces of the `k`-th `K`-th of
/// `pieces` one after the other, each into a buffer of its own: `K` pieces
/// per flush. The bytes each chain read.
async fn piece_chains<const K: usize, B: ReadBackend>(
    r: &AsyncReader<B, [u8; 0]>,
    pieces: &[(usize, usize)],
) -> [usize; K] {
    let part = pieces.len().div_ceil(K);
    embassy_futures::join::join_array(core::array::from_fn::<_, K, _>(|k| async move {
        let mut buf = [0u8; 64];
        let mut ok = 0usize;
        for &(addr, len) in pieces.chunks(part).nth(k).unwrap_or(&[]) {
            if let Some(buf) = buf.get_mut(..len) {
                if r.read(addr as u64, buf).await.is_ok() {
                    ok += len;
                }
            }
        }
        ok
    }))
    .await
}

/// Reads `pieces` through the crate, 64 per `read_many`, packed into `dst`
/// as `raw_readv` packs them.
fn crate_batches<const K: usize>(
    reader: &mut Reader<ProcessBackend, Vec<u8>, K, 256>,
    pieces: &[(usize, usize)],
    dst: &mut [u8],
) -> Duration {
    let t = Instant::now();
    let mut ok = 0usize;
    for chunk in pieces.chunks(K) {
        let mut ops: heapless::Vec<ReadOp<'_>, K> = heapless::Vec::new();
        let mut rest = &mut *dst;
        for (i, &(addr, len)) in chunk.iter().enumerate() {
            let (head, tail) = std::mem::take(&mut rest).split_at_mut(len);
            rest = tail;
            let _ = ops.push(ReadOp::new(addr as u64, head, i));
        }
        reader.read_many(&mut ops, |c| ok += c.ok_bytes());
    }
    black_box(ok);
    t.elapsed()
}

/// A temporary file, removed on drop.
struct TempFile(PathBuf);

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn file(ctx: &Ctx) {
    const CHUNK: usize = 4096;
    const BIG: usize = 1 << 20;
    let size: usize = ctx.pick(256 << 20, 16 << 20);
    let path = TempFile(std::env::temp_dir().join(format!("batch-bench-{}", std::process::id())));
    {
        let block: Vec<u8> = (0..BIG).map(|i| (i * 31) as u8).collect();
        let mut f = File::create(&path.0).expect("create the bench file");
        for _ in 0..size / BIG {
            std::io::Write::write_all(&mut f, &block).expect("write the bench file");
        }
        // No writeback may run while the reads are timed.
        f.sync_all().expect("sync the bench file");
    }
    let f = File::open(&path.0).expect("open the bench file");
    let f = &f;
    // The ceiling and read_iter read into the same 1 MiB buffer: where a
    // buffer's pages fall alone moves a 1 MiB copy by 10% or more here, which
    // would otherwise decide the comparison.
    let dest = RefCell::new(vec![0u8; BIG]);
    let dest = &dest;
    let (ceiling_log, read_iter_log) = (Log::default(), Log::default());
    let (ceiling_log, read_iter_log) = (&ceiling_log, &read_iter_log);
    let mut c = Compare::new("batch", "file", "naive");
    c.variant("naive", move || {
        let t = Instant::now();
        let mut off = 0u64;
        while off < size as u64 {
            let mut buf = vec![0u8; CHUNK];
            let n = f.read_at(&mut buf, off).unwrap_or(0);
            black_box(&buf);
            if n == 0 {
                break;
            }
            off += n as u64;
        }
        t.elapsed()
    });
    c.variant("ceiling", move || {
        let mut big = dest.borrow_mut();
        let t = Instant::now();
        let mut off = 0u64;
        while off < size as u64 {
            let n = f.read_at(&mut big, off).unwrap_or(0);
            black_box(&big);
            if n == 0 {
                break;
            }
            off += n as u64;
        }
        logged(ceiling_log, t.elapsed())
    });
    let geometry = Geometry::new(None, BIG, 1024).expect("valid geometry");
    let mut reader =
        Reader::<_, _, 256, 256>::with_window(FileBackend::new(f, geometry), vec![0u8; BIG]);
    c.variant("read_iter", move || {
        let mut buf = dest.borrow_mut();
        let t = Instant::now();
        let mut ok = 0usize;
        let mut off = 0u64;
        while off < size as u64 {
            let ops = buf
                .chunks_mut(CHUNK)
                .enumerate()
                .map(|(i, b)| ReadOp::new(off + (i * CHUNK) as u64, b, i));
            reader.read_iter(ops, |c| ok += c.ok_bytes());
            black_box(&buf);
            off += BIG as u64;
        }
        black_box(ok);
        logged(read_iter_log, t.elapsed())
    });
    let src = vec![0x5au8; BIG];
    let mut dst = vec![0u8; BIG];
    c.variant("memcpy", move || {
        let t = Instant::now();
        for _ in 0..size / BIG {
            dst.copy_from_slice(black_box(&src));
            black_box(&mut dst);
        }
        t.elapsed()
    });
    let r = c.run(ctx.rounds(11, 3));
    r.emit_time_ratio();
    let memcpy = size as f64 / r.median("memcpy").as_secs_f64() / 1e9;
    for v in ["naive", "ceiling", "read_iter"] {
        let gbs = size as f64 / r.median(v).as_secs_f64() / 1e9;
        row("batch", &format!("file.{v}.gb_per_s"), gbs, "GB/s");
        row(
            "batch",
            &format!("file.{v}.memcpy_fraction"),
            gbs / memcpy,
            "fraction",
        );
    }
    row(
        "batch",
        "file.read_iter.t_vs_ceiling",
        paired(read_iter_log, ceiling_log),
        "x",
    );
    drop(path);
}
