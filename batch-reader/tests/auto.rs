//! The async reader under three executors: a minimal `block_on`,
//! embassy-futures (`block_on` and `join`, what embassy tasks use without an
//! executor), and tokio's current-thread runtime.
#![cfg(not(loom))]

extern crate alloc;

use alloc::sync::Arc;
use alloc::task::Wake;
use core::future::Future;
use core::pin::{Pin, pin};
use core::sync::atomic::{AtomicBool, Ordering};
use core::task::{Context, Poll, Waker};

use batch_reader::backends::{Faulty, MemoryBackend};
use batch_reader::{AsyncReader, Geometry, PartialRead, ReadErrorKind};
use embassy_futures::join::{join, join3};

/// The smallest executor: polls, parks until woken, polls again.
fn block_on<F: Future>(f: F) -> F::Output {
    struct Flag(AtomicBool, std::thread::Thread);
    impl Wake for Flag {
        fn wake(self: Arc<Self>) {
            self.wake_by_ref();
        }
        fn wake_by_ref(self: &Arc<Self>) {
            self.0.store(true, Ordering::Release);
            self.1.unpark();
        }
    }
    let flag = Arc::new(Flag(AtomicBool::new(false), std::thread::current()));
    let waker = Waker::from(flag.clone());
    let mut cx = Context::from_waker(&waker);
    let mut f = pin!(f);
    loop {
        if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
        while !flag.0.swap(false, Ordering::Acquire) {
            std::thread::park();
        }
    }
}

fn tokio_block_on<F: Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime")
        .block_on(f)
}

/// 1 KiB in which the word at `8 * i` holds `8 * (i + 1)`: following a
/// pointer moves one word on.
fn linked() -> Vec<u8> {
    let mut mem = vec![0u8; 1024];
    for i in 0..128u64 {
        mem[i as usize * 8..][..8].copy_from_slice(&((i + 1) * 8).to_ne_bytes());
    }
    mem
}

type Mem<'m> = MemoryBackend<'m>;
type Seed<'m> = AsyncReader<Mem<'m>, [u8; 0]>;
type Values = [Result<u64, ReadErrorKind>; 3];
/// An executor running the chains on a reader it may drive with `run`.
type RunOn = fn(&mut Seed<'_>) -> Values;
/// An executor running the chains on a shared reader.
type PollOn = fn(&Seed<'_>) -> Values;

fn reader(mem: &[u8]) -> AsyncReader<Mem<'_>, [u8; 0]> {
    AsyncReader::new(
        MemoryBackend::new(mem, Geometry::new(None, 1024, 1024).expect("geometry")),
        [],
    )
}

/// The seed's example: one read; three dependent reads (the last at the
/// pointer plus 0x10); five dependent reads; all joined.
async fn seed_chains(r: &AsyncReader<Mem<'_>, [u8; 0]>) -> [Result<u64, ReadErrorKind>; 3] {
    let p1 = r.read_val::<u64>(0x40);
    let p2 = async {
        let p = r.read_val::<u64>(0x100).await?;
        let p = r.read_val::<u64>(p).await?;
        r.read_val::<u64>(p + 0x10).await
    };
    let p3 = async {
        let mut p = 0x200;
        for _ in 0..5 {
            p = r.read_val::<u64>(p).await?;
        }
        Ok(p)
    };
    let (a, b, c) = join3(p1, p2, p3).await;
    [a, b, c]
}

/// What the chains must read: 0x40 -> 0x48; 0x100 -> 0x108 -> 0x110, then
/// 0x120 -> 0x128; 0x200 five words on, 0x228.
const SEED_VALUES: [Result<u64, ReadErrorKind>; 3] = [Ok(0x48), Ok(0x128), Ok(0x228)];

#[test]
fn seed_chains_take_five_calls_under_every_executor() {
    let mem = linked();
    let executors: [(&str, RunOn); 3] = [
        ("block_on", |r| block_on(r.run(seed_chains))),
        ("embassy", |r| embassy_futures::block_on(r.run(seed_chains))),
        ("tokio", |r| tokio_block_on(r.run(seed_chains))),
    ];
    for (name, exec) in executors {
        let mut r = reader(&mem);
        assert_eq!(exec(&mut r), SEED_VALUES, "{name}");
        let c = r.counters();
        assert_eq!(c.backend_calls, 5, "{name}");
        // 3 + 2 + 2 + 1 + 1 ops: every read once.
        assert_eq!((c.ops, c.backend_ops), (9, 9), "{name}");
    }
}

#[test]
fn seed_chains_take_five_calls_without_run() {
    let mem = linked();
    let executors: [(&str, PollOn); 3] = [
        ("block_on", |r| block_on(seed_chains(r))),
        ("embassy", |r| embassy_futures::block_on(seed_chains(r))),
        ("tokio", |r| tokio_block_on(seed_chains(r))),
    ];
    for (name, exec) in executors {
        let r = reader(&mem);
        assert_eq!(exec(&r), SEED_VALUES, "{name}");
        assert_eq!(r.counters().backend_calls, 5, "{name}");
        assert_eq!(r.counters().ops, 9, "{name}");
    }
}

#[test]
#[cfg_attr(
    miri,
    ignore = "leaks the reader on purpose, to lend it to spawned tasks"
)]
fn two_tasks_on_one_thread_share_batches() {
    // Spawned tasks need 'static borrows: leak the memory and the reader.
    let mem: &'static [u8] = Box::leak(linked().into_boxed_slice());
    let r: &'static AsyncReader<Mem<'static>, [u8; 0]> = Box::leak(Box::new(reader(mem)));
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime");
    let local = tokio::task::LocalSet::new();
    let chain = move |start: u64, steps: usize| async move {
        let mut p = start;
        for _ in 0..steps {
            p = r.read_val::<u64>(p).await?;
        }
        Ok::<u64, ReadErrorKind>(p)
    };
    let (a, b) = local.block_on(&rt, async {
        let a = tokio::task::spawn_local(chain(0, 4));
        let b = tokio::task::spawn_local(chain(512, 4));
        (a.await.expect("task a"), b.await.expect("task b"))
    });
    assert_eq!((a, b), (Ok(32), Ok(544)));
    // Each task's read is queued before the other task's re-poll flushes:
    // one call per step for both.
    assert_eq!(r.counters().backend_calls, 4);
}

