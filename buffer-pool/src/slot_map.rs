//! Slot maps: how many slices a pool can lend at once, and the atomic word
//! that records which slots are lent.

use crate::loom::sync::atomic::{AtomicU8, AtomicU16, AtomicU32, Ordering};
with_atomic_u64! {
    use crate::loom::sync::atomic::AtomicU64;
}

/// The width of a pool's slot map: `u8` (the default: 8 slices at once, as
/// `buffer_sv2`), `u16`, `u32` or `u64` (64 slices at once).
///
/// Bit `i` of the atomic word is set while slot `i` is lent to a [`Slice`].
/// The trait is sealed: only these four integer types implement it.
///
/// [`Slice`]: crate::Slice
///
/// # Examples
///
/// ```
/// use buffer_pool::{Buffer, BufferPool};
///
/// // A pool that can lend 32 slices at once.
/// let mut pool = BufferPool::<_, u32>::with_slot_map(32 * 4);
/// let mut held = Vec::new();
/// for i in 0..32u8 {
///     pool.get_writable(4).copy_from_slice(&[i; 4]);
///     held.push(pool.get_data_owned());
/// }
/// assert!(held.iter().all(|s| s.is_pooled()));
/// ```
pub trait SlotMap: sealed::Sealed {}

pub(crate) mod sealed {
    use super::Ordering;

    /// Where a lent slot's bytes lie in pool memory: `start..end`.
    #[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
    pub struct Span {
        pub(crate) start: usize,
        pub(crate) end: usize,
    }

    #[allow(
        clippy::declare_interior_mutable_const,
        reason = "`ZERO` is only ever used to initialise a fresh atomic"
    )]
    pub trait Sealed: Copy + Send + Sync + 'static {
        /// Number of slots: the integer's width in bits.
        const SLOTS: u32;
        /// Bit mask with one bit per slot.
        const ALL: u64;
        /// The atomic word holding the slot map.
        type Atomic: Send + Sync + core::fmt::Debug;
        /// The producer's table of spans, one per slot.
        type Spans: Copy + AsRef<[Span]> + AsMut<[Span]> + core::fmt::Debug;
        /// An all-empty span table.
        const EMPTY_SPANS: Self::Spans;
        without_loom! {
            /// A slot map with every slot free, usable in `const` contexts.
            const ZERO: Self::Atomic;
        }
        /// A slot map with every slot free.
        fn new_atomic() -> Self::Atomic;
        /// Loads the map, widened to `u64`.
        fn load(map: &Self::Atomic, order: Ordering) -> u64;
        /// Sets the bits of `bits` (which fit the map).
        fn set(map: &Self::Atomic, bits: u64, order: Ordering);
        /// Clears the bits of `bits` (which fit the map).
        fn clear(map: &Self::Atomic, bits: u64, order: Ordering);
    }
}

macro_rules! slot_map {
    ($int:ty, $atomic:ident, $bits:literal) => {
        impl SlotMap for $int {}

        #[allow(
            clippy::declare_interior_mutable_const,
            reason = "`ZERO` is only ever used to initialise a fresh atomic"
        )]
        impl sealed::Sealed for $int {
            const SLOTS: u32 = $bits;
            const ALL: u64 = <$int>::MAX as u64;
            type Atomic = $atomic;
            type Spans = [sealed::Span; $bits];
            const EMPTY_SPANS: Self::Spans = [sealed::Span { start: 0, end: 0 }; $bits];
            without_loom! {
                const ZERO: Self::Atomic = $atomic::new(0);
            }

            fn new_atomic() -> Self::Atomic {
                $atomic::new(0)
            }

            #[inline]
            fn load(map: &Self::Atomic, order: Ordering) -> u64 {
                u64::from(map.load(order))
            }

            #[inline]
            fn set(map: &Self::Atomic, bits: u64, order: Ordering) {
                // Truncation is exact: callers pass bits of this map only.
                map.fetch_or(bits as $int, order);
            }

            #[inline]
            fn clear(map: &Self::Atomic, bits: u64, order: Ordering) {
                map.fetch_and(!(bits as $int), order);
            }
        }
    };
}

slot_map!(u8, AtomicU8, 8);
slot_map!(u16, AtomicU16, 16);
slot_map!(u32, AtomicU32, 32);
with_atomic_u64! {
    slot_map!(u64, AtomicU64, 64);
}
