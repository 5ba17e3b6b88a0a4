//! Random ops, random fault maps, random geometry, backpressure, gaps and
//! scratch sizes: `read_many` and `read_iter` must give every op exactly the
//! outcome of the naive reader (one backend call per fragment, no merging),
//! and the bytes of every `Ok` range must be the source's; on the memory
//! backend, which reports in order, and on the same without that promise.
#![no_main]

use arbitrary::Arbitrary;
use batch_reader::backends::{Faulty, MemoryBackend};
use batch_reader::{
    CoalescePolicy, Completion, Geometry, ReadBackend, ReadErrorKind, ReadOp, Reader, Segment,
};
use libfuzzer_sys::fuzz_target;

#[derive(Debug, Arbitrary)]
struct Input {
    mem_len: u16,
    base: u8,
    boundary_shift: Option<u8>,
    max_transfer: u8,
    max_ops: u8,
    accept: Option<u8>,
    faults: Vec<(u16, u8, u8)>,
    gap: Option<u8>,
    scratch: u16,
    ops: Vec<(u8, u16, u8)>,
}

const KINDS: [ReadErrorKind; 4] = [
    ReadErrorKind::Unmapped,
    ReadErrorKind::Io,
    ReadErrorKind::PermissionDenied,
    ReadErrorKind::TimedOut,
];

fn merge(out: &mut Vec<Segment>, s: Segment) {
    if s.len == 0 {
        return;
    }
    match out.last_mut() {
        Some(last) if last.result == s.result && last.offset + last.len == s.offset => {
            last.len += s.len
        }
        _ => out.push(s),
    }
}

/// One backend call per fragment, fragments computed here independently.
fn oracle(b: &mut Faulty<MemoryBackend<'_>>, addr: u64, len: usize) -> Vec<Segment> {
    let mut out = Vec::new();
    if len == 0 {
        return out;
    }
    if addr.checked_add(len as u64).is_none() {
        merge(
            &mut out,
            Segment {
                offset: 0,
                len,
                result: Err(ReadErrorKind::AddressOverflow),
            },
        );
        return out;
    }
    let g = b.geometry();
    let mut buf = vec![0u8; len];
    let mut off = 0;
    while off < len {
        let a = addr + off as u64;
        let mut n = (len - off).min(g.max_transfer());
        if let Some(bd) = g.boundary() {
            n = n.min((bd - a % bd).min(n as u64) as usize);
        }
        let mut rep = None;
        let mut ops = [ReadOp::new(a, &mut buf[off..off + n], 0)];
        assert_eq!(b.read_batch(&mut ops, |r| rep = Some(r)), 1);
        let r = rep.expect("reported");
        merge(
            &mut out,
            Segment {
                offset: off,
                len: r.valid,
                result: Ok(()),
            },
        );
        if r.valid < n {
            let kind = r.error.expect("short read has a cause");
            merge(
                &mut out,
                Segment {
                    offset: off + r.valid,
                    len: n - r.valid,
                    result: Err(kind),
                },
            );
        }
        off += n;
    }
    out
}

struct Check<'a> {
    mem: &'a [u8],
    base: u64,
    outcomes: Vec<(usize, Vec<Segment>)>,
    next: usize,
}

impl Check<'_> {
    fn push(&mut self, c: &Completion<'_>) {
        if c.offset() == 0 {
            assert_eq!(self.next, 0);
            self.outcomes.push((c.tag(), Vec::new()));
        } else {
            assert_eq!(c.offset(), self.next);
        }
        let (tag, out) = self.outcomes.last_mut().expect("an op");
        assert_eq!(*tag, c.tag());
        let mut at = c.offset();
        for s in c.segments() {
            assert_eq!(s.offset, at);
            at += s.len;
            if s.result.is_ok() {
                let rel = s.offset - c.offset();
                let src = (c.addr() + s.offset as u64 - self.base) as usize;
                assert_eq!(&c.data()[rel..rel + s.len], &self.mem[src..src + s.len]);
            }
            merge(out, s);
        }
        assert_eq!(at, c.offset() + c.len());
        self.next = if c.is_last() { 0 } else { at };
    }
}

/// The memory backend without its in-order reports, so that the reader
/// stores each report under its tag as for a backend that reports in any
/// order.
struct AnyOrder<'m>(Faulty<MemoryBackend<'m>>);

impl ReadBackend for AnyOrder<'_> {
    fn geometry(&self) -> Geometry {
        self.0.geometry()
    }

    fn read_batch<R: FnMut(batch_reader::Report)>(
        &mut self,
        ops: &mut [ReadOp<'_>],
        report: R,
    ) -> usize {
        self.0.read_batch(ops, report)
    }

    fn scatters(&self) -> bool {
        self.0.scatters()
    }

    fn read_scattered<R: FnMut(batch_reader::Report)>(
        &mut self,
        ops: &mut [batch_reader::ScatterOp<'_, '_>],
        report: R,
    ) -> usize {
        self.0.read_scattered(ops, report)
    }
}

