//! Exact expectations: which backend ops a batch becomes, and what each op's
//! completion says.

use batch_reader::backends::{Faulty, MemoryBackend};
use batch_reader::{
    CoalescePolicy, Counters, Geometry, PartialRead, ReadBackend, ReadErrorKind, ReadOp, Reader,
    Report, Segment,
};

fn geometry(boundary: Option<u64>, max_transfer: usize, max_ops: usize) -> Geometry {
    Geometry::new(boundary, max_transfer, max_ops).expect("valid geometry")
}

fn memory() -> Vec<u8> {
    (0..=255u8).cycle().take(1024).collect()
}

/// A backend that records every batch it is given, on top of memory.
struct Recording<'m> {
    inner: Faulty<MemoryBackend<'m>>,
    calls: Vec<Vec<(u64, usize)>>,
}

impl ReadBackend for Recording<'_> {
    fn geometry(&self) -> Geometry {
        self.inner.geometry()
    }
    fn read_batch<R: FnMut(Report)>(&mut self, ops: &mut [ReadOp<'_>], report: R) -> usize {
        let n = self.inner.read_batch(ops, report);
        self.calls
            .push(ops[..n].iter().map(|o| (o.addr, o.buf.len())).collect());
        n
    }
}

fn recording(mem: &[u8], g: Geometry) -> Recording<'_> {
    Recording {
        inner: Faulty::new(MemoryBackend::new(mem, g)),
        calls: Vec::new(),
    }
}

type Result3 = (usize, Vec<Segment>);

fn run(reader: &mut Reader<Recording<'_>, Vec<u8>>, spec: &[(u64, usize)]) -> Vec<Result3> {
    let mut bufs: Vec<Vec<u8>> = spec.iter().map(|&(_, l)| vec![0; l]).collect();
    let mut ops: Vec<ReadOp<'_>> = bufs
        .iter_mut()
        .zip(spec)
        .enumerate()
        .map(|(i, (b, &(a, _)))| ReadOp::new(a, b, i))
        .collect();
    let mut out: Vec<Result3> = Vec::new();
    reader.read_many(&mut ops, |c| out.push((c.tag(), c.segments().collect())));
    drop(ops);
    for ((b, &(a, _)), (_, segs)) in bufs.iter().zip(spec).zip(&out) {
        if segs.len() == 1 && segs[0].result.is_ok() {
            for (i, byte) in b.iter().enumerate() {
                assert_eq!(*byte, (a as usize + i) as u8, "read data");
            }
        }
    }
    out
}

fn ok(offset: usize, len: usize) -> Segment {
    Segment {
        offset,
        len,
        result: Ok(()),
    }
}

fn failed(offset: usize, len: usize, kind: ReadErrorKind) -> Segment {
    Segment {
        offset,
        len,
        result: Err(kind),
    }
}

#[test]
fn adjacent_ops_merge_into_one_backend_read() {
    let mem = memory();
    let mut r = Reader::new(recording(&mem, geometry(Some(64), 64, 16)), vec![0u8; 256]);
    let out = run(&mut r, &[(0, 8), (8, 8), (16, 8), (24, 8)]);
    assert!(out.iter().all(|(_, s)| s == &[ok(0, 8)]));
    assert_eq!(r.backend().calls, vec![vec![(0, 32)]]);
    let c = r.counters();
    assert_eq!(
        c,
        Counters {
            backend_calls: 1,
            ops: 4,
            fragments: 4,
            backend_ops: 1,
            merged_reads: 1,
            merged_ops: 4,
            retried_ops: 0,
            bytes_requested: 32,
            bytes_read: 32,
        }
    );
}

#[test]
fn merges_stop_at_boundaries_max_transfer_and_scratch() {
    let mem = memory();
    // Boundary 32: [16,32) and [32,48) do not merge; max transfer 24 caps the rest.
    let mut r = Reader::new(recording(&mem, geometry(Some(32), 24, 16)), vec![0u8; 256]);
    run(
        &mut r,
        &[(16, 8), (24, 8), (32, 8), (40, 8), (48, 8), (56, 8)],
    );
    assert_eq!(r.backend().calls, vec![vec![(16, 16), (32, 24), (56, 8)]]);
    // Scratch of 16 bytes: one merged read of 16, then the rest alone.
    let mut r = Reader::new(recording(&mem, geometry(None, 1024, 16)), vec![0u8; 16]);
    run(&mut r, &[(0, 8), (8, 8), (16, 8), (24, 8)]);
    assert_eq!(r.backend().calls, vec![vec![(0, 16), (16, 8), (24, 8)]]);
}

