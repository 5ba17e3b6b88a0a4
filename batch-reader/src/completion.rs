//! [`Completion`]: what happened to each byte of an op.

use crate::{PartialRead, ReadErrorKind, ReadOp};

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
///
/// # Examples
///
/// An op crossing a 16-byte boundary is read as two fragments; a fault at
/// address 20 cuts the second one short:
///
/// ```
/// use batch_reader::{backends::{Faulty, MemoryBackend}, Fragment, Geometry, ReadErrorKind, ReadOp, Reader};
///
/// let mem = [0u8; 32];
/// let mut backend = Faulty::new(MemoryBackend::new(&mem, Geometry::new(Some(16), 16, 8)?));
/// backend.inject_fault(20..24, ReadErrorKind::Io)?;
/// let mut reader: Reader<_, _> = Reader::new(backend, [0u8; 0]);
/// let mut buf = [0u8; 16];
/// let mut frags = Vec::new();
/// reader.read_many(&mut [ReadOp::new(8, &mut buf, 0)], |c| frags.extend(c.fragments()));
/// assert_eq!(frags, [
///     Fragment { offset: 0, len: 8, valid: 8, error: None },
///     Fragment { offset: 8, len: 8, valid: 4, error: Some(ReadErrorKind::Io) },
/// ]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
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
    ///
    /// # Examples
    ///
    /// ```
    /// use batch_reader::Segment;
    ///
    /// let s = Segment { offset: 16, len: 4, result: Ok(()) };
    /// assert_eq!(s.range(), 16..20);
    /// assert_eq!(s.range().len(), s.len);
    /// ```
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
/// use batch_reader::{backends::{Faulty, MemoryBackend}, Geometry, ReadErrorKind, ReadOp, Reader, Segment};
///
/// let mem = [7u8; 256];
/// let mut backend = Faulty::new(MemoryBackend::new(&mem, Geometry::new(Some(64), 64, 8)?));
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
    /// The completion of `op` covering its records `frags` (in order, from
    /// the first covered byte to the last): the one way every route makes
    /// one.
    #[inline(always)]
    pub(crate) fn of(op: &'a ReadOp<'_>, frags: &'a [FragRecord]) -> Self {
        let offset = frags.first().map_or(0, |f| f.offset);
        let end = frags
            .last()
            .map_or(offset, |f| f.offset.saturating_add(f.len));
        Self {
            tag: op.tag,
            addr: op.addr,
            op_len: op.buf.len(),
            offset,
            len: end.saturating_sub(offset),
            frags,
            data: op.buf.get(offset..end).unwrap_or(&[]),
        }
    }

    /// The op's tag.
    ///
    /// # Examples
    ///
    /// ```
    /// use batch_reader::{backends::MemoryBackend, Geometry, ReadOp, Reader};
    ///
    /// let mem = [0u8; 32];
    /// let backend = MemoryBackend::new(&mem, Geometry::new(None, 32, 8)?);
    /// let mut reader: Reader<_, _> = Reader::new(backend, [0u8; 0]);
    /// let (mut a, mut b) = ([0u8; 4], [0u8; 4]);
    /// let mut ops = [ReadOp::new(16, &mut a, 70), ReadOp::new(0, &mut b, 71)];
    /// let mut tags = Vec::new();
    /// reader.read_many(&mut ops, |c| tags.push(c.tag()));
    /// assert_eq!(tags, [70, 71]);
    /// # Ok::<(), batch_reader::GeometryError>(())
    /// ```
    #[inline]
    pub fn tag(&self) -> usize {
        self.tag
    }

    /// The op's start address, in every completion of the op.
    ///
    /// # Examples
    ///
    /// ```
    /// use batch_reader::{backends::MemoryBackend, Geometry, ReadOp, Reader};
    ///
    /// let mem: Vec<u8> = (0..32).collect();
    /// let backend = MemoryBackend::new(&mem, Geometry::new(Some(16), 16, 8)?);
    /// // A fragment table of one: each fragment gets a completion of its own.
    /// let mut reader = Reader::<_, _, 4, 1>::with_window(backend, [0u8; 0]);
    /// let mut buf = [0u8; 16];
    /// let mut seen = Vec::new();
    /// reader.read_many(&mut [ReadOp::new(8, &mut buf, 0)], |c| seen.push(c.addr()));
    /// assert_eq!(seen, [8, 8]);
    /// # Ok::<(), batch_reader::GeometryError>(())
    /// ```
    #[inline]
    pub fn addr(&self) -> u64 {
        self.addr
    }

    /// The op's full length, in every completion of the op.
    ///
    /// # Examples
    ///
    /// ```
    /// use batch_reader::{backends::MemoryBackend, Geometry, ReadOp, Reader};
    ///
    /// let mem: Vec<u8> = (0..32).collect();
    /// let backend = MemoryBackend::new(&mem, Geometry::new(Some(16), 16, 8)?);
    /// // A fragment table of one: each fragment gets a completion of its own.
    /// let mut reader = Reader::<_, _, 4, 1>::with_window(backend, [0u8; 0]);
    /// let mut buf = [0u8; 16];
    /// let mut seen = Vec::new();
    /// reader.read_many(&mut [ReadOp::new(8, &mut buf, 0)], |c| seen.push((c.op_len(), c.len())));
    /// assert_eq!(seen, [(16, 8), (16, 8)]);
    /// # Ok::<(), batch_reader::GeometryError>(())
    /// ```
    #[inline]
    pub fn op_len(&self) -> usize {
        self.op_len
    }

    /// Offset within the op of the first byte this completion covers.
    ///
    /// # Examples
    ///
    /// ```
    /// use batch_reader::{backends::MemoryBackend, Geometry, ReadOp, Reader};
    ///
    /// let mem: Vec<u8> = (0..32).collect();
    /// let backend = MemoryBackend::new(&mem, Geometry::new(Some(16), 16, 8)?);
    /// // A fragment table of one: each fragment gets a completion of its own.
    /// let mut reader = Reader::<_, _, 4, 1>::with_window(backend, [0u8; 0]);
    /// let mut buf = [0u8; 16];
    /// let mut seen = Vec::new();
    /// reader.read_many(&mut [ReadOp::new(8, &mut buf, 0)], |c| seen.push(c.offset()));
    /// assert_eq!(seen, [0, 8]);
    /// # Ok::<(), batch_reader::GeometryError>(())
    /// ```
    #[inline]
    pub fn offset(&self) -> usize {
        self.offset
    }

    /// Number of bytes this completion covers.
    ///
    /// # Examples
    ///
    /// ```
    /// use batch_reader::{backends::MemoryBackend, Geometry, ReadOp, Reader};
    ///
    /// let mem: Vec<u8> = (0..32).collect();
    /// let backend = MemoryBackend::new(&mem, Geometry::new(Some(16), 16, 8)?);
    /// // A fragment table of one: each fragment gets a completion of its own.
    /// let mut reader = Reader::<_, _, 4, 1>::with_window(backend, [0u8; 0]);
    /// let mut buf = [0u8; 16];
    /// let mut seen = Vec::new();
    /// reader.read_many(&mut [ReadOp::new(4, &mut buf, 0)], |c| seen.push(c.len()));
    /// assert_eq!(seen, [12, 4]);
    /// # Ok::<(), batch_reader::GeometryError>(())
    /// ```
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether this completion covers no bytes (an empty op).
    ///
    /// # Examples
    ///
    /// An empty op still gets one completion, which is empty and successful:
    ///
    /// ```
    /// use batch_reader::{backends::MemoryBackend, Geometry, ReadOp, Reader};
    ///
    /// let backend = MemoryBackend::new(&[], Geometry::new(None, 16, 8)?);
    /// let mut reader: Reader<_, _> = Reader::new(backend, [0u8; 0]);
    /// let mut seen = Vec::new();
    /// let mut ops = [ReadOp::new(0, &mut [], 0)];
    /// reader.read_many(&mut ops, |c| seen.push((c.is_empty(), c.is_ok())));
    /// assert_eq!(seen, [(true, true)]);
    /// # Ok::<(), batch_reader::GeometryError>(())
    /// ```
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether this is the op's last completion.
    ///
    /// # Examples
    ///
    /// ```
    /// use batch_reader::{backends::MemoryBackend, Geometry, ReadOp, Reader};
    ///
    /// let mem: Vec<u8> = (0..32).collect();
    /// let backend = MemoryBackend::new(&mem, Geometry::new(Some(16), 16, 8)?);
    /// // A fragment table of one: each fragment gets a completion of its own.
    /// let mut reader = Reader::<_, _, 4, 1>::with_window(backend, [0u8; 0]);
    /// let mut buf = [0u8; 16];
    /// let mut seen = Vec::new();
    /// reader.read_many(&mut [ReadOp::new(8, &mut buf, 0)], |c| seen.push(c.is_last()));
    /// assert_eq!(seen, [false, true]);
    /// # Ok::<(), batch_reader::GeometryError>(())
    /// ```
    #[inline]
    pub fn is_last(&self) -> bool {
        self.offset + self.len == self.op_len
    }

    /// The op's buffer over the covered bytes. Only the bytes of `Ok`
    /// segments hold read data.
    ///
    /// # Examples
    ///
    /// ```
    /// use batch_reader::{backends::MemoryBackend, Geometry, ReadOp, Reader};
    ///
    /// let mem: Vec<u8> = (0..32).collect();
    /// let backend = MemoryBackend::new(&mem, Geometry::new(Some(16), 16, 8)?);
    /// // A fragment table of one: each fragment gets a completion of its own.
    /// let mut reader = Reader::<_, _, 4, 1>::with_window(backend, [0u8; 0]);
    /// let mut buf = [0u8; 16];
    /// let mut seen = Vec::new();
    /// reader.read_many(&mut [ReadOp::new(12, &mut buf, 0)], |c| seen.push(c.data().to_vec()));
    /// assert_eq!(seen, [vec![12, 13, 14, 15], (16..28).collect::<Vec<u8>>()]);
    /// # Ok::<(), batch_reader::GeometryError>(())
    /// ```
    #[inline]
    pub fn data(&self) -> &'a [u8] {
        self.data
    }

    /// Whether every covered byte was read.
    ///
    /// # Examples
    ///
    /// ```
    /// use batch_reader::{backends::{Faulty, MemoryBackend}, Geometry, ReadErrorKind, ReadOp, Reader};
    ///
    /// let mem = [0u8; 32];
    /// let mut backend = Faulty::new(MemoryBackend::new(&mem, Geometry::new(Some(16), 16, 8)?));
    /// backend.inject_fault(20..32, ReadErrorKind::Unmapped)?;
    /// let mut reader: Reader<_, _> = Reader::new(backend, [0u8; 0]);
    /// let mut buf = [0u8; 16];
    /// let mut seen = Vec::new();
    /// reader.read_many(&mut [ReadOp::new(0, &mut buf, 0)], |c| seen.push(c.is_ok()));
    /// reader.read_many(&mut [ReadOp::new(8, &mut buf, 1)], |c| seen.push(c.is_ok()));
    /// assert_eq!(seen, [true, false]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn is_ok(&self) -> bool {
        self.frags.iter().all(|f| f.error.is_none())
    }

    /// Number of covered bytes read.
    ///
    /// # Examples
    ///
    /// ```
    /// use batch_reader::{backends::{Faulty, MemoryBackend}, Geometry, ReadErrorKind, ReadOp, Reader};
    ///
    /// let mem = [0u8; 32];
    /// let mut backend = Faulty::new(MemoryBackend::new(&mem, Geometry::new(Some(16), 16, 8)?));
    /// backend.inject_fault(20..32, ReadErrorKind::Unmapped)?;
    /// let mut reader: Reader<_, _> = Reader::new(backend, [0u8; 0]);
    /// let mut buf = [0u8; 16];
    /// let mut ok = 0;
    /// reader.read_many(&mut [ReadOp::new(8, &mut buf, 0)], |c| ok = c.ok_bytes());
    /// assert_eq!(ok, 12); // 8..20 was read
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn ok_bytes(&self) -> usize {
        self.frags.iter().map(|f| f.valid).sum()
    }

    /// Number of covered bytes that failed.
    ///
    /// # Examples
    ///
    /// ```
    /// use batch_reader::{backends::{Faulty, MemoryBackend}, Geometry, ReadErrorKind, ReadOp, Reader};
    ///
    /// let mem = [0u8; 32];
    /// let mut backend = Faulty::new(MemoryBackend::new(&mem, Geometry::new(Some(16), 16, 8)?));
    /// backend.inject_fault(20..32, ReadErrorKind::Unmapped)?;
    /// let mut reader: Reader<_, _> = Reader::new(backend, [0u8; 0]);
    /// let mut buf = [0u8; 16];
    /// let mut failed = 0;
    /// reader.read_many(&mut [ReadOp::new(8, &mut buf, 0)], |c| failed = c.failed_bytes());
    /// assert_eq!(failed, 4); // 20..24 failed
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn failed_bytes(&self) -> usize {
        self.len - self.ok_bytes()
    }

    /// Where the op first failed within this completion: the offset of its
    /// first failed byte (within the op) and why it failed.
    ///
    /// # Examples
    ///
    /// ```
    /// use batch_reader::{backends::{Faulty, MemoryBackend}, Geometry, PartialRead, ReadErrorKind, ReadOp, Reader};
    ///
    /// let mem = [0u8; 32];
    /// let mut backend = Faulty::new(MemoryBackend::new(&mem, Geometry::new(Some(16), 16, 8)?));
    /// backend.inject_fault(20..32, ReadErrorKind::Unmapped)?;
    /// let mut reader: Reader<_, _> = Reader::new(backend, [0u8; 0]);
    /// let mut buf = [0u8; 16];
    /// let mut first = None;
    /// reader.read_many(&mut [ReadOp::new(8, &mut buf, 0)], |c| first = c.first_error());
    /// assert_eq!(first, Some(PartialRead { valid: 12, kind: ReadErrorKind::Unmapped })); // address 20
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn first_error(&self) -> Option<PartialRead> {
        self.frags.iter().find_map(|f| {
            f.error.map(|kind| PartialRead {
                valid: f.offset + f.valid,
                kind,
            })
        })
    }

    /// The fragments, in order, as the backend saw them.
    ///
    /// # Examples
    ///
    /// An op crossing two 16-byte boundaries is read as three fragments:
    ///
    /// ```
    /// use batch_reader::{backends::MemoryBackend, Geometry, ReadOp, Reader};
    ///
    /// let mem = [0u8; 64];
    /// let backend = MemoryBackend::new(&mem, Geometry::new(Some(16), 16, 8)?);
    /// let mut reader: Reader<_, _> = Reader::new(backend, [0u8; 0]);
    /// let mut buf = [0u8; 32];
    /// let mut frags = Vec::new();
    /// reader.read_many(&mut [ReadOp::new(8, &mut buf, 0)], |c| {
    ///     frags.extend(c.fragments().map(|f| (f.offset, f.len)));
    /// });
    /// assert_eq!(frags, [(0, 8), (8, 16), (24, 8)]);
    /// # Ok::<(), batch_reader::GeometryError>(())
    /// ```
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
    ///
    /// # Examples
    ///
    /// Two fragments that were both read make one segment:
    ///
    /// ```
    /// use batch_reader::{backends::MemoryBackend, Geometry, ReadOp, Reader, Segment};
    ///
    /// let mem = [0u8; 32];
    /// let backend = MemoryBackend::new(&mem, Geometry::new(Some(16), 16, 8)?);
    /// let mut reader: Reader<_, _> = Reader::new(backend, [0u8; 0]);
    /// let mut buf = [0u8; 16];
    /// reader.read_many(&mut [ReadOp::new(8, &mut buf, 0)], |c| {
    ///     assert_eq!(c.fragments().count(), 2);
    ///     let segs: Vec<Segment> = c.segments().collect();
    ///     assert_eq!(segs, [Segment { offset: 0, len: 16, result: Ok(()) }]);
    /// });
    /// # Ok::<(), batch_reader::GeometryError>(())
    /// ```
    #[inline]
    pub fn segments(&self) -> Segments<'a> {
        Segments {
            frags: self.frags,
            next_ok: true,
        }
    }
}

