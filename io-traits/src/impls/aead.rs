//! `aead::Buffer` (re-exported as [`AeadBuffer`](crate::AeadBuffer)): the
//! in-place buffer of AEAD ciphers, over the pending message's view.
//!
//! A cipher sees what `AsRef<[u8]>` / `AsMut<[u8]>` show: the pending message
//! from the start set by [`danger_set_start`](crate::Buffer::danger_set_start)
//! on. It appends its tag with `extend_from_slice` and cuts it off with
//! `truncate`, both counted from that start, so a caller can keep a header in
//! front of the bytes it encrypts.

use crate::Buffer;

/// `aead::Buffer` for a buffer with a `start` field (the view's start) and a
/// `truncate_pending` method.
macro_rules! aead_over_view {
    ($(#[$attr:meta])* impl[$($generics:tt)*] $buffer:ty) => {
        $(#[$attr])*
        impl<$($generics)*> aead::Buffer for $buffer {
            fn extend_from_slice(&mut self, other: &[u8]) -> aead::Result<()> {
                let bytes = self.try_get_writable(other.len());
                bytes.map_err(|_| aead::Error)?.copy_from_slice(other);
                Ok(())
            }

            fn truncate(&mut self, len: usize) {
                self.truncate_pending(self.start.saturating_add(len));
            }
        }
    };
}

aead_over_view! {
    /// The pending message from the start set by `danger_set_start` on; a
    /// full buffer makes `extend_from_slice` fail with `aead::Error`.
    ///
    /// # Examples
    ///
    /// ```
    /// use io_traits::{AeadBuffer, Buffer, FixedBuffer};
    ///
    /// let mut buf = FixedBuffer::<8>::new();
    /// buf.get_writable(2).copy_from_slice(b"hd");
    /// buf.danger_set_start(2);
    /// AeadBuffer::extend_from_slice(&mut buf, b"body")?;
    /// assert_eq!(AeadBuffer::len(&buf), 4);
    /// AeadBuffer::truncate(&mut buf, 1);
    /// assert_eq!(buf.get_data_by_ref_(8), b"hdb");
    /// assert!(AeadBuffer::extend_from_slice(&mut buf, b"123456").is_err());
    /// # Ok::<(), aead::Error>(())
    /// ```
    impl[const N: usize] crate::FixedBuffer<N>
}

#[cfg(feature = "alloc")]
aead_over_view! {
    /// The pending message from the start set by `danger_set_start` on.
    ///
    /// # Examples
    ///
    /// ```
    /// use io_traits::{AeadBuffer, Buffer, BufferFromSystemMemory};
    ///
    /// let mut buf = BufferFromSystemMemory::new(0);
    /// buf.get_writable(2).copy_from_slice(b"hd");
    /// buf.danger_set_start(2);
    /// AeadBuffer::extend_from_slice(&mut buf, b"body")?;
    /// AeadBuffer::truncate(&mut buf, 3);
    /// assert_eq!(buf.as_ref(), b"bod");
    /// assert_eq!(buf.get_data_owned(), b"hdbod");
    /// # Ok::<(), aead::Error>(())
    /// ```
    impl[] crate::BufferFromSystemMemory
}
