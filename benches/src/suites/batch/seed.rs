//! Seed 000's calls-per-second table: a bare function call, a deque and one
//! or two channels used in turn, the batch API (fresh and reused ops) and
//! its floors, and the async rows on one current-thread tokio runtime.

use super::ops::{
    backend_sum, by_hand, by_hand_checked, checked_backend_sum, read_sum, timed_fresh,
    timed_reused, timed_reused_tagged,
};
use super::{Lcg, Log, logged, paired_rows};
use crate::harness::{Compare, Ctx};
use batch_reader::backends::MemoryBackend;
use batch_reader::{AsyncReader, Geometry, ReadBackend, Reader};
use std::collections::VecDeque;
use std::hint::black_box;
use std::sync::Arc;
use std::sync::mpsc;
use std::time::Instant;

/// Ops per `read_many`, and the reader's window and fragment table.
const BATCH: usize = 64;

/// What every variant reads: the same memory, at the same addresses.
struct Input {
    mem: Vec<u8>,
    addrs: Vec<usize>,
}

impl Input {
    fn new(calls: usize) -> Self {
        let mem: Vec<u8> = (0..1usize << 20).map(|i| (i * 7) as u8).collect();
        let mut rng = Lcg(1);
        let addrs = (0..calls)
            .map(|_| (rng.next() as usize % ((1 << 20) - 8)) & !7)
            .collect();
        Self { mem, addrs }
    }
}

/// The sample logs of the variants that ratio rows pair with each other.
#[derive(Default)]
struct Logs {
    deque: Log,
    batch: Log,
    reused: Log,
    keyed: Log,
    by_hand: Log,
    by_hand_reused: Log,
    channel_async: Log,
    auto: Log,
    read_val: Log,
    backend: Log,
    auto64: Log,
    backend_fresh: Log,
    yield_read_val: Log,
    checked: Log,
    checked_reused: Log,
    by_hand_checked: Log,
}

pub(super) fn run(ctx: &Ctx) {
    let calls: usize = ctx.pick(1 << 18, 1 << 16);
    let input = Input::new(calls);
    let logs = Logs::default();
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("tokio runtime");
    let geometry = Geometry::new(Some(4096), 4096, 1024).expect("valid geometry");
    let mut c = Compare::new("batch", "seed", "bare");
    calls_in_turn(&mut c, &input, &logs);
    batch_api(&mut c, &input, geometry, &logs);
    floors(&mut c, &input, geometry, &logs);
    single_reads(&mut c, &input, geometry, &rt, &logs);
    async_rows(&mut c, &input, &rt, &logs);
    auto_reader(&mut c, &input, geometry, &rt, &logs);
    let r = c.run(ctx.rounds(31, 7));
    r.emit_rate_ratio(calls as f64 / 1e6, "Mcalls/s");
    ratio_rows(&logs);
}

#[inline(never)]
fn bare_read(mem: &[u8], addr: usize) -> u64 {
    match mem.get(addr..addr + 8).map(<[u8; 8]>::try_from) {
        Some(Ok(b)) => u64::from_ne_bytes(b),
        _ => 0,
    }
}

