//! Every layer of the reader against the naive one-op-at-a-time oracle, under
//! random geometries, fault maps, backpressure, gaps and scratch sizes.

mod common;

use batch_reader::backends::{Faulty, MemoryBackend};
use batch_reader::{
    CoalescePolicy, Geometry, PartialRead, ReadBackend, ReadErrorKind, ReadOp, Reader, Report,
};
use common::{Collector, Outcome, normalize, oracle};
use proptest::prelude::*;

const KINDS: [ReadErrorKind; 4] = [
    ReadErrorKind::Unmapped,
    ReadErrorKind::Io,
    ReadErrorKind::PermissionDenied,
    ReadErrorKind::TimedOut,
];

#[derive(Debug, Clone)]
struct Case {
    mem_len: usize,
    base: u64,
    boundary: Option<u64>,
    max_transfer: usize,
    max_ops: usize,
    accept: Option<usize>,
    faults: Vec<(u64, u64, usize)>,
    gap: Option<u64>,
    scratch: usize,
    ops: Vec<(u64, usize)>,
    /// 0: merged reads through scratch; 1: the backend scatters natively;
    /// 2: the trait's default scattering on top of `read_batch`.
    scatter: u8,
}

/// A backend that scatters with the trait's default `read_scattered`.
struct DefaultScatter<'m>(Faulty<MemoryBackend<'m>>);

impl ReadBackend for DefaultScatter<'_> {
    fn geometry(&self) -> Geometry {
        self.0.geometry()
    }
    fn read_batch<R: FnMut(Report)>(&mut self, ops: &mut [ReadOp<'_>], report: R) -> usize {
        self.0.read_batch(ops, report)
    }
    fn scatters(&self) -> bool {
        true
    }
}

fn case() -> impl Strategy<Value = Case> {
    let addr = prop_oneof![8 => 0u64..700, 1 => (u64::MAX - 80)..=u64::MAX];
    (
        0usize..600,
        prop_oneof![Just(0u64), 1u64..40],
        prop_oneof![Just(None), (0u32..7).prop_map(|s| Some(1u64 << s))],
        1usize..80,
        1usize..10,
        prop_oneof![3 => Just(None), 1 => (1usize..4).prop_map(Some)],
        prop::collection::vec((0u64..700, 1u64..120, 0usize..4), 0..4),
        prop_oneof![Just(None), Just(Some(0u64)), Just(Some(1)), Just(Some(8))],
        prop_oneof![Just(0usize), 1usize..40, 40usize..300],
        prop::collection::vec((0u8..4, addr, 0u64..10, 0usize..100), 0..30),
        0u8..3,
    )
        .prop_map(
            |(
                mem_len,
                base,
                boundary,
                max_transfer,
                max_ops,
                accept,
                faults,
                gap,
                scratch,
                raw,
                scatter,
            )| {
                // Most ops follow the previous one closely, so that they can merge.
                let mut ops: Vec<(u64, usize)> = Vec::new();
                for (mode, addr, delta, len) in raw {
                    let addr = match ops.last() {
                        Some(&(a, l)) if mode > 0 => a
                            .saturating_add(l as u64)
                            .saturating_add(if mode == 1 { delta } else { 0 }),
                        _ => addr,
                    };
                    let len = if mode == 3 { len % 12 } else { len };
                    ops.push((addr, len));
                }
                Case {
                    mem_len,
                    base,
                    boundary,
                    max_transfer,
                    max_ops,
                    accept,
                    faults,
                    gap,
                    scratch,
                    ops,
                    scatter,
                }
            },
        )
}

fn memory(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 31 + 7) as u8).collect()
}

fn backend<'m>(c: &Case, mem: &'m [u8]) -> Faulty<MemoryBackend<'m>> {
    let g = Geometry::new(c.boundary, c.max_transfer, c.max_ops).expect("valid geometry");
    let mut b = Faulty::new(MemoryBackend::with_base(mem, c.base, g));
    for &(start, len, kind) in &c.faults {
        b.inject_fault(start..start + len, KINDS[kind])
            .expect("room for 4 faults");
    }
    if let Some(a) = c.accept {
        b.set_accept_limit(a);
    }
    b.inner_mut().set_scatter(c.scatter == 1);
    b
}

