//! Fixed-capacity vectors for the read paths, and views of them that forget
//! the capacity.
//!
//! A [`Stack<T, N>`] holds up to `N` items inline, with no allocator. Its
//! [`StackView<T>`] is the same memory with the capacity erased (an unsized
//! type, as `[T]` is to `[T; N]`), so that the loops that fill a table can be
//! compiled once for every table size: a firmware with two readers of
//! different sizes carries one copy of them.
//!
//! heapless's `Vec`/`VecView` are the model; the crate keeps its own so that
//! its no_std core builds with Rust 1.85 (heapless 0.9 needs 1.87, and 0.8
//! has no view) and depends on nothing it does not need.

use core::fmt;
use core::mem::MaybeUninit;
use core::ops::{Deref, DerefMut};

mod sealed {
    use core::mem::MaybeUninit;

    /// The slots a [`Inner`](super::Inner) keeps its items in: an array, or
    /// a slice of one behind a view.
    pub trait Storage {
        type Item;
        fn slots(&self) -> &[MaybeUninit<Self::Item>];
        fn slots_mut(&mut self) -> &mut [MaybeUninit<Self::Item>];
    }

    impl<T, const N: usize> Storage for [MaybeUninit<T>; N] {
        type Item = T;
        fn slots(&self) -> &[MaybeUninit<T>] {
            self
        }
        fn slots_mut(&mut self) -> &mut [MaybeUninit<T>] {
            self
        }
    }

    impl<T> Storage for [MaybeUninit<T>] {
        type Item = T;
        fn slots(&self) -> &[MaybeUninit<T>] {
            self
        }
        fn slots_mut(&mut self) -> &mut [MaybeUninit<T>] {
            self
        }
    }
}

use sealed::Storage;

/// The first `len` slots are initialised; the rest are not.
pub(crate) struct Inner<S: Storage + ?Sized> {
    len: usize,
    slots: S,
}

/// Up to `N` items of `T`, inline.
pub(crate) type Stack<T, const N: usize> = Inner<[MaybeUninit<T>; N]>;

/// A [`Stack`] of any capacity.
pub(crate) type StackView<T> = Inner<[MaybeUninit<T>]>;

impl<T, const N: usize> Stack<T, N> {
    /// An empty stack.
    pub(crate) const fn new() -> Self {
        Self {
            len: 0,
            slots: [const { MaybeUninit::uninit() }; N],
        }
    }

    /// The same stack, its capacity erased.
    pub(crate) fn as_mut_view(&mut self) -> &mut StackView<T> {
        self
    }
}

impl<S: Storage + ?Sized> Inner<S> {
    /// Adds `item` at the end, or hands it back when the stack is full.
    #[inline]
    pub(crate) fn push(&mut self, item: S::Item) -> Result<(), S::Item> {
        let len = self.len;
        match self.slots.slots_mut().get_mut(len) {
            Some(slot) => {
                slot.write(item);
                self.len = len + 1;
                Ok(())
            }
            None => Err(item),
        }
    }

    /// Adds `item` at the end with no capacity check.
    ///
    /// # Safety
    ///
    /// The stack must not be full.
    #[inline]
    pub(crate) unsafe fn push_unchecked(&mut self, item: S::Item) {
        let len = self.len;
        // SAFETY: the caller guarantees `len < capacity`, so the slot exists.
        unsafe { self.slots.slots_mut().get_unchecked_mut(len) }.write(item);
        self.len = len + 1;
    }

    /// Takes the last item.
    #[inline]
    pub(crate) fn pop(&mut self) -> Option<S::Item> {
        let last = self.len.checked_sub(1)?;
        self.len = last;
        // SAFETY: slot `last` was below the old `len`, so it is initialised;
        // lowering `len` first makes it uninitialised for the stack, so the
        // item is read out exactly once.
        Some(unsafe { self.slots.slots().get_unchecked(last).assume_init_read() })
    }

    /// `true` when no item fits any more.
    #[inline]
    pub(crate) fn is_full(&self) -> bool {
        self.len == self.slots.slots().len()
    }

    /// Drops every item past the first `len`; a longer `len` does nothing.
    pub(crate) fn truncate(&mut self, len: usize) {
        let old = self.len;
        if len >= old {
            return;
        }
        // Lowered first: if an item's drop panics, the rest leak rather
        // than being dropped twice.
        self.len = len;
        let tail = core::ptr::slice_from_raw_parts_mut(
            // SAFETY: `len < old <= capacity`, so the offset is inside the
            // slots.
            unsafe { self.slots.slots_mut().as_mut_ptr().add(len) }.cast::<S::Item>(),
            old - len,
        );
        // SAFETY: slots `len..old` were initialised and are no longer counted
        // in `len`, so each is dropped once; `MaybeUninit<T>` has `T`'s
        // layout, so the cast slice covers exactly those items.
        unsafe { core::ptr::drop_in_place(tail) };
    }

    /// Drops every item.
    #[inline]
    pub(crate) fn clear(&mut self) {
        self.truncate(0);
    }

    /// The items.
    #[inline]
    pub(crate) fn as_slice(&self) -> &[S::Item] {
        let slots = self.slots.slots();
        // SAFETY: `len <= capacity` always holds and the first `len` slots
        // are initialised; `MaybeUninit<T>` has `T`'s layout.
        unsafe { core::slice::from_raw_parts(slots.as_ptr().cast(), self.len) }
    }

