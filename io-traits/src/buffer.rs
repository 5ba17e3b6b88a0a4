use crate::BufferError;

/// A message buffer that is filled in place and then handed out whole.
///
/// This is the trait `buffer_sv2`'s users decode into, with the same method
/// names and meaning, so switching is a change of import. The cycle is:
///
/// 1. [`get_writable(n)`](Self::get_writable) appends `n` bytes to the
///    *pending message* and returns them for the caller to fill;
/// 2. repeat until the message is complete;
/// 3. [`get_data_owned`](Self::get_data_owned) hands the pending message out
///    as an owned, `Send` [`Slice`](Self::Slice) and starts a new, empty one.
///
/// Differences from `buffer_sv2` that a caller may rely on:
/// - [`get_data_by_ref`](Self::get_data_by_ref) returns the first
///   `min(len, self.len())` bytes; `buffer_sv2` ignores `len`.
/// - The start set by [`danger_set_start`](Self::danger_set_start) is reset by
///   [`get_data_owned`](Self::get_data_owned); `buffer_sv2` never resets it.
/// - [`try_get_writable`](Self::try_get_writable) reports a full buffer as a
///   [`BufferError`] instead of panicking or allocating.
///
/// # Examples
///
/// ```
/// use io_traits::{Buffer, FixedBuffer};
///
/// let mut buf = FixedBuffer::<64>::new();
/// buf.get_writable(2).copy_from_slice(b"hi");
/// buf.get_writable(1).copy_from_slice(b"!");
/// assert_eq!(buf.len(), 3);
/// let message = buf.get_data_owned();
/// assert_eq!(&message[..], b"hi!");
/// assert!(buf.is_empty());
/// ```
pub trait Buffer {
    /// The owned form of a finished message.
    type Slice: AsRef<[u8]> + AsMut<[u8]> + Send;

    /// Appends exactly `len` bytes to the pending message and returns them.
    ///
    /// The contents of the returned bytes are unspecified until written.
    ///
    /// # Panics
    ///
    /// Buffers with fixed storage panic when `len` bytes do not fit; use
    /// [`try_get_writable`](Self::try_get_writable) to get an error instead.
    ///
    /// # Examples
    ///
    /// ```
    /// use io_traits::{Buffer, FixedBuffer};
    ///
    /// let mut buf = FixedBuffer::<8>::new();
    /// buf.get_writable(2).copy_from_slice(b"ab");
    /// buf.get_writable(1).copy_from_slice(b"c");
    /// assert_eq!(buf.get_data_by_ref_(8), b"abc");
    /// ```
    ///
    /// A [`FixedBuffer`](crate::FixedBuffer) panics when the bytes do not fit:
    ///
    /// ```should_panic
    /// use io_traits::{Buffer, FixedBuffer};
    ///
    /// let mut buf = FixedBuffer::<4>::new();
    /// buf.get_writable(5); // only 4 bytes fit
    /// ```
    fn get_writable(&mut self, len: usize) -> &mut [u8];

    /// Like [`get_writable`](Self::get_writable), but reports a full buffer
    /// as an error and leaves the pending message unchanged.
    ///
    /// The default forwards to `get_writable`, which is right for buffers
    /// whose storage is unbounded; buffers with fixed storage override it.
    ///
    /// # Examples
    ///
    /// ```
    /// use io_traits::{Buffer, BufferError, FixedBuffer};
    ///
    /// let mut buf = FixedBuffer::<4>::new();
    /// buf.try_get_writable(3)?.copy_from_slice(b"abc");
    /// let full = BufferError::CapacityExceeded { requested: 2, available: 1 };
    /// assert_eq!(buf.try_get_writable(2), Err(full));
    /// assert_eq!(buf.get_data_by_ref_(4), b"abc"); // unchanged
    /// # Ok::<(), BufferError>(())
    /// ```
    fn try_get_writable(&mut self, len: usize) -> Result<&mut [u8], BufferError> {
        Ok(self.get_writable(len))
    }

