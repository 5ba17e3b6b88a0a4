use crate::{Buffer, BufferError};

/// The owned message of a [`FixedBuffer`]: up to `N` bytes, inline.
///
/// It reads as a byte slice (`Deref<Target = [u8]>`, `AsRef<[u8]>`) and
/// compares, orders and hashes as one. It needs no allocator and is `Send`.
///
/// # Examples
///
/// ```
/// use io_traits::{Buffer, FixedBuffer, FixedSlice};
///
/// let mut buf = FixedBuffer::<8>::new();
/// buf.get_writable(2).copy_from_slice(b"ok");
/// let message: FixedSlice<8> = buf.get_data_owned();
/// assert_eq!(message.as_slice(), b"ok");
/// assert_eq!(message.len(), 2);
/// assert_eq!(message, FixedSlice::<8>::try_from(&b"ok"[..])?);
/// # Ok::<(), io_traits::BufferError>(())
/// ```
#[derive(Clone)]
pub struct FixedSlice<const N: usize> {
    len: usize,
    bytes: [u8; N],
}

impl<const N: usize> FixedSlice<N> {
    /// An empty message.
    ///
    /// # Examples
    ///
    /// ```
    /// use io_traits::FixedSlice;
    ///
    /// const EMPTY: FixedSlice<4> = FixedSlice::new();
    /// assert!(EMPTY.is_empty());
    /// ```
    pub const fn new() -> Self {
        Self {
            len: 0,
            bytes: [0; N],
        }
    }

    /// The largest message it holds: `N`.
    ///
    /// # Examples
    ///
    /// ```
    /// use io_traits::FixedSlice;
    ///
    /// assert_eq!(FixedSlice::<16>::new().capacity(), 16);
    /// ```
    pub const fn capacity(&self) -> usize {
        N
    }

    /// The message's bytes.
    pub fn as_slice(&self) -> &[u8] {
        self.bytes.get(..self.len).unwrap_or_default()
    }

    /// The message's bytes, to change in place.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        self.bytes.get_mut(..self.len).unwrap_or_default()
    }

    /// Grows the message by `len` zeroed bytes and returns them.
    fn try_extend_zeroed(&mut self, len: usize) -> Result<&mut [u8], BufferError> {
        let old = self.len;
        let available = N - old;
        if len > available {
            return Err(BufferError::CapacityExceeded {
                requested: len,
                available,
            });
        }
        self.len = old + len;
        let added = self.bytes.get_mut(old..self.len).unwrap_or_default();
        added.fill(0);
        Ok(added)
    }

    /// Shortens the message to `len` bytes; a longer `len` changes nothing.
    #[cfg(feature = "aead")]
    fn truncate(&mut self, len: usize) {
        self.len = self.len.min(len);
    }
}

impl<const N: usize> Default for FixedSlice<N> {
    fn default() -> Self {
        Self::new()
    }
}

/// A copy of `bytes`, or [`BufferError::CapacityExceeded`] when they are more
/// than `N`.
impl<const N: usize> TryFrom<&[u8]> for FixedSlice<N> {
    type Error = BufferError;

    fn try_from(bytes: &[u8]) -> Result<Self, BufferError> {
        let mut message = Self::new();
        message
            .try_extend_zeroed(bytes.len())?
            .copy_from_slice(bytes);
        Ok(message)
    }
}

impl<const N: usize> core::ops::Deref for FixedSlice<N> {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        self.as_slice()
    }
}

impl<const N: usize> core::ops::DerefMut for FixedSlice<N> {
    fn deref_mut(&mut self) -> &mut [u8] {
        self.as_mut_slice()
    }
}

impl<const N: usize> AsRef<[u8]> for FixedSlice<N> {
    fn as_ref(&self) -> &[u8] {
        self.as_slice()
    }
}

impl<const N: usize> AsMut<[u8]> for FixedSlice<N> {
    fn as_mut(&mut self) -> &mut [u8] {
        self.as_mut_slice()
    }
}

impl<const N: usize> core::borrow::Borrow<[u8]> for FixedSlice<N> {
    fn borrow(&self) -> &[u8] {
        self.as_slice()
    }
}

impl<const N: usize> core::fmt::Debug for FixedSlice<N> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        self.as_slice().fmt(f)
    }
}

