//! [`ReadOp`]: one read request.

/// One read: fill `buf` with the bytes at `addr`, and report under `tag`.
///
/// The tag is the caller's: the reader hands it back unchanged in every
/// [`Completion`](crate::Completion) of this op, and uses it for nothing else.
///
/// # Examples
///
/// ```
/// use batch_reader::ReadOp;
///
/// let mut buf = [0u8; 8];
/// let op = ReadOp::new(0x1000, &mut buf, 7);
/// assert_eq!((op.addr, op.buf.len(), op.tag), (0x1000, 8, 7));
/// ```
#[derive(Debug)]
pub struct ReadOp<'a> {
    /// Where the read starts, in the backend's address space.
    pub addr: u64,
    /// Where the bytes go; its length is the length of the read.
    pub buf: &'a mut [u8],
    /// The caller's label for this op.
    pub tag: usize,
}

impl<'a> ReadOp<'a> {
    /// An op reading `buf.len()` bytes at `addr`, labelled `tag`.
    ///
    /// # Examples
    ///
    /// ```
    /// use batch_reader::ReadOp;
    ///
    /// let mut buf = [0u8; 16];
    /// let op = ReadOp::new(0x20, &mut buf[..4], 1);
    /// assert_eq!(op.buf.len(), 4);
    /// assert_eq!(op.end(), Some(0x24));
    /// ```
    #[inline]
    pub fn new(addr: u64, buf: &'a mut [u8], tag: usize) -> Self {
        Self { addr, buf, tag }
    }

    /// The address one past the last byte, or `None` if it does not fit in a
    /// `u64` (the reader then fails the op with
    /// [`AddressOverflow`](crate::ReadErrorKind::AddressOverflow)).
    ///
    /// # Examples
    ///
    /// ```
    /// use batch_reader::ReadOp;
    ///
    /// let mut buf = [0u8; 8];
    /// assert_eq!(ReadOp::new(0x1000, &mut buf, 0).end(), Some(0x1008));
    /// assert_eq!(ReadOp::new(u64::MAX - 8, &mut buf, 0).end(), Some(u64::MAX));
    /// assert_eq!(ReadOp::new(u64::MAX - 7, &mut buf, 0).end(), None);
    /// ```
    #[inline]
    pub fn end(&self) -> Option<u64> {
        self.addr.checked_add(self.buf.len() as u64)
    }
}
