//! The cases the routes are compared on: random windows over a memory
//! backend that may break the backend contract.

extern crate alloc;

use alloc::vec;
use alloc::vec::Vec;

use proptest::prelude::*;

use crate::backends::{Faulty, MemoryBackend};
use crate::{
    CoalescePolicy, Completion, Counters, Fragment, Geometry, ReadBackend, ReadErrorKind, ReadOp,
    ReadSummary, Reader, Report,
};

pub(super) fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// Memory that, depending on a seed and the call number, accepts fewer
/// ops than it read, reports out of order, twice, not at all, under
/// unknown tags, or more bytes than asked; and logs every call. With
/// `in_order`, it says it [reports in order](ReadBackend::reports_in_order)
/// and does so when `seed` is `None`; with a seed, it breaks that
/// promise in the same ways, and also hands over a copy of an op.
pub(super) struct Quirky<'m> {
    pub(super) inner: Faulty<MemoryBackend<'m>>,
    seed: Option<u64>,
    in_order: bool,
    calls: Vec<Vec<(u64, usize, usize)>>,
}

impl Quirky<'_> {
    /// Logs a call (its ops' addresses, lengths and tags), and returns
    /// its quirks: how many ops the call says it took of the `n` it
    /// read, the reports it makes of `got` (the reports of those `n`),
    /// and the hash they come from. `None` without a seed.
    fn quirks(
        &mut self,
        call: Vec<(u64, usize, usize)>,
        got: &[Report],
        n: usize,
    ) -> Option<(usize, Vec<Report>, u64)> {
        self.calls.push(call);
        let h = mix(self.seed? ^ self.calls.len() as u64);
        let n = if h.is_multiple_of(4) {
            n.min((h >> 8) as usize % (n + 1))
        } else {
            n
        };
        let mut reps: Vec<Report> = got[..n].to_vec();
        match (h >> 16) % 8 {
            0 => reps.reverse(),
            1 if !reps.is_empty() => {
                reps.remove((h >> 24) as usize % reps.len());
            }
            2 => {
                if let Some(&r) = reps.first() {
                    reps.push(Report::failed(r.tag, 0, ReadErrorKind::Io));
                }
            }
            3 => reps.push(Report::ok(1000, 1)),
            4 => reps.iter_mut().for_each(|r| r.valid += 3),
            5 => reps.iter_mut().for_each(|r| r.error = None),
            6 if !got.is_empty() => {
                // Any sequence: reports of the ops read, each under a
                // tag drawn from the call's and a few past them, some
                // cut short, in any order and number.
                reps = (0..(h >> 24) % (2 * got.len() as u64 + 2))
                    .map(|i| {
                        let x = mix(h ^ i);
                        let mut r = got[x as usize % got.len()];
                        r.tag = (x >> 16) as usize % (got.len() + 2);
                        if (x >> 40).is_multiple_of(3) {
                            r.valid /= 2;
                        }
                        r
                    })
                    .collect();
            }
            _ => {}
        }
        if (h >> 32).is_multiple_of(5) {
            // A report for an op it did not take.
            reps.extend(got.get(n).copied());
        }
        Some((n, reps, h))
    }
}

