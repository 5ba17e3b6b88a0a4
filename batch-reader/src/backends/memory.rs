//! [`MemoryBackend`]: a byte slice as a backend.

use crate::{Geometry, PartialRead, ReadAt, ReadErrorKind, ReadOp, Report, read_each_at};

/// Reads from a byte slice mapped at `base`.
///
/// A read copies bytes until its first byte outside the slice, and fails
/// from there with [`OutOfBounds`](ReadErrorKind::OutOfBounds). So a byte
/// reads the same alone or inside any larger read, as the
/// [`ReadBackend`](crate::ReadBackend) contract asks. It reads one op at a
/// time ([`ReadAt`]), and [scatters](crate::ReadBackend::scatters) merged
/// reads straight into the callers' buffers unless
/// [`set_scatter(false)`](MemoryBackend::set_scatter) sends them through the
/// reader's scratch space instead.
///
/// For faults and backpressure, wrap it in a
/// [`Faulty`](crate::backends::Faulty).
///
/// # Examples
///
/// ```
/// use batch_reader::{backends::MemoryBackend, Geometry, ReadBackend, ReadErrorKind, ReadOp, Report};
///
/// let mem = [5u8; 20];
/// let mut b = MemoryBackend::new(&mem, Geometry::new(Some(16), 16, 4)?);
/// let mut buf = [0u8; 8];
/// let mut ops = [ReadOp::new(16, &mut buf, 3)];
/// let mut got = None;
/// b.read_batch(&mut ops, |r| got = Some(r));
/// assert_eq!(got, Some(Report::failed(3, 4, ReadErrorKind::OutOfBounds)));
/// assert_eq!(buf, [5, 5, 5, 5, 0, 0, 0, 0]);
/// # Ok::<(), batch_reader::GeometryError>(())
/// ```
#[derive(Debug, Clone, Copy)]
pub struct MemoryBackend<'m> {
    mem: &'m [u8],
    base: u64,
    geometry: Geometry,
    scatter: bool,
}

impl<'m> MemoryBackend<'m> {
    /// `mem` mapped at address 0, declaring `geometry`.
    ///
    /// # Examples
    ///
    /// ```
    /// use batch_reader::{backends::MemoryBackend, Geometry, ReadErrorKind, Reader};
    ///
    /// let mem = [1u8, 2, 3, 4];
    /// let backend = MemoryBackend::new(&mem, Geometry::new(None, 16, 4)?);
    /// let mut reader: Reader<_, _> = Reader::new(backend, [0u8; 0]);
    /// assert_eq!(reader.read_val::<u8>(2), Ok(3));
    /// assert_eq!(reader.read_val::<u8>(4), Err(ReadErrorKind::OutOfBounds));
    /// # Ok::<(), batch_reader::GeometryError>(())
    /// ```
    pub const fn new(mem: &'m [u8], geometry: Geometry) -> Self {
        Self::with_base(mem, 0, geometry)
    }

    /// `mem` mapped at address `base`, declaring `geometry`.
    ///
    /// # Examples
    ///
    /// ```
    /// use batch_reader::{backends::MemoryBackend, Geometry, ReadErrorKind, Reader};
    ///
    /// let mem = [1u8, 2, 3, 4];
    /// let backend = MemoryBackend::with_base(&mem, 0x1000, Geometry::new(None, 16, 4)?);
    /// let mut reader: Reader<_, _> = Reader::new(backend, [0u8; 0]);
    /// assert_eq!(reader.read_val::<u8>(0x1002), Ok(3));
    /// assert_eq!(reader.read_val::<u8>(2), Err(ReadErrorKind::OutOfBounds));
    /// # Ok::<(), batch_reader::GeometryError>(())
    /// ```
    pub const fn with_base(mem: &'m [u8], base: u64, geometry: Geometry) -> Self {
        Self {
            mem,
            base,
            geometry,
            scatter: true,
        }
    }