#[test]
fn partial_failures_reach_each_future() {
    let mem: Vec<u8> = (0..=255).collect();
    let mut backend = Faulty::new(MemoryBackend::new(
        &mem,
        Geometry::new(Some(64), 64, 64).expect("geometry"),
    ));
    backend
        .inject_fault(100..104, ReadErrorKind::Io)
        .expect("room");
    backend
        .inject_fault(130..131, ReadErrorKind::Unmapped)
        .expect("room");
    let mut r: AsyncReader<_, _> = AsyncReader::new(backend, [0u8; 64]);
    let (mut a, mut b, mut c, mut d) = ([0xaau8; 8], [0xaau8; 8], [0xaau8; 8], [0xaau8; 16]);
    let (pa, pb, pc, pd) = (&mut a, &mut b, &mut c, &mut d);
    let ((ra, rb), (rc, rd), v) = block_on(r.run(|r| async move {
        join3(
            join(r.read(92, pa), r.read(96, pb)),
            join(r.read(124, pc), r.read(250, pd)),
            join(r.read_val::<u32>(128), r.read_val::<u32>(0)),
        )
        .await
    }));
    // a: all before the fault. b: 4 bytes, then the fault at 100.
    assert_eq!(ra, Ok(()));
    assert_eq!(a, *<&[u8; 8]>::try_from(&mem[92..100]).expect("8 bytes"));
    assert_eq!(
        rb,
        Err(PartialRead {
            valid: 4,
            kind: ReadErrorKind::Io
        })
    );
    assert_eq!(b, [96, 97, 98, 99, 0xaa, 0xaa, 0xaa, 0xaa]);
    // c crosses the page at 128 and stops at 130; d runs off the end.
    assert_eq!(
        rc,
        Err(PartialRead {
            valid: 6,
            kind: ReadErrorKind::Unmapped
        })
    );
    assert_eq!(c, [124, 125, 126, 127, 128, 129, 0xaa, 0xaa]);
    assert_eq!(
        rd,
        Err(PartialRead {
            valid: 6,
            kind: ReadErrorKind::OutOfBounds
        })
    );
    assert_eq!(&d[..6], &mem[250..256]);
    assert!(d[6..].iter().all(|&x| x == 0xaa));
    assert_eq!(
        v,
        (
            Err(ReadErrorKind::Unmapped),
            Ok(u32::from_ne_bytes([0, 1, 2, 3]))
        )
    );
    // One batch, then the members of the failed merged reads alone.
    assert_eq!(r.counters().ops, 6);
    assert!(r.counters().backend_calls <= 2);
}

#[test]
fn a_full_queue_flushes_at_once() {
    let mem: Vec<u8> = (0..64).collect();
    let backend = MemoryBackend::new(&mem, Geometry::new(None, 64, 64).expect("geometry"));
    let mut r = AsyncReader::<_, _, 4>::new(backend, [0u8; 0]);
    let got = block_on(r.run(|r| async move {
        let (a, b, c) = join3(
            join(r.read_val::<u8>(0), r.read_val::<u8>(10)),
            join(r.read_val::<u8>(20), r.read_val::<u8>(30)),
            join(r.read_val::<u8>(40), r.read_val::<u8>(50)),
        )
        .await;
        [a.0, a.1, b.0, b.1, c.0, c.1]
    }));
    assert_eq!(got, [0, 10, 20, 30, 40, 50].map(Ok));
    // The fourth read filled the queue and went out with the first three
    // (call 1). The fifth took the one slot freed; the first three keep
    // theirs until polled, so the sixth found none and was read alone (call
    // 2). The run sent the fifth (call 3).
    assert_eq!(calls_and_ops(&r), (3, 6));
}