    /// Hands the pending message out and starts a new, empty one.
    ///
    /// Also resets the start set by [`danger_set_start`](Self::danger_set_start).
    ///
    /// # Examples
    ///
    /// ```
    /// use io_traits::{Buffer, FixedBuffer};
    ///
    /// let mut buf = FixedBuffer::<8>::new();
    /// buf.get_writable(3).copy_from_slice(b"abc");
    /// buf.danger_set_start(1);
    /// assert_eq!(&buf.get_data_owned()[..], b"abc");
    /// assert!(buf.is_empty());
    /// buf.get_writable(2).copy_from_slice(b"de");
    /// assert_eq!(buf.as_ref(), b"de"); // the start is back at 0
    /// ```
    fn get_data_owned(&mut self) -> Self::Slice;

    /// The first `min(len, self.len())` bytes of the pending message.
    ///
    /// # Examples
    ///
    /// ```
    /// use io_traits::{Buffer, FixedBuffer};
    ///
    /// let mut buf = FixedBuffer::<8>::new();
    /// buf.get_writable(3).copy_from_slice(b"abc");
    /// buf.get_data_by_ref(1)[0] = b'A';
    /// assert_eq!(buf.get_data_by_ref(2), b"Ab");
    /// assert_eq!(buf.get_data_by_ref(100), b"Abc");
    /// ```
    fn get_data_by_ref(&mut self, len: usize) -> &mut [u8];

    /// The first `min(len, self.len())` bytes of the pending message, shared.
    ///
    /// # Examples
    ///
    /// ```
    /// use io_traits::{Buffer, FixedBuffer};
    ///
    /// let mut buf = FixedBuffer::<8>::new();
    /// buf.get_writable(3).copy_from_slice(b"abc");
    /// let shared = &buf;
    /// assert_eq!(shared.get_data_by_ref_(2), b"ab");
    /// assert_eq!(shared.get_data_by_ref_(100), b"abc");
    /// ```
    fn get_data_by_ref_(&self, len: usize) -> &[u8];

    /// Number of bytes in the pending message.
    ///
    /// # Examples
    ///
    /// ```
    /// use io_traits::{Buffer, FixedBuffer};
    ///
    /// let mut buf = FixedBuffer::<8>::new();
    /// assert_eq!(buf.len(), 0);
    /// buf.get_writable(3);
    /// buf.get_writable(2);
    /// assert_eq!(buf.len(), 5);
    /// assert_eq!(buf.get_data_owned().len(), 5);
    /// assert_eq!(buf.len(), 0);
    /// ```
    fn len(&self) -> usize;

    /// Whether the pending message is empty.
    ///
    /// # Examples
    ///
    /// ```
    /// use io_traits::{Buffer, FixedBuffer};
    ///
    /// let mut buf = FixedBuffer::<8>::new();
    /// assert!(buf.is_empty());
    /// buf.get_writable(1).copy_from_slice(b"x");
    /// assert!(!buf.is_empty());
    /// assert_eq!(&buf.get_data_owned()[..], b"x");
    /// assert!(buf.is_empty());
    /// ```
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Sets where the buffer's `AsRef<[u8]>` / `AsMut<[u8]>` view of the
    /// pending message starts. An index past the end gives an empty view.
    ///
    /// # Examples
    ///
    /// ```
    /// use io_traits::{Buffer, FixedBuffer};
    ///
    /// let mut buf = FixedBuffer::<8>::new();
    /// buf.get_writable(5).copy_from_slice(b"hello");
    /// buf.danger_set_start(2);
    /// assert_eq!(buf.as_ref(), b"llo");
    /// buf.danger_set_start(9);
    /// assert_eq!(buf.as_ref(), b"");
    /// assert_eq!(buf.len(), 5); // the pending message is unchanged
    /// ```
    fn danger_set_start(&mut self, index: usize);

    /// Whether dropping the buffer now loses nothing a handed-out
    /// [`Slice`](Self::Slice) still needs.
    ///
    /// # Examples
    ///
    /// ```
    /// use io_traits::{Buffer, FixedBuffer};
    ///
    /// let mut buf = FixedBuffer::<8>::new();
    /// buf.get_writable(2).copy_from_slice(b"hi");
    /// let message = buf.get_data_owned();
    /// // A `FixedBuffer` hands messages out by value, so none depends on it.
    /// assert!(buf.is_droppable());
    /// drop(buf);
    /// assert_eq!(&message[..], b"hi");
    /// ```
    fn is_droppable(&self) -> bool;
}
