//! [`Completion`]: what happened to each byte of an op.

use crate::ReadErrorKind;

/// The outcome of one fragment, as the reader records it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FragRecord {
    /// Index of the op in the window.
    pub(crate) op: usize,
    /// Offset of the fragment within its op.
    pub(crate) offset: usize,
    /// Length of the fragment.
    pub(crate) len: usize,
    /// Bytes read from the start of the fragment.
    pub(crate) valid: usize,
    /// Why the rest failed.
    pub(crate) error: Option<ReadErrorKind>,
}

/// One fragment of an op, as the backend saw it: `len` bytes at `offset`
/// within the op, of which the first `valid` were read.
///
/// This is the seed's forward redirection: the fragment carries its op's tag
/// (through the [`Completion`]) and its offset within the op.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fragment {
    /// Offset within the op.
    pub offset: usize,
    /// Length of the fragment.
    pub len: usize,
    /// Bytes read from the start of the fragment.
    pub valid: usize,
    /// Why bytes `[valid, len)` failed; `None` if `valid == len`.
    pub error: Option<ReadErrorKind>,
}

/// A maximal byte range of an op with one outcome.
///
/// # Examples
///
/// ```
/// use batch_reader::{ReadErrorKind, Segment};
///
/// let s = Segment { offset: 4, len: 8, result: Err(ReadErrorKind::Unmapped) };
/// assert_eq!(s.range(), 4..12);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Segment {
    /// Offset within the op.
    pub offset: usize,
    /// Length in bytes (never zero).
    pub len: usize,
    /// `Ok` if these bytes were read, else why not.
    pub result: Result<(), ReadErrorKind>,
}

impl Segment {
    /// `offset..offset + len`.
    #[inline]
    pub fn range(&self) -> core::ops::Range<usize> {
        self.offset..self.offset + self.len
    }
}

/// The result of an op, or of one part of it.
///
/// Every byte the completion covers, `offset()..offset() + len()` within the
/// op, either was read (its value is in the op's buffer and in
/// [`data`](Completion::data)) or failed with a [`ReadErrorKind`].
/// [`segments`](Completion::segments) lists the byte ranges in order, adjacent
/// ranges with the same outcome merged.
///
/// An op normally gets one completion covering all of it. An op with more
/// fragments than the reader's fragment table holds gets one completion per
/// table-full, in order; [`is_last`](Completion::is_last) marks the final one.
/// The completions of an op cover it exactly once.
///
/// # Examples
///
/// ```
/// use batch_reader::{backends::MemoryBackend, Geometry, ReadErrorKind, ReadOp, Reader, Segment};
///
/// let mem = [7u8; 256];
/// let mut backend = MemoryBackend::new(&mem, Geometry::new(Some(64), 64, 8)?);
/// backend.inject_fault(64..128, ReadErrorKind::Unmapped)?;
/// let mut r: Reader<_, _> = Reader::new(backend, [0u8; 0]);
/// let mut buf = [0u8; 96];
/// let mut ops = [ReadOp::new(32, &mut buf, 9)];
/// r.read_many(&mut ops, |c| {
///     assert_eq!(c.tag(), 9);
///     assert_eq!(c.ok_bytes(), 32);
///     let segs: Vec<Segment> = c.segments().collect();
///     assert_eq!(segs, [
///         Segment { offset: 0, len: 32, result: Ok(()) },
///         Segment { offset: 32, len: 64, result: Err(ReadErrorKind::Unmapped) },
///     ]);
/// });
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Completion<'a> {
    pub(crate) tag: usize,
    pub(crate) addr: u64,
    pub(crate) op_len: usize,
    pub(crate) offset: usize,
    pub(crate) len: usize,
    pub(crate) frags: &'a [FragRecord],
    pub(crate) data: &'a [u8],
}

impl<'a> Completion<'a> {
    /// The op's tag.
    #[inline]
    pub fn tag(&self) -> usize {
        self.tag
    }

    /// The op's start address.
    #[inline]
    pub fn addr(&self) -> u64 {
        self.addr
    }

    /// The op's full length.
    #[inline]
    pub fn op_len(&self) -> usize {
        self.op_len
    }

    /// Offset within the op of the first byte this completion covers.
    #[inline]
    pub fn offset(&self) -> usize {
        self.offset
    }

    /// Number of bytes this completion covers.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether this completion covers no bytes (an empty op).
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether this is the op's last completion.
    #[inline]
    pub fn is_last(&self) -> bool {
        self.offset + self.len == self.op_len
    }

