//! The payload area: bytes of the region that requests and responses point
//! into, a client-side allocator for it, and the validation of every block
//! a peer names.

use super::Error;
use core::fmt;
use core::marker::PhantomData;
use core::ptr::NonNull;

/// Blocks start on this boundary (a cache line), so two blocks never share
/// a line and a block's bytes are aligned for any primitive.
pub const BLOCK_ALIGN: usize = 64;

/// The payload area as this process sees it: a pointer and a length,
/// validated once when the connection is built.
#[derive(Clone, Copy)]
pub(crate) struct Area<'a> {
    ptr: NonNull<u8>,
    len: u32,
    _borrow: PhantomData<&'a [u8]>,
}

impl fmt::Debug for Area<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Area").field("len", &self.len).finish()
    }
}

// SAFETY: the area is plain bytes valid for `'a` (the constructor's
// contract); which thread holds the pointer changes nothing about that. The
// halves that hold it decide who touches which bytes.
unsafe impl Send for Area<'_> {}
// SAFETY: `&Area` hands out only its pointer and length; the bytes are
// reached through the `unsafe` `bytes`/`bytes_mut`, whose callers prove the
// span is theirs alone (a `Block` token is unique and not `Clone`), from
// whichever thread they run on.
unsafe impl Sync for Area<'_> {}

impl Area<'_> {
    /// No payload area.
    pub(crate) fn empty() -> Self {
        Self {
            ptr: NonNull::dangling(),
            len: 0,
            _borrow: PhantomData,
        }
    }

    /// # Safety
    ///
    /// `ptr` is valid for reads and writes of `len` bytes for `'a`, outside
    /// any Rust reference, and only the connection built on it accesses them.
    // Only the shared-memory layout calls it, which loom does not build.
    #[cfg_attr(loom, allow(dead_code))]
    pub(crate) unsafe fn new(ptr: NonNull<u8>, len: u32) -> Self {
        Self {
            ptr,
            len,
            _borrow: PhantomData,
        }
    }

    pub(crate) fn len(&self) -> u32 {
        self.len
    }

    /// Identifies the area (its address), for telling blocks apart.
    pub(crate) fn id(&self) -> usize {
        self.ptr.as_ptr() as usize
    }

    /// Validates a block a peer names; `(0, 0)` for an empty one.
    pub(crate) fn span(&self, offset: u64, len: u32) -> Result<Span, Error> {
        if len == 0 {
            return Ok(Span { offset: 0, len: 0 });
        }
        let end = offset.checked_add(u64::from(len)).ok_or(Error::Corrupted)?;
        if end > u64::from(self.len) {
            return Err(Error::Corrupted);
        }
        // `end` fits in a `u32`, so `offset` does.
        Ok(Span {
            offset: offset as u32,
            len,
        })
    }

    /// # Safety
    ///
    /// `span` lies in the area (`span` validated it, or the allocator made
    /// it), and no `&mut` to any of its bytes is alive in this process for
    /// the returned lifetime.
    pub(crate) unsafe fn bytes<'s>(&self, span: Span) -> &'s [u8] {
        if span.len == 0 {
            return &[];
        }
        // SAFETY: in bounds (caller), valid for `'a` (construction); no
        // mutable reference aliases it (caller). A peer's concurrent writes
        // change values only; every byte pattern is a valid `u8`.
        unsafe {
            core::slice::from_raw_parts(
                self.ptr.as_ptr().add(span.offset as usize),
                span.len as usize,
            )
        }
    }

    /// # Safety
    ///
    /// As [`bytes`](Self::bytes), and no other reference to the span's bytes
    /// is alive in this process for the returned lifetime.
    #[allow(clippy::mut_from_ref)]
    pub(crate) unsafe fn bytes_mut<'s>(&self, span: Span) -> &'s mut [u8] {
        if span.len == 0 {
            return &mut [];
        }
        // SAFETY: as in `bytes`, and exclusive within this process (caller).
        unsafe {
            core::slice::from_raw_parts_mut(
                self.ptr.as_ptr().add(span.offset as usize),
                span.len as usize,
            )
        }
    }
}

/// A validated range of the payload area.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Span {
    pub(crate) offset: u32,
    pub(crate) len: u32,
}

impl Span {
    pub(crate) fn end(&self) -> u64 {
        u64::from(self.offset) + u64::from(self.len)
    }

