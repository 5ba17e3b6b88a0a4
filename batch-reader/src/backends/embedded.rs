//! [`EmbeddedIoBackend`]: any `embedded_io::Read + Seek` as a backend.

use embedded_io::{Error as _, ErrorKind, Read, Seek, SeekFrom};

use crate::{Geometry, PartialRead, ReadAt, ReadErrorKind};

/// Turns a seekable `embedded_io` reader (a flash chip, an SD card, a file)
/// into a backend: each op is a seek (skipped when already there) and a read
/// loop.
///
/// A read returning 0 bytes is the end of the source:
/// [`OutOfBounds`](ReadErrorKind::OutOfBounds). Interrupted reads are retried.
///
/// # Examples
///
/// ```
/// use batch_reader::{backends::EmbeddedIoBackend, Geometry, Reader};
///
/// # struct Rom<'a>(&'a [u8], usize);
/// # impl embedded_io::ErrorType for Rom<'_> { type Error = core::convert::Infallible; }
/// # impl embedded_io::Read for Rom<'_> {
/// #     fn read(&mut self, buf: &mut [u8]) -> Result<usize, Self::Error> {
/// #         let n = buf.len().min(self.0.len().saturating_sub(self.1));
/// #         buf[..n].copy_from_slice(&self.0[self.1..self.1 + n]);
/// #         self.1 += n;
/// #         Ok(n)
/// #     }
/// # }
/// # impl embedded_io::Seek for Rom<'_> {
/// #     fn seek(&mut self, pos: embedded_io::SeekFrom) -> Result<u64, Self::Error> {
/// #         if let embedded_io::SeekFrom::Start(p) = pos { self.1 = p as usize; }
/// #         Ok(self.1 as u64)
/// #     }
/// # }
/// let rom = Rom(b"0123456789", 0);
/// let backend = EmbeddedIoBackend::new(rom, Geometry::new(Some(4), 4, 8)?);
/// let mut reader: Reader<_, _> = Reader::new(backend, [0u8; 16]);
/// assert_eq!(reader.read_val::<[u8; 3]>(3), Ok(*b"345"));
/// # Ok::<(), batch_reader::GeometryError>(())
/// ```
#[derive(Debug)]
pub struct EmbeddedIoBackend<T> {
    io: T,
    geometry: Geometry,
    /// Where `io` is positioned, when known.
    pos: Option<u64>,
}

impl<T: Read + Seek> EmbeddedIoBackend<T> {
    /// Reads `io`, declaring `geometry` (its sector size as the boundary, say).
    ///
    /// # Examples
    ///
    /// A read that reaches the end of the source (`Rom` is a byte slice with
    /// a position):
    ///
    /// ```
    /// use batch_reader::{backends::EmbeddedIoBackend, Geometry, PartialRead, ReadErrorKind, Reader};
    ///
    /// # struct Rom<'a>(&'a [u8], usize);
    /// # impl embedded_io::ErrorType for Rom<'_> { type Error = core::convert::Infallible; }
    /// # impl embedded_io::Read for Rom<'_> {
    /// #     fn read(&mut self, buf: &mut [u8]) -> Result<usize, Self::Error> {
    /// #         let n = buf.len().min(self.0.len().saturating_sub(self.1));
    /// #         buf[..n].copy_from_slice(&self.0[self.1..self.1 + n]);
    /// #         self.1 += n;
    /// #         Ok(n)
    /// #     }
    /// # }
    /// # impl embedded_io::Seek for Rom<'_> {
    /// #     fn seek(&mut self, pos: embedded_io::SeekFrom) -> Result<u64, Self::Error> {
    /// #         if let embedded_io::SeekFrom::Start(p) = pos { self.1 = p as usize; }
    /// #         Ok(self.1 as u64)
    /// #     }
    /// # }
    /// let backend = EmbeddedIoBackend::new(Rom(b"0123456789", 0), Geometry::new(Some(4), 4, 8)?);
    /// let mut reader: Reader<_, _> = Reader::new(backend, [0u8; 0]);
    /// let mut buf = [0u8; 4];
    /// let s = reader.read_buf(8, &mut buf);
    /// assert_eq!(s.first_error(), Some(PartialRead { valid: 2, kind: ReadErrorKind::OutOfBounds }));
    /// assert_eq!(&buf[..2], b"89");
    /// # Ok::<(), batch_reader::GeometryError>(())
    /// ```
    pub fn new(io: T, geometry: Geometry) -> Self {
        Self {
            io,
            geometry,
            pos: None,
        }
    }

