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
    fn get_writable(&mut self, len: usize) -> &mut [u8];

    /// Like [`get_writable`](Self::get_writable), but reports a full buffer
    /// as an error and leaves the pending message unchanged.
    ///
    /// The default forwards to `get_writable`, which is right for buffers
    /// whose storage is unbounded; buffers with fixed storage override it.
    fn try_get_writable(&mut self, len: usize) -> Result<&mut [u8], BufferError> {
        Ok(self.get_writable(len))
    }

    /// Hands the pending message out and starts a new, empty one.
    ///
    /// Also resets the start set by [`danger_set_start`](Self::danger_set_start).
    fn get_data_owned(&mut self) -> Self::Slice;

    /// The first `min(len, self.len())` bytes of the pending message.
    fn get_data_by_ref(&mut self, len: usize) -> &mut [u8];

    /// The first `min(len, self.len())` bytes of the pending message, shared.
    fn get_data_by_ref_(&self, len: usize) -> &[u8];

    /// Number of bytes in the pending message.
    fn len(&self) -> usize;

    /// Whether the pending message is empty.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Sets where the buffer's `AsRef<[u8]>` / `AsMut<[u8]>` view of the
    /// pending message starts. An index past the end gives an empty view.
    fn danger_set_start(&mut self, index: usize);

    /// Whether dropping the buffer now loses nothing a handed-out
    /// [`Slice`](Self::Slice) still needs.
    fn is_droppable(&self) -> bool;
}