#[test]
fn reads_larger_than_staging_go_alone() {
    let mem: Vec<u8> = (0..=255).collect();
    let backend = MemoryBackend::new(&mem, Geometry::new(None, 256, 64).expect("geometry"));
    let mut r = AsyncReader::<_, _, 8, 16>::new(backend, [0u8; 0]);
    let mut big = [0u8; 40];
    let mut small = [0u8; 8];
    let (rb, rs) = block_on(r.run(|r| join(r.read(10, &mut big), r.read(100, &mut small))));
    assert_eq!((rb, rs), (Ok(()), Ok(())));
    assert_eq!(&big[..], &mem[10..50]);
    assert_eq!(&small[..], &mem[100..108]);
    assert_eq!(r.counters().backend_calls, 2);
    // An empty read reaches no backend.
    assert_eq!(block_on(r.read(7, &mut [])), Ok(()));
    assert_eq!(r.counters().backend_calls, 2);
}

#[test]
fn a_dropped_future_leaves_the_batch() {
    let mem: Vec<u8> = (0..64).collect();
    let r = reader(&mem);
    let noop = Waker::noop();
    let mut cx = Context::from_waker(noop);
    let mut a_buf = [0u8; 4];
    let mut b_buf = [0u8; 4];
    {
        let mut a = Box::pin(r.read(0, &mut a_buf));
        let mut b = Box::pin(r.read(8, &mut b_buf));
        assert!(a.as_mut().poll(&mut cx).is_pending());
        assert!(b.as_mut().poll(&mut cx).is_pending());
        drop(a);
        // Polled again outside a run: b flushes, alone.
        assert_eq!(b.as_mut().poll(&mut cx), Poll::Ready(Ok(())));
    }
    assert_eq!((a_buf, b_buf), ([0; 4], [8, 9, 10, 11]));
    assert_eq!(calls_and_ops(&r), (1, 1));
}

#[test]
fn a_leaked_future_never_writes_its_buffer() {
    let mem: Vec<u8> = (0..64).collect();
    let r = reader(&mem);
    let noop = Waker::noop();
    let mut cx = Context::from_waker(noop);
    {
        let mut buf = vec![0u8; 4];
        // Leaked without a heap allocation (so Miri's leak check stays on):
        // its `Drop` never runs, and the buffer is freed right after.
        let mut leaked = core::mem::ManuallyDrop::new(r.read(0, &mut buf));
        assert!(Pin::new(&mut *leaked).poll(&mut cx).is_pending());
        drop(buf);
    }
    // Later batches (this one carries the leaked op too) touch only staging.
    let mut buf = [0u8; 4];
    assert_eq!(block_on(r.read(16, &mut buf)), Ok(()));
    assert_eq!(buf, [16, 17, 18, 19]);
    assert_eq!(block_on(r.read_val::<u8>(63)), Ok(63));
}

/// xorshift64*.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

/// Futures on stack buffers, polled, flushed and dropped at random points:
/// every future that completes holds exactly its bytes, every dropped one
/// leaves its buffer as it was. Run under Miri, this is the check that no
/// batch writes through a stale buffer.
#[test]
fn random_cancellation() {
    let mem: Vec<u8> = (0..=255).collect();
    let r = AsyncReader::<_, _, 5, 48>::new(chaos_backend(&mem), [0u8; 16]);
    let noop = Waker::noop();
    let mut cx = Context::from_waker(noop);
    let cases = if cfg!(miri) { 12 } else { 400 };
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for _ in 0..cases {
        let mut bufs = [[0xeeu8; 12]; 6];
        let specs: Vec<(u64, usize)> = (0..6)
            .map(|_| (rng.next() % 256, 1 + (rng.next() % 12) as usize))
            .collect();
        let mut outcomes: Vec<Option<Result<(), PartialRead>>> = vec![None; 6];
        {
            let mut futs: Vec<_> = bufs
                .iter_mut()
                .zip(&specs)
                .map(|(b, &(addr, len))| Some(Box::pin(r.read(addr, &mut b[..len]))))
                .collect();
            for _ in 0..10 {
                let i = (rng.next() % 6) as usize;
                match rng.next() % 3 {
                    0 => futs[i] = None,
                    _ => {
                        if let Some(f) = futs[i].as_mut() {
                            if let Poll::Ready(o) = f.as_mut().poll(&mut cx) {
                                outcomes[i] = Some(o);
                                futs[i] = None;
                            }
                        }
                    }
                }
            }
            // The rest are dropped here, queued, read or never polled.
        }
        check_outcomes(&mem, &specs, &bufs, &outcomes);
    }
    all_came_back(&r);
}

/// The setup of the random cancellation tests: bytes 0..=255 with byte 200
/// failing, boundaries every 32 bytes, 6 ops per call.
fn chaos_backend(mem: &[u8]) -> Faulty<MemoryBackend<'_>> {
    let mut backend = Faulty::new(MemoryBackend::new(
        mem,
        Geometry::new(Some(32), 32, 6).expect("geometry"),
    ));
    backend
        .inject_fault(200..201, ReadErrorKind::Io)
        .expect("room");
    backend
}

