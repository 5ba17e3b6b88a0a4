//! What the two halves share: the alignment that keeps each half's private
//! state off the other's cache lines, the one check of the peer's index, and
//! the handle that keeps a heap ring's storage alive.
//!
//! Each half moves its own index up to a *bound* set by its peer's index:
//! the producer its tail up to the consumer's head plus the capacity, the
//! consumer its head up to the producer's tail. Both keep the bound they last
//! saw and reload it only when it says there is no room (or nothing to read).
//! Seen this way the two halves validate a reloaded index in the same way,
//! here.

use crate::loom::sync::atomic::Ordering;
use crate::raw::IndexLine;
#[cfg(not(feature = "alloc"))]
use core::marker::PhantomData;

/// What keeps a heap ring's storage alive while a half exists.
#[cfg(feature = "alloc")]
pub(crate) type Keep<T> = Option<crate::loom::sync::Arc<crate::heap::Storage<T>>>;
/// What keeps a heap ring's storage alive while a half exists.
#[cfg(not(feature = "alloc"))]
pub(crate) type Keep<T> = Option<PhantomData<T>>;

/// A zero-sized field that aligns a half like the index lines.
///
/// A half's private, constantly written state (its index and its cached
/// bound) then never shares a cache line with the other half, wherever the
/// caller puts the two: side by side in one struct, or in closures boxed one
/// after the other, as thread spawns do. 128 bytes on x86_64 and aarch64,
/// whose prefetchers pull lines in pairs; 64 on other 64-bit targets; none on
/// the small targets, where a half's size is what counts.
#[cfg_attr(any(target_arch = "x86_64", target_arch = "aarch64"), repr(align(128)))]
#[cfg_attr(
    all(
        target_pointer_width = "64",
        not(any(target_arch = "x86_64", target_arch = "aarch64"))
    ),
    repr(align(64))
)]
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct LineAligned;

/// Loads the peer's index from `peer` and returns the bound it sets for this
/// half (the index plus `offset`: the capacity for the producer, 0 for the
/// consumer), or `None` if it breaks the ring's invariants.
///
/// Valid means: moved forward from the bound last seen (`seen`), never back,
/// and at most `capacity` past this half's own index `own`, in the wrapping
/// arithmetic of free-running indices. Acquire: the peer's work on the slots
/// before it published (the producer's writes, the consumer's reads) happens
/// before this half uses them.
#[inline(always)]
pub(crate) fn load_bound(
    peer: &IndexLine,
    offset: u32,
    own: u32,
    seen: u32,
    capacity: u32,
) -> Option<u32> {
    let bound = peer.index.load(Ordering::Acquire).wrapping_add(offset);
    let moved = bound.wrapping_sub(seen);
    let most = own.wrapping_add(capacity).wrapping_sub(seen);
    if moved <= most { Some(bound) } else { None }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::loom::sync::atomic::AtomicU32;

    fn line(index: u32) -> IndexLine {
        IndexLine {
            index: AtomicU32::new(index),
            closed: AtomicU32::new(0),
        }
    }

    #[test]
    fn producer_bound_is_head_plus_capacity_between_cached_and_tail() {
        // Tail 10, cached head 6, capacity 8: the head may be 6..=10.
        let (tail, cap, seen) = (10u32, 8, 6 + 8);
        for head in 6..=10 {
            assert_eq!(
                load_bound(&line(head), cap, tail, seen, cap),
                Some(head + cap)
            );
        }
        for head in [5, 11, 0, u32::MAX] {
            assert_eq!(load_bound(&line(head), cap, tail, seen, cap), None);
        }
    }

    #[test]
    fn consumer_bound_is_tail_between_cached_and_head_plus_capacity() {
        // Head 3, cached tail 5, capacity 4: the tail may be 5..=7.
        let (head, cap, seen) = (3u32, 4, 5);
        for tail in 5..=7 {
            assert_eq!(load_bound(&line(tail), 0, head, seen, cap), Some(tail));
        }
        for tail in [4, 8, 3, u32::MAX] {
            assert_eq!(load_bound(&line(tail), 0, head, seen, cap), None);
        }
    }

    #[test]
    fn wrapping_indices_validate_across_zero() {
        let cap = 16u32;
        let head = u32::MAX - 2;
        // Cached tail at u32::MAX, head + capacity wraps to 13.
        let seen = u32::MAX;
        assert_eq!(
            load_bound(&line(u32::MAX), 0, head, seen, cap),
            Some(u32::MAX)
        );
        assert_eq!(load_bound(&line(13), 0, head, seen, cap), Some(13));
        assert_eq!(load_bound(&line(14), 0, head, seen, cap), None);
        assert_eq!(load_bound(&line(u32::MAX - 1), 0, head, seen, cap), None);
    }
}
