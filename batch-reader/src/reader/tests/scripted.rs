//! The direct route against scripted and spying backends.

extern crate alloc;

use alloc::vec;
use alloc::vec::Vec;

use crate::backends::MemoryBackend;
use crate::{Completion, Counters, Geometry, ReadBackend, ReadErrorKind, ReadOp, Reader, Report};

/// A scripted report: tag, valid bytes, error.
type Scripted3 = (usize, usize, Option<ReadErrorKind>);
/// A completion's valid bytes and first error.
type Outcome2 = (usize, Option<(usize, ReadErrorKind)>);
/// A script: what each call accepts and reports, and each op's outcome.
type Script<'s> = (&'s [usize], &'s [&'s [Scripted3]], [Outcome2; 4]);

/// Memory whose calls report exactly as scripted: call `i` accepts
/// `accept[i]` ops (all of them past the script) and sends `reports[i]`
/// as `(tag, valid, error)`.
struct Scripted<'m> {
    inner: MemoryBackend<'m>,
    accept: Vec<usize>,
    reports: Vec<Vec<Scripted3>>,
    calls: usize,
}

impl ReadBackend for Scripted<'_> {
    fn geometry(&self) -> Geometry {
        self.inner.geometry()
    }

    fn read_batch<R: FnMut(Report)>(&mut self, ops: &mut [ReadOp<'_>], mut report: R) -> usize {
        let call = self.calls;
        self.calls += 1;
        let n = self.inner.read_batch(ops, |_| {});
        let n = self.accept.get(call).map_or(n, |&a| a.min(n));
        for &(tag, valid, error) in self.reports.get(call).map_or(&[][..], |r| &r[..]) {
            report(Report { tag, valid, error });
        }
        n
    }
}

/// Four 4-byte ops at 0, 8, 16, 24 of memory holding `0..64`, read
/// through `Scripted`: each completion's tag, valid bytes and first
/// error, by the direct route or the general one, and the counters.
fn scripted(
    accept: &[usize],
    reports: &[&[Scripted3]],
    direct: bool,
) -> (Vec<(usize, Outcome2)>, Counters) {
    let mem: Vec<u8> = (0..64).collect();
    let g = Geometry::new(Some(64), 64, 8).expect("valid geometry");
    let backend = Scripted {
        inner: MemoryBackend::new(&mem, g),
        accept: accept.to_vec(),
        reports: reports.iter().map(|r| r.to_vec()).collect(),
        calls: 0,
    };
    let mut reader: Reader<_, _> = Reader::new(backend, [0u8; 0]);
    let mut bufs = [[0u8; 4]; 4];
    let mut ops: Vec<ReadOp<'_>> = bufs
        .iter_mut()
        .enumerate()
        .map(|(i, b)| ReadOp::new(i as u64 * 8, b, 10 + i))
        .collect();
    let mut seen = Vec::new();
    reader.process_with(
        &mut ops,
        &mut |d: Completion<'_>| {
            seen.push((
                d.tag(),
                (d.ok_bytes(), d.first_error().map(|f| (f.valid, f.kind))),
            ))
        },
        direct,
    );
    (seen, reader.counters())
}

#[test]
fn direct_route_reports_in_any_order() {
    use ReadErrorKind::{Incomplete, Io, Rejected};
    // In order, whole or not; out of order; one missing and one twice
    // (the last counts); unknown tags; a short read without a cause; a
    // call that takes two, then one that takes none.
    let cases: [Script<'_>; 6] = [
        (
            &[],
            &[&[(0, 4, None), (1, 4, None), (2, 4, None), (3, 4, None)]],
            [(4, None), (4, None), (4, None), (4, None)],
        ),
        (
            &[],
            &[&[(0, 4, None), (1, 2, Some(Io)), (2, 4, None), (3, 9, None)]],
            [(4, None), (2, Some((2, Io))), (4, None), (4, None)],
        ),
        (
            &[],
            &[&[(3, 4, None), (1, 2, Some(Io)), (0, 4, None), (2, 4, None)]],
            [(4, None), (2, Some((2, Io))), (4, None), (4, None)],
        ),
        (
            &[],
            &[&[(0, 4, None), (2, 1, Some(Io)), (3, 4, None), (2, 4, None)]],
            [(4, None), (0, Some((0, Incomplete))), (4, None), (4, None)],
        ),
        (
            &[],
            &[&[
                (0, 4, None),
                (9, 4, None),
                (1, 3, None),
                (4, 4, None),
                (2, 4, None),
                (3, 4, None),
            ]],
            [(4, None), (3, Some((3, Incomplete))), (4, None), (4, None)],
        ),
        (
            &[2, 0],
            &[&[(0, 4, None), (1, 4, None), (2, 4, None)], &[]],
            [
                (4, None),
                (4, None),
                (0, Some((0, Rejected))),
                (0, Some((0, Rejected))),
            ],
        ),
    ];
    for (accept, reports, want) in cases {
        let (direct, counters) = scripted(accept, reports, true);
        let want: Vec<_> = want
            .iter()
            .enumerate()
            .map(|(i, &outcome)| (10 + i, outcome))
            .collect();
        assert_eq!(direct, want);
        assert_eq!((direct, counters), scripted(accept, reports, false));
    }
}