    /// Whether merged reads are scattered straight into the callers'
    /// buffers (the default) or read through the reader's scratch space.
    ///
    /// # Examples
    ///
    /// Without scattering, adjacent ops merge only as far as the reader's
    /// scratch space allows; with none, they do not merge at all.
    ///
    /// ```
    /// use batch_reader::{backends::MemoryBackend, Geometry, ReadOp, Reader};
    ///
    /// let mem = [1u8; 16];
    /// let mut backend = MemoryBackend::new(&mem, Geometry::new(None, 16, 8)?);
    /// backend.set_scatter(false);
    /// let mut reader: Reader<_, _> = Reader::new(backend, [0u8; 0]);
    /// let (mut a, mut b) = ([0u8; 4], [0u8; 4]);
    /// reader.read_many(&mut [ReadOp::new(0, &mut a, 0), ReadOp::new(4, &mut b, 1)], |_| {});
    /// assert_eq!((reader.counters().backend_ops, reader.counters().merged_reads), (2, 0));
    ///
    /// reader.backend_mut().set_scatter(true);
    /// reader.reset_counters();
    /// reader.read_many(&mut [ReadOp::new(0, &mut a, 0), ReadOp::new(4, &mut b, 1)], |_| {});
    /// assert_eq!((reader.counters().backend_ops, reader.counters().merged_reads), (1, 1));
    /// # Ok::<(), batch_reader::GeometryError>(())
    /// ```
    pub fn set_scatter(&mut self, scatter: bool) {
        self.scatter = scatter;
    }

    /// The bytes of `mem` from `addr` on, if `addr` lies in it (empty if
    /// it is its end).
    #[inline]
    fn from(&self, addr: u64) -> Option<&'m [u8]> {
        // `addr < base` wraps to an offset past any slice.
        let offset = usize::try_from(addr.wrapping_sub(self.base)).ok()?;
        self.mem.get(offset..)
    }

    /// Reads `buf.len()` bytes at `addr` that do not all lie inside `mem`:
    /// as many as do, and then [`OutOfBounds`](ReadErrorKind::OutOfBounds).
    #[inline(never)]
    fn read_limited(&self, addr: u64, buf: &mut [u8]) -> Result<(), PartialRead> {
        let src = self.from(addr).unwrap_or_default();
        let valid = src.len().min(buf.len());
        if let (Some(to), Some(from)) = (buf.get_mut(..valid), src.get(..valid)) {
            to.copy_from_slice(from);
        }
        if valid == buf.len() {
            return Ok(());
        }
        Err(PartialRead {
            valid,
            kind: ReadErrorKind::OutOfBounds,
        })
    }
}

/// The bytes of a read of `len` at `addr` from `mem` mapped at `base`, if
/// the read lies wholly inside `mem`.
#[inline(always)]
fn whole(mem: &[u8], base: u64, addr: u64, len: usize) -> Option<&[u8]> {
    // `addr < base` wraps to an offset past any slice.
    let offset = usize::try_from(addr.wrapping_sub(base)).ok()?;
    mem.get(offset..)?.get(..len)
}

/// `dst.copy_from_slice(src)`, without a call into `memcpy` for the short
/// reads (a field, a pointer) that make up most small-op batches.
#[inline(always)]
fn copy(dst: &mut [u8], src: &[u8]) {
    let n = dst.len();
    if n != src.len() {
        return;
    }
    if n == 8 {
        // A pointer or a `u64`, the commonest small read: one move.
        write8(dst, 0, read8(src, 0));
    } else if (8..=16).contains(&n) {
        // Two overlapping 8-byte moves cover 8 to 16 bytes.
        let (head, tail) = (read8(src, 0), read8(src, n - 8));
        write8(dst, n - 8, tail);
        write8(dst, 0, head);
    } else if (4..8).contains(&n) {
        let (head, tail) = (read4(src, 0), read4(src, n - 4));
        write4(dst, n - 4, tail);
        write4(dst, 0, head);
    } else {
        dst.copy_from_slice(src);
    }
}

#[inline(always)]
fn read8(s: &[u8], at: usize) -> [u8; 8] {
    s.get(at..at + 8)
        .and_then(|b| b.try_into().ok())
        .unwrap_or_default()
}

#[inline(always)]
fn write8(d: &mut [u8], at: usize, v: [u8; 8]) {
    if let Some(b) = d.get_mut(at..at + 8) {
        b.copy_from_slice(&v);
    }
}

