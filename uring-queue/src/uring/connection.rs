//! A connection laid out in one region (for example a memfd shared by two
//! processes): the [`Uring`] type, which sets the layout up or attaches to
//! it and hands out the two roles.

use super::Error;
use super::client::Client;
use super::entry::{Cqe, Sqe};
use super::kind::NotifierKind;
use super::layout::{Config, Header, LINK_OFFSET, Layout};
use super::link::Link;
use super::payload::Area;
use super::server::Server;
use super::wake::Notifier;
use crate::{Region, RegionError, SharedRing, layout};
use core::fmt;
use core::ptr::NonNull;

/// Alignment a connection region's start needs (a page-aligned mapping,
/// such as a `SharedMemory`, has it).
///
/// # Examples
///
/// Memory of the heap promises no such alignment. `AlignedBuf` (feature
/// `alloc`) has it; by hand, start the region on a boundary inside a larger
/// buffer:
///
/// ```
/// use uring_queue::uring::{Config, Error, URING_ALIGN, Uring};
/// use uring_queue::{Region, RegionError};
///
/// let config = Config::new(4, 4, 0);
/// let len = Uring::required_size(&config).unwrap();
/// let mut buf = vec![0u8; len + URING_ALIGN];
/// let skip = buf.as_ptr().align_offset(URING_ALIGN);
/// assert!(Uring::init(Region::new(&mut buf[skip..skip + len]), config).is_ok());
/// // A byte off the boundary is refused.
/// let off = Region::new(&mut buf[skip + 1..]);
/// assert_eq!(
///     Uring::init(off, config).unwrap_err(),
///     Error::Region(RegionError::Misaligned { align: URING_ALIGN })
/// );
/// ```
pub const URING_ALIGN: usize = 128;

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
/// # #[cfg(feature = "alloc")] {
/// use uring_queue::uring::{Config, Request, Spin, Uring};
/// use uring_queue::AlignedBuf;
///
/// let config = Config::new(4, 4, 4096);
/// let mut mem = AlignedBuf::for_uring(&config).unwrap();
/// let uring = Uring::init(mem.region(), config).unwrap();
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
/// # }
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
    /// [`RegionError::Capacity`] (ring sizes not powers of two, a payload
    /// area of 4 GiB or more) and [`RegionError::ReleaseInterval`].
    ///
    /// # Examples
    ///
    /// ```
    /// use uring_queue::uring::{Config, Uring};
    /// use uring_queue::{CapacityError, RegionError};
    ///
    /// assert_eq!(Uring::required_size(&Config::new(4, 4, 0)), Ok(4096));
    /// assert_eq!(
    ///     Uring::required_size(&Config::new(3, 4, 0)),
    ///     Err(RegionError::Capacity(CapacityError::NotPowerOfTwo { capacity: 3 }))
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
    /// ```
    /// # #[cfg(feature = "alloc")] {
    /// use uring_queue::uring::{Config, Error, Uring};
    /// use uring_queue::{AlignedBuf, Region, RegionError};
    ///
    /// let mut mem = AlignedBuf::zeroed(8192).unwrap();
    /// let config = Config::new(4, 4, 1024);
    /// assert_eq!(Uring::required_size(&config), Ok(5120));
    /// assert_eq!(
    ///     Uring::init(Region::new(&mut mem[..4096]), config).unwrap_err(),
    ///     Error::Region(RegionError::TooSmall { needed: 5120, actual: 4096 })
    /// );
    /// let uring = Uring::init(mem.region(), config).unwrap();
    /// assert_eq!(uring.payload_len(), 1024);
    /// # }
    /// ```
    pub fn init(region: Region<'a>, config: Config) -> Result<Self, Error> {
        let layout = Layout::canonical(&config)?;
        let header = layout::header::<Header>(&region, layout.total(), URING_ALIGN)?;
        layout.write(header);
        let (link, sq, cq, area) = carve(&region, &layout);
        let sq = SharedRing::init_deferred(sq, config.sq_entries, config.sq_release_every)?;
        let cq = SharedRing::init_deferred(cq, config.cq_entries, config.cq_release_every)?;
        link.client.reset();
        link.server.reset();
        header.publish();
        Ok(Self { link, sq, cq, area })
    }

    /// Attaches to a connection the peer laid out in `region`, validating
    /// the header against this region: [`attach_with`](Self::attach_with)
    /// for sides that wait on the wake word ([`NotifierKind::Word`]: a
    /// `Futex`, [`Spin`](super::Spin)).
    ///
    /// # Errors
    ///
    /// [`Error::NotifierMismatch`] for a region laid out for eventfds, and
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
    /// # #[cfg(feature = "alloc")] {
    /// use uring_queue::uring::{Config, Error, Uring};
    /// use uring_queue::{AlignedBuf, RegionError};
    ///
    /// let mut mem = AlignedBuf::zeroed(8192).unwrap();
    /// assert_eq!(
    ///     Uring::attach(mem.region()).unwrap_err(),
    ///     Error::Region(RegionError::NotReady { state: 0 })
    /// );
    /// Uring::init(mem.region(), Config::new(4, 8, 1024)).unwrap();
    /// let uring = Uring::attach(mem.region()).unwrap();
    /// assert_eq!(uring.payload_len(), 1024);
    /// # }
    /// ```
    pub fn attach(region: Region<'a>) -> Result<Self, Error> {
        Self::attach_with(region, NotifierKind::Word)
    }

    /// Attaches to a connection the peer laid out in `region` for sides
    /// that wake through `kind` (see [`Config::with_notifier`]).
    ///
    /// # Errors
    ///
    /// [`Error::NotifierMismatch`] when the region records another kind;
    /// otherwise as [`attach`](Self::attach).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[cfg(feature = "alloc")] {
    /// use uring_queue::uring::{Config, Error, NotifierKind, Uring};
    /// use uring_queue::AlignedBuf;
    ///
    /// let mut mem = AlignedBuf::zeroed(8192).unwrap();
    /// let config = Config::new(4, 4, 0).with_notifier(NotifierKind::EventFd);
    /// Uring::init(mem.region(), config).unwrap();
    /// // A futex side would never be woken by an eventfd side.
    /// assert_eq!(
    ///     Uring::attach(mem.region()).unwrap_err(),
    ///     Error::NotifierMismatch { expected: NotifierKind::Word, found: 1 }
    /// );
    /// assert!(Uring::attach_with(mem.region(), NotifierKind::EventFd).is_ok());
    /// # }
    /// ```
    pub fn attach_with(region: Region<'a>, kind: NotifierKind) -> Result<Self, Error> {
        let header = layout::header::<Header>(&region, 0, URING_ALIGN)?;
        let layout = Layout::read(header, region.len())?;
        if layout.notifier != kind as u32 {
            return Err(Error::NotifierMismatch {
                expected: kind,
                found: layout.notifier,
            });
        }
        let (link, sq, cq, area) = carve(&region, &layout);
        let sq = SharedRing::attach(sq)?;
        let cq = SharedRing::attach(cq)?;
        Ok(Self { link, sq, cq, area })
    }

    /// Bytes of payload area.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[cfg(feature = "alloc")] {
    /// use uring_queue::uring::{Config, Uring};
    /// use uring_queue::AlignedBuf;
    ///
    /// let mut mem = AlignedBuf::zeroed(8192).unwrap();
    /// Uring::init(mem.region(), Config::new(4, 4, 2048)).unwrap();
    /// // The attacher learns the size from the header.
    /// assert_eq!(Uring::attach(mem.region()).unwrap().payload_len(), 2048);
    /// # }
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
    /// # #[cfg(feature = "alloc")] {
    /// use uring_queue::uring::{Config, Spin, Uring};
    /// use uring_queue::AlignedBuf;
    ///
    /// let mut mem = AlignedBuf::zeroed(8192).unwrap();
    /// Uring::init(mem.region(), Config::new(4, 8, 0)).unwrap();
    /// let client = Uring::attach(mem.region()).unwrap().into_client::<16, _>(Spin);
    /// // Never more in flight than the completion ring holds.
    /// assert_eq!(client.credits(), 4);
    /// # }
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
    /// # #[cfg(feature = "alloc")] {
    /// use uring_queue::uring::{Config, Spin, Uring};
    /// use uring_queue::AlignedBuf;
    ///
    /// let mut mem = AlignedBuf::zeroed(8192).unwrap();
    /// let mut server = Uring::init(mem.region(), Config::new(4, 4, 0))
    ///     .unwrap()
    ///     .into_server(Spin);
    /// assert_eq!(server.try_recv(), Ok(None));
    /// # }
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
    /// # #[cfg(feature = "alloc")] {
    /// use uring_queue::uring::{Config, Uring};
    /// use uring_queue::AlignedBuf;
    ///
    /// let mut mem = AlignedBuf::zeroed(8192).unwrap();
    /// Uring::init(mem.region(), Config::new(4, 8, 0).with_release_every(2, 8)).unwrap();
    /// let uring = Uring::attach(mem.region()).unwrap();
    /// assert_eq!((uring.sq_release_every(), uring.cq_release_every()), (2, 8));
    /// # }
    /// ```
    pub fn sq_release_every(&self) -> usize {
        self.sq.release_every()
    }

    /// The completion ring's recorded release interval: the largest `K` for
    /// [`into_deferred_client`](Self::into_deferred_client).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[cfg(feature = "alloc")] {
    /// use uring_queue::uring::{Config, Uring};
    /// use uring_queue::AlignedBuf;
    ///
    /// let mut mem = AlignedBuf::zeroed(8192).unwrap();
    /// let uring = Uring::init(mem.region(), Config::new(4, 8, 0)).unwrap();
    /// // Publish on every pop unless the config said otherwise.
    /// assert_eq!(uring.cq_release_every(), 1);
    /// # }
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
    /// # #[cfg(feature = "alloc")] {
    /// use uring_queue::uring::{Config, Error, Spin, Uring};
    /// use uring_queue::{AlignedBuf, RegionError};
    ///
    /// let mut mem = AlignedBuf::zeroed(8192).unwrap();
    /// let config = Config::new(4, 8, 0).with_release_every(1, 4);
    /// Uring::init(mem.region(), config).unwrap();
    /// let uring = Uring::attach(mem.region()).unwrap();
    /// assert_eq!(
    ///     uring.into_deferred_client::<4, 8, _>(Spin).unwrap_err(),
    ///     Error::Region(RegionError::ReleaseInterval { found: 8, max: 4 })
    /// );
    /// let uring = Uring::attach(mem.region()).unwrap();
    /// let client = uring.into_deferred_client::<4, 4, _>(Spin).unwrap();
    /// assert_eq!(client.credits(), 4);
    /// # }
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
    /// # #[cfg(feature = "alloc")] {
    /// use uring_queue::uring::{Config, Error, Spin, Uring};
    /// use uring_queue::{AlignedBuf, RegionError};
    ///
    /// let mut mem = AlignedBuf::zeroed(8192).unwrap();
    /// let config = Config::new(4, 4, 0).with_release_every(2, 1);
    /// let uring = Uring::init(mem.region(), config).unwrap();
    /// assert_eq!(
    ///     uring.into_deferred_server::<3, _>(Spin).unwrap_err(),
    ///     Error::Region(RegionError::ReleaseInterval { found: 3, max: 2 })
    /// );
    /// let uring = Uring::attach(mem.region()).unwrap();
    /// let mut server = uring.into_deferred_server::<2, _>(Spin).unwrap();
    /// assert_eq!(server.try_recv(), Ok(None));
    /// # }
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
    /// ```
    /// # #[cfg(feature = "alloc")] {
    /// use uring_queue::uring::{Config, Request, Spin, Uring};
    /// use uring_queue::AlignedBuf;
    ///
    /// let mut mem = AlignedBuf::zeroed(8192).unwrap();
    /// let uring = Uring::init(mem.region(), Config::new(2, 2, 0)).unwrap();
    /// // An in-flight table of 8, but the rings give 2 credits.
    /// let (client, mut server) = uring.split::<8, _, _>(Spin, Spin);
    /// assert_eq!(client.credits(), 2);
    /// let ticket = client.try_submit(Request::new(5)).unwrap();
    /// let incoming = server.try_recv().unwrap().unwrap();
    /// server.complete(incoming, 6, 0).unwrap();
    /// assert_eq!(client.wait(ticket).unwrap().result, 6);
    /// # }
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