impl ReadBackend for Quirky<'_> {
    fn geometry(&self) -> Geometry {
        self.inner.geometry()
    }

    fn read_batch<R: FnMut(Report)>(&mut self, ops: &mut [ReadOp<'_>], report: R) -> usize {
        let mut got = Vec::new();
        let n = self.inner.read_batch(ops, |r| got.push(r));
        let call = ops.iter().map(|o| (o.addr, o.buf.len(), o.tag)).collect();
        let Some((n, reps, _)) = self.quirks(call, &got, n) else {
            got.into_iter().for_each(report);
            return n;
        };
        reps.into_iter().for_each(report);
        n
    }

    fn reports_in_order(&self) -> bool {
        self.in_order
    }

    fn read_batch_in_order<R: FnMut(&ReadOp<'_>, Report)>(
        &mut self,
        ops: &mut [ReadOp<'_>],
        mut report: R,
    ) -> usize {
        // The reports by op index: tags are the ops' own here, which
        // need not be their positions. The log records positions, as
        // the other routes tag backend ops by them.
        let mut got = Vec::new();
        let n = self.inner.read_batch_in_order(ops, |_, r| {
            got.push(Report {
                tag: got.len(),
                ..r
            })
        });
        let call = ops
            .iter()
            .enumerate()
            .map(|(i, o)| (o.addr, o.buf.len(), i))
            .collect();
        let Some((n, reps, h)) = self.quirks(call, &got, n) else {
            for (op, r) in ops.iter().zip(got) {
                report(op, Report { tag: op.tag, ..r });
            }
            return n;
        };
        // The copy handed over instead of the op it copies, if any.
        let copied = (h >> 48)
            .is_multiple_of(3)
            .then(|| (h >> 52) as usize % (n + 1));
        let mut spare = [0u8; 64];
        for r in reps {
            match ops.get(r.tag) {
                Some(op) if copied != Some(r.tag) => report(op, Report { tag: op.tag, ..r }),
                // A copy of an op, or an op it does not have.
                found => {
                    let (addr, len, tag) =
                        found.map_or((0, 1, r.tag), |o| (o.addr, o.buf.len(), o.tag));
                    let copy = ReadOp::new(addr, &mut spare[..len.min(64)], tag);
                    report(&copy, Report { tag, ..r });
                }
            }
        }
        n
    }

    fn scatters(&self) -> bool {
        self.inner.scatters()
    }
}

/// A completion's tag, address, op length, offset, length, fragments
/// and data.
pub(super) type Seen = (usize, u64, usize, usize, usize, Vec<Fragment>, Vec<u8>);
/// Every completion, the counters, and every backend call's ops.
pub(super) type Run = (Vec<Seen>, Counters, Vec<Vec<(u64, usize, usize)>>);

#[derive(Debug, Clone)]
pub(super) struct Case {
    boundary: Option<u64>,
    max_transfer: usize,
    max_ops: usize,
    accept: usize,
    fault: Option<(u64, u64)>,
    gap: Option<u64>,
    scratch: usize,
    scatter: bool,
    quirks: Option<u64>,
    /// Each op tagged by its index in its window (which the direct
    /// route sends as it is), rather than by three times its index.
    indexed: bool,
    /// The backend says it reports in order (and keeps its promise
    /// unless it has `quirks`).
    in_order: bool,
    ops: Vec<(u64, usize)>,
}

pub(super) fn case() -> impl Strategy<Value = Case> {
    (
        (
            prop_oneof![Just(None), (2u32..9).prop_map(|s| Some(1u64 << s))],
            1usize..70,
            1usize..12,
            prop_oneof![3 => Just(usize::MAX), 1 => 0usize..4],
            prop::option::of((0u64..300, 1u64..40)),
        ),
        (
            prop_oneof![Just(None), Just(Some(0u64)), Just(Some(4))],
            prop_oneof![Just(0usize), 1usize..200],
            any::<bool>(),
            prop::option::of(any::<u64>()),
            any::<bool>(),
            any::<bool>(),
        ),
        prop::collection::vec(
            (
                0u8..8,
                prop_oneof![19 => 0u64..320, 1 => (u64::MAX - 40)..=u64::MAX],
                prop_oneof![3 => 1usize..9, 1 => 0usize..40],
            ),
            0..40,
        ),
    )
        .prop_map(
            |(
                (boundary, max_transfer, max_ops, accept, fault),
                (gap, scratch, scatter, quirks, indexed, in_order),
                raw,
            )| {
                let mut ops: Vec<(u64, usize)> = Vec::new();
                for (mode, addr, len) in raw {
                    // A quarter of the ops follow the previous one, to
                    // merge; a few are empty or tiny.
                    let addr = match ops.last() {
                        Some(&(a, l)) if mode >= 6 => {
                            a.saturating_add(l as u64 + u64::from(mode - 6) * 2)
                        }
                        _ => addr,
                    };
                    ops.push((addr, if mode == 5 { len % 3 } else { len }));
                }
                Case {
                    boundary,
                    max_transfer,
                    max_ops,
                    accept,
                    fault,
                    gap,
                    scratch,
                    scatter,
                    quirks,
                    indexed,
                    // A backend that breaks its promise to report in
                    // order gets other results than on the general
                    // route: `unruly_case` tests it.
                    in_order: in_order && quirks.is_none(),
                    ops,
                }
            },
        )
}

/// A case whose ops mostly follow each other, on a backend that
/// scatters, with gap 0: merged reads straight into the buffers.
pub(super) fn merging_case() -> impl Strategy<Value = Case> {
    case().prop_map(|mut c| {
        c.gap = Some(0);
        c.scatter = true;
        for i in 1..c.ops.len() {
            if i % 4 != 0 {
                let (addr, len) = c.ops[i - 1];
                c.ops[i].0 = addr.saturating_add(len as u64);
            }
        }
        c
    })
}

/// A case on a backend that says it reports in order and does not.
pub(super) fn unruly_case() -> impl Strategy<Value = Case> {
    (case(), any::<u64>()).prop_map(|(mut c, seed)| {
        c.quirks = Some(seed);
        c.in_order = true;
        c
    })
}

/// Each completion's tag, address, op length, offset and length.
pub(super) fn shape(run: &Run) -> Vec<(usize, u64, usize, usize, usize)> {
    run.0.iter().map(|s| (s.0, s.1, s.2, s.3, s.4)).collect()
}

/// Whether every completion of `run` is consistent: its data as long
/// as it is, and each fragment inside it, with an error exactly where
/// bytes are missing.
pub(super) fn consistent(run: &Run) -> bool {
    run.0.iter().all(|(_, _, _, _, len, frags, data)| {
        data.len() == *len
            && frags
                .iter()
                .all(|f| f.valid <= f.len && f.error.is_some() == (f.valid < f.len))
    })
}

pub(super) fn run<const N: usize, const F: usize>(c: &Case, mem: &[u8], direct: bool) -> Run {
    let g = Geometry::new(c.boundary, c.max_transfer, c.max_ops).expect("valid geometry");
    let mut inner = Faulty::new(MemoryBackend::new(mem, g));
    inner.set_accept_limit(c.accept);
    inner.inner_mut().set_scatter(c.scatter);
    if let Some((start, len)) = c.fault {
        inner
            .inject_fault(start..start + len, ReadErrorKind::Unmapped)
            .expect("room for a fault");
    }
    let backend = Quirky {
        inner,
        seed: c.quirks,
        in_order: c.in_order,
        calls: Vec::new(),
    };
    let mut reader = Reader::<_, _, N, F>::with_window(backend, vec![0u8; c.scratch]);
    reader.set_policy(
        c.gap
            .map_or(CoalescePolicy::disabled(), CoalescePolicy::with_gap),
    );
    let mut bufs: Vec<Vec<u8>> = c.ops.iter().map(|&(_, len)| vec![0xAA; len]).collect();
    let mut ops: Vec<ReadOp<'_>> = bufs
        .iter_mut()
        .zip(&c.ops)
        .enumerate()
        .map(|(i, (b, &(addr, _)))| ReadOp::new(addr, b, if c.indexed { i % N } else { i * 3 }))
        .collect();
    let mut seen = Vec::new();
    let mut done = |d: Completion<'_>| {
        seen.push((
            d.tag(),
            d.addr(),
            d.op_len(),
            d.offset(),
            d.len(),
            d.fragments().collect(),
            d.data().to_vec(),
        ));
    };
    // read_iter's windows of N, as process sees them.
    for chunk in ops.chunks_mut(N) {
        reader.process_with(chunk, &mut done, direct);
    }
    let counters = reader.counters();
    let (backend, _) = reader.into_parts();
    (seen, counters, backend.calls)
}

