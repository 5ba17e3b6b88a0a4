use crate::{Write, WriteError};
use alloc::vec::Vec;

/// Appends every byte; fails only when the allocator refuses.
///
/// # Examples
///
/// ```
/// use io_traits::Write;
///
/// let mut sink = Vec::new();
/// sink.write_all(b"abc").unwrap();
/// assert_eq!(sink, b"abc");
/// ```
impl Write for Vec<u8> {
    #[inline]
    fn write(&mut self, buf: &[u8]) -> Result<usize, WriteError> {
        self.write_all(buf).map(|()| buf.len())
    }

    #[inline]
    fn write_all(&mut self, buf: &[u8]) -> Result<(), WriteError> {
        self.try_reserve(buf.len())
            .map_err(|_| WriteError::OutOfMemory)?;
        self.extend_from_slice(buf);
        Ok(())
    }
}
