//! The single-op route: `read_buf` of one fragment is one backend call with
//! one op, and the summary and counters the direct route of `read_many`
//! would give, without its window, batch and completion.

use super::Reader;
use super::outcome::Outcome;
use crate::{Completion, PartialRead, ReadBackend, ReadOp, ReadSummary};

impl<B: ReadBackend, S: AsMut<[u8]>, const N: usize, const F: usize> Reader<B, S, N, F> {
    /// The single-op route: `None`, with nothing done, when the op is not
    /// one fragment (empty, overflowing, crossing a boundary or longer than
    /// `max_transfer`).
    #[inline(always)]
    pub(super) fn read_one(&mut self, addr: u64, buf: &mut [u8]) -> Option<ReadSummary> {
        let geometry = self.backend.geometry();
        let len = buf.len();
        let (end, overflow) = addr.overflowing_add(len as u64);
        // The scan's exact test for one op.
        let unit = geometry.unit_mask();
        let one_fragment = ((len as u64).wrapping_sub(1) < geometry.max_transfer() as u64)
            & !overflow
            & ((addr ^ end.wrapping_sub(1)) & unit == 0);
        if !one_fragment {
            return None;
        }
        // A single op merges with nothing, so the coalescing policy does not
        // apply. As on the direct route, the last report under the op's tag
        // counts, other tags are ignored, and no report reads as
        // `Incomplete`.
        let mut got = Outcome::UNREPORTED;
        let accepted = self
            .backend
            .read_batch(&mut [ReadOp::new(addr, buf, 0)], |r| {
                if r.tag == 0 {
                    got = Outcome::of(&r);
                }
            });
        let c = &mut self.counters;
        c.backend_calls += 1;
        c.ops += 1;
        c.fragments += 1;
        c.bytes_requested += len as u64;
        let failed = if accepted == 0 {
            // Not taken: fails as the direct route fails what is left.
            Outcome::REJECTED
        } else {
            c.backend_ops += 1;
            c.bytes_read += len as u64;
            let outcome = got.normalized(len);
            if outcome.error.is_none() {
                return Some(ReadSummary::new(len, len, None));
            }
            outcome
        };
        let first_error = failed.error.map(|kind| PartialRead {
            valid: failed.valid,
            kind,
        });
        Some(ReadSummary::new(len, failed.valid, first_error))
    }

    /// `read_buf` of an op that is not one fragment (of every op, with
    /// `small`): the general route, which `read_many` would take for it
    /// alone, summed up.
    #[inline(never)]
    pub(super) fn read_buf_general(&mut self, addr: u64, buf: &mut [u8]) -> ReadSummary {
        let len = buf.len();
        let mut ok = 0;
        let mut first_error = None;
        let mut ops = [ReadOp::new(addr, buf, 0)];
        let mut sum = |c: Completion<'_>| {
            ok += c.ok_bytes();
            if first_error.is_none() {
                first_error = c.first_error();
            }
        };
        // Not one fragment (or `small`), so the direct route would not
        // take it.
        self.process_with(&mut ops, &mut sum, false);
        ReadSummary::new(len, ok, first_error)
    }

    /// The first failure of `read_buf(addr, buf)`: the same batch of one
    /// by the general route, with nothing else summed up.
    #[inline(never)]
    pub(super) fn read_first_error(&mut self, addr: u64, buf: &mut [u8]) -> Option<PartialRead> {
        let mut first = None;
        let mut ops = [ReadOp::new(addr, buf, 0)];
        self.general_windows(&mut ops, &mut |c: Completion<'_>| {
            if first.is_none() {
                first = c.first_error();
            }
        });
        first
    }
}
