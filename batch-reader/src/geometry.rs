//! [`Geometry`]: the limits a backend declares.

use crate::GeometryError;

/// What a backend can take in one call.
///
/// - `boundary`: reads must not cross a multiple of this (a page, a sector).
///   The reader splits ops there, so that one bad page fails only its own
///   fragment. `None` means the backend has no such boundary.
/// - `max_transfer`: the most bytes one backend op may carry.
/// - `max_ops`: the most ops one call may carry.
///
/// # Examples
///
/// ```
/// use batch_reader::{Geometry, GeometryError};
///
/// let g = Geometry::new(Some(4096), 1 << 20, 64)?;
/// assert_eq!(g.boundary(), Some(4096));
/// assert_eq!(g.bytes_to_boundary(4096 + 4000), 96);
/// assert_eq!(Geometry::new(Some(3000), 4096, 1), Err(GeometryError::BadBoundary(3000)));
/// # Ok::<(), GeometryError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Geometry {
    /// The bits of an address that name its boundary unit, `!(boundary -
    /// 1)` (which is `-boundary`), or 0 for no boundary (no power of two
    /// that fits in a `u64` gives 0): every test against it is then one
    /// `and`, with no case for "no boundary".
    unit: u64,
    max_transfer: usize,
    max_ops: usize,
}

impl Geometry {
    /// A geometry, checked: the boundary must be a power of two, the other two
    /// limits non-zero.
    ///
    /// # Errors
    ///
    /// [`GeometryError::BadBoundary`] if `boundary` is `Some` of zero or of a
    /// number that is not a power of two, [`GeometryError::ZeroTransfer`] if
    /// `max_transfer` is zero, [`GeometryError::ZeroOps`] if `max_ops` is zero.
    ///
    /// # Examples
    ///
    /// ```
    /// use batch_reader::{Geometry, GeometryError};
    ///
    /// // 4 KiB pages, at most 1 MiB per op, 64 ops per call.
    /// let g = Geometry::new(Some(4096), 1 << 20, 64)?;
    /// assert_eq!((g.boundary(), g.max_transfer(), g.max_ops()), (Some(4096), 1 << 20, 64));
    /// assert_eq!(Geometry::new(Some(4095), 1 << 20, 64), Err(GeometryError::BadBoundary(4095)));
    /// assert_eq!(Geometry::new(None, 1 << 20, 0), Err(GeometryError::ZeroOps));
    /// # Ok::<(), GeometryError>(())
    /// ```
    pub const fn new(
        boundary: Option<u64>,
        max_transfer: usize,
        max_ops: usize,
    ) -> Result<Self, GeometryError> {
        let unit = match boundary {
            Some(b) if b.is_power_of_two() => !(b - 1),
            Some(b) => return Err(GeometryError::BadBoundary(b)),
            None => 0,
        };
        if max_transfer == 0 {
            return Err(GeometryError::ZeroTransfer);
        }
        if max_ops == 0 {
            return Err(GeometryError::ZeroOps);
        }
        Ok(Self {
            unit,
            max_transfer,
            max_ops,
        })
    }

    /// The split boundary, if any.
    ///
    /// # Examples
    ///
    /// ```
    /// use batch_reader::Geometry;
    ///
    /// assert_eq!(Geometry::new(Some(512), 4096, 8)?.boundary(), Some(512));
    /// assert_eq!(Geometry::new(None, 4096, 8)?.boundary(), None);
    /// # Ok::<(), batch_reader::GeometryError>(())
    /// ```
    #[inline]
    pub const fn boundary(&self) -> Option<u64> {
        match self.unit {
            0 => None,
            unit => Some(unit.wrapping_neg()),
        }
    }

    /// The most bytes one backend op may carry.
    ///
    /// # Examples
    ///
    /// ```
    /// use batch_reader::Geometry;
    ///
    /// let g = Geometry::new(None, 128, 8)?;
    /// assert_eq!(g.max_transfer(), 128);
    /// assert_eq!(g.fragment_len(0, 1000), 128);
    /// # Ok::<(), batch_reader::GeometryError>(())
    /// ```
    #[inline]
    pub const fn max_transfer(&self) -> usize {
        self.max_transfer
    }