/// What random cancellation must leave: every future that completed holds
/// exactly its bytes (or its valid prefix and the right failure); every
/// buffer whose future was dropped unresolved is untouched.
fn check_outcomes(
    mem: &[u8],
    specs: &[(u64, usize)],
    bufs: &[[u8; 12]],
    outcomes: &[Option<Result<(), PartialRead>>],
) {
    for (i, (&(addr, len), buf)) in specs.iter().zip(bufs).enumerate() {
        let expect_ok = |valid: usize| {
            let a = addr as usize;
            buf[..valid].iter().zip(a..).all(|(&x, at)| x == mem[at])
        };
        match outcomes[i] {
            None => assert!(buf.iter().all(|&x| x == 0xee), "dropped future {i} wrote"),
            Some(Ok(())) => {
                assert!(addr as usize + len <= 256 && !(addr..addr + len as u64).contains(&200));
                assert!(expect_ok(len));
            }
            Some(Err(PartialRead { valid, kind })) => {
                assert!(valid < len);
                assert!(expect_ok(valid));
                let at = addr + valid as u64;
                assert_eq!(
                    kind,
                    if at == 200 {
                        ReadErrorKind::Io
                    } else {
                        ReadErrorKind::OutOfBounds
                    }
                );
            }
        }
        assert!(buf[len..].iter().all(|&x| x == 0xee));
    }
}

/// Every slot, the solo op and all staging came back: a full queue of
/// full-size reads still batches.
fn all_came_back(r: &AsyncReader<Faulty<MemoryBackend<'_>>, [u8; 16], 5, 48>) {
    let mut bufs = [[0u8; 8]; 5];
    let [a, b, c, d, e] = &mut bufs;
    let before = r.counters().backend_calls;
    block_on(async {
        let (x, y) = join(
            join(r.read(0, a), r.read(8, b)),
            join3(r.read(16, c), r.read(24, d), r.read(40, e)),
        )
        .await;
        assert_eq!((x, y), ((Ok(()), Ok(())), (Ok(()), Ok(()), Ok(()))));
    });
    // Two reads merge within the 32-byte boundary, so the backend sees one call.
    assert_eq!(r.counters().backend_calls - before, 1);
    assert_eq!(bufs[4], [40, 41, 42, 43, 44, 45, 46, 47]);
}

/// As `random_cancellation`, with the futures polled inside a run: with the
/// run's own context (a read queued alone becomes the solo op, a second one
/// moves it into a slot), with another waker (as a future that left its run
/// would be), or dropped, and the run flushing whenever its future returns
/// `Pending`. Run under Miri, this is the check for the solo op's paths.
#[test]
fn random_cancellation_under_a_run() {
    let mem: Vec<u8> = (0..=255).collect();
    let mut r = AsyncReader::<_, _, 5, 48>::new(chaos_backend(&mem), [0u8; 16]);
    let cases = if cfg!(miri) { 12 } else { 400 };
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    for _ in 0..cases {
        let mut bufs = [[0xeeu8; 12]; 6];
        let specs: Vec<(u64, usize)> = (0..6)
            .map(|_| (rng.next() % 256, 1 + (rng.next() % 12) as usize))
            .collect();
        let mut outcomes: Vec<Option<Result<(), PartialRead>>> = vec![None; 6];
        let steps = 1 + rng.next() % 4;
        {
            let (bufs, specs, outcomes, rng) = (&mut bufs, &specs, &mut outcomes, &mut rng);
            block_on(r.run(|r| {
                let mut futs: Vec<_> = bufs
                    .iter_mut()
                    .zip(specs)
                    .map(|(b, &(addr, len))| Some(Box::pin(r.read(addr, &mut b[..len]))))
                    .collect();
                let mut step = 0;
                core::future::poll_fn(move |cx| {
                    let foreign = Waker::noop();
                    let mut foreign = Context::from_waker(foreign);
                    for _ in 0..4 {
                        let i = (rng.next() % 6) as usize;
                        let action = rng.next() % 4;
                        if action == 0 {
                            futs[i] = None;
                            continue;
                        }
                        if let Some(f) = futs[i].as_mut() {
                            let polled = if action == 1 {
                                f.as_mut().poll(&mut foreign)
                            } else {
                                f.as_mut().poll(cx)
                            };
                            if let Poll::Ready(o) = polled {
                                outcomes[i] = Some(o);
                                futs[i] = None;
                            }
                        }
                    }
                    step += 1;
                    if step < steps {
                        // Come back: after a flush if reads are queued, else
                        // through the executor.
                        cx.waker().wake_by_ref();
                        return Poll::Pending;
                    }
                    // The rest are dropped here, queued, read or never polled.
                    futs.clear();
                    Poll::Ready(())
                })
            }));
        }
        check_outcomes(&mem, &specs, &bufs, &outcomes);
        // Nothing is left queued: one read under a run is one op.
        let ops = r.counters().ops;
        assert_eq!(block_on(r.run(|r| r.read_val::<u8>(7))), Ok(7));
        assert_eq!(r.counters().ops - ops, 1);
    }
    all_came_back(&r);
}

/// The reader's backend calls and ops so far.
fn calls_and_ops<const N: usize, const A: usize>(
    r: &AsyncReader<MemoryBackend<'_>, [u8; 0], N, A>,
) -> (u64, u64) {
    let c = r.counters();
    (c.backend_calls, c.ops)
}

