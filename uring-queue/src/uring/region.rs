//! A request/response connection laid out in one region (for example a
//! memfd shared by two processes).
//!
//! | offset | size | what |
//! |---|---|---|
//! | 0 | 64 | header: magic `"URQU"`, version, state, offsets and sizes of the parts |
//! | 128 | 256 | client lines: wake flag, closed, epoch, pid; heartbeat on a line of its own |
//! | 384 | 256 | server lines: the same words |
//! | 640 | `sq_size` | submission ring (a [`SharedRing`] of [`Sqe`], with its own header) |
//! | next multiple of 128 | `cq_size` | completion ring ([`SharedRing`] of [`Cqe`]) |
//! | next multiple of 4096 | `payload_size` | payload area |

use super::Error;
use super::client::Client;
use super::entry::{Cqe, Sqe};
use super::payload::{Area, BLOCK_ALIGN};
use super::server::Server;
use super::wake::{Link, Notifier};
use crate::loom::sync::atomic::{AtomicU32, Ordering};
use crate::{Region, RegionError, SharedRing};
use core::fmt;
use core::mem::{align_of, size_of};
use core::ptr::NonNull;

/// First word of a connection region: `"URQU"` in memory order.
///
/// # Examples
///
/// ```
/// assert_eq!(&uring_queue::uring::URING_MAGIC.to_ne_bytes(), b"URQU");
/// ```
pub const URING_MAGIC: u32 = u32::from_ne_bytes(*b"URQU");

/// Version of the connection layout.
///
/// # Examples
///
/// ```
/// assert_eq!(uring_queue::uring::URING_VERSION, 2);
/// ```
pub const URING_VERSION: u32 = 2;

/// Alignment a connection region's start needs (a page-aligned mapping has
/// it).
///
/// # Examples
///
/// ```
/// use uring_queue::uring::{Config, Error, Uring, URING_ALIGN};
/// use uring_queue::{Region, RegionError};
///
/// #[repr(C, align(128))]
/// struct Mem([u8; 8192]);
/// let mut mem = Box::new(Mem([0; 8192]));
/// assert_eq!(
///     Uring::init(Region::new(&mut mem.0[8..]), Config::new(4, 4, 0)).unwrap_err(),
///     Error::Region(RegionError::Misaligned { align: URING_ALIGN })
/// );
/// ```
pub const URING_ALIGN: usize = 128;

const STATE_INITIALISING: u32 = 1;
const STATE_READY: u32 = 2;
const LINK_OFFSET: usize = 128;
const RINGS_OFFSET: usize = 640;
const PAYLOAD_ALIGN: usize = 4096;

#[repr(C)]
struct Header {
    magic: AtomicU32,
    version: AtomicU32,
    state: AtomicU32,
    sq_offset: AtomicU32,
    sq_size: AtomicU32,
    cq_offset: AtomicU32,
    cq_size: AtomicU32,
    payload_offset: AtomicU32,
    payload_size: AtomicU32,
    reserved: [AtomicU32; 7],
}

const _: () = assert!(size_of::<Header>() == 64);
const _: () = assert!(size_of::<Link>() == 512 && align_of::<Link>() <= URING_ALIGN);
const _: () = assert!(LINK_OFFSET + size_of::<Link>() == RINGS_OFFSET);

/// The sizes of a connection.
///
/// # Examples
///
/// ```
/// use uring_queue::uring::{Config, Uring};
///
/// let config = Config::new(64, 64, 1 << 20);
/// let size = Uring::required_size(&config).unwrap();
/// assert!(size > 1 << 20);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Config {
    /// Submission ring capacity (a power of two).
    pub sq_entries: usize,
    /// Completion ring capacity (a power of two): the client's credits.
    pub cq_entries: usize,
    /// Bytes of payload area (less than 4 GiB).
    pub payload_bytes: usize,
    /// How many pops the server's submission-ring consumer may leave
    /// unpublished (1 to `sq_entries`, default 1): the largest `K` of
    /// [`Uring::into_deferred_server`].
    pub sq_release_every: usize,
    /// How many pops the client's completion-ring consumer may leave
    /// unpublished (1 to `cq_entries`, default 1): the largest `K` of
    /// [`Uring::into_deferred_client`].
    pub cq_release_every: usize,
}