/// Iterator over the [`Segment`]s of a [`Completion`].
///
/// # Examples
///
/// An op over three 8-byte units whose middle unit is faulted: read, failed,
/// read.
///
/// ```
/// use batch_reader::{backends::{Faulty, MemoryBackend}, Geometry, ReadErrorKind, ReadOp, Reader};
///
/// let mem = [0u8; 64];
/// let mut backend = Faulty::new(MemoryBackend::new(&mem, Geometry::new(Some(8), 8, 8)?));
/// backend.inject_fault(24..32, ReadErrorKind::Unmapped)?;
/// let mut reader: Reader<_, _> = Reader::new(backend, [0u8; 0]);
/// let mut buf = [0u8; 24];
/// let mut segs = Vec::new();
/// reader.read_many(&mut [ReadOp::new(16, &mut buf, 0)], |c| {
///     segs.extend(c.segments().map(|s| (s.range(), s.result)));
/// });
/// assert_eq!(segs, [
///     (0..8, Ok(())),
///     (8..16, Err(ReadErrorKind::Unmapped)),
///     (16..24, Ok(())),
/// ]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
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
/// use batch_reader::{PartialRead, ReadErrorKind, ReadSummary};
///
/// let failed = PartialRead { valid: 10, kind: ReadErrorKind::OutOfBounds };
/// let s = ReadSummary::new(16, 10, Some(failed));
/// assert!(!s.is_ok());
/// assert_eq!(s.failed_bytes(), 6);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ReadSummary {
    len: usize,
    ok: usize,
    first_error: Option<PartialRead>,
}