/// The bare call, and a deque and one or two channels used in turn.
fn calls_in_turn<'a>(c: &mut Compare<'a>, input: &'a Input, logs: &'a Logs) {
    let (mem, addrs) = (&input.mem[..], &input.addrs[..]);
    c.variant("bare", move || {
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
        logged(&logs.deque, t.elapsed())
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
}

/// The batch API: each batch's ops built afresh (as in the seed's table),
/// one op array reused, and reused with tags that are not indices.
fn batch_api<'a>(c: &mut Compare<'a>, input: &'a Input, geometry: Geometry, logs: &'a Logs) {
    let (mem, addrs) = (&input.mem[..], &input.addrs[..]);
    let new_reader = || {
        Reader::<_, _, BATCH, BATCH>::with_window(
            MemoryBackend::new(mem, geometry),
            vec![0u8; 4096],
        )
    };
    let mut reader = new_reader();
    c.variant("batch_api", move || {
        logged(
            &logs.batch,
            timed_fresh::<BATCH>(addrs, |ops| read_sum(&mut reader, ops)),
        )
    });
    // One op array for the whole run, only the addresses set per batch: what
    // a caller that reads the same shapes over and over can do.
    let mut reader = new_reader();
    c.variant("batch_api_reused", move || {
        logged(
            &logs.reused,
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
            &logs.keyed,
            timed_reused_tagged::<BATCH>(addrs, |i| !i, |ops| read_sum(&mut reader, ops)),
        )
    });
}

/// Not contenders: the batch shapes without the crate, and the backend
/// without the reader, before and after the check no reader can skip.
fn floors<'a>(c: &mut Compare<'a>, input: &'a Input, geometry: Geometry, logs: &'a Logs) {
    let (mem, addrs) = (&input.mem[..], &input.addrs[..]);
    // The same ops, each filled by a plain copy from memory and consumed
    // the same way: what the caller's side of a batch costs, the floor
    // under `batch_api` and `batch_api_reused`.
    c.variant("ops_by_hand", move || {
        logged(
            &logs.by_hand,
            timed_fresh::<BATCH>(addrs, |ops| by_hand(mem, black_box(ops))),
        )
    });
    c.variant("ops_by_hand_reused", move || {
        logged(
            &logs.by_hand_reused,
            timed_reused::<BATCH>(addrs, |ops| by_hand(mem, black_box(ops))),
        )
    });
    // The backend alone, called directly on the op array, each value added
    // up in its op's report, as the reader's direct route calls it: what is
    // left of a batch without the reader.
    let mut backend = MemoryBackend::new(mem, geometry);
    c.variant("backend_only_reused", move || {
        logged(
            &logs.backend,
            timed_reused::<BATCH>(addrs, |ops| backend_sum(&mut backend, ops)),
        )
    });
    let mut backend = MemoryBackend::new(mem, geometry);
    c.variant("backend_only", move || {
        logged(
            &logs.backend_fresh,
            timed_fresh::<BATCH>(addrs, |ops| backend_sum(&mut backend, ops)),
        )
    });
    // Not a floor for a reader: the by-hand loop with the check folded into
    // each op's copy, which only code that reads the memory itself can do.
    // What the check costs where it is not a pass of its own.
    c.variant("ops_by_hand_checked", move || {
        logged(
            &logs.by_hand_checked,
            timed_fresh::<BATCH>(addrs, |ops| by_hand_checked(mem, geometry, black_box(ops))),
        )
    });
    // The backend on the same ops after the one pass over them that tests
    // each is one fragment of the geometry, the test a reader must make
    // before it hands the ops over as they are (an op across a boundary
    // must be split): what is left of a batch when a reader keeps nothing
    // for its ops' completions.
    let mut backend = MemoryBackend::new(mem, geometry);
    c.variant("backend_checked", move || {
        logged(
            &logs.checked,
            timed_fresh::<BATCH>(addrs, |ops| checked_backend_sum(&mut backend, ops)),
        )
    });
    let mut backend = MemoryBackend::new(mem, geometry);
    c.variant("backend_checked_reused", move || {
        logged(
            &logs.checked_reused,
            timed_reused::<BATCH>(addrs, |ops| checked_backend_sum(&mut backend, ops)),
        )
    });
}

/// The floors under `auto_reader`: one synchronous `read_val` per address
/// (one backend call per read, the calls a sequence of awaited reads
/// makes), and the same after one Pending per read polled again at once.
fn single_reads<'a>(
    c: &mut Compare<'a>,
    input: &'a Input,
    geometry: Geometry,
    rt: &'a tokio::runtime::Runtime,
    logs: &'a Logs,
) {
    let (mem, addrs) = (&input.mem[..], &input.addrs[..]);
    // The same reader type the async reader holds (no scratch, a fragment
    // table as long as its queue).
    let new_reader = || {
        Reader::<_, _, { batch_reader::DEFAULT_WINDOW }, { batch_reader::DEFAULT_QUEUE }>::with_window(
            MemoryBackend::new(mem, geometry),
            [0u8; 0],
        )
    };
    let mut single = new_reader();
    c.variant("reader_read_val", move || {
        let t = Instant::now();
        let mut sum = 0u64;
        for &a in addrs {
            sum = sum.wrapping_add(single.read_val::<u64>(black_box(a) as u64).unwrap_or(0));
        }
        black_box(sum);
        logged(&logs.read_val, t.elapsed())
    });
    // As `Run` polls again after a flush. Any reader that batches on
    // `.await` yields once per read in this shape; this is that yield
    // without any queue.
    let mut yielding = new_reader();
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
        logged(&logs.yield_read_val, t.elapsed())
    });
}