#[test]
fn the_direct_route_is_taken() {
    // Guards the test above against comparing the general route with
    // itself: a window of plain ops takes the direct route.
    let mem = [1u8; 64];
    let g = Geometry::new(Some(16), 16, 8).expect("valid geometry");
    let mut reader: Reader<_, _> = Reader::new(MemoryBackend::new(&mem, g), [0u8; 0]);
    let (mut a, mut b) = ([0u8; 4], [0u8; 4]);
    let mut ops = [ReadOp::new(0, &mut a, 0), ReadOp::new(8, &mut b, 1)];
    let mut calls = 0;
    let direct = reader.read_direct(g, &mut ops, &mut |_| calls += 1);
    assert!(direct);
    assert_eq!(calls, 2);
    // Adjacent ops that merge through scratch: not direct, nothing done.
    let (mut a, mut b) = ([0u8; 4], [0u8; 4]);
    let mut ops = [ReadOp::new(0, &mut a, 0), ReadOp::new(4, &mut b, 1)];
    let mut scratch = MemoryBackend::new(&mem, g);
    scratch.set_scatter(false);
    let mut reader: Reader<_, _> = Reader::new(scratch, [0u8; 64]);
    assert!(!reader.read_direct(g, &mut ops, &mut |_| calls += 1));
    assert_eq!(calls, 2);
    assert_eq!(reader.counters(), Counters::default());
    // The same on a backend that scatters: direct, one merged read.
    let mut reader: Reader<_, _> = Reader::new(MemoryBackend::new(&mem, g), [0u8; 0]);
    assert!(reader.read_direct(g, &mut ops, &mut |_| calls += 1));
    assert_eq!(calls, 4);
    let c = reader.counters();
    assert_eq!((c.backend_calls, c.merged_reads, c.merged_ops), (1, 1, 2));
    // An op that the lean pass refuses (it crosses a 16-byte block, the
    // largest power of two within `max_transfer` 24) but that is one
    // fragment all the same: direct, and read whole.
    let mem: [u8; 64] = core::array::from_fn(|i| i as u8);
    let g = Geometry::new(Some(64), 24, 8).expect("valid geometry");
    let mut reader: Reader<_, _> = Reader::new(MemoryBackend::new(&mem, g), [0u8; 0]);
    let (mut a, mut b) = ([0u8; 4], [0u8; 20]);
    let mut ops = [ReadOp::new(0, &mut a, 0), ReadOp::new(12, &mut b, 1)];
    let mut got = Vec::new();
    let direct = reader.read_direct(g, &mut ops, &mut |c: Completion<'_>| {
        got.push((c.tag(), c.is_ok(), c.data().to_vec()));
    });
    assert!(direct);
    let want: Vec<u8> = (12..32).collect();
    assert_eq!(got, [(0, true, vec![0, 1, 2, 3]), (1, true, want)]);
    let c = reader.counters();
    assert_eq!((c.backend_calls, c.backend_ops, c.fragments), (1, 2, 2));
}

/// Memory that logs where each call's ops lie and their tags.
struct Spy<'m> {
    inner: MemoryBackend<'m>,
    calls: Vec<(usize, Vec<usize>)>,
}

impl ReadBackend for Spy<'_> {
    fn geometry(&self) -> Geometry {
        self.inner.geometry()
    }

    fn read_batch<R: FnMut(Report)>(&mut self, ops: &mut [ReadOp<'_>], report: R) -> usize {
        let tags = ops.iter().map(|op| op.tag).collect();
        self.calls.push((ops.as_ptr() as usize, tags));
        self.inner.read_batch(ops, report)
    }
}

#[test]
fn ops_tagged_by_index_go_to_the_backend_as_they_are() {
    let mem: [u8; 64] = core::array::from_fn(|i| i as u8);
    let g = Geometry::new(Some(16), 16, 8).expect("valid geometry");
    let spy = Spy {
        inner: MemoryBackend::new(&mem, g),
        calls: Vec::new(),
    };
    let mut reader: Reader<_, _> = Reader::new(spy, [0u8; 0]);
    let mut bufs = [[0u8; 2]; 3];
    let [a, b, c] = &mut bufs;
    let mut ops = [
        ReadOp::new(0, a, 0),
        ReadOp::new(8, b, 1),
        ReadOp::new(32, c, 2),
    ];
    let at = ops.as_ptr() as usize;
    let mut tags = Vec::new();
    reader.process_with(
        &mut ops,
        &mut |c: Completion<'_>| tags.push((c.tag(), c.is_ok())),
        true,
    );
    assert_eq!(tags, [(0, true), (1, true), (2, true)]);
    // Tagged by their index: the caller's own ops, nothing copied.
    assert_eq!(reader.backend().calls, [(at, vec![0, 1, 2])]);
    assert_eq!(bufs, [[0, 1], [8, 9], [32, 33]]);

    // Other tags: a copy, tagged by index, and the caller's tags kept.
    let mut bufs = [[0u8; 2]; 3];
    let [a, b, c] = &mut bufs;
    let mut ops = [
        ReadOp::new(0, a, 7),
        ReadOp::new(8, b, 1),
        ReadOp::new(32, c, 2),
    ];
    let at = ops.as_ptr() as usize;
    let mut tags = Vec::new();
    reader.process_with(
        &mut ops,
        &mut |c: Completion<'_>| tags.push((c.tag(), c.is_ok())),
        true,
    );
    assert_eq!(tags, [(7, true), (1, true), (2, true)]);
    let (ptr, tags) = &reader.backend().calls[1];
    assert_ne!(*ptr, at);
    assert_eq!(tags, &[0, 1, 2]);
    assert_eq!([ops[0].tag, ops[1].tag, ops[2].tag], [7, 1, 2]);
    assert_eq!(bufs, [[0, 1], [8, 9], [32, 33]]);
}
