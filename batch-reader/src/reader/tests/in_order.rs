//! The in-order route against backends that break their promise, and the
//! default in-order call.

extern crate alloc;

use alloc::vec;
use alloc::vec::Vec;

use crate::backends::MemoryBackend;
use crate::{Geometry, ReadBackend, ReadErrorKind, ReadOp, Reader, Report};

/// Memory that says it reports in order. Its in-order call reads every
/// op, then reports as `script` says (each entry an op's position; the
/// op at `copy_of` is handed over as a copy) and says it took `taken`.
/// Logs where each in-order call's ops lie, and counts the other calls.
struct Unruly<'m> {
    inner: MemoryBackend<'m>,
    script: Vec<usize>,
    copy_of: Option<usize>,
    taken: usize,
    in_order_calls: Vec<usize>,
    batch_calls: usize,
}

impl<'m> Unruly<'m> {
    fn new(mem: &'m [u8], script: Vec<usize>, copy_of: Option<usize>, taken: usize) -> Self {
        let g = Geometry::new(Some(16), 16, 8).expect("valid geometry");
        Self {
            inner: MemoryBackend::new(mem, g),
            script,
            copy_of,
            taken,
            in_order_calls: Vec::new(),
            batch_calls: 0,
        }
    }
}

impl ReadBackend for Unruly<'_> {
    fn geometry(&self) -> Geometry {
        self.inner.geometry()
    }

    fn read_batch<R: FnMut(Report)>(&mut self, ops: &mut [ReadOp<'_>], report: R) -> usize {
        self.batch_calls += 1;
        self.inner.read_batch(ops, report)
    }

    fn reports_in_order(&self) -> bool {
        true
    }

    fn read_batch_in_order<R: FnMut(&ReadOp<'_>, Report)>(
        &mut self,
        ops: &mut [ReadOp<'_>],
        mut report: R,
    ) -> usize {
        self.in_order_calls.push(ops.as_ptr() as usize);
        let mut got = Vec::new();
        self.inner.read_batch_in_order(ops, |_, r| got.push(r));
        let mut spare = [0u8; 16];
        for &i in &self.script {
            let op = &ops[i];
            if self.copy_of == Some(i) {
                let copy = ReadOp::new(op.addr, &mut spare[..op.buf.len()], op.tag);
                report(&copy, got[i]);
            } else {
                report(op, got[i]);
            }
        }
        self.taken
    }
}

/// A completion's tag, first error and bytes.
type Seen5 = (usize, Option<(usize, ReadErrorKind)>, Vec<u8>);

/// Reads five 2-byte ops tagged 10 to 14 at 0, 8, .., 32 with
/// `reader`: each completion's tag, first error and bytes, and where the
/// ops lie.
fn read_five(reader: &mut Reader<Unruly<'_>, [u8; 0]>) -> (Vec<Seen5>, usize) {
    let mut bufs = [[0u8; 2]; 5];
    let mut ops: Vec<ReadOp<'_>> = bufs
        .iter_mut()
        .enumerate()
        .map(|(i, b)| ReadOp::new(8 * i as u64, b, 10 + i))
        .collect();
    let at = ops.as_ptr() as usize;
    let mut got = Vec::new();
    // The direct route, which `read_many` takes unless built `small`.
    let mut done = |c: crate::Completion<'_>| {
        got.push((
            c.tag(),
            c.first_error().map(|f| (f.valid, f.kind)),
            c.data().to_vec(),
        ))
    };
    reader.process_with(&mut ops, &mut done, true);
    (got, at)
}

#[test]
fn a_backend_that_reports_in_order_completes_each_op_in_its_report() {
    // Guards the property tests' in-order cases: the route is taken, with
    // the caller's own ops (tags that are not positions), in one call.
    let mem: [u8; 64] = core::array::from_fn(|i| i as u8);
    let backend = Unruly::new(&mem, (0..5).collect(), None, 5);
    let mut reader: Reader<_, _> = Reader::new(backend, [0u8; 0]);
    let (got, at) = read_five(&mut reader);
    let want: Vec<_> = (0..5u8)
        .map(|i| (10 + i as usize, None, vec![8 * i, 8 * i + 1]))
        .collect();
    assert_eq!(got, want);
    assert_eq!(reader.backend().in_order_calls, [at]);
    assert_eq!(reader.backend().batch_calls, 0);
    let c = reader.counters();
    assert_eq!(
        (c.backend_calls, c.backend_ops, c.fragments, c.bytes_read),
        (1, 5, 5, 10)
    );
}