#[test]
fn ops_crossing_a_boundary_are_fragmented() {
    let mem = memory();
    let mut r = Reader::new(recording(&mem, geometry(Some(16), 16, 16)), vec![0u8; 0]);
    let out = run(&mut r, &[(10, 30)]);
    assert_eq!(out, vec![(0, vec![ok(0, 30)])]);
    assert_eq!(r.backend().calls, vec![vec![(10, 6), (16, 16), (32, 8)]]);
    assert_eq!(r.counters().fragments, 3);
}

#[test]
fn gap_policy_bridges_small_gaps_and_counts_the_gap_bytes() {
    let mem = memory();
    let spec = [(0, 4), (8, 4), (20, 4)];
    let mut r = Reader::new(recording(&mem, geometry(None, 1024, 16)), vec![0u8; 64]);
    run(&mut r, &spec);
    assert_eq!(
        r.backend().calls,
        vec![vec![(0, 4), (8, 4), (20, 4)]],
        "default gap is 0"
    );
    let mut r = Reader::new(recording(&mem, geometry(None, 1024, 16)), vec![0u8; 64]);
    r.set_policy(CoalescePolicy::with_gap(4));
    run(&mut r, &spec);
    assert_eq!(r.backend().calls, vec![vec![(0, 12), (20, 4)]]);
    assert_eq!(r.counters().bytes_read, 16);
    assert_eq!(r.counters().read_amplification_per_mille(), 16_000 / 12);
    let mut r = Reader::new(recording(&mem, geometry(None, 1024, 16)), vec![0u8; 64]);
    r.set_policy(CoalescePolicy::with_gap(8));
    let out = run(&mut r, &spec);
    assert_eq!(r.backend().calls, vec![vec![(0, 24)]]);
    assert!(out.iter().all(|(_, s)| s == &[ok(0, 4)]));
    let mut r = Reader::new(recording(&mem, geometry(None, 1024, 16)), vec![0u8; 64]);
    r.set_policy(CoalescePolicy::disabled());
    run(&mut r, &[(0, 4), (4, 4)]);
    assert_eq!(r.backend().calls, vec![vec![(0, 4), (4, 4)]]);
}

#[test]
fn failed_merged_read_is_retried_member_by_member() {
    let mem = memory();
    let mut backend = recording(&mem, geometry(Some(64), 64, 16));
    backend
        .inner
        .inject_fault(20..22, ReadErrorKind::Io)
        .unwrap();
    let mut r = Reader::new(backend, vec![0u8; 64]);
    let out = run(&mut r, &[(0, 8), (8, 8), (16, 8), (24, 8)]);
    assert_eq!(
        out,
        vec![
            (0, vec![ok(0, 8)]),
            (1, vec![ok(0, 8)]),
            (2, vec![ok(0, 4), failed(4, 4, ReadErrorKind::Io)]),
            (3, vec![ok(0, 8)]),
        ]
    );
    // The merged read stopped at byte 20: ops 0 and 1 came out whole, 2 and 3
    // were read again on their own.
    assert_eq!(
        r.backend().calls,
        vec![vec![(0, 32)], vec![(16, 8), (24, 8)]]
    );
    let c = r.counters();
    assert_eq!(
        (c.backend_calls, c.backend_ops, c.merged_ops, c.retried_ops),
        (2, 3, 4, 2)
    );
    assert_eq!(c.bytes_read, 48);
}

#[test]
fn backpressure_resubmits_the_rest() {
    let mem = memory();
    let mut backend = recording(&mem, geometry(None, 1024, 16));
    backend.inner.set_accept_limit(2);
    let mut r = Reader::new(backend, vec![0u8; 0]);
    let out = run(&mut r, &[(0, 1), (10, 1), (20, 1), (30, 1), (40, 1)]);
    assert_eq!(out.len(), 5);
    assert!(out.iter().all(|(_, s)| s == &[ok(0, 1)]));
    assert_eq!(
        r.backend().calls,
        vec![vec![(0, 1), (10, 1)], vec![(20, 1), (30, 1)], vec![(40, 1)]]
    );
    // max_ops limits a batch the same way.
    let mut r = Reader::new(recording(&mem, geometry(None, 1024, 3)), vec![0u8; 0]);
    run(&mut r, &[(0, 1), (10, 1), (20, 1), (30, 1), (40, 1)]);
    assert_eq!(r.counters().backend_calls, 2);
}