impl Config {
    /// A configuration whose consumers publish on every pop.
    ///
    /// # Examples
    ///
    /// ```
    /// let c = uring_queue::uring::Config::new(8, 16, 4096);
    /// assert_eq!((c.sq_entries, c.cq_entries, c.payload_bytes), (8, 16, 4096));
    /// assert_eq!((c.sq_release_every, c.cq_release_every), (1, 1));
    /// ```
    pub const fn new(sq_entries: usize, cq_entries: usize, payload_bytes: usize) -> Self {
        Self {
            sq_entries,
            cq_entries,
            payload_bytes,
            sq_release_every: 1,
            cq_release_every: 1,
        }
    }

    /// The same configuration with the rings' release intervals: the
    /// server's consumer of the submission ring may publish its head only
    /// every `sq` pops, the client's consumer of the completion ring every
    /// `cq` pops (see [`Consumer`](crate::Consumer), "Release modes").
    /// [`Uring::init`] records them in the rings' headers; a side then takes
    /// its role with [`Uring::into_deferred_server`] or
    /// [`Uring::into_deferred_client`]. Credits stay exact: each side
    /// publishes its inbound ring before every push to its outbound ring
    /// and before it parks.
    ///
    /// Each interval must lie in `1..=` its ring's capacity, or
    /// [`Uring::init`] and [`Uring::required_size`] refuse the configuration
    /// with [`RegionError::ReleaseInterval`].
    ///
    /// # Examples
    ///
    /// ```
    /// use uring_queue::uring::{Config, Uring};
    /// use uring_queue::RegionError;
    ///
    /// let c = Config::new(8, 16, 4096).with_release_every(4, 16);
    /// assert_eq!((c.sq_release_every, c.cq_release_every), (4, 16));
    /// assert_eq!(
    ///     Uring::required_size(&Config::new(8, 16, 0).with_release_every(9, 1)),
    ///     Err(RegionError::ReleaseInterval { found: 9, max: 8 })
    /// );
    /// ```
    #[must_use]
    pub const fn with_release_every(mut self, sq: usize, cq: usize) -> Self {
        self.sq_release_every = sq;
        self.cq_release_every = cq;
        self
    }
}

/// Where the parts are, as offsets from the region's start.
#[derive(Debug, Clone, Copy)]
struct Layout {
    sq: (usize, usize),
    cq: (usize, usize),
    payload: (usize, usize),
}

impl Layout {
    fn canonical(config: &Config) -> Result<Self, RegionError> {
        let sq_size = SharedRing::<Sqe>::required_size(config.sq_entries)?;
        let cq_size = SharedRing::<Cqe>::required_size(config.cq_entries)?;
        for (found, max) in [
            (config.sq_release_every, config.sq_entries),
            (config.cq_release_every, config.cq_entries),
        ] {
            if found == 0 || found > max {
                return Err(RegionError::ReleaseInterval { found, max });
            }
        }
        let cq_offset = (RINGS_OFFSET + sq_size).next_multiple_of(128);
        let payload_offset = (cq_offset + cq_size).next_multiple_of(PAYLOAD_ALIGN);
        if u32::try_from(config.payload_bytes).is_err() || u32::try_from(payload_offset).is_err() {
            return Err(RegionError::CapacityTooLarge {
                capacity: config.payload_bytes,
            });
        }
        Ok(Self {
            sq: (RINGS_OFFSET, sq_size),
            cq: (cq_offset, cq_size),
            payload: (payload_offset, config.payload_bytes),
        })
    }

    fn total(&self) -> usize {
        self.payload.0 + self.payload.1
    }

    /// Checks a layout read from a header: the parts in order, aligned, not
    /// overlapping, inside `len` bytes.
    fn validate(self, len: usize) -> Result<Self, RegionError> {
        let end =
            |(off, size): (usize, usize)| off.checked_add(size).ok_or(RegionError::BadOffsets);
        let ordered = self.sq.0 >= RINGS_OFFSET
            && self.cq.0 >= end(self.sq)?
            && self.payload.0 >= end(self.cq)?
            && self.sq.0.is_multiple_of(128)
            && self.cq.0.is_multiple_of(128)
            && self.payload.0.is_multiple_of(BLOCK_ALIGN)
            && u32::try_from(self.payload.1).is_ok();
        if !ordered {
            return Err(RegionError::BadOffsets);
        }
        let total = end(self.payload)?;
        if total > len {
            return Err(RegionError::TooSmall {
                needed: total,
                actual: len,
            });
        }
        Ok(self)
    }
}