/// The solo op's ways out, one by one: taken under its run, moved into a
/// slot by a second read, moved when polled with another waker, and
/// dropped while queued, while moved and while read.
#[test]
fn the_solo_op_moves_and_drops_cleanly() {
    let mem: Vec<u8> = (0..64).collect();
    let backend = MemoryBackend::new(&mem, Geometry::new(None, 64, 64).expect("geometry"));
    let mut r = AsyncReader::<_, _, 4, 64>::new(backend, [0u8; 0]);
    let foreign = Waker::noop();

    // Polled with another waker while queued: it moves into a slot and is
    // woken by the run's flush.
    let got = block_on(r.run(|r| {
        let mut a = Box::pin(r.read_val::<u8>(3));
        let mut polls = 0;
        core::future::poll_fn(move |cx| {
            polls += 1;
            match polls {
                1 => {
                    assert_eq!(a.as_mut().poll(cx), Poll::Pending);
                    let mut other = Context::from_waker(foreign);
                    assert_eq!(a.as_mut().poll(&mut other), Poll::Pending);
                    Poll::Pending
                }
                _ => a.as_mut().poll(cx),
            }
        })
    }));
    assert_eq!(got, Ok(3));
    assert_eq!(calls_and_ops(&r), (1, 1));

    // Dropped while queued alone: nothing is read.
    let got = block_on(r.run(|r| {
        let mut a = Some(Box::pin(r.read_val::<u8>(5)));
        let mut b = Box::pin(r.read_val::<u8>(6));
        core::future::poll_fn(move |cx| {
            if let Some(mut f) = a.take() {
                assert_eq!(f.as_mut().poll(cx), Poll::Pending);
                drop(f);
            }
            b.as_mut().poll(cx)
        })
    }));
    assert_eq!(got, Ok(6));
    assert_eq!(calls_and_ops(&r), (2, 2));

    // Moved into a slot by a second read, then dropped: the batch reads
    // only the second.
    let got = block_on(r.run(|r| {
        let mut a = Some(Box::pin(r.read_val::<u8>(7)));
        let mut b = Box::pin(r.read_val::<u8>(8));
        core::future::poll_fn(move |cx| {
            if let Some(mut f) = a.take() {
                assert_eq!(f.as_mut().poll(cx), Poll::Pending);
                assert_eq!(b.as_mut().poll(cx), Poll::Pending);
                drop(f);
                return Poll::Pending;
            }
            b.as_mut().poll(cx)
        })
    }));
    assert_eq!(got, Ok(8));
    assert_eq!(calls_and_ops(&r), (3, 3));

    // Read, then dropped before it is taken: the next read is solo again.
    let got = block_on(r.run(|r| {
        let mut a = Some(Box::pin(r.read_val::<u8>(9)));
        let mut b = Box::pin(r.read_val::<u8>(10));
        let mut polls = 0;
        core::future::poll_fn(move |cx| {
            polls += 1;
            if polls == 1 {
                if let Some(f) = a.as_mut() {
                    assert_eq!(f.as_mut().poll(cx), Poll::Pending);
                }
                return Poll::Pending;
            }
            a = None;
            b.as_mut().poll(cx)
        })
    }));
    assert_eq!(got, Ok(10));
    assert_eq!(calls_and_ops(&r), (5, 5));

    // Every slot came back: four joined reads are one call.
    let got = block_on(r.run(|r| {
        embassy_futures::join::join4(
            r.read_val::<u8>(1),
            r.read_val::<u8>(11),
            r.read_val::<u8>(21),
            r.read_val::<u8>(31),
        )
    }));
    assert_eq!(got, (Ok(1), Ok(11), Ok(21), Ok(31)));
    assert_eq!(r.counters().backend_calls, 6);
}

#[test]
fn staging_is_reused_while_reads_stay_in_flight() {
    // Four chains always have reads queued or waiting to be taken: each
    // queues its next read before the others have taken their last. 64
    // bytes of staging hold two rounds of four u64 reads.
    let mem = linked();
    let backend = MemoryBackend::new(&mem, Geometry::new(None, 1024, 1024).expect("geometry"));
    let mut r = AsyncReader::<_, _, 16, 64>::new(backend, [0u8; 0]);
    let got = block_on(r.run(|r| async move {
        let chain = |start: u64| async move {
            let mut p = start;
            for _ in 0..20 {
                p = r.read_val::<u64>(p).await?;
            }
            Ok::<u64, ReadErrorKind>(p)
        };
        let (a, b) = join(join(chain(0), chain(200)), join(chain(400), chain(600))).await;
        [a.0, a.1, b.0, b.1]
    }));
    assert_eq!(got, [160, 360, 560, 760].map(Ok));
    // Every step one call carrying the four chains' reads: none alone.
    assert_eq!(calls_and_ops(&r), (20, 80));
}

