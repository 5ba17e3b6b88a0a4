//! Where lent slices lie in pool memory, and where the next message may go.
//!
//! This is the producer's private bookkeeping: plain integers, no atomics, no
//! memory. It is the whole placement policy, so it can be read (and tested)
//! on its own. The invariants it keeps are argued in `docs/buffer-pool.md`:
//!
//! - **Disjoint**: the spans of `known` slots are pairwise disjoint and lie in
//!   `0..cap`.
//! - **Ordered groups**: every front-group span ends at or before `head`, the
//!   lowest start of a back-group span; and the front group is empty whenever
//!   the back group is.
//! - **Free regions**: the back region `tail..cap` (`tail` = highest end of any
//!   known span) and the front region `front_end..head` (`front_end` = highest
//!   end of a front-group span) overlap no known span.

use crate::slot_map::sealed::{Sealed, Span};

/// Where a pool puts the message being written.
///
/// # Examples
///
/// ```
/// use buffer_pool::{Buffer, BufferPool, PoolMode};
///
/// let mut pool = BufferPool::new(4);
/// pool.get_writable(3).copy_from_slice(b"abc");
/// assert_eq!(pool.mode(), PoolMode::Back);
/// let _held = pool.get_data_owned();
/// pool.get_writable(3).copy_from_slice(b"def"); // 3 bytes no longer fit
/// assert_eq!(pool.mode(), PoolMode::Alloc);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum PoolMode {
    /// In pool memory after every lent slice.
    Back,
    /// In pool memory before the oldest lent slices, reusing freed space.
    Front,
    /// In system memory: no slot or no pool space was free.
    Alloc,
}

/// A free region chosen for a message: it starts at `start` and may grow up
/// to `limit`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Placement {
    pub(crate) start: usize,
    pub(crate) limit: usize,
    pub(crate) mode: PoolMode,
}

/// The producer's view of the lent slots.
#[derive(Debug)]
pub(crate) struct Layout<M: Sealed> {
    /// Slots lent and not yet seen returned: a superset of the atomic map.
    known: u64,
    /// The subset of `known` placed in the front group.
    front: u64,
    /// Span of each known slot.
    spans: M::Spans,
    /// The bounds of the free regions, as [`scan`](Self::scan) computes them
    /// from `spans`: kept up to date by each `lend`, and scanned again only
    /// when slots are seen returned, so that placing a message while slices
    /// are held does not walk the slots.
    bounds: Bounds,
}

/// What the free regions are made of: the highest end of any known span
/// (`tail`), the lowest start of a back-group span (`head`) and the highest
/// end of a front-group span (`front_end`). All zero for no span, so that a
/// new layout is all zero bytes and is written in place rather than built
/// and copied. Without a back group nothing is known (the front group is
/// empty whenever the back group is) and `head` is any offset up to `tail`'s
/// 0 or an earlier one within the pool: the back region is then the whole
/// pool, and a front region `0..head` is never chosen over it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Bounds {
    tail: usize,
    head: usize,
    front_end: usize,
}

impl Bounds {
    /// The bounds of no span at all.
    const NONE: Self = Self {
        tail: 0,
        head: 0,
        front_end: 0,
    };

    /// Takes in one more known span, of the front group if `front`.
    #[inline]
    fn add(&mut self, span: Span, front: bool) {
        self.tail = self.tail.max(span.end);
        if front {
            self.front_end = self.front_end.max(span.end);
        } else {
            self.head = self.head.min(span.start);
        }
    }

    /// The back region `tail..cap` and the front region `front_end..head`.
    #[inline]
    fn regions(self, cap: usize) -> ((usize, usize), (usize, usize)) {
        (
            (self.tail, cap),
            (self.front_end, self.head.max(self.front_end)),
        )
    }
}

impl<M: Sealed> Layout<M> {
    /// Nothing lent.
    pub(crate) const fn new() -> Self {
        Self {
            known: 0,
            front: 0,
            spans: M::EMPTY_SPANS,
            bounds: Bounds::NONE,
        }
    }