    /// The reader back, positioned where the last read left it.
    ///
    /// # Examples
    ///
    /// ```
    /// use batch_reader::{backends::EmbeddedIoBackend, Geometry, Reader};
    ///
    /// # struct Rom<'a>(&'a [u8], usize);
    /// # impl embedded_io::ErrorType for Rom<'_> { type Error = core::convert::Infallible; }
    /// # impl embedded_io::Read for Rom<'_> {
    /// #     fn read(&mut self, buf: &mut [u8]) -> Result<usize, Self::Error> {
    /// #         let n = buf.len().min(self.0.len().saturating_sub(self.1));
    /// #         buf[..n].copy_from_slice(&self.0[self.1..self.1 + n]);
    /// #         self.1 += n;
    /// #         Ok(n)
    /// #     }
    /// # }
    /// # impl embedded_io::Seek for Rom<'_> {
    /// #     fn seek(&mut self, pos: embedded_io::SeekFrom) -> Result<u64, Self::Error> {
    /// #         if let embedded_io::SeekFrom::Start(p) = pos { self.1 = p as usize; }
    /// #         Ok(self.1 as u64)
    /// #     }
    /// # }
    /// let backend = EmbeddedIoBackend::new(Rom(b"0123456789", 0), Geometry::new(None, 16, 8)?);
    /// let mut reader: Reader<_, _> = Reader::new(backend, [0u8; 0]);
    /// assert_eq!(reader.read_val::<[u8; 3]>(3), Ok(*b"345"));
    /// let (backend, _) = reader.into_parts();
    /// assert_eq!(backend.into_inner().1, 6);
    /// # Ok::<(), batch_reader::GeometryError>(())
    /// ```
    pub fn into_inner(self) -> T {
        self.io
    }

    fn read_one(&mut self, addr: u64, buf: &mut [u8]) -> Result<(), PartialRead> {
        if buf.is_empty() {
            return Ok(());
        }
        if self.pos != Some(addr) {
            self.pos = None;
            match self.io.seek(SeekFrom::Start(addr)) {
                Ok(p) if p == addr => self.pos = Some(addr),
                Ok(_) => {
                    return Err(PartialRead {
                        valid: 0,
                        kind: ReadErrorKind::OutOfBounds,
                    });
                }
                Err(e) => {
                    return Err(PartialRead {
                        valid: 0,
                        kind: kind_of(e.kind()),
                    });
                }
            }
        }
        let mut done = 0;
        while done < buf.len() {
            match self.io.read(&mut buf[done..]) {
                Ok(0) => {
                    self.pos = None;
                    return Err(PartialRead {
                        valid: done,
                        kind: ReadErrorKind::OutOfBounds,
                    });
                }
                Ok(n) => done += n,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => {
                    self.pos = None;
                    return Err(PartialRead {
                        valid: done,
                        kind: kind_of(e.kind()),
                    });
                }
            }
        }
        self.pos = addr.checked_add(done as u64);
        Ok(())
    }
}

fn kind_of(kind: ErrorKind) -> ReadErrorKind {
    match kind {
        ErrorKind::PermissionDenied => ReadErrorKind::PermissionDenied,
        ErrorKind::TimedOut => ReadErrorKind::TimedOut,
        ErrorKind::InvalidInput => ReadErrorKind::OutOfBounds,
        ErrorKind::NotFound => ReadErrorKind::Unmapped,
        ErrorKind::Other => ReadErrorKind::Other,
        _ => ReadErrorKind::Io,
    }
}

impl<T: Read + Seek> ReadAt for EmbeddedIoBackend<T> {
    #[inline]
    fn geometry(&self) -> Geometry {
        self.geometry
    }

    fn read_at(&mut self, addr: u64, buf: &mut [u8]) -> Result<(), PartialRead> {
        self.read_one(addr, buf)
    }
}
