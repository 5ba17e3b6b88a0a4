use crate::{Write, WriteError};

/// Copies what fits and advances the slice past it, as
/// `std::io::Write for &mut [u8]` does.
///
/// # Examples
///
/// ```
/// use io_traits::Write;
///
/// let mut storage = [0u8; 4];
/// let mut sink: &mut [u8] = &mut storage;
/// assert_eq!(sink.write(b"abcdef").unwrap(), 4);
/// assert_eq!(sink.write(b"g").unwrap(), 0);
/// assert_eq!(&storage, b"abcd");
/// ```
impl Write for &mut [u8] {
    #[inline]
    fn write(&mut self, buf: &[u8]) -> Result<usize, WriteError> {
        let n = buf.len().min(self.len());
        let (head, tail) = core::mem::take(self).split_at_mut(n);
        head.copy_from_slice(&buf[..n]);
        *self = tail;
        Ok(n)
    }

    #[inline]
    fn write_all(&mut self, buf: &[u8]) -> Result<(), WriteError> {
        if self.write(buf)? == buf.len() {
            Ok(())
        } else {
            Err(WriteError::WriteZero)
        }
    }
}