impl ReadSummary {
    /// A summary of a read of `len` bytes of which `ok` succeeded, first
    /// failing as `first_error` says.
    ///
    /// # Examples
    ///
    /// ```
    /// use batch_reader::{backends::MemoryBackend, Geometry, PartialRead, ReadErrorKind, Reader, ReadSummary};
    ///
    /// let mem = [1u8; 16];
    /// let backend = MemoryBackend::new(&mem, Geometry::new(None, 32, 8)?);
    /// let mut reader: Reader<_, _> = Reader::new(backend, [0u8; 0]);
    /// let s = reader.read_buf(12, &mut [0u8; 8]);
    /// let failed = PartialRead { valid: 4, kind: ReadErrorKind::OutOfBounds };
    /// assert_eq!(s, ReadSummary::new(8, 4, Some(failed)));
    /// # Ok::<(), batch_reader::GeometryError>(())
    /// ```
    pub const fn new(len: usize, ok: usize, first_error: Option<PartialRead>) -> Self {
        Self {
            len,
            ok,
            first_error,
        }
    }

    /// Whether every byte was read.
    ///
    /// # Examples
    ///
    /// ```
    /// use batch_reader::{backends::MemoryBackend, Geometry, Reader};
    ///
    /// let mem = [1u8; 16];
    /// let backend = MemoryBackend::new(&mem, Geometry::new(None, 32, 8)?);
    /// let mut reader: Reader<_, _> = Reader::new(backend, [0u8; 0]);
    /// assert!(reader.read_buf(8, &mut [0u8; 8]).is_ok());
    /// assert!(!reader.read_buf(12, &mut [0u8; 8]).is_ok());
    /// # Ok::<(), batch_reader::GeometryError>(())
    /// ```
    pub const fn is_ok(&self) -> bool {
        self.first_error.is_none()
    }