    pub(crate) fn overlaps(&self, other: &Span) -> bool {
        self.len != 0
            && other.len != 0
            && u64::from(self.offset) < other.end()
            && u64::from(other.offset) < self.end()
    }
}

/// Who a block belongs to: one client instance on one payload area.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Owner {
    pub(crate) area: usize,
    pub(crate) epoch: u32,
}

/// A block of the payload area, allocated by a [`Client`](super::Client).
///
/// The token is unique (neither `Clone` nor `Copy`), so holding it is what
/// entitles its holder to the bytes: [`Client::bytes_mut`](super::Client::bytes_mut)
/// needs `&mut Block`. It travels in a [`Request`](super::Request) and comes
/// back in the [`Reply`](super::Reply); [`Client::free`](super::Client::free)
/// returns it to the allocator.
///
/// # Examples
///
/// ```
/// use uring_queue::uring::Block;
///
/// let none = Block::empty();
/// assert!(none.is_empty());
/// assert_eq!(none.len(), 0);
/// ```
#[derive(Debug, PartialEq, Eq)]
pub struct Block {
    pub(crate) owner: Option<Owner>,
    pub(crate) span: Span,
}

impl Block {
    /// No block: a request without a body, or without room for a response.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(uring_queue::uring::Block::empty().offset(), 0);
    /// ```
    pub const fn empty() -> Self {
        Self {
            owner: None,
            span: Span { offset: 0, len: 0 },
        }
    }

    /// Length in bytes.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(uring_queue::uring::Block::empty().len(), 0);
    /// ```
    pub fn len(&self) -> usize {
        self.span.len as usize
    }

    /// Whether the block has no bytes.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(uring_queue::uring::Block::empty().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.span.len == 0
    }

    /// Offset in the payload area (what the entry carries).
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(uring_queue::uring::Block::empty().offset(), 0);
    /// ```
    pub fn offset(&self) -> usize {
        self.span.offset as usize
    }
}

impl Block {
    /// `owner`'s block of `span` (an empty span is no block).
    pub(crate) fn of(owner: Owner, span: Span) -> Self {
        Self {
            owner: (span.len != 0).then_some(owner),
            span,
        }
    }
}

impl Default for Block {
    fn default() -> Self {
        Self::empty()
    }
}

/// Next-fit allocator over the payload area, single-threaded, in the
/// client's own memory (the peer cannot touch its bookkeeping). Live blocks
/// are kept sorted by offset; at most `2 * N` at once (a request and a
/// response block per in-flight slot).
pub(crate) struct Allocator<const N: usize> {
    live: [[Span; 2]; N],
    count: usize,
    area_len: u32,
    /// Where the last search ended: the next search starts here, then wraps.
    cursor: usize,
}

impl<const N: usize> fmt::Debug for Allocator<N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Allocator")
            .field("live", &self.count)
            .field("area_len", &self.area_len)
            .finish()
    }
}

impl<const N: usize> Allocator<N> {
    pub(crate) fn new(area_len: u32) -> Self {
        Self {
            live: [[Span::default(); 2]; N],
            count: 0,
            // Blocks are whole granules.
            area_len: area_len - area_len % BLOCK_ALIGN as u32,
            cursor: 0,
        }
    }

    /// The live blocks, sorted by offset.
    fn live(&self) -> &[Span] {
        // `count <= 2 * N` always; `get` keeps the bound check free of a
        // panic path.
        self.live
            .as_flattened()
            .get(..self.count)
            .unwrap_or_default()
    }

    /// The free range before live block `i` (after the last one for
    /// `i == count`): from the granule after block `i - 1` to block `i`'s
    /// start (or the area's end).
    fn gap_before(&self, live: &[Span], i: usize) -> (u64, u64) {
        let start = match i.checked_sub(1).and_then(|p| live.get(p)) {
            Some(prev) => prev.end().next_multiple_of(BLOCK_ALIGN as u64),
            None => 0,
        };
        let end = match live.get(i) {
            Some(next) => u64::from(next.offset),
            None => u64::from(self.area_len),
        };
        (start, end)
    }