#[test]
fn a_backend_that_accepts_nothing_rejects_the_window() {
    let mem = memory();
    let mut backend = recording(&mem, geometry(None, 1024, 16));
    backend.inner.set_accept_limit(0);
    let mut r = Reader::new(backend, vec![0u8; 0]);
    let out = run(&mut r, &[(0, 4), (10, 0), (u64::MAX, 2)]);
    assert_eq!(
        out,
        vec![
            (0, vec![failed(0, 4, ReadErrorKind::Rejected)]),
            (1, vec![]),
            (2, vec![failed(0, 2, ReadErrorKind::AddressOverflow)]),
        ]
    );
    assert_eq!(r.counters().backend_calls, 1);
}

#[test]
fn empty_and_overflowing_ops_never_reach_the_backend() {
    let mem = memory();
    let mut r = Reader::new(recording(&mem, geometry(None, 1024, 16)), vec![0u8; 0]);
    let out = run(&mut r, &[(5, 0), (u64::MAX - 1, 4)]);
    assert_eq!(
        out,
        vec![
            (0, vec![]),
            (1, vec![failed(0, 4, ReadErrorKind::AddressOverflow)])
        ]
    );
    assert!(r.backend().calls.is_empty());
    assert_eq!(r.counters().fragments, 0);
}

#[test]
fn op_with_more_fragments_than_the_table_completes_in_parts() {
    let mem = memory();
    let mut r = Reader::<_, _, 4, 4>::with_window(
        Faulty::new(MemoryBackend::new(&mem, geometry(Some(8), 8, 16))),
        [0u8; 0],
    );
    r.backend_mut()
        .inject_fault(36..40, ReadErrorKind::Unmapped)
        .unwrap();
    let mut buf = [0u8; 80];
    let mut ops = [ReadOp::new(0, &mut buf, 42)];
    let mut parts = Vec::new();
    r.read_many(&mut ops, |c| {
        parts.push((c.tag(), c.offset(), c.len(), c.is_last(), c.first_error()))
    });
    assert_eq!(
        parts,
        vec![
            (42, 0, 32, false, None),
            (
                42,
                32,
                32,
                false,
                Some(PartialRead {
                    valid: 36,
                    kind: ReadErrorKind::Unmapped
                })
            ),
            (42, 64, 16, true, None),
        ]
    );
    assert_eq!(&buf[..36], &mem[..36]);
    assert_eq!(&buf[40..], &mem[40..80]);
}

#[test]
fn read_iter_works_in_windows_of_n() {
    let mem = memory();
    let mut r =
        Reader::<_, _, 4, 64>::with_window(recording(&mem, geometry(None, 1024, 64)), vec![0u8; 0]);
    let mut bufs = [[0u8; 2]; 10];
    let ops = bufs
        .iter_mut()
        .enumerate()
        .map(|(i, b)| ReadOp::new(i as u64 * 10, b, i));
    let mut tags = Vec::new();
    r.read_iter(ops, |c| {
        assert!(c.is_ok());
        assert_eq!(c.data(), &[c.addr() as u8, c.addr() as u8 + 1]);
        tags.push(c.tag());
    });
    assert_eq!(tags, (0..10).collect::<Vec<_>>());
    let sizes: Vec<usize> = r.backend().calls.iter().map(Vec::len).collect();
    assert_eq!(sizes, vec![4, 4, 2]);
}

/// A backend that breaks the contract in every way it can.
struct Unruly;