    /// The length of the read: the length of the buffer, however many of its
    /// bytes were read.
    ///
    /// # Examples
    ///
    /// ```
    /// use batch_reader::{backends::MemoryBackend, Geometry, Reader};
    ///
    /// let mem = [1u8; 16];
    /// let backend = MemoryBackend::new(&mem, Geometry::new(None, 32, 8)?);
    /// let mut reader: Reader<_, _> = Reader::new(backend, [0u8; 0]);
    /// assert_eq!(reader.read_buf(100, &mut [0u8; 8]).len(), 8);
    /// # Ok::<(), batch_reader::GeometryError>(())
    /// ```
    pub const fn len(&self) -> usize {
        self.len
    }

    /// Whether the read was empty.
    ///
    /// # Examples
    ///
    /// ```
    /// use batch_reader::{backends::MemoryBackend, Geometry, Reader};
    ///
    /// let mem = [1u8; 16];
    /// let backend = MemoryBackend::new(&mem, Geometry::new(None, 32, 8)?);
    /// let mut reader: Reader<_, _> = Reader::new(backend, [0u8; 0]);
    /// let s = reader.read_buf(0, &mut []);
    /// assert!(s.is_empty() && s.is_ok());
    /// assert!(!reader.read_buf(0, &mut [0u8; 1]).is_empty());
    /// # Ok::<(), batch_reader::GeometryError>(())
    /// ```
    pub const fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bytes read.
    ///
    /// # Examples
    ///
    /// ```
    /// use batch_reader::{backends::MemoryBackend, Geometry, Reader};
    ///
    /// let mem = [1u8; 16];
    /// let backend = MemoryBackend::new(&mem, Geometry::new(None, 32, 8)?);
    /// let mut reader: Reader<_, _> = Reader::new(backend, [0u8; 0]);
    /// assert_eq!(reader.read_buf(12, &mut [0u8; 8]).ok_bytes(), 4);
    /// # Ok::<(), batch_reader::GeometryError>(())
    /// ```
    pub const fn ok_bytes(&self) -> usize {
        self.ok
    }

