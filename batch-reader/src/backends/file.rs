//! [`FileBackend`]: positioned reads on a file.

use core::borrow::Borrow;
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

use crate::{Geometry, PartialRead, ReadAt, ReadErrorKind};

/// Reads a file (owned, `File`, or borrowed, `&File`) with `read_at`: no
/// seeking, no shared file position, so several backends may share a file.
///
/// Each op is one `read_at` loop (continued after short reads and
/// interruptions). On Linux, merged reads are scattered straight into the
/// callers' buffers with `preadv`. Reading past the end of the file fails with
/// [`OutOfBounds`](ReadErrorKind::OutOfBounds).
///
/// # Examples
///
/// ```
/// use batch_reader::{backends::FileBackend, Geometry, Reader};
///
/// # #[cfg(not(miri))] { // Miri cannot open files.
/// let path = std::env::temp_dir().join(format!("batch-reader-doc-{}", std::process::id()));
/// std::fs::write(&path, b"hello, file")?;
/// let backend = FileBackend::new(std::fs::File::open(&path)?, Geometry::new(None, 1 << 20, 64)?);
/// let mut reader: Reader<_, _> = Reader::new(backend, vec![0u8; 1 << 16]);
/// let mut buf = [0u8; 4];
/// assert!(reader.read_buf(7, &mut buf).is_ok());
/// assert_eq!(&buf, b"file");
/// std::fs::remove_file(&path)?;
/// # }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct FileBackend<F = File> {
    file: F,
    geometry: Geometry,
}

impl<F: Borrow<File>> FileBackend<F> {
    /// Reads `file`, declaring `geometry` (a file needs no boundary; a
    /// sector boundary keeps reads aligned for direct I/O).
    ///
    /// # Examples
    ///
    /// A borrowed file, read past its end:
    ///
    /// ```
    /// use batch_reader::{backends::FileBackend, Geometry, PartialRead, ReadErrorKind, Reader};
    ///
    /// # #[cfg(not(miri))] { // Miri cannot open files.
    /// let name = format!("batch-reader-doc-new-{}", std::process::id());
    /// let path = std::env::temp_dir().join(name);
    /// std::fs::write(&path, b"0123456789")?;
    /// let file = std::fs::File::open(&path)?;
    /// let backend = FileBackend::new(&file, Geometry::new(Some(512), 1 << 16, 64)?);
    /// let mut reader: Reader<_, _> = Reader::new(backend, [0u8; 0]);
    /// let mut buf = [0u8; 4];
    /// let s = reader.read_buf(8, &mut buf);
    /// assert_eq!(s.first_error(), Some(PartialRead { valid: 2, kind: ReadErrorKind::OutOfBounds }));
    /// assert_eq!(&buf[..2], b"89");
    /// std::fs::remove_file(&path)?;
    /// # }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new(file: F, geometry: Geometry) -> Self {
        Self { file, geometry }
    }

    /// The file back. Reads do not move its position.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::io::Read;
    ///
    /// use batch_reader::{backends::FileBackend, Geometry, Reader};
    ///
    /// # #[cfg(not(miri))] { // Miri cannot open files.
    /// let name = format!("batch-reader-doc-into-inner-{}", std::process::id());
    /// let path = std::env::temp_dir().join(name);
    /// std::fs::write(&path, b"hello, file")?;
    /// let file = std::fs::File::open(&path)?;
    /// let backend = FileBackend::new(file, Geometry::new(None, 1 << 16, 64)?);
    /// let mut reader: Reader<_, _> = Reader::new(backend, [0u8; 0]);
    /// assert_eq!(reader.read_val::<[u8; 4]>(7), Ok(*b"file"));
    /// let (backend, _) = reader.into_parts();
    /// let mut text = String::new();
    /// backend.into_inner().read_to_string(&mut text)?;
    /// assert_eq!(text, "hello, file"); // still at the start
    /// std::fs::remove_file(&path)?;
    /// # }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn into_inner(self) -> F {
        self.file
    }

    fn read_one(&self, addr: u64, buf: &mut [u8]) -> Result<(), PartialRead> {
        let mut done = 0;
        while done < buf.len() {
            let Some(at) = addr.checked_add(done as u64) else {
                return Err(PartialRead {
                    valid: done,
                    kind: ReadErrorKind::AddressOverflow,
                });
            };
            match self.file.borrow().read_at(&mut buf[done..], at) {
                Ok(0) => {
                    return Err(PartialRead {
                        valid: done,
                        kind: ReadErrorKind::OutOfBounds,
                    });
                }
                Ok(n) => done += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    return Err(PartialRead {
                        valid: done,
                        kind: kind_of(&e),
                    });
                }
            }
        }
        Ok(())
    }

    /// Reads consecutive bytes from `addr` into `parts` with `preadv`,
    /// continued after short reads.
    #[cfg(target_os = "linux")]
    fn read_parts(&self, addr: u64, parts: &mut [&mut [u8]]) -> Result<(), PartialRead> {
        use std::os::fd::AsRawFd;
        /// iovecs per `preadv` call: Linux's `IOV_MAX`.
        const CHUNK: usize = 1024;
        let fd = self.file.borrow().as_raw_fd();
        let total: usize = parts.iter().map(|p| p.len()).sum();
        let mut done = 0usize;
        // The next byte to fill: `parts[first][skip]`.
        let (mut first, mut skip) = (0usize, 0usize);
        let mut iov: crate::stack::Stack<libc::iovec, CHUNK> = crate::stack::Stack::new();
        while done < total {
            let Some(at) = addr.checked_add(done as u64) else {
                return Err(PartialRead {
                    valid: done,
                    kind: ReadErrorKind::AddressOverflow,
                });
            };
            let Ok(at) = libc::off_t::try_from(at) else {
                return Err(PartialRead {
                    valid: done,
                    kind: ReadErrorKind::OutOfBounds,
                });
            };
            // Filled in place, not returned: a returned table of CHUNK
            // iovecs would be copied (16 KiB) on every call.
            iov.clear();
            iovecs(&mut iov, &mut parts[first..], skip);
            // SAFETY: each iovec describes the unfilled tail of one part, or
            // of several parts that lie back to back in memory, each a live
            // `&mut [u8]` borrowed mutably for this whole function, so the
            // iovecs cover exactly those bytes and no two overlap; `iov.len()`
            // entries, at most CHUNK, are passed. `fd` is the open file we
            // borrow.
            let r = unsafe { libc::preadv(fd, iov.as_ptr(), iov.len() as libc::c_int, at) };
            if r < 0 {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(PartialRead {
                    valid: done,
                    kind: kind_of(&e),
                });
            }
            if r == 0 {
                return Err(PartialRead {
                    valid: done,
                    kind: ReadErrorKind::OutOfBounds,
                });
            }
            done += r as usize;
            (first, skip) = advance(parts, first, skip, r as usize);
        }
        Ok(())
    }
}