/// A connection laid out in a [`Region`]: the submission ring, the
/// completion ring, the two sides' control words and the payload area.
/// One side [`init`](Self::init)s it, the other [`attach`](Self::attach)es;
/// each then takes its role.
///
/// # Examples
///
/// Both sides in one process (two threads); across processes, the region is
/// a `SharedMemory` (`std`, Linux) and each side builds its own
/// `Uring` (see `examples/echo_client.rs`).
///
/// ```
/// use uring_queue::uring::{Config, Request, Spin, Uring};
/// use uring_queue::Region;
///
/// #[repr(C, align(128))]
/// struct Mem([u8; 16384]);
/// let mut mem = Box::new(Mem([0; 16384]));
/// let uring = Uring::init(Region::new(&mut mem.0), Config::new(4, 4, 4096)).unwrap();
/// assert_eq!(uring.payload_len(), 4096);
/// let (client, mut server) = uring.split::<4, _, _>(Spin, Spin);
/// std::thread::scope(|s| {
///     s.spawn(move || {
///         let inc = server.recv().unwrap();
///         let sum: u32 = server.payload(&inc).unwrap().iter().map(|&b| u32::from(b)).sum();
///         server.response_mut(&inc).unwrap()[..4].copy_from_slice(&sum.to_le_bytes());
///         server.complete(inc, 0, 4).unwrap();
///     });
///     let mut body = client.alloc(3).unwrap();
///     client.bytes_mut(&mut body).unwrap().copy_from_slice(&[1, 2, 3]);
///     let out = client.alloc(4).unwrap();
///     let reply = client.call(Request::new(0).with_payload(body).with_response(out)).unwrap();
///     assert_eq!(client.response(&reply).unwrap(), 6u32.to_le_bytes());
/// });
/// ```
pub struct Uring<'a> {
    link: &'a Link,
    sq: SharedRing<'a, Sqe>,
    cq: SharedRing<'a, Cqe>,
    area: Area<'a>,
}

impl fmt::Debug for Uring<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Uring")
            .field("sq", &self.sq)
            .field("cq", &self.cq)
            .field("payload_len", &self.area.len())
            .finish()
    }
}

impl<'a> Uring<'a> {
    /// Bytes a region needs for `config`.
    ///
    /// # Errors
    ///
    /// The capacity errors of [`RegionError`] (ring sizes not powers of
    /// two, a payload area of 4 GiB or more).
    ///
    /// # Examples
    ///
    /// ```
    /// use uring_queue::uring::{Config, Uring};
    /// use uring_queue::RegionError;
    ///
    /// assert_eq!(Uring::required_size(&Config::new(4, 4, 0)), Ok(4096));
    /// assert_eq!(
    ///     Uring::required_size(&Config::new(3, 4, 0)),
    ///     Err(RegionError::CapacityNotPowerOfTwo { capacity: 3 })
    /// );
    /// ```
    pub fn required_size(config: &Config) -> Result<usize, RegionError> {
        Ok(Layout::canonical(config)?.total())
    }

    /// Lays out a fresh connection in `region`, publishing it as ready last.
    /// Call it before the peer attaches.
    ///
    /// # Errors
    ///
    /// [`Error::Region`]: the region is too small or misaligned, or the
    /// configuration invalid.
    ///
    /// # Examples
    ///
    /// See [`Uring`].
    ///
    /// ```
    /// # let _ = uring_queue::uring::Uring::init;
    /// ```
    pub fn init(region: Region<'a>, config: Config) -> Result<Self, Error> {
        let layout = Layout::canonical(&config)?;
        check_region(&region, layout.total())?;
        let base =
            NonNull::new(region.as_ptr()).ok_or(RegionError::Misaligned { align: URING_ALIGN })?;
        // SAFETY: `check_region` checked size and alignment; the header is
        // atomics only, valid for any bytes, and lives as long as the region.
        let header = unsafe { base.cast::<Header>().as_ref() };
        header.state.store(STATE_INITIALISING, Ordering::Relaxed);
        header.magic.store(URING_MAGIC, Ordering::Relaxed);
        header.version.store(URING_VERSION, Ordering::Relaxed);
        for (word, value) in [
            (&header.sq_offset, layout.sq.0),
            (&header.sq_size, layout.sq.1),
            (&header.cq_offset, layout.cq.0),
            (&header.cq_size, layout.cq.1),
            (&header.payload_offset, layout.payload.0),
            (&header.payload_size, layout.payload.1),
        ] {
            // `canonical` checked the offsets and sizes fit in a `u32`.
            word.store(value as u32, Ordering::Relaxed);
        }
        for word in &header.reserved {
            word.store(0, Ordering::Relaxed);
        }
        let (link, sq, cq, area) = carve(region, base, layout, |sq, cq| {
            Ok((
                SharedRing::init_deferred(sq, config.sq_entries, config.sq_release_every)?,
                SharedRing::init_deferred(cq, config.cq_entries, config.cq_release_every)?,
            ))
        })?;
        link.client.reset();
        link.server.reset();
        // Release: an attacher that loads "ready" with Acquire sees all of it.
        header.state.store(STATE_READY, Ordering::Release);
        Ok(Self { link, sq, cq, area })
    }

