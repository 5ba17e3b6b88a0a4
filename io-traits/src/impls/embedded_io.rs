use crate::{Write, WriteError};
use embedded_io::ErrorKind;

impl From<ErrorKind> for WriteError {
    /// Keeps the kinds this crate names; every other kind becomes `Other`.
    fn from(kind: ErrorKind) -> Self {
        match kind {
            ErrorKind::WriteZero => Self::WriteZero,
            ErrorKind::Interrupted => Self::Interrupted,
            ErrorKind::OutOfMemory => Self::OutOfMemory,
            ErrorKind::NotConnected => Self::NotConnected,
            ErrorKind::TimedOut => Self::TimedOut,
            _ => Self::Other,
        }
    }
}

impl From<WriteError> for ErrorKind {
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

impl embedded_io::Error for WriteError {
    fn kind(&self) -> ErrorKind {
        (*self).into()
    }
}

/// Makes any `embedded_io::Write` usable as this crate's [`Write`].
///
/// Errors keep their [`kind`](embedded_io::Error::kind).
///
/// # Examples
///
/// ```
/// use io_traits::{Write, embedded::FromEmbeddedIo};
///
/// let mut storage = [0u8; 4];
/// let mut sink = FromEmbeddedIo::new(&mut storage[..]);
/// sink.write_all(b"abc").unwrap();
/// assert_eq!(&storage[..3], b"abc");
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FromEmbeddedIo<T: ?Sized> {
    inner: T,
}

adapter_accessors!(FromEmbeddedIo);

impl<T: embedded_io::Write + ?Sized> Write for FromEmbeddedIo<T> {
    fn write(&mut self, buf: &[u8]) -> Result<usize, WriteError> {
        match self.inner.write(buf) {
            Ok(n) => Ok(n),
            // embedded-io reports "full" as an error; this trait reports it as `Ok(0)`.
            Err(e) if embedded_io::Error::kind(&e) == ErrorKind::WriteZero => Ok(0),
            Err(e) => Err(embedded_io::Error::kind(&e).into()),
        }
    }

    fn write_all(&mut self, buf: &[u8]) -> Result<(), WriteError> {
        self.inner
            .write_all(buf)
            .map_err(|e| embedded_io::Error::kind(&e).into())
    }

    fn flush(&mut self) -> Result<(), WriteError> {
        self.inner
            .flush()
            .map_err(|e| embedded_io::Error::kind(&e).into())
    }
}

/// Makes any of this crate's [`Write`] usable as an `embedded_io::Write`.
///
/// A write that takes no bytes of a non-empty buffer becomes an error of kind
/// `WriteZero`, as `embedded_io::Write` requires.
///
/// # Examples
///
/// ```
/// use io_traits::embedded::ToEmbeddedIo;
///
/// let mut storage = [0u8; 2];
/// let mut sink = ToEmbeddedIo::new(&mut storage[..]);
/// embedded_io::Write::write_all(&mut sink, b"ab").unwrap();
/// assert!(embedded_io::Write::write(&mut sink, b"c").is_err());
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToEmbeddedIo<T: ?Sized> {
    inner: T,
}

adapter_accessors!(ToEmbeddedIo);

impl<T: ?Sized> embedded_io::ErrorType for ToEmbeddedIo<T> {
    type Error = WriteError;
}

impl<T: Write + ?Sized> embedded_io::Write for ToEmbeddedIo<T> {
    fn write(&mut self, buf: &[u8]) -> Result<usize, WriteError> {
        match self.inner.write(buf)? {
            0 if !buf.is_empty() => Err(WriteError::WriteZero),
            n => Ok(n),
        }
    }

    fn flush(&mut self) -> Result<(), WriteError> {
        self.inner.flush()
    }

    fn write_all(&mut self, buf: &[u8]) -> Result<(), WriteError> {
        self.inner.write_all(buf)
    }
}