    /// The op's buffer over the covered bytes. Only the bytes of `Ok`
    /// segments hold read data.
    #[inline]
    pub fn data(&self) -> &'a [u8] {
        self.data
    }

    /// Whether every covered byte was read.
    #[inline]
    pub fn is_ok(&self) -> bool {
        self.frags.iter().all(|f| f.error.is_none())
    }

    /// Number of covered bytes read.
    #[inline]
    pub fn ok_bytes(&self) -> usize {
        self.frags.iter().map(|f| f.valid).sum()
    }

    /// Number of covered bytes that failed.
    #[inline]
    pub fn failed_bytes(&self) -> usize {
        self.len - self.ok_bytes()
    }

    /// The first failed byte (offset within the op) and why it failed.
    #[inline]
    pub fn first_error(&self) -> Option<(usize, ReadErrorKind)> {
        self.frags
            .iter()
            .find_map(|f| f.error.map(|e| (f.offset + f.valid, e)))
    }

    /// The fragments, in order, as the backend saw them.
    #[inline]
    pub fn fragments(&self) -> impl Iterator<Item = Fragment> + 'a {
        self.frags.iter().map(|f| Fragment {
            offset: f.offset,
            len: f.len,
            valid: f.valid,
            error: f.error,
        })
    }

    /// The byte ranges with one outcome each, in order, adjacent ranges with
    /// the same outcome merged.
    #[inline]
    pub fn segments(&self) -> Segments<'a> {
        Segments {
            frags: self.frags,
            next_ok: true,
        }
    }
}

/// Iterator over the [`Segment`]s of a [`Completion`].
#[derive(Debug, Clone)]
pub struct Segments<'a> {
    frags: &'a [FragRecord],
    /// Whether the ok part of `frags[0]` is still to be visited.
    next_ok: bool,
}

impl Segments<'_> {
    /// The next raw (unmerged, non-empty) run.
    fn next_run(&mut self) -> Option<Segment> {
        loop {
            let f = self.frags.first()?;
            if self.next_ok {
                self.next_ok = false;
                if f.valid > 0 {
                    return Some(Segment {
                        offset: f.offset,
                        len: f.valid,
                        result: Ok(()),
                    });
                }
            } else {
                self.frags = &self.frags[1..];
                self.next_ok = true;
                if f.valid < f.len {
                    return Some(Segment {
                        offset: f.offset + f.valid,
                        len: f.len - f.valid,
                        result: Err(f.error.unwrap_or(ReadErrorKind::Incomplete)),
                    });
                }
            }
        }
    }
}

impl Iterator for Segments<'_> {
    type Item = Segment;

    fn next(&mut self) -> Option<Segment> {
        let mut seg = self.next_run()?;
        loop {
            let save = self.clone();
            match self.next_run() {
                Some(s) if s.result == seg.result && s.offset == seg.offset + seg.len => {
                    seg.len += s.len;
                }
                _ => {
                    *self = save;
                    return Some(seg);
                }
            }
        }
    }
}

/// What a [`read_buf`](crate::Reader::read_buf) achieved.
///
/// # Examples
///
/// ```
/// use batch_reader::{ReadErrorKind, ReadSummary};
///
/// let s = ReadSummary::new(16, 10, Some((10, ReadErrorKind::OutOfBounds)));
/// assert!(!s.is_ok());
/// assert_eq!(s.failed_bytes(), 6);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadSummary {
    len: usize,
    ok: usize,
    first_error: Option<(usize, ReadErrorKind)>,
}

impl ReadSummary {
    /// A summary of a read of `len` bytes of which `ok` succeeded, the first
    /// failure being at offset `first_error.0`.
    pub const fn new(len: usize, ok: usize, first_error: Option<(usize, ReadErrorKind)>) -> Self {
        Self {
            len,
            ok,
            first_error,
        }
    }

    /// Whether every byte was read.
    pub const fn is_ok(&self) -> bool {
        self.first_error.is_none()
    }

    /// The length of the read.
    pub const fn len(&self) -> usize {
        self.len
    }

    /// Whether the read was empty.
    pub const fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bytes read.
    pub const fn ok_bytes(&self) -> usize {
        self.ok
    }

    /// Bytes that failed.
    pub const fn failed_bytes(&self) -> usize {
        self.len - self.ok
    }

    /// The first failed byte's offset and why it failed.
    pub const fn first_error(&self) -> Option<(usize, ReadErrorKind)> {
        self.first_error
    }
}
