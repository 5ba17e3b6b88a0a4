use crate::{Buffer, BufferError};
use alloc::vec::Vec;

/// A [`Buffer`] that hands every message out as its own `Vec<u8>`.
///
/// The simplest buffer: each [`get_data_owned`](Buffer::get_data_owned) gives
/// away the vector and starts a new one with the same initial capacity.
///
/// # Examples
///
/// ```
/// use io_traits::{Buffer, BufferFromSystemMemory};
///
/// let mut buf = BufferFromSystemMemory::new(16);
/// buf.get_writable(5).copy_from_slice(b"hello");
/// let message: Vec<u8> = buf.get_data_owned();
/// assert_eq!(message, b"hello");
/// assert!(message.capacity() >= 16);
/// ```
#[derive(Debug, Clone, Default)]
pub struct BufferFromSystemMemory {
    inner: Vec<u8>,
    capacity: usize,
    pub(crate) start: usize,
}

impl BufferFromSystemMemory {
    /// A buffer whose messages start with room for `capacity` bytes.
    ///
    /// # Examples
    ///
    /// ```
    /// use io_traits::{Buffer, BufferFromSystemMemory};
    ///
    /// let buf = BufferFromSystemMemory::new(1024);
    /// assert!(buf.is_empty());
    /// ```
    pub fn new(capacity: usize) -> Self {
        Self {
            inner: Vec::with_capacity(capacity),
            capacity,
            start: 0,
        }
    }

    /// Shortens the pending message to `len` bytes; a longer `len` changes
    /// nothing.
    #[cfg(feature = "aead")]
    pub(crate) fn truncate_pending(&mut self, len: usize) {
        self.inner.truncate(len);
    }
}

impl Buffer for BufferFromSystemMemory {
    type Slice = Vec<u8>;

    /// Appends `len` zeroed bytes.
    ///
    /// # Panics
    ///
    /// If the allocator fails or the length overflows `usize`, as `Vec` does; use
    /// [`try_get_writable`](Buffer::try_get_writable) to get an error instead.
    #[inline]
    fn get_writable(&mut self, len: usize) -> &mut [u8] {
        let old = self.inner.len();
        self.inner.resize(
            old.checked_add(len)
                .expect("message length overflows usize"),
            0,
        );
        &mut self.inner[old..]
    }

    #[inline]
    fn try_get_writable(&mut self, len: usize) -> Result<&mut [u8], BufferError> {
        self.inner
            .try_reserve(len)
            .map_err(|_| BufferError::OutOfMemory)?;
        Ok(self.get_writable(len))
    }

    #[inline]
    fn get_data_owned(&mut self) -> Vec<u8> {
        self.start = 0;
        core::mem::replace(&mut self.inner, Vec::with_capacity(self.capacity))
    }

    pending_view!();
}

/// The pending message from the start set by
/// [`danger_set_start`](Buffer::danger_set_start) on.
impl AsRef<[u8]> for BufferFromSystemMemory {
    fn as_ref(&self) -> &[u8] {
        self.inner.get(self.start..).unwrap_or_default()
    }
}

/// The pending message from the start set by
/// [`danger_set_start`](Buffer::danger_set_start) on.
impl AsMut<[u8]> for BufferFromSystemMemory {
    fn as_mut(&mut self) -> &mut [u8] {
        self.inner.get_mut(self.start..).unwrap_or_default()
    }
}