    /// The items, to change in place.
    #[inline]
    pub(crate) fn as_mut_slice(&mut self) -> &mut [S::Item] {
        let len = self.len;
        let slots = self.slots.slots_mut();
        // SAFETY: as in `as_slice`, and the borrow is unique.
        unsafe { core::slice::from_raw_parts_mut(slots.as_mut_ptr().cast(), len) }
    }
}

impl<S: Storage + ?Sized> Drop for Inner<S> {
    fn drop(&mut self) {
        self.clear();
    }
}

impl<S: Storage + ?Sized> Deref for Inner<S> {
    type Target = [S::Item];
    #[inline]
    fn deref(&self) -> &[S::Item] {
        self.as_slice()
    }
}

impl<S: Storage + ?Sized> DerefMut for Inner<S> {
    #[inline]
    fn deref_mut(&mut self) -> &mut [S::Item] {
        self.as_mut_slice()
    }
}

impl<'a, S: Storage + ?Sized> IntoIterator for &'a Inner<S> {
    type Item = &'a S::Item;
    type IntoIter = core::slice::Iter<'a, S::Item>;
    fn into_iter(self) -> Self::IntoIter {
        self.as_slice().iter()
    }
}

impl<'a, S: Storage + ?Sized> IntoIterator for &'a mut Inner<S> {
    type Item = &'a mut S::Item;
    type IntoIter = core::slice::IterMut<'a, S::Item>;
    fn into_iter(self) -> Self::IntoIter {
        self.as_mut_slice().iter_mut()
    }
}

impl<T: Clone, const N: usize> Clone for Stack<T, N> {
    fn clone(&self) -> Self {
        let mut copy = Self::new();
        for item in self {
            // Cannot fail: `copy` has the same capacity as `self`.
            let _ = copy.push(item.clone());
        }
        copy
    }
}

impl<S: Storage + ?Sized> fmt::Debug for Inner<S>
where
    S::Item: fmt::Debug,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.as_slice()).finish()
    }
}

#[cfg(test)]
mod tests {
    extern crate alloc;

    use super::*;
    use alloc::rc::Rc;
    use core::cell::Cell;

    /// Counts its drops in a shared cell.
    struct Counted(Rc<Cell<usize>>);

    impl Drop for Counted {
        fn drop(&mut self) {
            self.0.set(self.0.get() + 1);
        }
    }

    #[test]
    fn push_until_full_then_hands_the_item_back() {
        let mut s = Stack::<u32, 3>::new();
        for i in 0..3 {
            assert!(!s.is_full());
            assert_eq!(s.push(i), Ok(()));
        }
        assert!(s.is_full());
        assert_eq!(s.push(9), Err(9));
        assert_eq!(s.as_slice(), &[0, 1, 2]);
    }

    #[test]
    fn pop_returns_in_reverse_then_none() {
        let mut s = Stack::<u32, 4>::new();
        s.push(1).unwrap();
        s.push(2).unwrap();
        assert_eq!(s.pop(), Some(2));
        assert_eq!(s.pop(), Some(1));
        assert_eq!(s.pop(), None);
        assert!(s.is_empty());
    }

    #[test]
    fn a_view_shares_items_and_length() {
        let mut s = Stack::<u32, 4>::new();
        s.push(7).unwrap();
        let v: &mut StackView<u32> = s.as_mut_view();
        v.push(8).unwrap();
        v[0] = 6;
        assert_eq!(v.len(), 2);
        assert!(!v.is_full());
        assert_eq!(s.as_slice(), &[6, 8]);
    }

    #[test]
    fn zero_capacity_is_always_full() {
        let mut s = Stack::<u8, 0>::new();
        assert!(s.is_full());
        assert_eq!(s.push(1), Err(1));
        assert_eq!(s.pop(), None);
    }

    #[test]
    fn every_item_is_dropped_exactly_once() {
        let drops = Rc::new(Cell::new(0));
        let mut s = Stack::<Counted, 5>::new();
        for _ in 0..5 {
            assert!(s.push(Counted(drops.clone())).is_ok());
        }
        // A rejected item comes back and is dropped by the caller.
        drop(s.push(Counted(drops.clone())));
        assert_eq!(drops.get(), 1);
        drop(s.pop());
        assert_eq!(drops.get(), 2);
        s.truncate(2);
        assert_eq!(drops.get(), 4);
        s.truncate(9);
        assert_eq!((drops.get(), s.len()), (4, 2));
        s.as_mut_view().push(Counted(drops.clone())).ok().unwrap();
        drop(s);
        assert_eq!(drops.get(), 7);
    }

    #[test]
    fn clear_empties_and_the_stack_is_reusable() {
        let mut s = Stack::<u32, 2>::new();
        s.push(1).unwrap();
        s.push(2).unwrap();
        s.clear();
        assert!(s.is_empty());
        s.push(3).unwrap();
        assert_eq!(&*s, &[3]);
        assert_eq!(alloc::format!("{s:?}"), "[3]");
    }

    #[test]
    fn clone_copies_the_items_and_unchecked_push_appends() {
        let mut s = Stack::<u32, 3>::new();
        s.push(1).unwrap();
        // SAFETY: one of three slots is taken.
        unsafe { s.push_unchecked(2) };
        let c = s.clone();
        s.clear();
        assert_eq!(c.as_slice(), &[1, 2]);
        assert_eq!((&c).into_iter().sum::<u32>(), 3);
    }
}
