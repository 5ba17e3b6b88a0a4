//! [`Counters`]: what a reader did, exactly.

/// Running totals of a [`Reader`](crate::Reader), exact so that tests and docs
/// can state them.
///
/// # Examples
///
/// ```
/// use batch_reader::{backends::MemoryBackend, Geometry, ReadOp, Reader};
///
/// let mem: Vec<u8> = (0..=255).collect();
/// let g = Geometry::new(Some(64), 64, 16)?;
/// let mut r: Reader<_, _> = Reader::new(MemoryBackend::new(&mem, g), [0u8; 64]);
/// let (mut a, mut b) = ([0u8; 4], [0u8; 4]);
/// let mut ops = [ReadOp::new(8, &mut a, 0), ReadOp::new(12, &mut b, 1)];
/// r.read_many(&mut ops, |c| assert!(c.is_ok()));
/// let c = r.counters();
/// assert_eq!((c.backend_calls, c.ops, c.backend_ops, c.merged_ops), (1, 2, 1, 2));
/// assert_eq!(c.read_amplification_per_mille(), 1000);
/// # Ok::<(), batch_reader::GeometryError>(())
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Counters {
    /// Calls to the backend's `read_batch`.
    pub backend_calls: u64,
    /// Ops taken from the caller.
    pub ops: u64,
    /// Fragments the ops were split into (an op within one boundary unit and
    /// within `max_transfer` is one fragment; empty ops and ops whose address
    /// overflows are not counted).
    pub fragments: u64,
    /// Ops the backend accepted, merged or not, retries included.
    pub backend_ops: u64,
    /// Backend ops that carried two or more fragments.
    pub merged_reads: u64,
    /// Fragments that went into merged reads.
    pub merged_ops: u64,
    /// Fragments retried on their own after the merged read carrying them
    /// failed before reaching their last byte.
    pub retried_ops: u64,
    /// Bytes the caller asked for (sum of op lengths).
    pub bytes_requested: u64,
    /// Bytes the backend was asked to transfer: accepted backend op lengths,
    /// gap bytes and retries included.
    pub bytes_read: u64,
}

impl Counters {
    /// Adds `other` to these totals.
    pub(crate) fn add(&mut self, other: &Counters) {
        self.backend_calls += other.backend_calls;
        self.ops += other.ops;
        self.fragments += other.fragments;
        self.backend_ops += other.backend_ops;
        self.merged_reads += other.merged_reads;
        self.merged_ops += other.merged_ops;
        self.retried_ops += other.retried_ops;
        self.bytes_requested += other.bytes_requested;
        self.bytes_read += other.bytes_read;
    }

    /// `bytes_read / bytes_requested` in thousandths, rounded down: 1000 when
    /// nothing was re-read or read in gaps (and when nothing was requested);
    /// `u64::MAX` if the ratio does not fit. Integer arithmetic only, so that
    /// code without floating point (a kernel) can report it.
    ///
    /// # Examples
    ///
    /// Two 4-byte ops 4 bytes apart, merged across the gap: 12 bytes read for
    /// 8 requested.
    ///
    /// ```
    /// use batch_reader::{backends::MemoryBackend, CoalescePolicy, Geometry, ReadOp, Reader};
    ///
    /// let mem = [0u8; 16];
    /// let backend = MemoryBackend::new(&mem, Geometry::new(None, 16, 8)?);
    /// let mut reader: Reader<_, _> = Reader::new(backend, [0u8; 16]);
    /// reader.set_policy(CoalescePolicy::with_gap(4));
    /// let (mut a, mut b) = ([0u8; 4], [0u8; 4]);
    /// reader.read_many(&mut [ReadOp::new(0, &mut a, 0), ReadOp::new(8, &mut b, 1)], |_| {});
    /// assert_eq!(reader.counters().read_amplification_per_mille(), 1500);
    /// # Ok::<(), batch_reader::GeometryError>(())
    /// ```
    pub fn read_amplification_per_mille(&self) -> u64 {
        if self.bytes_requested == 0 {
            return 1000;
        }
        let ratio = u128::from(self.bytes_read) * 1000 / u128::from(self.bytes_requested);
        u64::try_from(ratio).unwrap_or(u64::MAX)
    }

    /// `bytes_read / bytes_requested` as a float: 1.0 when nothing was
    /// re-read or read in gaps (and when nothing was requested). Only with
    /// `std`, so that no floating point reaches a no_std build; see
    /// [`read_amplification_per_mille`](Self::read_amplification_per_mille).
    ///
    /// # Examples
    ///
    /// ```
    /// use batch_reader::Counters;
    ///
    /// let c = Counters { bytes_requested: 8, bytes_read: 12, ..Counters::default() };
    /// assert_eq!(c.read_amplification(), 1.5);
    /// ```
    #[cfg(feature = "std")]
    pub fn read_amplification(&self) -> f64 {
        if self.bytes_requested == 0 {
            1.0
        } else {
            self.bytes_read as f64 / self.bytes_requested as f64
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Counters;

    fn ratio(bytes_read: u64, bytes_requested: u64) -> u64 {
        let c = Counters {
            bytes_read,
            bytes_requested,
            ..Counters::default()
        };
        c.read_amplification_per_mille()
    }

    #[test]
    fn per_mille_rounds_down_and_saturates() {
        assert_eq!(ratio(0, 0), 1000);
        assert_eq!(ratio(7, 7), 1000);
        assert_eq!(ratio(16, 12), 1333);
        assert_eq!(ratio(u64::MAX, u64::MAX), 1000);
        assert_eq!(ratio(u64::MAX / 1000 + 1, 1), u64::MAX);
        assert_eq!(ratio(u64::MAX / 1000, 1), u64::MAX / 1000 * 1000);
    }
}