#[inline(always)]
fn read4(s: &[u8], at: usize) -> [u8; 4] {
    s.get(at..at + 4)
        .and_then(|b| b.try_into().ok())
        .unwrap_or_default()
}

#[inline(always)]
fn write4(d: &mut [u8], at: usize, v: [u8; 4]) {
    if let Some(b) = d.get_mut(at..at + 4) {
        b.copy_from_slice(&v);
    }
}

impl ReadAt for MemoryBackend<'_> {
    #[inline]
    fn geometry(&self) -> Geometry {
        self.geometry
    }

    #[inline(always)]
    fn read_at(&mut self, addr: u64, buf: &mut [u8]) -> Result<(), PartialRead> {
        match whole(self.mem, self.base, addr, buf.len()) {
            Some(src) => {
                copy(buf, src);
                Ok(())
            }
            None => self.read_limited(addr, buf),
        }
    }

    #[inline]
    fn scatters(&self) -> bool {
        self.scatter
    }

    #[inline(always)]
    fn read_each<R: FnMut(&ReadOp<'_>, Report)>(&mut self, ops: &mut [ReadOp<'_>], report: R) {
        // Through a copy, so that the slice and the base stay in registers
        // while the callers' buffers are written.
        let mut this = *self;
        read_each_at(&mut this, ops, report);
    }

    fn read_parts_at(&mut self, addr: u64, parts: &mut [&mut [u8]]) -> Result<(), PartialRead> {
        let mut src = self.from(addr).unwrap_or_default();
        let mut valid = 0usize;
        for part in parts.iter_mut() {
            let k = src.len().min(part.len());
            if let (Some(to), Some((from, rest))) = (part.get_mut(..k), src.split_at_checked(k)) {
                to.copy_from_slice(from);
                src = rest;
            }
            valid += k;
            if k < part.len() {
                return Err(PartialRead {
                    valid,
                    kind: ReadErrorKind::OutOfBounds,
                });
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    extern crate alloc;

    use super::*;
    use crate::{ReadBackend, ReadOp, Report};

    fn geometry() -> Geometry {
        match Geometry::new(Some(16), 16, 4) {
            Ok(g) => g,
            Err(e) => panic!("{e}"),
        }
    }

    fn read(b: &mut MemoryBackend<'_>, addr: u64, len: usize) -> (Report, [u8; 32]) {
        let mut buf = [0u8; 32];
        let mut ops = [ReadOp::new(addr, &mut buf[..len], 1)];
        let mut got = None;
        assert_eq!(b.read_batch(&mut ops, |r| got = Some(r)), 1);
        (got.expect("one report"), buf)
    }

    #[test]
    fn reads_stop_at_the_end() {
        let mem: [u8; 40] = core::array::from_fn(|i| i as u8);
        let mut b = MemoryBackend::with_base(&mem, 100, geometry());
        assert_eq!(read(&mut b, 100, 8).0, Report::ok(1, 8));
        let (r, buf) = read(&mut b, 130, 16);
        assert_eq!(r, Report::failed(1, 10, ReadErrorKind::OutOfBounds));
        assert_eq!(&buf[..11], &[30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 0]);
        assert_eq!(
            read(&mut b, 99, 4).0,
            Report::failed(1, 0, ReadErrorKind::OutOfBounds)
        );
        assert_eq!(
            read(&mut b, u64::MAX - 2, 8).0,
            Report::failed(1, 0, ReadErrorKind::OutOfBounds)
        );
    }

    #[test]
    fn accepts_at_most_max_ops() {
        let mem = [0u8; 64];
        let mut b = MemoryBackend::new(&mem, geometry());
        let mut bufs = [[0u8; 1]; 6];
        let mut ops: alloc::vec::Vec<ReadOp<'_>> = bufs
            .iter_mut()
            .enumerate()
            .map(|(i, buf)| ReadOp::new(i as u64, buf, i))
            .collect();
        let mut seen = 0;
        assert_eq!(b.read_batch(&mut ops, |_| seen += 1), 4);
        assert_eq!(seen, 4);
    }
}
