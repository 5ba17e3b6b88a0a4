//! Copies into and out of the ring that may stop part-way: a kernel's copy
//! from or to user memory faults on a missing page after some bytes, and
//! whatever it copied must be committed, no more, no less.
//!
//! The copy is a closure given each run of lent slots in turn (the run before
//! the end of the storage, then the one that wrapped to its start). It
//! returns `Ok(n)` for `n` elements copied (fewer than the run: the source
//! ran out, so the second run is not offered), or a [`Fault`] saying how many
//! it copied before it stopped and why. The ring commits exactly the elements
//! copied, in both cases.

use core::fmt;

use crate::RingError;

/// A copy that stopped part-way: the elements it copied before it stopped,
/// and why it stopped.
///
/// A closure passed to [`Producer::push_with`](crate::Producer::push_with)
/// and its kin returns it for the run it was given (`copied` counts within
/// that run); the ring's methods return it with `copied` counting every
/// element committed by the call.
///
/// # Examples
///
/// A copy that behaves like a kernel's `copy_from_user`, which returns how
/// many bytes it could not copy:
///
/// ```
/// use uring_queue::{CopyError, Fault, Ring};
///
/// // Copies `src` to `dst`, stopping at the first byte of "unmapped memory"
/// // (here, a 0xFF byte); returns how many bytes were not copied.
/// fn copy_from_user(dst: &mut [u8], src: &[u8]) -> usize {
///     let ok = src.iter().take(dst.len()).take_while(|&&b| b != 0xFF).count();
///     dst[..ok].copy_from_slice(&src[..ok]);
///     dst.len().min(src.len()) - ok
/// }
///
/// let mut ring = Ring::<u8, 8>::new();
/// let (mut tx, rx) = ring.split();
/// let user = [1, 2, 0xFF, 4];
/// let copied = tx.push_with(|dst| {
///     let want = dst.len().min(user.len());
///     match copy_from_user(&mut dst[..want], &user) {
///         0 => Ok(want),
///         left => Err(Fault::new(want - left, "EFAULT")),
///     }
/// });
/// assert_eq!(copied, Err(CopyError::Fault(Fault::new(2, "EFAULT"))));
/// assert_eq!(rx.len(), 2);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fault<E> {
    /// Elements copied before the copy stopped.
    pub copied: usize,
    /// Why it stopped.
    pub error: E,
}

impl<E> Fault<E> {
    /// A copy that stopped after `copied` elements, for `error`.
    ///
    /// # Examples
    ///
    /// ```
    /// let f = uring_queue::Fault::new(3, "EFAULT");
    /// assert_eq!((f.copied, f.error), (3, "EFAULT"));
    /// ```
    pub const fn new(copied: usize, error: E) -> Self {
        Self { copied, error }
    }
}

impl<E: fmt::Display> fmt::Display for Fault<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "copy stopped after {} elements: {}",
            self.copied, self.error
        )
    }
}

impl<E: fmt::Debug + fmt::Display> core::error::Error for Fault<E> {}

/// Why [`Producer::push_with`](crate::Producer::push_with) or
/// [`Consumer::pop_with`](crate::Consumer::pop_with) stopped.
///
/// # Examples
///
/// ```
/// use uring_queue::{CopyError, Fault, Ring};
///
/// let mut ring = Ring::<u8, 4>::new();
/// let (mut tx, mut rx) = ring.split();
/// tx.push_slice(b"abc").unwrap();
/// // The reader's copy faults after one byte: one byte leaves the ring.
/// let r = rx.pop_with(|src| Err::<usize, _>(Fault::new(1.min(src.len()), "EFAULT")));
/// assert_eq!(r, Err(CopyError::Fault(Fault::new(1, "EFAULT"))));
/// assert_eq!(rx.pop(), Ok(b'b'));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CopyError<E> {
    /// The ring refused before any copy (it is corrupted); nothing moved.
    Ring(RingError),
    /// The copy stopped part-way; `copied` elements were committed.
    Fault(Fault<E>),
}

impl<E: fmt::Display> fmt::Display for CopyError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Ring(e) => write!(f, "ring error: {e}"),
            Self::Fault(fault) => fault.fmt(f),
        }
    }
}

impl<E: fmt::Debug + fmt::Display> core::error::Error for CopyError<E> {}

/// A run of lent slots: its length is all the copy step needs to know.
pub(crate) trait Run {
    fn len(&self) -> usize;
}

impl<T> Run for &[T] {
    fn len(&self) -> usize {
        <[T]>::len(self)
    }
}

impl<T> Run for &mut [T] {
    fn len(&self) -> usize {
        <[T]>::len(self)
    }
}

/// Copies through the two runs of a lent span in order, the second only if
/// the first was copied whole and the second is not empty. Returns the
/// elements copied in all, or the fault with `copied` counting both runs;
/// a count larger than its run is clamped to the run. The one copy step of
/// both sides.
pub(crate) fn through_runs<R: Run, E>(
    first: R,
    second: R,
    mut copy: impl FnMut(R) -> Result<usize, Fault<E>>,
) -> Result<usize, Fault<E>> {
    let (len1, len2) = (first.len(), second.len());
    let n = if len1 == 0 {
        0
    } else {
        copy_run(first, len1, 0, &mut copy)?
    };
    if n < len1 || len2 == 0 {
        return Ok(n);
    }
    copy_run(second, len2, n, &mut copy)
}

/// One run's copy: `before` elements already copied by the call.
fn copy_run<R, E>(
    run: R,
    len: usize,
    before: usize,
    copy: &mut impl FnMut(R) -> Result<usize, Fault<E>>,
) -> Result<usize, Fault<E>> {
    match copy(run) {
        Ok(n) => Ok(before.saturating_add(n.min(len))),
        Err(f) => Err(Fault::new(
            before.saturating_add(f.copied.min(len)),
            f.error,
        )),
    }
}