    /// The most ops one backend call may carry.
    ///
    /// # Examples
    ///
    /// ```
    /// use batch_reader::Geometry;
    ///
    /// assert_eq!(Geometry::new(None, 128, 8)?.max_ops(), 8);
    /// # Ok::<(), batch_reader::GeometryError>(())
    /// ```
    #[inline]
    pub const fn max_ops(&self) -> usize {
        self.max_ops
    }

    /// The bits of an address that name its boundary unit: `!(boundary -
    /// 1)`, or 0 without a boundary, so that two addresses lie in one unit
    /// exactly when they agree on these bits.
    #[inline]
    pub(crate) const fn unit_mask(&self) -> u64 {
        self.unit
    }

    /// How many bytes from `addr` up to the next boundary (`u64::MAX` when
    /// there is no boundary).
    ///
    /// # Examples
    ///
    /// ```
    /// use batch_reader::Geometry;
    ///
    /// let g = Geometry::new(Some(4096), 1 << 20, 64)?;
    /// assert_eq!(g.bytes_to_boundary(4095), 1);
    /// assert_eq!(g.bytes_to_boundary(4096), 4096); // on a boundary: a whole unit
    /// assert_eq!(Geometry::new(None, 1 << 20, 64)?.bytes_to_boundary(4095), u64::MAX);
    /// # Ok::<(), batch_reader::GeometryError>(())
    /// ```
    #[inline]
    pub const fn bytes_to_boundary(&self, addr: u64) -> u64 {
        match self.unit {
            0 => u64::MAX,
            unit => (!unit - (addr & !unit)) + 1,
        }
    }

    /// Whether `[start, end)` (non-empty, `end > start`) stays within one
    /// boundary unit.
    ///
    /// # Examples
    ///
    /// ```
    /// use batch_reader::Geometry;
    ///
    /// let g = Geometry::new(Some(4096), 1 << 20, 64)?;
    /// assert!(g.same_unit(4090, 4096)); // the last byte is 4095
    /// assert!(!g.same_unit(4090, 4097));
    /// assert!(Geometry::new(None, 1 << 20, 64)?.same_unit(0, 1 << 40));
    /// # Ok::<(), batch_reader::GeometryError>(())
    /// ```
    #[inline]
    pub const fn same_unit(&self, start: u64, end: u64) -> bool {
        let unit = self.unit_mask();
        (start & unit) == (end.wrapping_sub(1) & unit)
    }

    /// The length of the first fragment of a read of `len` bytes at `addr`:
    /// up to the boundary and at most `max_transfer`.
    ///
    /// # Examples
    ///
    /// ```
    /// use batch_reader::Geometry;
    ///
    /// let g = Geometry::new(Some(4096), 1024, 64)?;
    /// assert_eq!(g.fragment_len(4000, 500), 96); // stops at the boundary
    /// assert_eq!(g.fragment_len(4096, 5000), 1024); // at most max_transfer
    /// assert_eq!(g.fragment_len(4096, 10), 10); // short reads are whole
    /// # Ok::<(), batch_reader::GeometryError>(())
    /// ```
    #[inline]
    pub fn fragment_len(&self, addr: u64, len: usize) -> usize {
        let to_boundary = self.bytes_to_boundary(addr);
        let cap = if to_boundary < self.max_transfer as u64 {
            to_boundary as usize
        } else {
            self.max_transfer
        };
        if len < cap { len } else { cap }
    }
}

#[cfg(test)]
mod tests {
    use super::Geometry;

    /// The largest boundary a `u64` holds is not mistaken for none, which
    /// a unit mask of 0 stands for.
    #[test]
    fn the_largest_boundary_is_a_boundary() {
        let top = 1u64 << 63;
        let g = Geometry::new(Some(top), 16, 1).expect("a power of two");
        assert_eq!(g.boundary(), Some(top));
        assert_eq!(g.bytes_to_boundary(0), top);
        assert_eq!(g.bytes_to_boundary(top - 1), 1);
        assert!(g.same_unit(0, top));
        assert!(!g.same_unit(top - 1, top + 1));
        let none = Geometry::new(None, 16, 1).expect("valid");
        assert_eq!(none.boundary(), None);
        assert_eq!(none.bytes_to_boundary(top - 1), u64::MAX);
        assert!(none.same_unit(top - 1, top + 1));
        assert_ne!(g, none);
    }
}