/// Cuts a checked layout's parts out of the region: the link, the regions
/// of the two rings, and the payload area.
fn carve<'a>(region: &Region<'a>, layout: &Layout) -> (&'a Link, Region<'a>, Region<'a>, Area<'a>) {
    let base = region.as_ptr();
    // SAFETY: for all four parts, the layout lies inside the region, each apart
    // from the others and from the header (`Layout::canonical` builds it
    // so; `Layout::read` checks it with `check_parts` and the region's
    // length), and the region's start is aligned to `URING_ALIGN`
    // (`layout::header` checked). The region's contract passes on to each
    // part: its bytes are valid for `'a` and reached only through this
    // connection in this process.
    unsafe {
        // `LINK_OFFSET` is a multiple of the link's alignment; the link is
        // atomics only, valid for any bytes.
        let link = &*base.add(LINK_OFFSET).cast::<Link>();
        let sq = region.part(layout.sq.0, layout.sq.1);
        let cq = region.part(layout.cq.0, layout.cq.1);
        // The payload size came from a `u32` header word or a checked config.
        let payload_len = u32::try_from(layout.payload.1).unwrap_or(0);
        let area = Area::new(
            NonNull::new_unchecked(base.add(layout.payload.0)),
            payload_len,
        );
        (link, sq, cq, area)
    }
}
