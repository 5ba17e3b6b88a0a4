//! [`CoalescePolicy`]: when neighbouring fragments merge into one backend read.

/// When the reader merges neighbouring fragments into one backend read.
///
/// Two fragments, next to each other in submission order, merge when the
/// second starts at or after the end of the first, at most `max_gap` bytes
/// later. A merged read never exceeds the backend's `max_transfer` or the free
/// scratch space (unless, with gap 0, the backend
/// [scatters](crate::ReadBackend::scatters) it straight into the members'
/// buffers), and never crosses a boundary. The gap bytes are read and
/// thrown away (they count towards
/// [`Counters::bytes_read`](crate::Counters::bytes_read)).
///
/// The default merges exactly adjacent fragments (gap 0).
///
/// # Examples
///
/// ```
/// use batch_reader::CoalescePolicy;
///
/// assert_eq!(CoalescePolicy::default(), CoalescePolicy::with_gap(0));
/// assert!(!CoalescePolicy::disabled().enabled());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CoalescePolicy {
    max_gap: Option<u64>,
}

impl CoalescePolicy {
    /// Merge fragments at most `max_gap` bytes apart.
    ///
    /// # Examples
    ///
    /// Two ops 4 bytes apart become one backend read of 12 bytes; the gap
    /// bytes are read and thrown away.
    ///
    /// ```
    /// use batch_reader::{backends::MemoryBackend, CoalescePolicy, Geometry, ReadOp, Reader};
    ///
    /// let mem: Vec<u8> = (0..16).collect();
    /// let backend = MemoryBackend::new(&mem, Geometry::new(None, 16, 8)?);
    /// let mut reader: Reader<_, _> = Reader::new(backend, [0u8; 16]);
    /// reader.set_policy(CoalescePolicy::with_gap(4));
    /// let (mut a, mut b) = ([0u8; 4], [0u8; 4]);
    /// reader.read_many(&mut [ReadOp::new(0, &mut a, 0), ReadOp::new(8, &mut b, 1)], |_| {});
    /// assert_eq!((a, b), ([0, 1, 2, 3], [8, 9, 10, 11]));
    /// let c = reader.counters();
    /// assert_eq!((c.backend_ops, c.merged_reads, c.merged_ops), (1, 1, 2));
    /// assert_eq!((c.bytes_requested, c.bytes_read), (8, 12));
    /// # Ok::<(), batch_reader::GeometryError>(())
    /// ```
    pub const fn with_gap(max_gap: u64) -> Self {
        Self {
            max_gap: Some(max_gap),
        }
    }

    /// Never merge.
    ///
    /// # Examples
    ///
    /// Two adjacent ops, which the default policy merges, are read
    /// separately:
    ///
    /// ```
    /// use batch_reader::{backends::MemoryBackend, CoalescePolicy, Geometry, ReadOp, Reader};
    ///
    /// let mem = [0u8; 16];
    /// let backend = MemoryBackend::new(&mem, Geometry::new(None, 16, 8)?);
    /// let mut reader: Reader<_, _> = Reader::new(backend, [0u8; 16]);
    /// reader.set_policy(CoalescePolicy::disabled());
    /// let (mut a, mut b) = ([0u8; 4], [0u8; 4]);
    /// reader.read_many(&mut [ReadOp::new(0, &mut a, 0), ReadOp::new(4, &mut b, 1)], |_| {});
    /// let c = reader.counters();
    /// assert_eq!((c.backend_calls, c.backend_ops, c.merged_reads), (1, 2, 0));
    /// # Ok::<(), batch_reader::GeometryError>(())
    /// ```
    pub const fn disabled() -> Self {
        Self { max_gap: None }
    }

    /// Whether merging is on.
    ///
    /// # Examples
    ///
    /// ```
    /// use batch_reader::CoalescePolicy;
    ///
    /// assert!(CoalescePolicy::default().enabled());
    /// assert!(CoalescePolicy::with_gap(64).enabled());
    /// assert!(!CoalescePolicy::disabled().enabled());
    /// ```
    pub const fn enabled(&self) -> bool {
        self.max_gap.is_some()
    }

    /// The largest gap bridged, if merging is on.
    ///
    /// # Examples
    ///
    /// ```
    /// use batch_reader::CoalescePolicy;
    ///
    /// assert_eq!(CoalescePolicy::default().max_gap(), Some(0));
    /// assert_eq!(CoalescePolicy::with_gap(64).max_gap(), Some(64));
    /// assert_eq!(CoalescePolicy::disabled().max_gap(), None);
    /// ```
    pub const fn max_gap(&self) -> Option<u64> {
        self.max_gap
    }
}

impl Default for CoalescePolicy {
    fn default() -> Self {
        Self::with_gap(0)
    }
}