    /// Attaches to a connection the peer laid out in `region`, validating
    /// the header against this region.
    ///
    /// # Errors
    ///
    /// [`Error::Region`]: [`RegionError::NotReady`] (worth retrying),
    /// [`RegionError::BadMagic`], [`RegionError::BadVersion`],
    /// [`RegionError::BadOffsets`], [`RegionError::TooSmall`],
    /// [`RegionError::Misaligned`], or the rings' own errors (among them
    /// [`RegionError::ReleaseInterval`] for a release interval recorded
    /// outside `1..=` the ring's capacity).
    ///
    /// # Examples
    ///
    /// ```
    /// use uring_queue::uring::{Config, Error, Uring};
    /// use uring_queue::{Region, RegionError};
    ///
    /// #[repr(C, align(128))]
    /// struct Mem([u8; 8192]);
    /// let mut mem = Box::new(Mem([0; 8192]));
    /// assert_eq!(
    ///     Uring::attach(Region::new(&mut mem.0)).unwrap_err(),
    ///     Error::Region(RegionError::NotReady { state: 0 })
    /// );
    /// Uring::init(Region::new(&mut mem.0), Config::new(4, 8, 1024)).unwrap();
    /// let uring = Uring::attach(Region::new(&mut mem.0)).unwrap();
    /// assert_eq!(uring.payload_len(), 1024);
    /// ```
    pub fn attach(region: Region<'a>) -> Result<Self, Error> {
        check_region(&region, size_of::<Header>())?;
        let base =
            NonNull::new(region.as_ptr()).ok_or(RegionError::Misaligned { align: URING_ALIGN })?;
        // SAFETY: as in `init`.
        let header = unsafe { base.cast::<Header>().as_ref() };
        let state = header.state.load(Ordering::Acquire);
        if state != STATE_READY {
            return Err(RegionError::NotReady { state }.into());
        }
        let magic = header.magic.load(Ordering::Relaxed);
        if magic != URING_MAGIC {
            return Err(RegionError::BadMagic { found: magic }.into());
        }
        let version = header.version.load(Ordering::Relaxed);
        if version != URING_VERSION {
            return Err(RegionError::BadVersion { found: version }.into());
        }
        let word = |w: &AtomicU32| w.load(Ordering::Relaxed) as usize;
        let layout = Layout {
            sq: (word(&header.sq_offset), word(&header.sq_size)),
            cq: (word(&header.cq_offset), word(&header.cq_size)),
            payload: (word(&header.payload_offset), word(&header.payload_size)),
        }
        .validate(region.len())?;
        let (link, sq, cq, area) = carve(region, base, layout, |sq, cq| {
            Ok((SharedRing::attach(sq)?, SharedRing::attach(cq)?))
        })?;
        Ok(Self { link, sq, cq, area })
    }

    /// Bytes of payload area.
    ///
    /// # Examples
    ///
    /// See [`attach`](Self::attach).
    ///
    /// ```
    /// # let _ = uring_queue::uring::Uring::payload_len;
    /// ```
    pub fn payload_len(&self) -> usize {
        self.area.len() as usize
    }