/// Pushes onto `iov` (empty) the iovecs of `parts` from byte `skip` of
/// the first, at most `M`: parts that follow each other in memory (one
/// buffer cut into ops) share one iovec, so that the kernel copies once
/// instead of once per part.
#[cfg(target_os = "linux")]
fn iovecs<const M: usize>(
    iov: &mut crate::stack::Stack<libc::iovec, M>,
    parts: &mut [&mut [u8]],
    skip: usize,
) {
    for (k, part) in parts.iter_mut().take(M).enumerate() {
        let tail = &mut part[if k == 0 { skip } else { 0 }..];
        let (base, len) = (tail.as_mut_ptr(), tail.len());
        match iov.last_mut() {
            Some(last) if (last.iov_base as usize).wrapping_add(last.iov_len) == base as usize => {
                last.iov_len += len;
            }
            _ => {
                let _ = iov.push(libc::iovec {
                    iov_base: base.cast(),
                    iov_len: len,
                });
            }
        }
    }
}

/// The next byte to fill, `parts[first][skip]`, after `left` more bytes
/// were read into `parts`, past any empty parts so that the next call
/// starts at a real byte.
#[cfg(target_os = "linux")]
fn advance(
    parts: &[&mut [u8]],
    mut first: usize,
    mut skip: usize,
    mut left: usize,
) -> (usize, usize) {
    while left > 0 && first < parts.len() {
        let rest = parts[first].len() - skip;
        if left >= rest {
            left -= rest;
            first += 1;
            skip = 0;
        } else {
            skip += left;
            left = 0;
        }
    }
    while first < parts.len() && parts[first].len() == skip {
        first += 1;
        skip = 0;
    }
    (first, skip)
}

/// The [`ReadErrorKind`] of an I/O error.
pub(crate) fn kind_of(e: &io::Error) -> ReadErrorKind {
    match e.kind() {
        io::ErrorKind::PermissionDenied => ReadErrorKind::PermissionDenied,
        io::ErrorKind::TimedOut => ReadErrorKind::TimedOut,
        io::ErrorKind::UnexpectedEof => ReadErrorKind::OutOfBounds,
        io::ErrorKind::InvalidInput => ReadErrorKind::OutOfBounds,
        _ => ReadErrorKind::Io,
    }
}

impl<F: Borrow<File>> ReadAt for FileBackend<F> {
    #[inline]
    fn geometry(&self) -> Geometry {
        self.geometry
    }

    fn read_at(&mut self, addr: u64, buf: &mut [u8]) -> Result<(), PartialRead> {
        self.read_one(addr, buf)
    }

    #[cfg(target_os = "linux")]
    fn scatters(&self) -> bool {
        true
    }

    #[cfg(target_os = "linux")]
    fn read_parts_at(&mut self, addr: u64, parts: &mut [&mut [u8]]) -> Result<(), PartialRead> {
        self.read_parts(addr, parts)
    }
}