#[test]
fn bytes_waiting_to_be_taken_move_to_make_room() {
    // 24 bytes of staging. `a` is read with `b` and not taken; `b` is. The
    // next flush, of `c` and `d`, finds 8 free bytes after `a`'s and moves
    // `a`'s to the front to fit both; a fifth read finds none and goes alone.
    let mem: Vec<u8> = (0..64).collect();
    let backend = MemoryBackend::new(&mem, Geometry::new(None, 64, 64).expect("geometry"));
    let r = AsyncReader::<_, _, 8, 24>::new(backend, [0u8; 0]);
    let noop = Waker::noop();
    let mut cx = Context::from_waker(noop);
    let mut a = pin!(r.read_val::<u64>(0));
    let mut b = pin!(r.read_val::<u64>(8));
    assert!(a.as_mut().poll(&mut cx).is_pending());
    assert!(b.as_mut().poll(&mut cx).is_pending());
    // Polled again outside a run: flushes `a` and `b`, takes `b`.
    let word = |at: u64| u64::from_ne_bytes(core::array::from_fn(|i| at as u8 + i as u8));
    assert_eq!(b.as_mut().poll(&mut cx), Poll::Ready(Ok(word(8))));
    assert_eq!(calls_and_ops(&r), (1, 2));
    let mut c = pin!(r.read_val::<u64>(16));
    let mut d = pin!(r.read_val::<u64>(40));
    let mut e = pin!(r.read_val::<u64>(48));
    assert!(c.as_mut().poll(&mut cx).is_pending());
    assert!(d.as_mut().poll(&mut cx).is_pending());
    // 8 bytes held by `a` and 16 queued: nothing left for `e`.
    assert_eq!(e.as_mut().poll(&mut cx), Poll::Ready(Ok(word(48))));
    assert_eq!(calls_and_ops(&r), (2, 3));
    assert_eq!(d.as_mut().poll(&mut cx), Poll::Ready(Ok(word(40))));
    assert_eq!(calls_and_ops(&r), (3, 5));
    assert_eq!(c.as_mut().poll(&mut cx), Poll::Ready(Ok(word(16))));
    assert_eq!(a.as_mut().poll(&mut cx), Poll::Ready(Ok(word(0))));
    // Everything came back: three reads fit again.
    let got = block_on(join3(
        r.read_val::<u64>(0),
        r.read_val::<u64>(8),
        r.read_val::<u64>(16),
    ));
    assert_eq!(got, (Ok(word(0)), Ok(word(8)), Ok(word(16))));
    assert_eq!(calls_and_ops(&r), (4, 8));
}

/// Counts its wakes.
struct Count(core::sync::atomic::AtomicUsize);

impl Wake for Count {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

#[test]
fn a_flush_wakes_every_stored_waker_and_frees_every_dropped_slot() {
    // Five slots. `a` and `c` store wakers of their own; the flush that
    // `d`'s second poll makes must wake both.
    let mem: Vec<u8> = (0..64).collect();
    let backend = MemoryBackend::new(&mem, Geometry::new(None, 64, 64).expect("geometry"));
    let r = AsyncReader::<_, _, 5, 64>::new(backend, [0u8; 0]);
    let (count_a, count_c) = (
        Arc::new(Count(Default::default())),
        Arc::new(Count(Default::default())),
    );
    let (waker_a, waker_c) = (Waker::from(count_a.clone()), Waker::from(count_c.clone()));
    let wakes = |n: &Arc<Count>| n.0.load(Ordering::Relaxed);
    let noop = Waker::noop();
    let mut cx = Context::from_waker(noop);
    {
        let mut a = pin!(r.read_val::<u8>(1));
        let mut c = pin!(r.read_val::<u8>(3));
        let mut d = pin!(r.read_val::<u8>(4));
        // Outside a run, a first poll stores the waker and wakes it once.
        assert!(
            a.as_mut()
                .poll(&mut Context::from_waker(&waker_a))
                .is_pending()
        );
        assert!(
            c.as_mut()
                .poll(&mut Context::from_waker(&waker_c))
                .is_pending()
        );
        assert!(d.as_mut().poll(&mut cx).is_pending());
        assert_eq!((wakes(&count_a), wakes(&count_c)), (1, 1));
        assert_eq!(d.as_mut().poll(&mut cx), Poll::Ready(Ok(4)));
        assert_eq!((wakes(&count_a), wakes(&count_c)), (2, 2));
        assert_eq!(calls_and_ops(&r), (1, 3));
        assert_eq!(a.as_mut().poll(&mut cx), Poll::Ready(Ok(1)));
        assert_eq!(c.as_mut().poll(&mut cx), Poll::Ready(Ok(3)));
    }
    // `b` is dropped queued, between two reads that store no waker: the
    // flush frees its slot.
    {
        let mut e = pin!(r.read_val::<u8>(5));
        assert!(e.as_mut().poll(&mut cx).is_pending());
        {
            let mut b = Box::pin(r.read_val::<u8>(2));
            assert!(b.as_mut().poll(&mut cx).is_pending());
        }
        let mut f = pin!(r.read_val::<u8>(6));
        assert!(f.as_mut().poll(&mut cx).is_pending());
        assert_eq!(f.as_mut().poll(&mut cx), Poll::Ready(Ok(6)));
        assert_eq!(e.as_mut().poll(&mut cx), Poll::Ready(Ok(5)));
        assert_eq!(calls_and_ops(&r), (2, 5));
    }
    // All five slots came back: five reads in one call (the fifth fills
    // the queue), none alone.
    let got = block_on(join(
        join(r.read_val::<u8>(5), r.read_val::<u8>(6)),
        join3(
            r.read_val::<u8>(7),
            r.read_val::<u8>(8),
            r.read_val::<u8>(9),
        ),
    ));
    assert_eq!(got, ((Ok(5), Ok(6)), (Ok(7), Ok(8), Ok(9))));
    assert_eq!(calls_and_ops(&r), (3, 10));
}

/// A backend that, inside its own call, reads from the reader that called
/// it (reached through a thread-local pointer).
struct Reentrant<'m>(MemoryBackend<'m>);

