//! The solo op: a read awaited alone under the run that polls it, as each
//! step of a single chain is. It is kept apart from the slots, so that such
//! a read is queued, flushed and taken with a few stores and loads.

use super::queue::{BROKEN, Enqueued, Inner};
use super::staging::copy_small;
use crate::{PartialRead, ReadBackend};

/// The longest read that can be the solo op.
pub(super) const SOLO_BYTES: usize = 64;

/// The size of the solo op's buffer: none with `small`, which leaves the
/// solo op out (a read awaited alone goes through a slot, as any other).
pub(super) const SOLO_BUF: usize = if cfg!(feature = "small") {
    0
} else {
    SOLO_BYTES
};

/// The solo op. It exists only while the queue is empty: a second op queued
/// before the flush first moves the solo op into a slot ([`Solo::Moved`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Solo {
    /// None.
    Empty,
    /// Waiting for the next flush.
    Queued { addr: u64, len: usize },
    /// Read into `solo_buf`, with where it first failed, if it did; taken
    /// when its future is polled or dropped.
    Done(Option<PartialRead>),
    /// Moved into this slot; its future takes the slot on its next poll.
    Moved(usize),
    /// None, and the last flush read several ops: the next read goes into a
    /// slot. The other futures of that flush are still to be polled and
    /// likely to queue reads too (joined chains), and the first of them
    /// would only move a solo op into a slot. A flush of one op in a slot
    /// makes it [`Solo::Empty`] again.
    Joined,
}

/// What polling the solo op found.
pub(super) enum SoloPoll {
    /// Read; the copy to the caller is made.
    Ready(Option<PartialRead>),
    /// Still queued, under the run that flushes it.
    Wait,
    /// Moved into this slot: go on as that slot's future.
    Slot(usize),
    /// Still queued, polled where no run will flush it, and no slot to move
    /// it to: flush it now.
    Flush,
}

impl<B, S, const N: usize, const A: usize> Inner<B, S, N, A> {
    /// The solo op's part of [`enqueue`](Self::enqueue): the read becomes
    /// the solo op (`Solo`), or a queued solo op finds no slot to move to
    /// (`Direct`: this read goes alone at once, and the queue stays empty
    /// while there is a solo op); `None` if the read goes on to a slot.
    #[inline(always)]
    pub(super) fn enqueue_solo(&mut self, addr: u64, len: usize, solo: bool) -> Option<Enqueued> {
        if cfg!(feature = "small") {
            return None;
        }
        if solo && matches!(self.solo, Solo::Empty) && self.queue.is_empty() && len <= SOLO_BYTES {
            self.solo = Solo::Queued { addr, len };
            return Some(Enqueued::Solo);
        }
        if let Solo::Queued { .. } = self.solo {
            if !self.move_solo() {
                return Some(Enqueued::Direct);
            }
        }
        None
    }

    /// Moves a queued solo op into a slot, at the head of the queue (which
    /// is empty while there is a solo op). Returns `false` if no slot or
    /// staging is free, leaving it where it was.
    #[cold]
    #[inline(never)]
    fn move_solo(&mut self) -> bool {
        let Solo::Queued { addr, len } = self.solo else {
            return true;
        };
        match self.enqueue_slot(addr, len) {
            Enqueued::Slot { idx, .. } => {
                self.solo = Solo::Moved(idx);
                true
            }
            Enqueued::Solo | Enqueued::Direct => false,
        }
    }

    /// If the solo op is read, copies its valid prefix into `out`, frees it
    /// and returns where it failed, if it did.
    #[inline]
    pub(super) fn take_solo(&mut self, out: &mut [u8]) -> Option<Option<PartialRead>> {
        let Solo::Done(failure) = self.solo else {
            return None;
        };
        let valid = failure.map_or(out.len(), |f| f.valid).min(out.len());
        if let (Some(to), Some(from)) = (out.get_mut(..valid), self.solo_buf.get(..valid)) {
            copy_small(to, from);
        }
        self.solo = Solo::Empty;
        Some(failure)
    }

    /// Where the solo op stands, for its future, polled under its run
    /// (`driven`) or not.
    pub(super) fn poll_solo(&mut self, out: &mut [u8], driven: bool) -> SoloPoll {
        if let Some(failure) = self.take_solo(out) {
            return SoloPoll::Ready(failure);
        }
        match self.solo {
            Solo::Queued { .. } if driven => SoloPoll::Wait,
            Solo::Queued { .. } => {
                if !self.move_solo() {
                    return SoloPoll::Flush;
                }
                self.poll_solo(out, driven)
            }
            Solo::Moved(idx) => {
                // It was moved by a second read: the flush reads several.
                self.solo = Solo::Joined;
                SoloPoll::Slot(idx)
            }
            // Not reachable for the future holding the solo op.
            Solo::Empty | Solo::Joined | Solo::Done(_) => SoloPoll::Ready(Some(BROKEN)),
        }
    }

    /// The flush of a queued solo op: one `read_buf` into its bytes.
    /// Returns whether there was one.
    #[inline(always)]
    pub(super) fn flush_solo(&mut self) -> bool
    where
        B: ReadBackend,
        S: AsMut<[u8]>,
    {
        let Solo::Queued { addr, len } = self.solo else {
            return false;
        };
        // The queue is empty while there is a solo op.
        let failure = match self.solo_buf.get_mut(..len) {
            Some(buf) => self.reader.read_buf(addr, buf).first_error(),
            None => Some(BROKEN),
        };
        self.solo = Solo::Done(failure);
        true
    }
}
