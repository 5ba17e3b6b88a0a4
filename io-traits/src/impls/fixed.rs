use crate::{Buffer, BufferError};

/// The owned message of a [`FixedBuffer`]: a fixed-capacity byte vector.
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
/// ```
pub type FixedSlice<const N: usize> = heapless::Vec<u8, N>;

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
    inner: heapless::Vec<u8, N>,
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
            inner: heapless::Vec::new(),
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
        let old = self.inner.len();
        let available = N - old;
        if len > available {
            return Err(BufferError::CapacityExceeded {
                requested: len,
                available,
            });
        }
        // Cannot fail: `old + len <= N` was checked above.
        let _ = self.inner.resize(old + len, 0);
        Ok(self.inner.get_mut(old..).unwrap_or_default())
    }

    #[inline]
    fn get_data_owned(&mut self) -> FixedSlice<N> {
        self.start = 0;
        core::mem::take(&mut self.inner)
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
