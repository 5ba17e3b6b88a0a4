//! [`FileBackend`]: positioned reads on a file.

use core::borrow::Borrow;
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

use crate::{Geometry, ReadBackend, ReadErrorKind, ReadOp, Report};

/// Reads a file (owned, `File`, or borrowed, `&File`) with `read_at`: no
/// seeking, no shared file position, so several backends may share a file.
///
/// Each op is one `read_at` loop (continued after short reads and
/// interruptions). Reading past the end of the file fails with
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
    pub fn new(file: F, geometry: Geometry) -> Self {
        Self { file, geometry }
    }

    /// The file back.
    pub fn into_inner(self) -> F {
        self.file
    }

    fn read_one(&self, addr: u64, buf: &mut [u8]) -> (usize, Option<ReadErrorKind>) {
        let mut done = 0;
        while done < buf.len() {
            let Some(at) = addr.checked_add(done as u64) else {
                return (done, Some(ReadErrorKind::AddressOverflow));
            };
            match self.file.borrow().read_at(&mut buf[done..], at) {
                Ok(0) => return (done, Some(ReadErrorKind::OutOfBounds)),
                Ok(n) => done += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return (done, Some(kind_of(&e))),
            }
        }
        (done, None)
    }
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

impl<F: Borrow<File>> ReadBackend for FileBackend<F> {
    #[inline]
    fn geometry(&self) -> Geometry {
        self.geometry
    }

    fn read_batch<R: FnMut(Report)>(&mut self, ops: &mut [ReadOp<'_>], mut report: R) -> usize {
        let n = ops.len().min(self.geometry.max_ops());
        for op in &mut ops[..n] {
            let (valid, error) = self.read_one(op.addr, op.buf);
            report(Report {
                tag: op.tag,
                valid,
                error,
            });
        }
        n
    }
}
