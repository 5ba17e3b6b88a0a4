//! The staging space: where a flush puts the bytes of the ops it reads, and
//! how much of it is held and promised.

use super::queue::{Slot, SlotState};
use crate::{PartialRead, ReadErrorKind};

/// `A` bytes that queued reads land in, with the bookkeeping that keeps a
/// flush from ever finding no room: `held + queued <= A` always.
#[derive(Debug)]
pub(super) struct Staging<const A: usize> {
    pub(super) bytes: [u8; A],
    /// The end of the bytes read slots hold: the next flush places its
    /// ops' bytes from here on.
    pub(super) bump: usize,
    /// The bytes read slots hold (the sum of their lengths); staging is
    /// reused from its start once this is zero.
    pub(super) held: usize,
    /// The bytes the queued ops will take when they are read.
    pub(super) queued: usize,
}

impl<const A: usize> Staging<A> {
    pub(super) const fn new() -> Self {
        Self {
            bytes: [0; A],
            bump: 0,
            held: 0,
            queued: 0,
        }
    }

    /// Whether a read of `len` bytes can be promised room.
    #[inline(always)]
    pub(super) fn fits(&self, len: usize) -> bool {
        // `held + queued <= A`, so this does not underflow.
        len <= A - self.held - self.queued
    }

    /// Gives back the bytes a read slot held.
    #[inline]
    pub(super) fn release(&mut self, len: usize) {
        self.held -= len;
        if self.held == 0 {
            self.bump = 0;
        }
    }

    /// Where the next flush places its ops' bytes: at `bump`, after the
    /// bytes read slots hold, moved to the front first if the queued ops
    /// would not fit after them (they always fit then: `held + queued <=
    /// A`).
    #[inline]
    pub(super) fn placement<const N: usize>(&mut self, slots: &mut [Slot; N]) -> usize {
        if self.queued > A - self.bump {
            self.compact(slots);
        }
        self.bump
    }

    /// Moves the bytes of every read slot to the front of staging, in the
    /// order they lie there, so that `bump` becomes `held`. Tasks that keep
    /// read ops waiting while later ones are read never let staging empty,
    /// so without this the space would run out however little of it is in
    /// use. Out of line: it runs only when a flush finds no room after
    /// `bump`, and its list of slots is large.
    #[cold]
    #[inline(never)]
    fn compact<const N: usize>(&mut self, slots: &mut [Slot; N]) {
        let mut live: crate::stack::Stack<usize, N> = crate::stack::Stack::new();
        for (i, slot) in slots.iter().enumerate() {
            if slot.state == SlotState::Done {
                // Cannot fail: N slots.
                let _ = live.push(i);
            }
        }
        sort_by_offset(&mut live, slots);
        let mut to = 0;
        for &i in live.iter() {
            let Some(slot) = slots.get_mut(i) else {
                continue;
            };
            // Moves down only: `to` never passes a slot's offset.
            move_down(&mut self.bytes, slot.off, slot.len, to);
            slot.off = to;
            to += slot.len;
        }
        self.bump = to;
    }
}

/// Moves `len` bytes of `bytes` from `from` down to `to` (`to <= from`),
/// byte by byte from the front, which a move down allows: a step that runs
/// rarely, kept short (no `memmove` pulled in) and without a panic path.
fn move_down(bytes: &mut [u8], from: usize, len: usize, to: usize) {
    for i in 0..len {
        let (Some(src), Some(dst)) = (from.checked_add(i), to.checked_add(i)) else {
            return;
        };
        let Some(&b) = bytes.get(src) else {
            return;
        };
        if let Some(d) = bytes.get_mut(dst) {
            *d = b;
        }
    }
}

/// Sorts slot indices by their slots' offsets in staging: an insertion
/// sort, short and without a panic path, for a step that runs rarely.
fn sort_by_offset(live: &mut [usize], slots: &[Slot]) {
    let off = |i: usize| slots.get(i).map_or(0, |s| s.off);
    for k in 1..live.len() {
        let mut j = k;
        while j > 0 {
            match (live.get(j - 1).copied(), live.get(j).copied()) {
                (Some(a), Some(b)) if off(a) > off(b) => live.swap(j - 1, j),
                _ => break,
            }
            j -= 1;
        }
    }
}

/// `to.copy_from_slice(from)`, without a call to `memcpy` for the 8-byte
/// values most reads are.
#[inline(always)]
pub(super) fn copy_small(to: &mut [u8], from: &[u8]) {
    match (
        <&mut [u8; 8]>::try_from(&mut *to),
        <&[u8; 8]>::try_from(from),
    ) {
        (Ok(to), Ok(from)) => *to = *from,
        _ => {
            if to.len() == from.len() {
                to.copy_from_slice(from);
            }
        }
    }
}

/// Marks a slot that a flush found no staging for (which `held + queued <=
/// A` rules out) read and failed, holding no staging.
#[cold]
pub(super) fn unplaced(slot: &mut Slot) {
    slot.off = 0;
    slot.len = 0;
    slot.failure = Some(PartialRead {
        valid: 0,
        kind: ReadErrorKind::Other,
    });
}