impl<const N: usize, const M: usize> PartialEq<FixedSlice<M>> for FixedSlice<N> {
    fn eq(&self, other: &FixedSlice<M>) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl<const N: usize> Eq for FixedSlice<N> {}

impl<const N: usize> PartialEq<[u8]> for FixedSlice<N> {
    fn eq(&self, other: &[u8]) -> bool {
        self.as_slice() == other
    }
}

impl<const N: usize> PartialEq<&[u8]> for FixedSlice<N> {
    fn eq(&self, other: &&[u8]) -> bool {
        self.as_slice() == *other
    }
}

impl<const N: usize, const M: usize> PartialEq<[u8; M]> for FixedSlice<N> {
    fn eq(&self, other: &[u8; M]) -> bool {
        self.as_slice() == other
    }
}

impl<const N: usize> PartialOrd for FixedSlice<N> {
    fn partial_cmp(&self, other: &Self) -> Option<core::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl<const N: usize> Ord for FixedSlice<N> {
    fn cmp(&self, other: &Self) -> core::cmp::Ordering {
        self.as_slice().cmp(other.as_slice())
    }
}

impl<const N: usize> core::hash::Hash for FixedSlice<N> {
    fn hash<H: core::hash::Hasher>(&self, state: &mut H) {
        self.as_slice().hash(state);
    }
}

impl<'a, const N: usize> IntoIterator for &'a FixedSlice<N> {
    type Item = &'a u8;
    type IntoIter = core::slice::Iter<'a, u8>;
    fn into_iter(self) -> Self::IntoIter {
        self.as_slice().iter()
    }
}

#[cfg(feature = "defmt")]
impl<const N: usize> defmt::Format for FixedSlice<N> {
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(f, "{=[u8]}", self.as_slice());
    }
}

/// A [`Buffer`] with room for messages of up to `N` bytes, needing no allocator.
///
/// Each message is handed out by value as a [`FixedSlice<N>`]. A full buffer
/// is an error from [`try_get_writable`](Buffer::try_get_writable), never a
/// heap allocation. `const fn new` makes it usable in a `static`.
///
/// # Examples
///
/// ```
/// use io_traits::{Buffer, BufferError, FixedBuffer};
///
/// let mut buf = FixedBuffer::<8>::new();
/// buf.try_get_writable(6)?.copy_from_slice(b"header");
/// assert!(buf.try_get_writable(3).is_err());
/// let message = buf.get_data_owned();
/// assert_eq!(&message[..], b"header");
/// # Ok::<(), BufferError>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct FixedBuffer<const N: usize> {
    inner: FixedSlice<N>,
    pub(crate) start: usize,
}

impl<const N: usize> FixedBuffer<N> {
    /// An empty buffer.
    ///
    /// # Examples
    ///
    /// ```
    /// use io_traits::FixedBuffer;
    ///
    /// // `new` is `const`, so a buffer can be built at compile time.
    /// const EMPTY: FixedBuffer<256> = FixedBuffer::new();
    /// assert!(EMPTY.capacity() == 256);
    /// let buf = FixedBuffer::<16>::new();
    /// assert_eq!(buf.capacity(), 16);
    /// ```
    pub const fn new() -> Self {
        Self {
            inner: FixedSlice::new(),
            start: 0,
        }
    }

    /// The largest message this buffer holds: `N`.
    ///
    /// # Examples
    ///
    /// ```
    /// use io_traits::FixedBuffer;
    ///
    /// assert_eq!(FixedBuffer::<1500>::new().capacity(), 1500);
    /// ```
    pub const fn capacity(&self) -> usize {
        N
    }

    /// Shortens the pending message to `len` bytes; a longer `len` changes
    /// nothing.
    #[cfg(feature = "aead")]
    pub(crate) fn truncate_pending(&mut self, len: usize) {
        self.inner.truncate(len);
    }
}

impl<const N: usize> Buffer for FixedBuffer<N> {
    type Slice = FixedSlice<N>;

    /// Appends `len` zeroed bytes.
    ///
    /// # Panics
    ///
    /// If the pending message would exceed `N` bytes; use
    /// [`try_get_writable`](Buffer::try_get_writable) to get an error instead.
    #[inline]
    fn get_writable(&mut self, len: usize) -> &mut [u8] {
        match self.try_get_writable(len) {
            Ok(bytes) => bytes,
            Err(e) => panic!("FixedBuffer::get_writable: {e}"),
        }
    }

    #[inline]
    fn try_get_writable(&mut self, len: usize) -> Result<&mut [u8], BufferError> {
        self.inner.try_extend_zeroed(len)
    }

    #[inline]
    fn get_data_owned(&mut self) -> FixedSlice<N> {
        self.start = 0;
        // A copy, then an empty message in place: the bytes past the new
        // length stay as they were (no fill of `N` bytes per message), and
        // each write zeroes what it appends.
        let message = self.inner.clone();
        self.inner.len = 0;
        message
    }

    pending_view!();
}

/// The pending message from the start set by
/// [`danger_set_start`](Buffer::danger_set_start) on.
impl<const N: usize> AsRef<[u8]> for FixedBuffer<N> {
    fn as_ref(&self) -> &[u8] {
        self.inner.get(self.start..).unwrap_or_default()
    }
}

/// The pending message from the start set by
/// [`danger_set_start`](Buffer::danger_set_start) on.
impl<const N: usize> AsMut<[u8]> for FixedBuffer<N> {
    fn as_mut(&mut self) -> &mut [u8] {
        self.inner.get_mut(self.start..).unwrap_or_default()
    }
}
