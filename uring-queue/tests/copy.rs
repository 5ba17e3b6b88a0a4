//! Fallible copies through the ring (`push_with`, `pop_with` and the chunks'
//! `commit_with`): a copy that faults at any element offset, from any ring
//! position (wrapped or not), commits exactly what it copied; no element is
//! lost or duplicated, and the ring goes on as a `VecDeque` would.

use proptest::prelude::*;
extern crate alloc;

use alloc::collections::VecDeque;
use uring_queue::{Consumer, CopyError, Fault, Producer, Ring};

const CAP: usize = 8;
/// Ring positions and fills the exhaustive tests start from: every one, or
/// under Miri (thousands of times slower) one start, from which every copy
/// of more than three elements wraps, and two fills (empty and half).
const STARTS: core::ops::Range<usize> = if cfg!(miri) { 5..6 } else { 0..CAP };
const FILLS: usize = if cfg!(miri) { 4 } else { 1 };

/// The fault every injected copy reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Efault;

/// A copy from `src` into the runs it is given, from `*pos`, that faults
/// once `fault_at` elements of `src` were taken (`None`: never). Copies
/// the elements it reports, and only those.
fn copy_in<'s>(
    src: &'s [u8],
    pos: &'s mut usize,
    fault_at: Option<usize>,
) -> impl FnMut(&mut [u8]) -> Result<usize, Fault<Efault>> + 's {
    move |dst| {
        let want = dst.len().min(src.len() - *pos);
        let limit = fault_at.map_or(want, |f| want.min(f.saturating_sub(*pos)));
        dst[..limit].copy_from_slice(&src[*pos..*pos + limit]);
        *pos += limit;
        if limit < want {
            Err(Fault::new(limit, Efault))
        } else {
            Ok(limit)
        }
    }
}

/// A copy from the runs it is given into `dst`, from `*pos`, that faults
/// once `fault_at` elements were written to `dst` (`None`: never).
fn copy_out<'d>(
    dst: &'d mut [u8],
    pos: &'d mut usize,
    fault_at: Option<usize>,
) -> impl FnMut(&[u8]) -> Result<usize, Fault<Efault>> + 'd {
    move |src| {
        let want = src.len().min(dst.len() - *pos);
        let limit = fault_at.map_or(want, |f| want.min(f.saturating_sub(*pos)));
        dst[*pos..*pos + limit].copy_from_slice(&src[..limit]);
        *pos += limit;
        if limit < want {
            Err(Fault::new(limit, Efault))
        } else {
            Ok(limit)
        }
    }
}

/// The expected outcome of a copy of `want` elements faulting at `fault_at`.
fn expected(want: usize, fault_at: usize) -> Result<usize, usize> {
    if fault_at < want {
        Err(fault_at)
    } else {
        Ok(want)
    }
}

/// Moves both indices `start` slots on, so that later copies wrap.
fn rotate(tx: &mut Producer<'_, u8>, rx: &mut Consumer<'_, u8>, start: usize) {
    for _ in 0..start {
        tx.push(0).unwrap();
        rx.pop().unwrap();
    }
}

/// Every ring position, fill and write length; a fault at every offset of
/// the write, through `push_with` and through a chunk's `commit_with`.
#[test]
fn a_faulting_write_commits_exactly_what_it_copied() {
    for start in STARTS {
        for fill in (0..CAP)
            .step_by(FILLS)
            .chain(if cfg!(miri) { None } else { Some(CAP) })
        {
            for len in 0..=CAP + 1 {
                for fault_at in 0..=len {
                    for chunk in [false, true] {
                        write_case(start, fill, len, fault_at, chunk);
                    }
                }
            }
        }
    }
}

fn write_case(start: usize, fill: usize, len: usize, fault_at: usize, chunk: bool) {
    let mut ring = Ring::<u8, CAP>::new();
    let (mut tx, mut rx) = ring.split();
    rotate(&mut tx, &mut rx, start);
    let queued: Vec<u8> = (100..100 + fill as u8).collect();
    assert_eq!(tx.push_slice(&queued), Ok(fill));
    let src: Vec<u8> = (1..=len as u8).collect();
    let mut pos = 0;
    let room = (CAP - fill).min(len);
    let got = if chunk {
        match tx.write_chunk(room) {
            Ok(c) => c
                .commit_with(copy_in(&src, &mut pos, Some(fault_at)))
                .map_err(|f| f.copied),
            Err(e) => panic!("write_chunk({room}): {e}"),
        }
    } else {
        tx.push_with(copy_in(&src, &mut pos, Some(fault_at)))
            .map_err(|e| match e {
                CopyError::Fault(f) => f.copied,
                CopyError::Ring(e) => panic!("ring error {e}"),
            })
    };
    let case = (start, fill, len, fault_at, chunk);
    assert_eq!(got, expected(room, fault_at), "{case:?}");
    let copied = got.unwrap_or_else(|n| n);
    assert_eq!(pos, copied, "{case:?}");
    assert_eq!(rx.len(), fill + copied, "{case:?}");
    let mut out = [0u8; CAP];
    assert_eq!(rx.pop_slice(&mut out), Ok(fill + copied), "{case:?}");
    assert_eq!(out[..fill], queued[..], "{case:?}");
    assert_eq!(out[fill..fill + copied], src[..copied], "{case:?}");
    assert!(rx.is_empty() && tx.is_empty(), "{case:?}");
}

/// Every ring position and fill; a read faulting at every offset, through
/// `pop_with` and through a chunk's `commit_with`.
#[test]
fn a_faulting_read_releases_exactly_what_it_copied() {
    for start in STARTS {
        for fill in (0..CAP)
            .step_by(FILLS)
            .chain(if cfg!(miri) { None } else { Some(CAP) })
        {
            for room in 0..=CAP + 1 {
                for fault_at in 0..=room {
                    for chunk in [false, true] {
                        read_case(start, fill, room, fault_at, chunk);
                    }
                }
            }
        }
    }
}