type ReentrantReader<'m> = AsyncReader<Reentrant<'m>, [u8; 0]>;

std::thread_local! {
    static OUTER: core::cell::Cell<*const ()> = const { core::cell::Cell::new(core::ptr::null()) };
    static INNER: core::cell::Cell<Option<Result<u8, ReadErrorKind>>> = const { core::cell::Cell::new(None) };
}

impl batch_reader::ReadBackend for Reentrant<'_> {
    fn geometry(&self) -> Geometry {
        batch_reader::ReadBackend::geometry(&self.0)
    }
    fn read_batch<R: FnMut(batch_reader::Report)>(
        &mut self,
        ops: &mut [batch_reader::ReadOp<'_>],
        report: R,
    ) -> usize {
        let outer = OUTER.get();
        if !outer.is_null() {
            // SAFETY: the test sets the pointer to a reader that outlives
            // this call and clears it before that reader is dropped; the
            // reader is only read through `&`.
            let reader = unsafe { &*outer.cast::<ReentrantReader<'_>>() };
            INNER.set(Some(block_on(reader.read_val::<u8>(1))));
            let mut buf = [0u8; 2];
            assert_eq!(
                block_on(reader.read(2, &mut buf)),
                Err(PartialRead {
                    valid: 0,
                    kind: ReadErrorKind::Other
                })
            );
        }
        self.0.read_batch(ops, report)
    }
}

#[test]
fn a_backend_reaching_its_own_reader_gets_errors_not_aliasing() {
    let mem: Vec<u8> = (0..64).collect();
    let backend = Reentrant(MemoryBackend::new(
        &mem,
        Geometry::new(None, 64, 64).expect("geometry"),
    ));
    let reader: ReentrantReader<'_> = AsyncReader::new(backend, []);
    OUTER.set((&raw const reader).cast());
    let got = block_on(join(reader.read_val::<u8>(5), reader.read_val::<u8>(9)));
    OUTER.set(core::ptr::null());
    assert_eq!(got, (Ok(5), Ok(9)));
    assert_eq!(INNER.get(), Some(Err(ReadErrorKind::Other)));
    assert_eq!(reader.counters().backend_calls, 1);
}

#[test]
fn a_failure_in_a_later_part_of_a_long_read_is_placed_right() {
    // 4-byte boundaries and a fragment table of 4 (N = 4): a 24-byte read is
    // 6 fragments, completed in two parts; the fault at 20 is in the second.
    let mem: Vec<u8> = (0..64).collect();
    let mut backend = Faulty::new(MemoryBackend::new(
        &mem,
        Geometry::new(Some(4), 4, 16).expect("geometry"),
    ));
    backend
        .inject_fault(20..21, ReadErrorKind::Io)
        .expect("room");
    let mut r = AsyncReader::<_, _, 4, 64>::new(backend, [0u8; 0]);
    let (mut q1, mut q2, mut alone) = ([0xeeu8; 24], [0xeeu8; 24], [0xeeu8; 40]);
    let (a, b, c) = block_on(r.run(|r| {
        join3(
            r.read(0, &mut q1),
            r.read(0, &mut q2),
            r.read(0, &mut alone),
        )
    }));
    let failed_at_20 = Err(PartialRead {
        valid: 20,
        kind: ReadErrorKind::Io,
    });
    // The first two went through the queue together, the third (no staging
    // left) alone.
    assert_eq!((a, b, c), (failed_at_20, failed_at_20, failed_at_20));
    for queued in [q1, q2] {
        assert_eq!(&queued[..20], &mem[..20]);
        assert!(queued[20..].iter().all(|&x| x == 0xee));
    }
    // Read straight into the buffer: what follows the failure is not
    // promised, only the prefix.
    assert_eq!(&alone[..20], &mem[..20]);
}

#[test]
fn a_run_whose_future_panics_leaves_the_reader_usable() {
    let mem: Vec<u8> = (0..64).collect();
    let backend = MemoryBackend::new(&mem, Geometry::new(None, 64, 64).expect("geometry"));
    let mut r: AsyncReader<_, _> = AsyncReader::new(backend, [0u8; 0]);
    let caught = std::panic::catch_unwind(core::panic::AssertUnwindSafe(|| {
        block_on(r.run(|r| async move {
            let v = r.read_val::<u8>(3).await;
            assert_eq!(v, Ok(3));
            panic!("the caller's own bug");
        }))
    }));
    assert!(caught.is_err());
    // No run is driving now: these reads take the path without `run`, which
    // reads the driver (a pointer to the dead run's waker, had it stayed).
    assert_eq!(block_on(r.read_val::<u8>(9)), Ok(9));
    assert_eq!(block_on(r.run(|r| r.read_val::<u8>(10))), Ok(10));
}

/// A backend that panics on its second call.
struct Panicking<'m>(MemoryBackend<'m>, u32);