impl ReadBackend for Unruly {
    fn geometry(&self) -> Geometry {
        geometry(None, 1024, 16)
    }
    fn read_batch<R: FnMut(Report)>(&mut self, ops: &mut [ReadOp<'_>], mut report: R) -> usize {
        for op in ops.iter_mut() {
            match op.addr {
                // Claims more bytes than asked.
                0 => report(Report::ok(op.tag, op.buf.len() + 100)),
                // Short without a reason.
                100 => report(Report {
                    tag: op.tag,
                    valid: 1,
                    error: None,
                }),
                // Reports a tag that does not exist, and not its own.
                200 => report(Report::ok(op.tag + 1000, op.buf.len())),
                // Says nothing.
                _ => {}
            }
        }
        ops.len() + 5 // Claims to have accepted more than it got.
    }
}

#[test]
fn contract_breaking_backends_cannot_break_the_reader() {
    let mut r = Reader::new(Unruly, [0u8; 0]);
    let (mut a, mut b, mut c, mut d) = ([0u8; 4], [0u8; 4], [0u8; 4], [0u8; 4]);
    let mut ops = [
        ReadOp::new(0, &mut a, 0),
        ReadOp::new(100, &mut b, 1),
        ReadOp::new(200, &mut c, 2),
        ReadOp::new(300, &mut d, 3),
    ];
    let mut out = Vec::new();
    r.read_many(&mut ops, |c| out.push(c.segments().collect::<Vec<_>>()));
    assert_eq!(
        out,
        vec![
            vec![ok(0, 4)],
            vec![ok(0, 1), failed(1, 3, ReadErrorKind::Incomplete)],
            vec![failed(0, 4, ReadErrorKind::Incomplete)],
            vec![failed(0, 4, ReadErrorKind::Incomplete)],
        ]
    );
    assert_eq!(r.counters().backend_calls, 1);
}

#[test]
fn read_val_reads_zerocopy_types() {
    #[derive(
        zerocopy::FromBytes,
        zerocopy::IntoBytes,
        zerocopy::KnownLayout,
        zerocopy::Immutable,
        Debug,
        PartialEq,
    )]
    #[repr(C)]
    struct Header {
        magic: [u8; 4],
        len: u32,
    }
    let mut mem = [0u8; 64];
    mem[16..20].copy_from_slice(b"BTCH");
    mem[20..24].copy_from_slice(&7u32.to_ne_bytes());
    let mut r: Reader<_, _> = Reader::new(
        Faulty::new(MemoryBackend::new(&mem, geometry(Some(16), 16, 4))),
        [0u8; 16],
    );
    assert_eq!(
        r.read_val::<Header>(16),
        Ok(Header {
            magic: *b"BTCH",
            len: 7
        })
    );
    r.backend_mut()
        .inject_fault(48..64, ReadErrorKind::Unmapped)
        .unwrap();
    assert_eq!(r.read_val::<Header>(44), Err(ReadErrorKind::Unmapped));
    assert_eq!(r.read_val::<Header>(60), Err(ReadErrorKind::Unmapped));
    r.backend_mut().clear_faults();
    assert_eq!(r.read_val::<Header>(60), Err(ReadErrorKind::OutOfBounds));
}

#[test]
fn scattering_backends_merge_without_scratch() {
    let mem = memory();
    let spec = [(0u64, 8usize), (8, 8), (16, 8), (24, 8)];
    let mut bufs = [[0u8; 8]; 4];
    let mut ops: Vec<ReadOp<'_>> = bufs
        .iter_mut()
        .zip(&spec)
        .enumerate()
        .map(|(i, (b, &(a, _)))| ReadOp::new(a, b, i))
        .collect();
    // No scratch at all: the merged read lands in the four buffers directly.
    let mut r = Reader::new(
        Faulty::new(MemoryBackend::new(&mem, geometry(Some(64), 64, 16))),
        [0u8; 0],
    );
    r.backend_mut()
        .inject_fault(20..22, ReadErrorKind::Io)
        .unwrap();
    let mut out = Vec::new();
    r.read_many(&mut ops, |c| {
        out.push((c.tag(), c.segments().collect::<Vec<_>>()))
    });
    drop(ops);
    assert_eq!(
        out,
        vec![
            (0, vec![ok(0, 8)]),
            (1, vec![ok(0, 8)]),
            (2, vec![ok(0, 4), failed(4, 4, ReadErrorKind::Io)]),
            (3, vec![ok(0, 8)]),
        ]
    );
    assert_eq!(&bufs[1], &mem[8..16]);
    assert_eq!(&bufs[3], &mem[24..32]);
    let c = r.counters();
    assert_eq!(
        (
            c.backend_calls,
            c.backend_ops,
            c.merged_reads,
            c.merged_ops,
            c.retried_ops
        ),
        (2, 3, 1, 4, 2)
    );
    // The same backend told not to scatter, still without scratch: no merging.
    let mut bufs = [[0u8; 8]; 4];
    let mut ops: Vec<ReadOp<'_>> = bufs
        .iter_mut()
        .zip(&spec)
        .enumerate()
        .map(|(i, (b, &(a, _)))| ReadOp::new(a, b, i))
        .collect();
    let mut r = Reader::new(
        MemoryBackend::new(&mem, geometry(Some(64), 64, 16)),
        [0u8; 0],
    );
    r.backend_mut().set_scatter(false);
    r.read_many(&mut ops, |c| assert!(c.is_ok()));
    assert_eq!((r.counters().backend_ops, r.counters().merged_ops), (4, 0));
    // A gap needs scratch for the gap bytes: scattering is not used.
    let mut r = Reader::new(
        MemoryBackend::new(&mem, geometry(Some(64), 64, 16)),
        [0u8; 0],
    );
    r.set_policy(CoalescePolicy::with_gap(4));
    r.read_many(&mut ops, |c| assert!(c.is_ok()));
    assert_eq!(r.counters().merged_ops, 0);
}