    /// Bytes that failed.
    ///
    /// # Examples
    ///
    /// ```
    /// use batch_reader::{backends::MemoryBackend, Geometry, Reader};
    ///
    /// let mem = [1u8; 16];
    /// let backend = MemoryBackend::new(&mem, Geometry::new(None, 32, 8)?);
    /// let mut reader: Reader<_, _> = Reader::new(backend, [0u8; 0]);
    /// assert_eq!(reader.read_buf(10, &mut [0u8; 8]).failed_bytes(), 2);
    /// # Ok::<(), batch_reader::GeometryError>(())
    /// ```
    pub const fn failed_bytes(&self) -> usize {
        self.len - self.ok
    }

    /// Where the read first failed: the offset of its first failed byte
    /// and why it failed.
    ///
    /// # Examples
    ///
    /// ```
    /// use batch_reader::{backends::MemoryBackend, Geometry, PartialRead, ReadErrorKind, Reader};
    ///
    /// let mem = [1u8; 16];
    /// let backend = MemoryBackend::new(&mem, Geometry::new(None, 32, 8)?);
    /// let mut reader: Reader<_, _> = Reader::new(backend, [0u8; 0]);
    /// let s = reader.read_buf(10, &mut [0u8; 8]);
    /// assert_eq!(s.first_error(), Some(PartialRead { valid: 6, kind: ReadErrorKind::OutOfBounds }));
    /// assert_eq!(reader.read_buf(0, &mut [0u8; 8]).first_error(), None);
    /// # Ok::<(), batch_reader::GeometryError>(())
    /// ```
    pub const fn first_error(&self) -> Option<PartialRead> {
        self.first_error
    }
}