impl batch_reader::ReadBackend for Panicking<'_> {
    fn geometry(&self) -> Geometry {
        batch_reader::ReadBackend::geometry(&self.0)
    }
    fn read_batch<R: FnMut(batch_reader::Report)>(
        &mut self,
        ops: &mut [batch_reader::ReadOp<'_>],
        report: R,
    ) -> usize {
        self.1 += 1;
        assert!(self.1 != 2, "backend failure");
        self.0.read_batch(ops, report)
    }
}

#[test]
fn a_backend_panic_leaves_reads_failing_not_unsound() {
    let mem: Vec<u8> = (0..64).collect();
    let backend = Panicking(
        MemoryBackend::new(&mem, Geometry::new(None, 64, 64).expect("geometry")),
        0,
    );
    let r: AsyncReader<_, _> = AsyncReader::new(backend, [0u8; 0]);
    assert_eq!(block_on(r.read_val::<u8>(1)), Ok(1));
    let caught = std::panic::catch_unwind(core::panic::AssertUnwindSafe(|| {
        block_on(r.read_val::<u8>(2))
    }));
    assert!(caught.is_err());
    assert_eq!(block_on(r.read_val::<u8>(3)), Err(ReadErrorKind::Other));
    let mut buf = [7u8; 4];
    assert_eq!(
        block_on(r.read(4, &mut buf)),
        Err(PartialRead {
            valid: 0,
            kind: ReadErrorKind::Other
        })
    );
    assert_eq!(buf, [7; 4]);
}

/// Random reads with faults, boundaries and merges, all joined in one run:
/// each future's result is what the synchronous reader gives for the same
/// read alone.
#[test]
fn joined_reads_match_the_synchronous_reader() {
    use batch_reader::Reader;
    let mem: Vec<u8> = (0..=255).collect();
    let geometry = Geometry::new(Some(32), 32, 8).expect("geometry");
    let faulted = || {
        let mut b = Faulty::new(MemoryBackend::new(&mem, geometry));
        b.inject_fault(70..72, ReadErrorKind::Io).expect("room");
        b.inject_fault(150..151, ReadErrorKind::Unmapped)
            .expect("room");
        b
    };
    let mut sync: Reader<_, _> = Reader::new(faulted(), [0u8; 64]);
    let mut rng = Rng(0x5eed);
    let cases = if cfg!(miri) { 4 } else { 200 };
    for _ in 0..cases {
        let mut r = AsyncReader::<_, _, 8, 96>::new(faulted(), [0u8; 64]);
        let specs: [(u64, usize); 8] =
            core::array::from_fn(|_| (rng.next() % 270, (rng.next() % 24) as usize));
        let mut bufs = [[0x55u8; 24]; 8];
        let mut parts = bufs.iter_mut();
        let futs: [_; 8] = core::array::from_fn(|i| {
            let buf = parts.next().expect("8 buffers");
            let (addr, len) = specs[i];
            (addr, &mut buf[..len])
        });
        let got =
            block_on(r.run(|r| {
                embassy_futures::join::join_array(futs.map(|(addr, buf)| r.read(addr, buf)))
            }));
        for (i, &(addr, len)) in specs.iter().enumerate() {
            let mut expect = [0x55u8; 24];
            let want = match sync.read_buf(addr, &mut expect[..len]).first_error() {
                None => Ok(()),
                Some(failed) => Err(failed),
            };
            assert_eq!(got[i], want, "read {i} at {addr}, {len} bytes");
            let valid = want.err().map_or(len, |e| e.valid);
            assert_eq!(bufs[i][..valid], expect[..valid], "read {i}");
            // After the failure: as it was, or (a read that went alone,
            // straight into the buffer) bytes read past the failure.
            for (j, &x) in bufs[i].iter().enumerate().take(len).skip(valid) {
                let read_past = mem.get(addr as usize + j) == Some(&x);
                assert!(x == 0x55 || read_past, "read {i}, byte {j}");
            }
            assert!(bufs[i][len..].iter().all(|&x| x == 0x55), "read {i}");
        }
        // One run step: every read in one flush, as far as max_ops (8) and
        // retries of failed merges allow.
        assert!(r.counters().backend_calls >= 1);
        assert_eq!(
            r.counters().ops,
            specs.iter().filter(|s| s.1 > 0).count() as u64
        );
    }
}

#[test]
fn a_run_polls_again_after_a_full_queue_flushed_inside_its_poll() {
    // Exactly N reads: the last one fills the queue and flushes in its own
    // poll, which leaves nothing queued and the other three read but not
    // woken (a run stores no wakers). The run must poll again by itself.
    let mem: Vec<u8> = (0..64).collect();
    let backend = MemoryBackend::new(&mem, Geometry::new(None, 64, 64).expect("geometry"));
    let mut r = AsyncReader::<_, _, 4>::new(backend, [0u8; 0]);
    let noop = Waker::noop();
    let mut cx = Context::from_waker(noop);
    {
        let mut run = pin!(r.run(|r| {
            embassy_futures::join::join4(
                r.read_val::<u8>(1),
                r.read_val::<u8>(11),
                r.read_val::<u8>(21),
                r.read_val::<u8>(31),
            )
        }));
        // One poll, no wake needed.
        assert_eq!(
            run.as_mut().poll(&mut cx),
            Poll::Ready((Ok(1), Ok(11), Ok(21), Ok(31)))
        );
    }
    assert_eq!(r.counters().backend_calls, 1);
}