fn policy(c: &Case) -> CoalescePolicy {
    c.gap
        .map_or(CoalescePolicy::disabled(), CoalescePolicy::with_gap)
}

/// The oracle's outcome and fragment count for every op.
fn expected(c: &Case, mem: &[u8]) -> Vec<(Outcome, usize)> {
    let mut b = backend(c, mem);
    b.set_accept_limit(usize::MAX);
    c.ops
        .iter()
        .map(|&(addr, len)| oracle(&mut b, addr, &mut vec![0u8; len]))
        .collect()
}

/// Checks the collected results against the oracle, and the data read.
fn check(c: &Case, mem: &[u8], got: &Collector, bufs: &[Vec<u8>]) {
    let want = expected(c, mem);
    got.finish();
    assert_eq!(got.ops.len(), c.ops.len(), "one result per op");
    for (i, ((tag, outcome), (want, _))) in got.ops.iter().zip(&want).enumerate() {
        assert_eq!(*tag, i, "completions in op order");
        assert_eq!(outcome, want, "op {i} {:?}", c.ops[i]);
    }
    for (i, offset, data) in &got.ok_data {
        let addr = c.ops[*i].0 + *offset as u64;
        let at = (addr - c.base) as usize;
        assert_eq!(data.as_slice(), &mem[at..at + data.len()], "op {i} data");
        assert_eq!(data.as_slice(), &bufs[*i][*offset..offset + data.len()]);
    }
}

fn check_counters(c: &Case, mem: &[u8], counters: batch_reader::Counters) {
    let want = expected(c, mem);
    let fragments: usize = want.iter().map(|w| w.1).sum();
    assert_eq!(counters.ops, c.ops.len() as u64);
    assert_eq!(
        counters.bytes_requested,
        c.ops.iter().map(|o| o.1 as u64).sum::<u64>()
    );
    assert_eq!(counters.fragments, fragments as u64);
    if c.accept == Some(0) {
        return;
    }
    assert_eq!(
        counters.backend_ops,
        counters.fragments - counters.merged_ops + counters.merged_reads + counters.retried_ops,
        "every fragment is read alone or in one merged read, plus retries"
    );
    let all_ok = want.iter().all(|w| w.0.iter().all(|s| s.result.is_ok()));
    if all_ok {
        assert_eq!(counters.retried_ops, 0, "nothing failed, nothing retried");
        if c.gap.unwrap_or(0) == 0 {
            let frag_bytes: u64 = c.ops.iter().map(|o| o.1 as u64).sum();
            assert_eq!(counters.bytes_read, frag_bytes, "no gaps, no retries");
        }
    }
    let scatters = c.scatter != 0 && c.gap == Some(0);
    if c.gap.is_none() || (c.scratch == 0 && !scatters) {
        assert_eq!(counters.merged_ops, 0);
    }
}

fn bufs_for(c: &Case) -> Vec<Vec<u8>> {
    c.ops.iter().map(|&(_, len)| vec![0xAA; len]).collect()
}

fn run_many<const N: usize, const F: usize>(c: &Case, mem: &[u8]) {
    if c.scatter == 2 {
        run_many_on::<_, N, F>(c, mem, DefaultScatter(backend(c, mem)));
    } else {
        run_many_on::<_, N, F>(c, mem, backend(c, mem));
    }
}

fn run_many_on<B: ReadBackend, const N: usize, const F: usize>(c: &Case, mem: &[u8], b: B) {
    let mut bufs = bufs_for(c);
    let mut reader = Reader::<_, _, N, F>::with_window(b, vec![0u8; c.scratch]);
    reader.set_policy(policy(c));
    let mut ops: Vec<ReadOp<'_>> = bufs
        .iter_mut()
        .zip(&c.ops)
        .enumerate()
        .map(|(i, (b, &(addr, _)))| ReadOp::new(addr, b, i))
        .collect();
    let mut got = Collector::default();
    reader.read_many(&mut ops, |done| got.push(&done));
    drop(ops);
    if c.accept == Some(0) {
        check_rejected(c, &got);
    } else {
        check(c, mem, &got, &bufs);
    }
    check_counters(c, mem, reader.counters());
}