#[test]
fn an_op_reported_out_of_order_completes_as_not_reported() {
    // Op 1 first (ignored, and not reported again), op 0 (completed),
    // op 0 again and a copy of op 2 (ignored), op 3 (not next:
    // ignored); the call says it took 2. So op 0 is read, op 1 is not
    // reported, and ops 2 to 4 are resubmitted, as on every route.
    let mem: [u8; 64] = core::array::from_fn(|i| i as u8);
    let backend = Unruly::new(&mem, vec![1, 0, 0, 2, 3], Some(2), 2);
    let mut reader: Reader<_, _> = Reader::new(backend, [0u8; 0]);
    let (got, _) = read_five(&mut reader);
    assert_eq!(
        got,
        [
            (10, None, vec![0, 1]),
            (11, Some((0, ReadErrorKind::Incomplete)), vec![8, 9]),
            (12, None, vec![16, 17]),
            (13, None, vec![24, 25]),
            (14, None, vec![32, 33]),
        ]
    );
    assert_eq!(reader.backend().in_order_calls.len(), 1);
    assert_eq!(reader.backend().batch_calls, 1);
    let c = reader.counters();
    assert_eq!((c.backend_calls, c.backend_ops, c.fragments), (2, 5, 5));
}

#[test]
fn ops_reported_past_what_a_call_took_count_as_taken() {
    // Three ops reported in order, one said taken: the three have their
    // completions and only ops 3 and 4 are resubmitted.
    let mem: [u8; 64] = core::array::from_fn(|i| i as u8);
    let backend = Unruly::new(&mem, vec![0, 1, 2], None, 1);
    let mut reader: Reader<_, _> = Reader::new(backend, [0u8; 0]);
    let (got, _) = read_five(&mut reader);
    let want: Vec<_> = (0..5u8)
        .map(|i| (10 + i as usize, None, vec![8 * i, 8 * i + 1]))
        .collect();
    assert_eq!(got, want);
    assert_eq!(reader.backend().batch_calls, 1);
    let c = reader.counters();
    assert_eq!((c.backend_calls, c.backend_ops), (2, 5));
}

/// Memory with only the required methods, whose calls past the first
/// `takes` take nothing; counts its calls.
struct Plain<'m> {
    inner: MemoryBackend<'m>,
    takes: usize,
    calls: usize,
}

impl ReadBackend for Plain<'_> {
    fn geometry(&self) -> Geometry {
        self.inner.geometry()
    }

    fn read_batch<R: FnMut(Report)>(&mut self, ops: &mut [ReadOp<'_>], report: R) -> usize {
        self.calls += 1;
        if self.calls > self.takes {
            return 0;
        }
        self.inner.read_batch(ops, report)
    }
}

#[test]
fn the_default_in_order_call_reads_op_by_op() {
    let mem: [u8; 64] = core::array::from_fn(|i| i as u8);
    let g = Geometry::new(None, 64, 8).expect("valid geometry");
    let mut backend = Plain {
        inner: MemoryBackend::new(&mem, g),
        takes: 3,
        calls: 0,
    };
    assert!(!backend.reports_in_order());
    let mut bufs = [[0u8; 2]; 4];
    let mut ops: Vec<ReadOp<'_>> = bufs
        .iter_mut()
        .enumerate()
        .map(|(i, b)| ReadOp::new(59 + 2 * i as u64, b, 7 * i))
        .collect();
    let mut seen = Vec::new();
    let n = backend.read_batch_in_order(&mut ops, |op, r| {
        seen.push((op.addr, op.buf.to_vec(), r));
    });
    // One call per op; the fourth takes nothing, which ends the batch.
    assert_eq!((n, backend.calls), (3, 4));
    assert_eq!(
        seen,
        [
            (59, vec![59, 60], Report::ok(0, 2)),
            (61, vec![61, 62], Report::ok(7, 2)),
            (
                63,
                vec![63, 0],
                Report::failed(14, 1, ReadErrorKind::OutOfBounds)
            ),
        ]
    );
}