    pub(crate) fn alloc(&mut self, len: usize) -> Result<Span, Error> {
        if len == 0 {
            return Ok(Span::default());
        }
        let max = self.area_len as usize;
        if len > max {
            return Err(Error::TooLarge { max });
        }
        // `len <= max < 2^32`, and `max` is a multiple of the granule.
        let need = len.next_multiple_of(BLOCK_ALIGN) as u64;
        let count = self.count;
        if count >= 2 * N {
            return Err(Error::NoSpace { len });
        }
        let live = self.live();
        let cursor = self.cursor.min(count);
        let fits = |i: &usize| {
            let (start, end) = self.gap_before(live, *i);
            end.checked_sub(start).is_some_and(|gap| gap >= need)
        };
        let Some(i) = (cursor..=count).chain(0..cursor).find(fits) else {
            return Err(Error::NoSpace { len });
        };
        let (start, _) = self.gap_before(live, i);
        let span = Span {
            offset: start as u32,
            len: len as u32,
        };
        // Blocks `i..count` move up one place to make room at `i` (the
        // table has room: `count < 2 * N`).
        let Some(tail) = self.live.as_flattened_mut().get_mut(i..=count) else {
            return Err(Error::NoSpace { len });
        };
        let mut carry = span;
        for slot in tail {
            core::mem::swap(slot, &mut carry);
        }
        self.count = count + 1;
        self.cursor = i + 1;
        Ok(span)
    }

    pub(crate) fn free(&mut self, span: Span) {
        if span.len == 0 {
            return;
        }
        let Ok(i) = self.live().binary_search_by_key(&span.offset, |s| s.offset) else {
            return;
        };
        // Blocks `i + 1..count` move down one place over block `i`.
        let Some(tail) = self.live.as_flattened_mut().get_mut(i..self.count) else {
            return;
        };
        let mut slots = tail.iter_mut();
        if let Some(mut hole) = slots.next() {
            for next in slots {
                *hole = *next;
                hole = next;
            }
        }
        self.count -= 1;
        if self.cursor > i {
            self.cursor -= 1;
        }
    }

    pub(crate) fn live_blocks(&self) -> usize {
        self.count
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn next_fit_reuses_freed_ranges_and_never_overlaps() {
        let mut a = Allocator::<2>::new(1000);
        assert_eq!(a.area_len, 960);
        let x = a.alloc(100).unwrap();
        let y = a.alloc(64).unwrap();
        assert_eq!((x.offset, y.offset), (0, 128));
        assert_eq!(a.alloc(961), Err(Error::TooLarge { max: 960 }));
        a.free(x);
        // Next fit: the search goes on after the last block handed out...
        let z = a.alloc(1).unwrap();
        assert_eq!(z.offset, 192);
        let w = a.alloc(700).unwrap();
        assert_eq!(w.offset, 256);
        // ...and wraps to the range `x` left.
        let v = a.alloc(1).unwrap();
        assert_eq!(v.offset, 0);
        for s in [y, z, w] {
            assert!(!v.overlaps(&s));
        }
        // 2 * N blocks live: the table is full.
        assert_eq!(a.alloc(1), Err(Error::NoSpace { len: 1 }));
        for s in [v, y, z, w] {
            a.free(s);
        }
        assert_eq!(a.live_blocks(), 0);
        assert_eq!(a.alloc(960).unwrap().offset, 0);
    }

    #[test]
    fn live_blocks_stay_sorted_disjoint_and_in_the_area() {
        let mut a = Allocator::<4>::new(1024);
        // The spans handed out and not freed: `held[..n]`.
        let (mut held, mut n) = ([Span::default(); 8], 0);
        // A fixed pseudo-random walk of allocations and frees (xorshift).
        let mut x = 0x9e37_79b9u32;
        for _ in 0..if cfg!(miri) { 300 } else { 5000 } {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            if x % 3 == 0 && n > 0 {
                let i = x as usize / 3 % n;
                a.free(held[i]);
                n -= 1;
                held.swap(i, n);
            } else {
                match a.alloc(1 + (x >> 8) as usize % 300) {
                    Ok(span) => {
                        held[n] = span;
                        n += 1;
                    }
                    Err(Error::NoSpace { .. }) => assert!(n > 0),
                    Err(e) => panic!("{e}"),
                }
            }
            let live = a.live();
            assert_eq!(live.len(), n);
            assert!(
                live.windows(2)
                    .all(|w| w[0].end() <= u64::from(w[1].offset))
            );
            assert!(live.iter().all(|s| s.offset % 64 == 0 && s.end() <= 1024));
            assert!(held[..n].iter().all(|s| live.contains(s)));
        }
    }
}
