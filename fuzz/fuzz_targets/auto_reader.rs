//! Random reads on an `AsyncReader` inside a run: futures created, polled
//! with the run's waker or with another one, dropped, and the run's future
//! yielding (so the run flushes) at random points, over a small queue and
//! staging space so that reads go alone, staging is compacted and the solo
//! op is moved. Every read that completes must give exactly what the
//! synchronous reader gives for it (valid prefix, first failure) with the
//! source's bytes in its prefix, and every buffer whose future was dropped
//! before completing must be untouched.
#![no_main]

use arbitrary::Arbitrary;
use batch_reader::backends::{Faulty, MemoryBackend};
use batch_reader::{AsyncReader, Geometry, PartialRead, ReadErrorKind, Reader};
use core::future::{Future, poll_fn};
use core::task::{Context, Poll, Waker};
use libfuzzer_sys::fuzz_target;
use std::sync::Arc;
use std::task::Wake;

/// A waker that does nothing, each one its own: the run's and the other
/// context's must not be taken for the same.
struct Nop;

impl Wake for Nop {
    fn wake(self: Arc<Self>) {}
}

#[derive(Debug, Arbitrary)]
struct Input {
    mem_len: u16,
    boundary_shift: Option<u8>,
    max_transfer: u8,
    max_ops: u8,
    faults: Vec<(u16, u8, u8)>,
    actions: Vec<(u8, u8, u16, u8)>,
}

const KINDS: [ReadErrorKind; 3] = [
    ReadErrorKind::Unmapped,
    ReadErrorKind::Io,
    ReadErrorKind::TimedOut,
];

/// Futures alive at once.
const LIVE: usize = 6;
/// The longest read.
const MAX_LEN: usize = 80;
/// An untouched buffer byte.
const UNTOUCHED: u8 = 0xee;

fn backend<'m>(input: &Input, mem: &'m [u8]) -> Option<Faulty<MemoryBackend<'m>>> {
    let boundary = input.boundary_shift.map(|s| 1u64 << (s % 8));
    let geometry = Geometry::new(
        boundary,
        1 + input.max_transfer as usize % 64,
        1 + input.max_ops as usize % 8,
    )
    .ok()?;
    let mut b = Faulty::new(MemoryBackend::new(mem, geometry));
    for &(at, len, kind) in &input.faults {
        let at = u64::from(at % 1024);
        b.inject_fault(at..at + 1 + u64::from(len % 16), KINDS[kind as usize % 3])
            .ok()?;
    }
    Some(b)
}

/// What became of one future.
#[derive(Debug, Clone, Copy)]
struct Fate {
    addr: u64,
    len: usize,
    outcome: Option<Result<(), PartialRead>>,
}

fuzz_target!(|input: Input| {
    if input.actions.len() > 200 || input.faults.len() > 8 {
        return;
    }
    let mem: Vec<u8> = (0..input.mem_len as usize % 1024)
        .map(|i| (i * 131 + 17) as u8)
        .collect();
    let (Some(b), Some(oracle_backend)) = (backend(&input, &mem), backend(&input, &mem)) else {
        return;
    };
    let mut reader = AsyncReader::<_, _, 4, 64>::new(b, [0u8; 32]);
    let mut oracle = Reader::<_, _>::new(oracle_backend, [0u8; 0]);
    let creates = input.actions.iter().filter(|a| a.0 % 5 == 0).count();
    let mut bufs = vec![[UNTOUCHED; MAX_LEN]; creates];
    let mut fates: Vec<Fate> = Vec::new();
    {
        let fates = &mut fates;
        let bufs = &mut bufs;
        let actions = &input.actions;
        futures_block_on(reader.run(|r| {
            let mut free = bufs.iter_mut();
            let mut live: Vec<Option<(usize, _)>> = (0..LIVE).map(|_| None).collect();
            let mut next = 0;
            let other_waker = Waker::from(Arc::new(Nop));
            poll_fn(move |cx| {
                let mut other = Context::from_waker(&other_waker);
                while let Some(&(what, i, addr, len)) = actions.get(next) {
                    next += 1;
                    let i = i as usize % LIVE;
                    match what % 5 {
                        0 => {
                            if live[i].is_some() {
                                continue;
                            }
                            let Some(buf) = free.next() else { continue };
                            let len = len as usize % (MAX_LEN + 1);
                            let addr = u64::from(addr % 1100);
                            fates.push(Fate {
                                addr,
                                len,
                                outcome: None,
                            });
                            live[i] =
                                Some((fates.len() - 1, Box::pin(r.read(addr, &mut buf[..len]))));
                        }
                        1 | 2 => {
                            let Some((k, f)) = live[i].as_mut() else {
                                continue;
                            };
                            let polled = if what % 5 == 1 {
                                f.as_mut().poll(cx)
                            } else {
                                f.as_mut().poll(&mut other)
                            };
                            if let Poll::Ready(o) = polled {
                                fates[*k].outcome = Some(o);
                                live[i] = None;
                            }
                        }
                        3 => live[i] = None,
                        _ => {
                            // Yield: the run flushes if reads are queued, or
                            // the executor polls again.
                            cx.waker().wake_by_ref();
                            return Poll::Pending;
                        }
                    }
                }
                live.clear();
                Poll::Ready(())
            })
        }));
    }
    for (fate, buf) in fates.iter().zip(&bufs) {
        match fate.outcome {
            None => assert!(buf.iter().all(|&x| x == UNTOUCHED), "a dropped read wrote"),
            Some(got) => {
                let mut want = vec![0u8; fate.len];
                let s = oracle.read_buf(fate.addr, &mut want);
                let expected = match s.first_error() {
                    None => Ok(()),
                    Some(failed) => Err(failed),
                };
                assert_eq!(got, expected, "{fate:?}");
                let valid = s.first_error().map_or(fate.len, |f| f.valid);
                assert_eq!(buf[..valid], want[..valid]);
                assert!(buf[fate.len..].iter().all(|&x| x == UNTOUCHED));
            }
        }
    }
});

/// Polls `f` until it is ready, on this thread.
fn futures_block_on<F: Future>(f: F) -> F::Output {
    let waker = Waker::from(Arc::new(Nop));
    let mut cx = Context::from_waker(&waker);
    let mut f = core::pin::pin!(f);
    loop {
        if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
    }
}