fn read_case(start: usize, fill: usize, room: usize, fault_at: usize, chunk: bool) {
    let mut ring = Ring::<u8, CAP>::new();
    let (mut tx, mut rx) = ring.split();
    rotate(&mut tx, &mut rx, start);
    let queued: Vec<u8> = (1..=fill as u8).collect();
    assert_eq!(tx.push_slice(&queued), Ok(fill));
    let mut dst = vec![0u8; room];
    let mut pos = 0;
    let take = fill.min(room);
    let got = if chunk {
        match rx.read_chunk(take) {
            Ok(c) => c
                .commit_with(copy_out(&mut dst, &mut pos, Some(fault_at)))
                .map_err(|f| f.copied),
            Err(e) => panic!("read_chunk({take}): {e}"),
        }
    } else {
        rx.pop_with(copy_out(&mut dst, &mut pos, Some(fault_at)))
            .map_err(|e| match e {
                CopyError::Fault(f) => f.copied,
                CopyError::Ring(e) => panic!("ring error {e}"),
            })
    };
    let case = (start, fill, room, fault_at, chunk);
    assert_eq!(got, expected(take, fault_at), "{case:?}");
    let copied = got.unwrap_or_else(|n| n);
    assert_eq!(pos, copied, "{case:?}");
    assert_eq!(dst[..copied], queued[..copied], "{case:?}");
    assert_eq!(rx.len(), fill - copied, "{case:?}");
    assert_eq!(tx.len(), fill - copied, "{case:?}");
    let mut rest = [0u8; CAP];
    assert_eq!(rx.pop_slice(&mut rest), Ok(fill - copied), "{case:?}");
    assert_eq!(rest[..fill - copied], queued[copied..], "{case:?}");
}

/// A copy that reports more than its run, or faults with more than its
/// run, commits the run and no more.
#[test]
fn a_count_beyond_the_run_is_the_run() {
    let mut ring = Ring::<u8, 4>::new();
    let (mut tx, mut rx) = ring.split();
    assert_eq!(
        tx.push_with(|dst| Ok::<_, Fault<Efault>>(dst.len() + 10)),
        Ok(4)
    );
    assert_eq!(
        rx.pop_with(|_| Err(Fault::new(99, Efault))),
        Err(CopyError::Fault(Fault::new(4, Efault)))
    );
    assert!(rx.is_empty() && tx.is_empty());
}

/// A full ring does not call the writer's copy; an empty one the reader's.
#[test]
fn nothing_to_copy_calls_nothing() {
    let mut ring = Ring::<u8, 2>::new();
    let (mut tx, mut rx) = ring.split();
    assert_eq!(
        rx.pop_with(|_| -> Result<usize, Fault<Efault>> { panic!("called") }),
        Ok(0)
    );
    tx.push_slice(&[1, 2]).unwrap();
    assert_eq!(
        tx.push_with(|_| -> Result<usize, Fault<Efault>> { panic!("called") }),
        Ok(0)
    );
}

#[derive(Debug, Clone)]
enum Op {
    /// Write the next `len` bytes of the stream, faulting after `fault_at`.
    Write { len: usize, fault_at: Option<usize> },
    /// Read up to `room` bytes, faulting after `fault_at`.
    Read {
        room: usize,
        fault_at: Option<usize>,
    },
}

fn op() -> impl Strategy<Value = Op> {
    let fault = prop::option::of(0..12usize);
    prop_oneof![
        (0..12usize, fault.clone()).prop_map(|(len, fault_at)| Op::Write { len, fault_at }),
        (0..12usize, fault).prop_map(|(room, fault_at)| Op::Read { room, fault_at }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: if cfg!(miri) { 4 } else { 512 },
        // Miri has no file system to keep failing seeds in.
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// Random writes and reads with random faults: the bytes read are the
    /// bytes written, in order, each once; the ring's length is the model's.
    #[test]
    fn a_stream_survives_random_faults(ops in prop::collection::vec(op(), 0..48)) {
        let mut ring = Ring::<u8, CAP>::new();
        let (mut tx, mut rx) = ring.split();
        let mut model = VecDeque::new();
        let (mut next, mut read) = (0u8, Vec::new());
        for op in ops {
            match op {
                Op::Write { len, fault_at } => {
                    let src: Vec<u8> = (0..len).map(|i| next.wrapping_add(i as u8)).collect();
                    let mut pos = 0;
                    let r = tx.push_with(copy_in(&src, &mut pos, fault_at));
                    let n = match r { Ok(n) => n, Err(CopyError::Fault(f)) => f.copied, Err(e) => panic!("{e:?}") };
                    prop_assert_eq!(n, pos);
                    model.extend(&src[..n]);
                    next = next.wrapping_add(n as u8);
                }
                Op::Read { room, fault_at } => {
                    let mut dst = vec![0u8; room];
                    let mut pos = 0;
                    let r = rx.pop_with(copy_out(&mut dst, &mut pos, fault_at));
                    let n = match r { Ok(n) => n, Err(CopyError::Fault(f)) => f.copied, Err(e) => panic!("{e:?}") };
                    prop_assert_eq!(n, pos);
                    let want: Vec<u8> = model.drain(..n).collect();
                    prop_assert_eq!(&dst[..n], &want[..]);
                    read.extend_from_slice(&dst[..n]);
                }
            }
            prop_assert_eq!(rx.len(), model.len());
        }
        let expect: Vec<u8> = (0..read.len()).map(|i| i as u8).collect();
        prop_assert_eq!(read, expect);
    }
}
