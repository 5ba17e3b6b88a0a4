use crate::WriteError;

/// A byte sink: the `no_std` stand-in for `std::io::Write`.
///
/// Call-compatible with `buffer_sv2::Write`: code written against that trait
/// compiles against this one after changing the import. Implemented here for
/// `&mut [u8]` (copy what fits and advance, as `std` does) and, with `alloc`,
/// for `Vec<u8>`. The modules `embedded` (feature `embedded-io`) and `std_io`
/// (feature `std`) hold adapters in both directions.
///
/// # Examples
///
/// ```
/// use io_traits::Write;
///
/// let mut storage = [0u8; 8];
/// let mut sink: &mut [u8] = &mut storage;
/// assert_eq!(sink.write(b"hello").unwrap(), 5);
/// sink.write_all(b"!!").unwrap();
/// assert_eq!(sink.len(), 1);
/// assert_eq!(&storage[..7], b"hello!!");
/// ```
pub trait Write {
    /// Writes some prefix of `buf` and returns how many bytes were taken.
    ///
    /// `Ok(0)` for a non-empty `buf` means the sink takes no more bytes.
    ///
    /// # Examples
    ///
    /// ```
    /// use io_traits::Write;
    ///
    /// let mut storage = [0u8; 3];
    /// let mut sink: &mut [u8] = &mut storage;
    /// // Only 3 bytes fit, so only 3 are taken.
    /// assert_eq!(sink.write(b"abcd").unwrap(), 3);
    /// // The sink is full: it takes no more bytes.
    /// assert_eq!(sink.write(b"e").unwrap(), 0);
    /// assert_eq!(&storage, b"abc");
    /// ```
    fn write(&mut self, buf: &[u8]) -> Result<usize, WriteError>;

    /// Writes all of `buf`, calling [`write`](Self::write) as often as needed.
    ///
    /// Returns [`WriteError::WriteZero`] if the sink stops taking bytes; the
    /// bytes it took before that stay written, as with `std::io::Write`.
    /// [`WriteError::Interrupted`] is retried.
    ///
    /// # Examples
    ///
    /// ```
    /// use io_traits::{Write, WriteError};
    ///
    /// let mut storage = [0u8; 4];
    /// let mut sink: &mut [u8] = &mut storage;
    /// sink.write_all(b"ab").unwrap();
    /// // Only "cd" fits; those bytes stay written.
    /// assert_eq!(sink.write_all(b"cde"), Err(WriteError::WriteZero));
    /// assert_eq!(&storage, b"abcd");
    /// ```
    fn write_all(&mut self, mut buf: &[u8]) -> Result<(), WriteError> {
        while !buf.is_empty() {
            match self.write(buf) {
                Ok(0) => return Err(WriteError::WriteZero),
                Ok(n) => buf = buf.get(n..).unwrap_or_default(),
                Err(WriteError::Interrupted) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Pushes buffered bytes to their destination. The default does nothing.
    ///
    /// # Examples
    ///
    /// ```
    /// use io_traits::Write;
    ///
    /// let mut storage = [0u8; 2];
    /// let mut sink: &mut [u8] = &mut storage;
    /// sink.write_all(b"ok").unwrap();
    /// // A slice holds no buffered bytes, so this uses the default.
    /// assert_eq!(sink.flush(), Ok(()));
    /// assert_eq!(&storage, b"ok");
    /// ```
    fn flush(&mut self) -> Result<(), WriteError> {
        Ok(())
    }
}

impl<W: Write + ?Sized> Write for &mut W {
    #[inline]
    fn write(&mut self, buf: &[u8]) -> Result<usize, WriteError> {
        (**self).write(buf)
    }
    #[inline]
    fn write_all(&mut self, buf: &[u8]) -> Result<(), WriteError> {
        (**self).write_all(buf)
    }
    #[inline]
    fn flush(&mut self) -> Result<(), WriteError> {
        (**self).flush()
    }
}