fn run_iter<const N: usize, const F: usize>(c: &Case, mem: &[u8]) {
    if c.scatter == 2 {
        run_iter_on::<_, N, F>(c, mem, DefaultScatter(backend(c, mem)));
    } else {
        run_iter_on::<_, N, F>(c, mem, backend(c, mem));
    }
}

fn run_iter_on<B: ReadBackend, const N: usize, const F: usize>(c: &Case, mem: &[u8], b: B) {
    let mut bufs = bufs_for(c);
    let mut reader = Reader::<_, _, N, F>::with_window(b, vec![0u8; c.scratch]);
    reader.set_policy(policy(c));
    let ops = bufs
        .iter_mut()
        .zip(&c.ops)
        .enumerate()
        .map(|(i, (b, &(addr, _)))| ReadOp::new(addr, b, i));
    let mut got = Collector::default();
    reader.read_iter(ops, |done| got.push(&done));
    if c.accept == Some(0) {
        check_rejected(c, &got);
    } else {
        check(c, mem, &got, &bufs);
    }
    check_counters(c, mem, reader.counters());
}

/// With a backend that accepts nothing, every readable byte is `Rejected`.
fn check_rejected(c: &Case, got: &Collector) {
    for ((_, outcome), &(addr, len)) in got.ops.iter().zip(&c.ops) {
        let want = if len == 0 {
            vec![]
        } else if addr.checked_add(len as u64).is_none() {
            normalize([batch_reader::Segment {
                offset: 0,
                len,
                result: Err(ReadErrorKind::AddressOverflow),
            }])
        } else {
            normalize([batch_reader::Segment {
                offset: 0,
                len,
                result: Err(ReadErrorKind::Rejected),
            }])
        };
        assert_eq!(outcome, &want);
    }
}

fn run_buf_and_val(c: &Case, mem: &[u8]) {
    if c.accept == Some(0) {
        return;
    }
    let want = expected(c, mem);
    let mut reader: Reader<_, _> = Reader::new(backend(c, mem), vec![0u8; c.scratch]);
    reader.set_policy(policy(c));
    for (&(addr, len), (want, _)) in c.ops.iter().zip(&want) {
        let mut buf = vec![0u8; len];
        let s = reader.read_buf(addr, &mut buf);
        let ok: usize = want
            .iter()
            .filter(|s| s.result.is_ok())
            .map(|s| s.len)
            .sum();
        assert_eq!(s.ok_bytes(), ok);
        assert_eq!(s.len(), len);
        assert_eq!(
            s.first_error(),
            want.iter()
                .find_map(|s| s.result.err().map(|kind| PartialRead {
                    valid: s.offset,
                    kind
                }))
        );
        // read_val over the first 8 bytes of the op.
        let mut b8 = backend(c, mem);
        b8.set_accept_limit(usize::MAX);
        let (want8, _) = oracle(&mut b8, addr, &mut [0u8; 8]);
        let got8 = reader.read_val::<u64>(addr);
        match want8.iter().find_map(|s| s.result.err()) {
            Some(kind) => assert_eq!(got8, Err(kind)),
            None => {
                let at = (addr - c.base) as usize;
                let bytes: [u8; 8] = mem[at..at + 8].try_into().expect("8 bytes");
                assert_eq!(got8, Ok(u64::from_ne_bytes(bytes)));
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: if cfg!(miri) { 4 } else { 256 },
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn read_many_matches_oracle(c in case()) {
        let mem = memory(c.mem_len);
        run_many::<16, 64>(&c, &mem);
        run_many::<1, 3>(&c, &mem);
    }

    #[test]
    fn read_iter_matches_oracle(c in case()) {
        let mem = memory(c.mem_len);
        run_iter::<5, 64>(&c, &mem);
        run_iter::<3, 4>(&c, &mem);
    }

    #[test]
    fn read_buf_and_read_val_match_oracle(c in case()) {
        let mem = memory(c.mem_len);
        run_buf_and_val(&c, &mem);
    }
}