/// Seed 000's async rows: one and two channels in one task, and two tasks
/// exchanging request and response, all on one current-thread runtime.
fn async_rows<'a>(
    c: &mut Compare<'a>,
    input: &'a Input,
    rt: &'a tokio::runtime::Runtime,
    logs: &'a Logs,
) {
    let (mem, addrs) = (&input.mem[..], &input.addrs[..]);
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
            logged(&logs.channel_async, t.elapsed())
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
    let shared: Arc<[u8]> = Arc::from(mem);
    c.variant("two_tasks", move || {
        let shared = Arc::clone(&shared);
        rt.block_on(two_tasks(shared, addrs))
    });
}

/// One sample of `two_tasks`: a server task answering each address with
/// its value over a second channel.
async fn two_tasks(shared: Arc<[u8]>, addrs: &[usize]) -> std::time::Duration {
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
}

/// `AsyncReader`: each read awaited before the next (one op per flush, the
/// request-response shape of the channel rows), and the same reads as 8
/// and as 64 chains joined (8 or 64 ops per flush; 64 is the batch API's
/// batch size).
fn auto_reader<'a>(
    c: &mut Compare<'a>,
    input: &'a Input,
    geometry: Geometry,
    rt: &'a tokio::runtime::Runtime,
    logs: &'a Logs,
) {
    let (mem, addrs) = (&input.mem[..], &input.addrs[..]);
    let new_auto = || AsyncReader::<_, _>::new(MemoryBackend::new(mem, geometry), [0u8; 0]);
    let mut auto = new_auto();
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
        logged(&logs.auto, t.elapsed())
    });
    let mut auto = new_auto();
    c.variant("auto_reader_x8", move || {
        let t = Instant::now();
        black_box(rt.block_on(auto.run(|r| joined_chains::<8, _>(r, addrs))));
        t.elapsed()
    });
    let mut auto = new_auto();
    c.variant("auto_reader_x64", move || {
        let t = Instant::now();
        black_box(rt.block_on(auto.run(|r| joined_chains::<64, _>(r, addrs))));
        logged(&logs.auto64, t.elapsed())
    });
}

/// The rate ratios between variants: the reference's time over the
/// contender's, paired in the same rounds.
fn ratio_rows(l: &Logs) {
    paired_rows(&[
        ("seed.batch_api.rate_vs_deque", &l.deque, &l.batch),
        // Against the by-hand floors.
        ("seed.batch_api.rate_vs_ops_by_hand", &l.by_hand, &l.batch),
        (
            "seed.batch_api_reused.rate_vs_ops_by_hand_reused",
            &l.by_hand_reused,
            &l.reused,
        ),
        (
            "seed.batch_api_reused_keyed.rate_vs_ops_by_hand_reused",
            &l.by_hand_reused,
            &l.keyed,
        ),
        (
            "seed.backend_only.rate_vs_ops_by_hand",
            &l.by_hand,
            &l.backend_fresh,
        ),
        (
            "seed.backend_only_reused.rate_vs_ops_by_hand_reused",
            &l.by_hand_reused,
            &l.backend,
        ),
        (
            "seed.backend_checked.rate_vs_ops_by_hand",
            &l.by_hand,
            &l.checked,
        ),
        (
            "seed.backend_checked_reused.rate_vs_ops_by_hand_reused",
            &l.by_hand_reused,
            &l.checked_reused,
        ),
        (
            "seed.ops_by_hand_checked.rate_vs_ops_by_hand",
            &l.by_hand,
            &l.by_hand_checked,
        ),
        // The batch API against those floors: the reader's own share.
        (
            "seed.batch_api.rate_vs_backend_checked",
            &l.checked,
            &l.batch,
        ),
        (
            "seed.batch_api_reused.rate_vs_backend_checked_reused",
            &l.checked_reused,
            &l.reused,
        ),
        (
            "seed.auto_reader.rate_vs_channel_async",
            &l.channel_async,
            &l.auto,
        ),
        (
            "seed.auto_reader.rate_vs_reader_read_val",
            &l.read_val,
            &l.auto,
        ),
        (
            "seed.auto_reader.rate_vs_yield_read_val",
            &l.yield_read_val,
            &l.auto,
        ),
        (
            "seed.auto_reader_x64.rate_vs_channel_async",
            &l.channel_async,
            &l.auto64,
        ),
        (
            "seed.auto_reader_x64.rate_vs_batch_api",
            &l.batch,
            &l.auto64,
        ),
    ]);
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
