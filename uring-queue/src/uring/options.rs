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
///
/// The spin budget adapts between `min_spin` and `spin`; where each side
/// has a core of its own and latency matters more than CPU time, fix it at
/// the ceiling; where both sides share one CPU and nothing else runs there,
/// let them yield to each other:
///
/// ```
/// # #[cfg(feature = "alloc")] {
/// use uring_queue::HeapRing;
/// use uring_queue::uring::{Client, Link, Options, Server, Spin};
///
/// let link = Link::new();
/// let (sq_tx, sq_rx) = HeapRing::new(4).unwrap();
/// let (cq_tx, cq_rx) = HeapRing::new(4).unwrap();
/// let mut client = Client::<4, _>::from_rings(sq_tx, cq_rx, &link, Spin);
/// let mut server = Server::from_rings(sq_rx, cq_tx, &link, Spin);
/// let defaults = Options::default();
/// assert_eq!((defaults.spin, defaults.min_spin, defaults.yield_every), (4096, 1024, 0));
///
/// let dedicated = Options { min_spin: defaults.spin, ..defaults };
/// client.set_options(dedicated);
/// let one_cpu = Options { min_spin: 64, yield_every: 64, ..defaults };
/// server.set_options(one_cpu);
/// assert_eq!(client.options().min_spin, 4096);
/// assert_eq!(server.options().yield_every, 64);
/// # }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    /// Checks of the inbound ring before arming the wake flag and parking,
    /// at most. Default: 4096.
    ///
    /// The number a wait actually makes adapts between
    /// [`min_spin`](Self::min_spin) and this: a spin that ends in a park
    /// halves it, and it doubles again when spinning pays (the entry comes
    /// in the second half of the spin, or right after it gave up). With a
    /// CPU each, the peer answers while we spin and the budget stays high;
    /// on a busy machine, where the peer may wait for a CPU that our spin
    /// keeps busy, it falls to `min_spin` and the side parks early, which
    /// also lets the scheduler run the peer at once when it is woken.
    ///
    /// A reactor-driven side (the `tokio` feature) makes its checks a few
    /// at a time, one turn per poll, and yields to the runtime between
    /// turns, so that its spin never holds the runtime's worker from a peer
    /// task on the same runtime.
    pub spin: u32,
    /// The least the adaptive spin budget falls to (see
    /// [`spin`](Self::spin)). Default: 1024, enough that a side with a
    /// core of its own keeps catching replies that take a few microseconds
    /// (a 64 KiB body checked and copied) without a system call each.
    /// Lower it (64, with `yield_every`) when both sides may share one CPU:
    /// there the peer answers only once this side parks or yields. Set it
    /// to `spin` for a fixed budget: when the peer's CPU is known to be its
    /// own (pinned cores, a real-time setup) and the spin should never
    /// shrink.
    pub min_spin: u32,
    /// With `std`: while spinning, give the CPU to another thread
    /// (`yield_now`) after every this many checks; 0 never yields.
    /// Default: 0.
    ///
    /// A yield helps only when the thread it lets run is the peer, sharing
    /// this CPU: set it (64 is a good start) when both sides are pinned to
    /// one CPU with nothing else to run there. Beside any other busy thread
    /// it hurts: the scheduler may hand that thread the rest of its time
    /// slice, milliseconds, before the waiter runs again (on a 2-core
    /// machine with two CPU-bound threads beside a pinned pair, a yield
    /// every 64 checks made the median 4 B round trip milliseconds long;
    /// docs/uring-queue.md, "On a busy machine"). Without yields, a peer on
    /// the same CPU still gets it: the adaptive spin (see
    /// [`spin`](Self::spin)) falls to `min_spin` and the side parks.
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

impl Default for Options {
    fn default() -> Self {
        Self {
            spin: 1 << 12,
            min_spin: 1024,
            yield_every: 0,
            park_timeout: Duration::from_millis(10),
            stale_after: None,
        }
    }
}
