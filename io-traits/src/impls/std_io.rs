use crate::{Write, WriteError};
use std::io;

impl From<io::ErrorKind> for WriteError {
    /// Keeps the kinds this crate names; every other kind becomes `Other`.
    fn from(kind: io::ErrorKind) -> Self {
        match kind {
            io::ErrorKind::WriteZero => Self::WriteZero,
            io::ErrorKind::Interrupted => Self::Interrupted,
            io::ErrorKind::OutOfMemory => Self::OutOfMemory,
            io::ErrorKind::NotConnected => Self::NotConnected,
            io::ErrorKind::TimedOut => Self::TimedOut,
            _ => Self::Other,
        }
    }
}

impl From<WriteError> for io::ErrorKind {
    fn from(e: WriteError) -> Self {
        match e {
            WriteError::WriteZero => Self::WriteZero,
            WriteError::Interrupted => Self::Interrupted,
            WriteError::OutOfMemory => Self::OutOfMemory,
            WriteError::NotConnected => Self::NotConnected,
            WriteError::TimedOut => Self::TimedOut,
            WriteError::Other => Self::Other,
        }
    }
}

impl From<WriteError> for io::Error {
    fn from(e: WriteError) -> Self {
        io::Error::new(e.into(), e)
    }
}

/// Makes any `std::io::Write` usable as this crate's [`Write`].
///
/// Errors keep their [`kind`](io::Error::kind); the rest of a `std::io::Error`
/// (its message, its source) is dropped, since [`WriteError`] is `Copy`.
///
/// # Examples
///
/// ```
/// use io_traits::{Write, std_io::FromStd};
///
/// let mut sink = FromStd::new(std::io::Cursor::new(Vec::new()));
/// sink.write_all(b"abc").unwrap();
/// assert_eq!(sink.into_inner().into_inner(), b"abc");
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FromStd<T: ?Sized> {
    inner: T,
}

adapter_accessors!(FromStd);

impl<T: io::Write + ?Sized> Write for FromStd<T> {
    fn write(&mut self, buf: &[u8]) -> Result<usize, WriteError> {
        self.inner.write(buf).map_err(|e| e.kind().into())
    }

    fn write_all(&mut self, buf: &[u8]) -> Result<(), WriteError> {
        self.inner.write_all(buf).map_err(|e| e.kind().into())
    }

    fn flush(&mut self) -> Result<(), WriteError> {
        self.inner.flush().map_err(|e| e.kind().into())
    }
}

/// Makes any of this crate's [`Write`] usable as a `std::io::Write`.
///
/// # Examples
///
/// ```
/// use io_traits::std_io::ToStd;
/// use std::io::Write as _;
///
/// let mut sink = ToStd::new(Vec::new());
/// write!(sink, "{}-{}", 1, 2).unwrap();
/// assert_eq!(sink.into_inner(), b"1-2");
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToStd<T: ?Sized> {
    inner: T,
}

adapter_accessors!(ToStd);

impl<T: Write + ?Sized> io::Write for ToStd<T> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        Ok(self.inner.write(buf)?)
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        Ok(self.inner.write_all(buf)?)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(self.inner.flush()?)
    }
}