fn run<const N: usize, const F: usize>(
    input: &Input,
    mem: &[u8],
    backend: impl ReadBackend,
    streamed: bool,
) -> Vec<(usize, Vec<Segment>)> {
    let mut reader =
        Reader::<_, _, N, F>::with_window(backend, vec![0u8; input.scratch as usize % 512]);
    reader.set_policy(input.gap.map_or(CoalescePolicy::disabled(), |g| {
        CoalescePolicy::with_gap(u64::from(g % 16))
    }));
    let mut bufs: Vec<Vec<u8>> = input.ops.iter().map(|o| vec![0u8; o.2 as usize]).collect();
    let base = u64::from(input.base);
    let mut check = Check {
        mem,
        base,
        outcomes: Vec::new(),
        next: 0,
    };
    let addrs = addresses(input);
    let ops = bufs
        .iter_mut()
        .zip(&addrs)
        .enumerate()
        .map(|(i, (b, &a))| ReadOp::new(a, b, i));
    if streamed {
        reader.read_iter(ops, |c| check.push(&c));
    } else {
        let mut ops: Vec<ReadOp<'_>> = ops.collect();
        reader.read_many(&mut ops, |c| check.push(&c));
    }
    assert_eq!(check.next, 0);
    let counters = reader.counters();
    assert_eq!(counters.ops, input.ops.len() as u64);
    if input.accept != Some(0) {
        assert_eq!(
            counters.backend_ops,
            counters.fragments - counters.merged_ops + counters.merged_reads + counters.retried_ops
        );
    }
    check.outcomes
}

/// Op addresses: mode 0 random, 1 right after the previous op, 2 a few bytes
/// after it, 3 near the top of the address space.
fn addresses(input: &Input) -> Vec<u64> {
    let mut out: Vec<u64> = Vec::new();
    let mut prev_end = 0u64;
    for &(mode, addr, len) in &input.ops {
        let a = match mode % 4 {
            0 => u64::from(addr) % 2048,
            1 => prev_end,
            2 => prev_end.saturating_add(u64::from(addr % 8)),
            _ => u64::MAX - u64::from(addr % 300),
        };
        prev_end = a.saturating_add(u64::from(len));
        out.push(a);
    }
    out
}

fuzz_target!(|input: Input| {
    if input.ops.len() > 64 || input.faults.len() > 8 {
        return;
    }
    let mem: Vec<u8> = (0..input.mem_len as usize % 2048)
        .map(|i| (i * 131 + 17) as u8)
        .collect();
    let boundary = input.boundary_shift.map(|s| 1u64 << (s % 9));
    let Ok(g) = Geometry::new(
        boundary,
        usize::from(input.max_transfer.max(1)),
        usize::from(input.max_ops.max(1)),
    ) else {
        return;
    };
    let base = u64::from(input.base);
    let mut backend = Faulty::new(MemoryBackend::with_base(&mem, base, g));
    for &(start, len, kind) in &input.faults {
        let start = u64::from(start) % 2048;
        let range = start..start + u64::from(len);
        match backend.inject_fault(range, KINDS[usize::from(kind) % 4]) {
            Ok(()) => {}
            // An empty range holds no address to fail.
            Err(batch_reader::FaultMapError::EmptyRange { .. }) => {}
            Err(e) => panic!("8 slots: {e}"),
        }
    }
    let mut naive = backend.clone();
    if let Some(a) = input.accept {
        backend.set_accept_limit(usize::from(a % 4));
    }
    let addrs = addresses(&input);
    let want: Vec<Vec<Segment>> = input
        .ops
        .iter()
        .zip(&addrs)
        .map(|(o, &a)| {
            if input.accept.map(|a| a % 4) == Some(0)
                && o.2 > 0
                && a.checked_add(u64::from(o.2)).is_some()
            {
                vec![Segment {
                    offset: 0,
                    len: usize::from(o.2),
                    result: Err(ReadErrorKind::Rejected),
                }]
            } else {
                oracle(&mut naive, a, usize::from(o.2))
            }
        })
        .collect();
    let mut input = input;
    if let Some(a) = input.accept.as_mut() {
        *a %= 4;
    }
    for (streamed, got) in [
        (false, run::<16, 64>(&input, &mem, backend.clone(), false)),
        (false, run::<2, 3>(&input, &mem, backend.clone(), false)),
        (true, run::<3, 5>(&input, &mem, backend.clone(), true)),
        (
            false,
            run::<16, 64>(&input, &mem, AnyOrder(backend.clone()), false),
        ),
        (
            true,
            run::<3, 5>(&input, &mem, AnyOrder(backend.clone()), true),
        ),
    ] {
        assert_eq!(got.len(), want.len(), "streamed {streamed}");
        for (i, ((tag, segs), w)) in got.iter().zip(&want).enumerate() {
            assert_eq!(*tag, i);
            assert_eq!(segs, w, "op {i} streamed {streamed}");
        }
    }
});
