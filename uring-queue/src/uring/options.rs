//! How long a side spins and parks, and when a silent peer counts as gone.

#[cfg(doc)]
use super::Notifier;
use core::time::Duration;

/// How long a side spins and parks, and when a silent peer counts as gone.
///
/// # Examples
///
/// ```
/// use core::time::Duration;
/// use uring_queue::uring::Options;
///
/// let o = Options { stale_after: Some(100), ..Options::default() };
/// assert_eq!(o.park_timeout, Duration::from_millis(10));
/// assert_eq!(o.stale_after, Some(100));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    /// Checks of the inbound ring before arming the wake flag and parking.
    /// Default: 4096.
    pub spin: u32,
    /// With `std`: while spinning, give the CPU to another thread
    /// (`yield_now`) after every this many checks; 0 never yields.
    ///
    /// Default: 64 when this process may run on one CPU only
    /// (`available_parallelism` is 1: pinned, or a cgroup quota of one CPU),
    /// else 0. A pinned side cannot tell whether its peer is pinned to the
    /// same CPU, where a plain spin would keep the peer from answering until
    /// the scheduler preempts it; with a CPU of its own the peer answers
    /// within the first checks, and a yield with nothing else to run
    /// returns at once.
    pub yield_every: u32,
    /// Longest single park; the liveness checks run after each.
    pub park_timeout: Duration,
    /// The peer is gone once its heartbeat word has not moved for this many
    /// consecutive empty park rounds. `None`: heartbeats are not watched
    /// (close flags, epochs and the [`Notifier`]'s process view still are).
    /// A side beats once per park round and once per request it submits
    /// (client) or receives (server), so choose more rounds than the
    /// longest request takes to handle.
    pub stale_after: Option<u32>,
}

/// How often a spinning side yields by default: only when this process
/// may run on one CPU only, where its peer may need that very CPU.
fn default_yield_every() -> u32 {
    if crate::loom::thread::on_one_cpu() {
        64
    } else {
        0
    }
}

impl Default for Options {
    fn default() -> Self {
        Self {
            spin: 1 << 12,
            yield_every: default_yield_every(),
            park_timeout: Duration::from_millis(10),
            stale_after: None,
        }
    }
}