/// Each op of the case read on its own: with `read_buf` (its route for
/// one op) or through the general route, as summaries, buffers,
/// counters and backend calls.
pub(super) type SingleRun = (
    Vec<(ReadSummary, Vec<u8>)>,
    Counters,
    Vec<Vec<(u64, usize, usize)>>,
);

pub(super) fn run_single(c: &Case, mem: &[u8], one: bool) -> SingleRun {
    let g = Geometry::new(c.boundary, c.max_transfer, c.max_ops).expect("valid geometry");
    let mut inner = Faulty::new(MemoryBackend::new(mem, g));
    inner.set_accept_limit(c.accept);
    inner.inner_mut().set_scatter(c.scatter);
    if let Some((start, len)) = c.fault {
        inner
            .inject_fault(start..start + len, ReadErrorKind::Unmapped)
            .expect("room for a fault");
    }
    let backend = Quirky {
        inner,
        seed: c.quirks,
        in_order: c.in_order,
        calls: Vec::new(),
    };
    let mut reader: Reader<_, _> = Reader::new(backend, vec![0u8; c.scratch]);
    reader.set_policy(
        c.gap
            .map_or(CoalescePolicy::disabled(), CoalescePolicy::with_gap),
    );
    let mut seen = Vec::new();
    for &(addr, len) in &c.ops {
        let mut buf = vec![0xAA; len];
        let summary = if one {
            reader.read_buf(addr, &mut buf)
        } else {
            let (mut ok, mut first_error) = (0, None);
            reader.process_with(
                &mut [ReadOp::new(addr, &mut buf, 0)],
                &mut |d: Completion<'_>| {
                    ok += d.ok_bytes();
                    if first_error.is_none() {
                        first_error = d.first_error();
                    }
                },
                false,
            );
            ReadSummary::new(len, ok, first_error)
        };
        seen.push((summary, buf));
    }
    let counters = reader.counters();
    let (backend, _) = reader.into_parts();
    (seen, counters, backend.calls)
}