    /// Takes the client role: `N` in-flight slots, `notifier` to park and
    /// wake.
    ///
    /// # Examples
    ///
    /// ```
    /// use uring_queue::uring::{Config, Spin, Uring};
    /// use uring_queue::Region;
    ///
    /// #[repr(C, align(128))]
    /// struct Mem([u8; 8192]);
    /// let mut mem = Box::new(Mem([0; 8192]));
    /// Uring::init(Region::new(&mut mem.0), Config::new(4, 8, 0)).unwrap();
    /// let client = Uring::attach(Region::new(&mut mem.0)).unwrap().into_client::<16, _>(Spin);
    /// // Never more in flight than the completion ring holds.
    /// assert_eq!(client.credits(), 4);
    /// ```
    pub fn into_client<const N: usize, W: Notifier>(self, notifier: W) -> Client<'a, N, W> {
        Client::new(
            self.sq.into_producer(),
            self.cq.into_consumer(),
            self.link,
            self.area,
            notifier,
        )
    }

    /// Takes the server role.
    ///
    /// # Examples
    ///
    /// ```
    /// use uring_queue::uring::{Config, Spin, Uring};
    /// use uring_queue::Region;
    ///
    /// #[repr(C, align(128))]
    /// struct Mem([u8; 8192]);
    /// let mut mem = Box::new(Mem([0; 8192]));
    /// let mut server = Uring::init(Region::new(&mut mem.0), Config::new(4, 4, 0))
    ///     .unwrap()
    ///     .into_server(Spin);
    /// assert_eq!(server.try_recv(), Ok(None));
    /// ```
    pub fn into_server<W: Notifier>(self, notifier: W) -> Server<'a, W> {
        Server::new(
            self.sq.into_consumer(),
            self.cq.into_producer(),
            self.link,
            self.area,
            notifier,
        )
    }

    /// The submission ring's recorded release interval (see
    /// [`Config::with_release_every`]): the largest `K` for
    /// [`into_deferred_server`](Self::into_deferred_server).
    ///
    /// # Examples
    ///
    /// ```
    /// use uring_queue::uring::{Config, Uring};
    /// use uring_queue::Region;
    ///
    /// #[repr(C, align(128))]
    /// struct Mem([u8; 8192]);
    /// let mut mem = Box::new(Mem([0; 8192]));
    /// Uring::init(Region::new(&mut mem.0), Config::new(4, 8, 0).with_release_every(2, 8)).unwrap();
    /// let uring = Uring::attach(Region::new(&mut mem.0)).unwrap();
    /// assert_eq!((uring.sq_release_every(), uring.cq_release_every()), (2, 8));
    /// ```
    pub fn sq_release_every(&self) -> usize {
        self.sq.release_every()
    }

    /// The completion ring's recorded release interval: the largest `K` for
    /// [`into_deferred_client`](Self::into_deferred_client).
    ///
    /// # Examples
    ///
    /// See [`sq_release_every`](Self::sq_release_every).
    ///
    /// ```
    /// # let _ = uring_queue::uring::Uring::cq_release_every;
    /// ```
    pub fn cq_release_every(&self) -> usize {
        self.cq.release_every()
    }

    /// Takes the client role with a deferred-release consumer of the
    /// completion ring: it publishes its head every `K` pops, when it finds
    /// the ring empty, and before every submission and park, so the server
    /// never finds the completion ring fuller than the client's credits say.
    ///
    /// # Errors
    ///
    /// [`Error::Region`] with [`RegionError::ReleaseInterval`] when `K`
    /// exceeds the interval recorded for the completion ring
    /// ([`cq_release_every`](Self::cq_release_every)).
    ///
    /// # Examples
    ///
    /// ```
    /// use uring_queue::uring::{Config, Error, Spin, Uring};
    /// use uring_queue::{Region, RegionError};
    ///
    /// #[repr(C, align(128))]
    /// struct Mem([u8; 8192]);
    /// let mut mem = Box::new(Mem([0; 8192]));
    /// let config = Config::new(4, 8, 0).with_release_every(1, 4);
    /// Uring::init(Region::new(&mut mem.0), config).unwrap();
    /// let uring = Uring::attach(Region::new(&mut mem.0)).unwrap();
    /// assert_eq!(
    ///     uring.into_deferred_client::<4, 8, _>(Spin).unwrap_err(),
    ///     Error::Region(RegionError::ReleaseInterval { found: 8, max: 4 })
    /// );
    /// let uring = Uring::attach(Region::new(&mut mem.0)).unwrap();
    /// let client = uring.into_deferred_client::<4, 4, _>(Spin).unwrap();
    /// assert_eq!(client.credits(), 4);
    /// ```
    pub fn into_deferred_client<const N: usize, const K: usize, W: Notifier>(
        self,
        notifier: W,
    ) -> Result<Client<'a, N, W, K>, Error> {
        let cq = self.cq.into_deferred_consumer::<K>()?;
        Ok(Client::new(
            self.sq.into_producer(),
            cq,
            self.link,
            self.area,
            notifier,
        ))
    }

    /// Takes the server role with a deferred-release consumer of the
    /// submission ring: it publishes its head every `K` pops, when it finds
    /// the ring empty, and before every completion and park, so the client
    /// never finds the submission ring full while it holds a credit.
    ///
    /// # Errors
    ///
    /// [`Error::Region`] with [`RegionError::ReleaseInterval`] when `K`
    /// exceeds the interval recorded for the submission ring
    /// ([`sq_release_every`](Self::sq_release_every)).
    ///
    /// # Examples
    ///
    /// ```
    /// use uring_queue::uring::{Config, Error, Spin, Uring};
    /// use uring_queue::{Region, RegionError};
    ///
    /// #[repr(C, align(128))]
    /// struct Mem([u8; 8192]);
    /// let mut mem = Box::new(Mem([0; 8192]));
    /// let config = Config::new(4, 4, 0).with_release_every(2, 1);
    /// let uring = Uring::init(Region::new(&mut mem.0), config).unwrap();
    /// assert_eq!(
    ///     uring.into_deferred_server::<3, _>(Spin).unwrap_err(),
    ///     Error::Region(RegionError::ReleaseInterval { found: 3, max: 2 })
    /// );
    /// let uring = Uring::attach(Region::new(&mut mem.0)).unwrap();
    /// let mut server = uring.into_deferred_server::<2, _>(Spin).unwrap();
    /// assert_eq!(server.try_recv(), Ok(None));
    /// ```
    pub fn into_deferred_server<const K: usize, W: Notifier>(
        self,
        notifier: W,
    ) -> Result<Server<'a, W, K>, Error> {
        let sq = self.sq.into_deferred_consumer::<K>()?;
        Ok(Server::new(
            sq,
            self.cq.into_producer(),
            self.link,
            self.area,
            notifier,
        ))
    }

    /// Takes both roles, for a connection within one process.
    ///
    /// # Examples
    ///
    /// See [`Uring`].
    ///
    /// ```
    /// # let _ = uring_queue::uring::Uring::split::<1, uring_queue::uring::Spin, uring_queue::uring::Spin>;
    /// ```
    pub fn split<const N: usize, C: Notifier, S: Notifier>(
        self,
        client_notifier: C,
        server_notifier: S,
    ) -> (Client<'a, N, C>, Server<'a, S>) {
        let (sq_tx, sq_rx) = self.sq.split();
        let (cq_tx, cq_rx) = self.cq.split();
        let server = Server::new(sq_rx, cq_tx, self.link, self.area, server_notifier);
        let client = Client::new(sq_tx, cq_rx, self.link, self.area, client_notifier);
        (client, server)
    }
}