    /// Records the slots of `lent` as lent with unknown spans: each is taken
    /// to cover the whole of `0..cap`, so nothing is placed until they come
    /// back. Used when `'static` storage is claimed again while slices of an
    /// earlier pool are still alive.
    pub(crate) fn lend_unknown(&mut self, lent: u64, cap: usize) {
        self.known |= lent & M::ALL;
        for (i, span) in self.spans.as_mut().iter_mut().enumerate() {
            if lent & (1 << i) != 0 {
                *span = Span { start: 0, end: cap };
            }
        }
        self.bounds = self.scan();
    }

    /// Slots the producer believes lent.
    #[inline]
    pub(crate) fn known(&self) -> u64 {
        self.known
    }

    /// The lowest slot not lent, if any.
    #[inline]
    pub(crate) fn free_slot(&self) -> Option<u32> {
        let free = !self.known & M::ALL;
        (free != 0).then(|| free.trailing_zeros())
    }

    /// Takes note that only the slots of `lent` are still lent (`lent` is a
    /// fresh load of the atomic map; bits outside `known` are ignored). When
    /// the back group empties, the front group becomes the back group.
    pub(crate) fn observe(&mut self, lent: u64) {
        let returned = self.known & !lent;
        if returned == 0 {
            return;
        }
        self.known &= !returned;
        self.front &= !returned;
        if self.known & !self.front == 0 {
            self.front = 0;
        }
        self.bounds = self.scan();
    }

    /// Records that `slot` is now lent with bytes `start..end`, placed in
    /// `mode` (`Back` or `Front`).
    pub(crate) fn lend(&mut self, slot: u32, start: usize, end: usize, mode: PoolMode) {
        let bit = 1u64 << slot;
        self.known |= bit;
        // A placement starts at `tail` (Back) or `front_end` (Front) of when
        // it was made, and these only fall until it is lent: so the span ends
        // past them. A back span starts at or after `head`, and the first
        // one (nothing known, every bound 0) at 0, which `head` already is.
        if mode == PoolMode::Front {
            self.front |= bit;
            self.bounds.front_end = end;
        } else {
            self.bounds.tail = end;
        }
        // `slot` is below `M::SLOTS`, the length of `spans`.
        if let Some(span) = self.spans.as_mut().get_mut(slot as usize) {
            *span = Span { start, end };
        }
    }

    /// The bounds of the known spans, from the spans themselves.
    fn scan(&self) -> Bounds {
        // `head` starts at the identity of `min`: without a back group it
        // stays there, and means nothing.
        let mut bounds = Bounds {
            head: usize::MAX,
            ..Bounds::NONE
        };
        // Everything back, as when a decoder drops each frame before the
        // next: nothing to walk.
        if self.known == 0 {
            return Bounds::NONE;
        }
        for (i, &span) in self.spans.as_ref().iter().enumerate() {
            // `i` is below `M::SLOTS` (at most 64): the shift is in range.
            let bit = 1u64 << i;
            if self.known & bit != 0 {
                bounds.add(span, self.front & bit != 0);
            }
        }
        // Without a back group `head` is still `usize::MAX`; bring it within
        // the pool (every back-group start is at or below `tail`).
        bounds.head = bounds.head.min(bounds.tail);
        bounds
    }

    /// The back region `tail..cap` and the front region `front_end..head`.
    #[inline]
    pub(crate) fn regions(&self, cap: usize) -> ((usize, usize), (usize, usize)) {
        self.bounds.regions(cap)
    }

    /// The region a message of `need` bytes goes to: the back region if it
    /// fits there, else the front region if it fits there, else none.
    pub(crate) fn place(&self, need: usize, cap: usize) -> Option<Placement> {
        let ((tail, end), (front_end, head)) = self.regions(cap);
        if end - tail >= need {
            Some(Placement {
                start: tail,
                limit: end,
                mode: PoolMode::Back,
            })
        } else if head - front_end >= need {
            Some(Placement {
                start: front_end,
                limit: head,
                mode: PoolMode::Front,
            })
        } else {
            None
        }
    }

    /// The largest message a free region could hold now.
    pub(crate) fn largest_region(&self, cap: usize) -> usize {
        let ((tail, end), (front_end, head)) = self.regions(cap);
        (end - tail).max(head - front_end)
    }

