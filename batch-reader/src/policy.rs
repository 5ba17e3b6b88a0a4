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
    pub const fn with_gap(max_gap: u64) -> Self {
        Self {
            max_gap: Some(max_gap),
        }
    }

    /// Never merge.
    pub const fn disabled() -> Self {
        Self { max_gap: None }
    }

    /// Whether merging is on.
    pub const fn enabled(&self) -> bool {
        self.max_gap.is_some()
    }

    /// The largest gap bridged, if merging is on.
    pub const fn max_gap(&self) -> Option<u64> {
        self.max_gap
    }
}

impl Default for CoalescePolicy {
    fn default() -> Self {
        Self::with_gap(0)
    }
}