fn check_region(region: &Region<'_>, needed: usize) -> Result<(), RegionError> {
    if region.len() < needed {
        return Err(RegionError::TooSmall {
            needed,
            actual: region.len(),
        });
    }
    if !(region.as_ptr() as usize).is_multiple_of(URING_ALIGN) {
        return Err(RegionError::Misaligned { align: URING_ALIGN });
    }
    Ok(())
}

type Parts<'a> = (&'a Link, SharedRing<'a, Sqe>, SharedRing<'a, Cqe>, Area<'a>);

/// Cuts a validated layout's parts out of the region.
fn carve<'a>(
    region: Region<'a>,
    base: NonNull<u8>,
    layout: Layout,
    rings: impl FnOnce(
        Region<'a>,
        Region<'a>,
    ) -> Result<(SharedRing<'a, Sqe>, SharedRing<'a, Cqe>), RegionError>,
) -> Result<Parts<'a>, Error> {
    let (_, rest) = region.split_at(layout.sq.0)?;
    let (sq, rest) = rest.split_at(layout.sq.1)?;
    let (_, rest) = rest.split_at(layout.cq.0 - (layout.sq.0 + layout.sq.1))?;
    let (cq, _) = rest.split_at(layout.cq.1)?;
    let (sq, cq) = rings(sq, cq)?;
    // SAFETY: the layout lies inside the region (validated), the region's
    // start is aligned to `URING_ALIGN` and `LINK_OFFSET` is a multiple of
    // the link's alignment; the link is atomics only, valid for any bytes,
    // for the region's lifetime `'a`.
    let link = unsafe { base.add(LINK_OFFSET).cast::<Link>().as_ref() };
    // SAFETY: the payload part is inside the region and apart from every
    // other part (validated); the region's contract makes its bytes valid
    // for `'a` and reachable only through this connection in this process.
    let area = unsafe { Area::new(base.add(layout.payload.0), layout.payload.1 as u32) };
    Ok((link, sq, cq, area))
}