    /// Checks the invariants listed in the module docs.
    #[cfg(test)]
    pub(crate) fn check(&self, cap: usize) {
        let (kept, scanned) = (self.bounds, self.scan());
        if self.known == 0 {
            assert_eq!((kept.tail, kept.front_end), (0, 0), "stale region bounds");
            assert!(kept.head <= cap, "head outside the pool");
        } else {
            assert_eq!(
                kept.regions(cap),
                scanned.regions(cap),
                "stale region bounds"
            );
        }
        let spans = self.spans.as_ref();
        let slots = (0..M::SLOTS).filter(|i| self.known & (1 << i) != 0);
        assert_eq!(self.front & !self.known, 0, "front group outside known");
        if self.front != 0 {
            assert_ne!(
                self.known & !self.front,
                0,
                "front group without back group"
            );
        }
        for a in slots.clone() {
            let sa = spans[a as usize];
            assert!(sa.start < sa.end && sa.end <= cap, "span out of bounds");
            for b in slots.clone() {
                let sb = spans[b as usize];
                if a != b {
                    assert!(sa.end <= sb.start || sb.end <= sa.start, "spans overlap");
                }
                if self.front & (1 << a) != 0 && self.front & (1 << b) == 0 {
                    assert!(sa.end <= sb.start, "front span after a back span");
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_layout_offers_everything_in_back_mode() {
        let layout = Layout::<u8>::new();
        assert_eq!(
            layout.place(10, 10),
            Some(Placement {
                start: 0,
                limit: 10,
                mode: PoolMode::Back
            })
        );
        assert_eq!(layout.place(11, 10), None);
        assert_eq!(layout.place(0, 0).map(|p| p.mode), Some(PoolMode::Back));
        assert_eq!(layout.free_slot(), Some(0));
    }

    #[test]
    fn front_then_promotion() {
        let mut layout = Layout::<u8>::new();
        layout.lend(0, 0, 5, PoolMode::Back);
        layout.lend(1, 5, 10, PoolMode::Back);
        layout.observe(0b10);
        // Back region 10..10 is empty; front region 0..5.
        assert_eq!(
            layout.place(5, 10),
            Some(Placement {
                start: 0,
                limit: 5,
                mode: PoolMode::Front
            })
        );
        layout.lend(0, 0, 3, PoolMode::Front);
        layout.check(10);
        // The back group (slot 1) goes: slot 0 becomes the back group.
        layout.observe(0b01);
        layout.check(10);
        assert_eq!(
            layout.place(7, 10),
            Some(Placement {
                start: 3,
                limit: 10,
                mode: PoolMode::Back
            })
        );
    }

    #[test]
    fn every_slot_lent_leaves_no_free_slot() {
        let mut layout = Layout::<u16>::new();
        for i in 0..16 {
            assert_eq!(layout.free_slot(), Some(i));
            layout.lend(i, i as usize, i as usize + 1, PoolMode::Back);
        }
        assert_eq!(layout.free_slot(), None);
        layout.check(16);
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig {
            cases: if cfg!(miri) { 4 } else { 256 },
            failure_persistence: None,
            ..proptest::prelude::ProptestConfig::default()
        })]

        /// Any run of placements, lends and returns (a message of `len`
        /// bytes placed and lent when `len > 0`, else the slots of `keep`'s
        /// complement returned) keeps the invariants, and the region bounds
        /// kept up to date on the way are those a scan of the spans finds.
        #[test]
        fn bounds_kept_on_the_way_match_a_scan(
            steps in proptest::collection::vec((0usize..40, proptest::prelude::any::<u8>()), 1..64)
        ) {
            const CAP: usize = 100;
            let mut layout = Layout::<u8>::new();
            for (len, keep) in steps {
                match (len, layout.free_slot()) {
                    (1.., Some(slot)) => {
                        if let Some(place) = layout.place(len, CAP) {
                            layout.lend(slot, place.start, place.start + len, place.mode);
                        }
                    }
                    _ => layout.observe(layout.known() & u64::from(keep)),
                }
                layout.check(CAP);
            }
        }
    }

    #[test]
    fn unknown_spans_block_everything_until_returned() {
        let mut layout = Layout::<u8>::new();
        layout.lend_unknown(0b101, 100);
        assert_eq!(layout.place(1, 100), None);
        assert_eq!(layout.free_slot(), Some(1));
        layout.observe(0b100);
        assert_eq!(layout.place(1, 100), None);
        layout.observe(0);
        assert_eq!(layout.place(100, 100).map(|p| p.start), Some(0));
    }
}
