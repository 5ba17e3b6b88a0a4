//! [`Outcome`]: what the backend said about one of its ops, and how the
//! reader counts it.

use crate::{Counters, ReadErrorKind, Report};

/// A backend op's raw result: the bytes read from its start, and why the
/// rest failed. Every route keeps its reports as these, and makes them
/// consistent with [`normalized`](Outcome::normalized) before anything is
/// completed from them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Outcome {
    /// Bytes read from the start of the op.
    pub(super) valid: usize,
    /// Why the bytes after `valid` failed, as reported.
    pub(super) error: Option<ReadErrorKind>,
}

impl Outcome {
    /// An op the backend took and did not report on: nothing read, for no
    /// given cause.
    pub(super) const UNREPORTED: Self = Self {
        valid: 0,
        error: Some(ReadErrorKind::Incomplete),
    };

    /// An op left over when a call took none of its batch.
    pub(super) const REJECTED: Self = Self {
        valid: 0,
        error: Some(ReadErrorKind::Rejected),
    };

    /// What `report` says.
    #[inline(always)]
    pub(super) const fn of(report: &Report) -> Self {
        Self {
            valid: report.valid,
            error: report.error,
        }
    }

    /// The outcome made consistent for an op of `len` bytes: `valid <=
    /// len`, and an error exactly when `valid < len` (`Incomplete` where
    /// the backend gave none).
    #[inline(always)]
    pub(super) fn normalized(self, len: usize) -> Self {
        if self.valid >= len {
            Self {
                valid: len,
                error: None,
            }
        } else {
            Self {
                valid: self.valid,
                error: Some(self.error.unwrap_or(ReadErrorKind::Incomplete)),
            }
        }
    }
}

/// Extends `outcomes` to `len` entries with [`Outcome::UNREPORTED`].
#[inline]
pub(super) fn fill_unreported<const F: usize>(
    outcomes: &mut crate::stack::Stack<Outcome, F>,
    len: usize,
) {
    while outcomes.len() < len {
        if outcomes.push(Outcome::UNREPORTED).is_err() {
            break;
        }
    }
}

impl Counters {
    /// Counts one backend op that the backend took: `count` fragments
    /// over `span` bytes (gap bytes included). The one place a merged
    /// read is counted, whichever route made it.
    #[inline(always)]
    pub(crate) fn count_backend_op(&mut self, count: usize, span: usize) {
        self.backend_ops += 1;
        self.bytes_read += span as u64;
        if count >= 2 {
            self.merged_reads += 1;
            self.merged_ops += count as u64;
        }
    }
}
