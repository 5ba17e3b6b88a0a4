//! The naive reference reader the tests compare against, and result helpers.
#![allow(dead_code)]

use batch_reader::{Completion, PartialRead, ReadBackend, ReadErrorKind, ReadOp, Segment};

/// What the oracle or the reader says about one op: its byte ranges in
/// order, adjacent ranges with one outcome merged.
pub type Outcome = Vec<Segment>;

/// Merges adjacent segments with the same result.
pub fn normalize(segs: impl IntoIterator<Item = Segment>) -> Outcome {
    let mut out: Outcome = Vec::new();
    for s in segs {
        if s.len == 0 {
            continue;
        }
        match out.last_mut() {
            Some(last) if last.result == s.result && last.offset + last.len == s.offset => {
                last.len += s.len
            }
            _ => out.push(s),
        }
    }
    out
}

/// Reads one op the naive way: split at the backend's boundary and maximum
/// transfer (computed here, independently of the crate), one backend call
/// per fragment, no merging. Returns the outcome and the number of fragments.
pub fn oracle<B: ReadBackend>(backend: &mut B, addr: u64, buf: &mut [u8]) -> (Outcome, usize) {
    let len = buf.len();
    if len == 0 {
        return (Vec::new(), 0);
    }
    if addr.checked_add(len as u64).is_none() {
        let seg = Segment {
            offset: 0,
            len,
            result: Err(ReadErrorKind::AddressOverflow),
        };
        return (vec![seg], 0);
    }
    let g = backend.geometry();
    let mut segs = Vec::new();
    let mut off = 0usize;
    let mut frags = 0;
    while off < len {
        let a = addr + off as u64;
        let mut n = (len - off).min(g.max_transfer());
        if let Some(b) = g.boundary() {
            let to_next = b - a % b;
            if to_next < n as u64 {
                n = to_next as usize;
            }
        }
        let mut report = None;
        let mut ops = [ReadOp::new(a, &mut buf[off..off + n], 77)];
        let accepted = backend.read_batch(&mut ops, |r| {
            assert_eq!(r.tag, 77);
            assert!(report.is_none(), "one report per op");
            report = Some(r);
        });
        assert_eq!(accepted, 1, "the oracle's backend accepts single ops");
        let r = report.expect("accepted op reported");
        let valid = r.valid.min(n);
        segs.push(Segment {
            offset: off,
            len: valid,
            result: Ok(()),
        });
        if valid < n {
            segs.push(Segment {
                offset: off + valid,
                len: n - valid,
                result: Err(r.error.unwrap_or(ReadErrorKind::Incomplete)),
            });
        }
        off += n;
        frags += 1;
    }
    (normalize(segs), frags)
}

/// Collects a reader's completions, checking that each op's completions come
/// in op order, in offset order, and cover it exactly once.
#[derive(Debug, Default)]
pub struct Collector {
    /// Per op index (in submission order): tag and outcome.
    pub ops: Vec<(usize, Outcome)>,
    next_offset: usize,
    /// The data of every ok segment, by op index and offset within the op.
    pub ok_data: Vec<(usize, usize, Vec<u8>)>,
}

impl Collector {
    pub fn push(&mut self, c: &Completion<'_>) {
        if c.offset() == 0 {
            assert_eq!(self.next_offset, 0, "previous op was not finished");
            self.ops.push((c.tag(), Vec::new()));
        } else {
            assert_eq!(
                c.offset(),
                self.next_offset,
                "completions of an op are contiguous"
            );
        }
        let index = self.ops.len() - 1;
        assert_eq!(self.ops[index].0, c.tag());
        assert_eq!(c.data().len(), c.len());
        let mut covered = 0;
        let mut expect = c.offset();
        let segs: Vec<Segment> = c.segments().collect();
        for s in &segs {
            assert_eq!(s.offset, expect, "segments are in order and gap-free");
            assert!(s.len > 0);
            expect += s.len;
            covered += s.len;
            if s.result.is_ok() {
                let rel = s.offset - c.offset();
                self.ok_data
                    .push((index, s.offset, c.data()[rel..rel + s.len].to_vec()));
            }
        }
        assert_eq!(covered, c.len(), "segments cover the completion");
        let ok: usize = segs
            .iter()
            .filter(|s| s.result.is_ok())
            .map(|s| s.len)
            .sum();
        assert_eq!(ok, c.ok_bytes());
        assert_eq!(c.is_ok(), ok == c.len());
        assert_eq!(
            c.first_error(),
            segs.iter()
                .find_map(|s| s.result.err().map(|kind| PartialRead {
                    valid: s.offset,
                    kind
                }))
        );
        let frag_total: usize = c.fragments().map(|f| f.len).sum();
        if c.op_len() > 0
            && c.fragments()
                .all(|f| f.error != Some(ReadErrorKind::AddressOverflow))
        {
            assert_eq!(frag_total, c.len());
        }
        let outcome = &mut self.ops[index].1;
        outcome.extend(segs);
        *outcome = normalize(outcome.drain(..));
        self.next_offset = if c.is_last() { 0 } else { c.offset() + c.len() };
    }

    pub fn finish(&self) {
        assert_eq!(self.next_offset, 0, "last op finished");
    }
}
