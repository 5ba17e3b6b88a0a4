//! Memory shared between processes on Linux: a memfd mapped with `MAP_SHARED`.

use crate::Region;
use core::fmt;
use core::ptr::NonNull;
use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use rustix::fs::{
    MemfdFlags, SealFlags, fcntl_add_seals, fcntl_get_seals, fstat, ftruncate, memfd_create,
};
use rustix::io::{Errno, FdFlags, fcntl_getfd, fcntl_setfd};
use rustix::mm::{Advice, MapFlags, ProtFlags, madvise, mmap, munmap};
use std::io;

/// An anonymous shared memory file (memfd) and its mapping in this process.
///
/// The creator makes it with [`create`](Self::create), hands the descriptor to
/// the peer (for example to a child process, after
/// [`set_inheritable`](Self::set_inheritable)), and the peer maps it with
/// [`open`](Self::open). Each side then builds its ring in
/// [`region`](Self::region).
///
/// The file is sealed against shrinking (`F_SEAL_SHRINK`) before anyone maps
/// it: a peer that holds the descriptor cannot truncate it under our mapping,
/// which would make our next access to the region die with `SIGBUS`.
/// [`open`](Self::open) checks the seal (or adds it) before mapping a file it
/// received.
///
/// # Examples
///
/// ```
/// # #[cfg(not(miri))] { // Miri cannot make these system calls.
/// use uring_queue::{SharedMemory, SharedRing};
///
/// let mut shm = SharedMemory::create("ring", 4096).unwrap();
/// let (mut tx, mut rx) = SharedRing::<u64>::init(shm.region(), 256).unwrap().split();
/// tx.push(3).unwrap();
/// assert_eq!(rx.pop(), Ok(3));
/// # }
/// ```
#[derive(Debug)]
pub struct SharedMemory {
    fd: OwnedFd,
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: the mapping is process-wide and valid until `drop`; moving the owner
// to another thread changes nothing about it.
unsafe impl Send for SharedMemory {}

// SAFETY: `&self` methods read the descriptor and the length only; the
// mapping's bytes are reached through `region`, which takes `&mut self`.
unsafe impl Sync for SharedMemory {}

/// The pages that back a [`SharedMemory`], for
/// [`create_with`](SharedMemory::create_with).
///
/// Large regions (payload areas of a megabyte and more) touch one page table
/// entry, and one TLB entry, per page: 2 MiB pages need 512 times fewer than
/// 4 KiB ones. Small regions gain nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Pages {
    /// The system's base pages (4 KiB on x86-64), as
    /// [`create`](SharedMemory::create) uses.
    #[default]
    Normal,
    /// Base pages, with `madvise(MADV_HUGEPAGE)`: the kernel backs the
    /// mapping with transparent huge pages where it can. Shared memory takes
    /// the hint only when `/sys/kernel/mm/transparent_hugepage/shmem_enabled`
    /// is `advise`, `within_size` or `always`; otherwise it is `Normal`.
    /// Never fails for want of huge pages, and needs no setup by root; on a
    /// kernel built without transparent huge pages the hint is dropped.
    TransparentHuge,
    /// Huge pages from the system's reserved pool (`MFD_HUGETLB`, the
    /// default huge page size, 2 MiB on x86-64): guaranteed huge, but the
    /// pool must hold enough free pages (`/proc/sys/vm/nr_hugepages`, set by
    /// root), and the length is rounded up to whole pages.
    Huge,
}

impl SharedMemory {
    /// Creates a memfd of `len` bytes (zero-filled), seals its size and maps
    /// it. The descriptor is close-on-exec until
    /// [`set_inheritable`](Self::set_inheritable).
    ///
    /// The file is sealed with `F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL`:
    /// nobody holding the descriptor, in any process, can change its size
    /// (`ftruncate`, `write` or `fallocate` past the end fail with `EPERM`),
    /// and no further seal can be added, so a peer cannot, say, forbid writes
    /// to a later mapping with `F_SEAL_FUTURE_WRITE`. Seals can never be
    /// removed.
    ///
    /// # Errors
    ///
    /// Any error of `memfd_create`, `ftruncate`, `fcntl` or `mmap`, or
    /// [`io::ErrorKind::InvalidInput`] for `len == 0`.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[cfg(not(miri))] { // Miri cannot make these system calls.
    /// use std::io::ErrorKind;
    /// use uring_queue::{RegionError, SharedMemory, SharedRing};
    ///
    /// let mut shm = SharedMemory::create("ring", 4096).unwrap();
    /// assert_eq!(shm.len(), 4096);
    /// // Zero-filled: no ring is set up in it yet.
    /// assert_eq!(
    ///     SharedRing::<u64>::attach(shm.region()).unwrap_err(),
    ///     RegionError::NotReady { state: 0 }
    /// );
    /// // Its size is sealed: nobody can shrink it, or grow it.
    /// let fd = shm.fd();
    /// let shrink = rustix::fs::ftruncate(fd, 0).unwrap_err();
    /// assert_eq!(shrink, rustix::io::Errno::PERM);
    /// assert_eq!(rustix::fs::ftruncate(fd, 8192), Err(rustix::io::Errno::PERM));
    /// assert_eq!(rustix::fs::fstat(fd).unwrap().st_size, 4096);
    /// assert_eq!(
    ///     SharedMemory::create("empty", 0).unwrap_err().kind(),
    ///     ErrorKind::InvalidInput
    /// );
    /// # }
    /// ```
    pub fn create(name: &str, len: usize) -> io::Result<Self> {
        Self::create_with(name, len, Pages::Normal)
    }

    /// [`create`](Self::create), with the pages that back the memory chosen.
    ///
    /// With [`Pages::Huge`] the length is rounded up to a whole number of
    /// huge pages (see [`len`](Self::len)), and the pages are reserved when
    /// the file is mapped: too few free huge pages is an error here, never a
    /// `SIGBUS` later. Sealing works as with `create` (Linux 4.16 or later).
    ///
    /// # Errors
    ///
    /// As [`create`](Self::create); with [`Pages::Huge`] also
    /// [`io::ErrorKind::OutOfMemory`] (`ENOMEM` from `mmap`) when the system
    /// has fewer free huge pages than the length needs (the pool is
    /// `/proc/sys/vm/nr_hugepages`, empty by default), and
    /// [`io::ErrorKind::InvalidInput`] when the rounded length overflows.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[cfg(not(miri))] { // Miri cannot make these system calls.
    /// use std::io::ErrorKind;
    /// use uring_queue::{Pages, SharedMemory, SharedRing};
    ///
    /// // Transparent huge pages: a hint, the same memory either way.
    /// let mut shm = SharedMemory::create_with("ring", 4 << 20, Pages::TransparentHuge).unwrap();
    /// assert_eq!(shm.len(), 4 << 20);
    /// let (mut tx, mut rx) = SharedRing::<u64>::init(shm.region(), 256).unwrap().split();
    /// tx.push(3).unwrap();
    /// assert_eq!(rx.pop(), Ok(3));
    ///
    /// // Huge pages from the reserved pool: whole pages, or an error.
    /// match SharedMemory::create_with("ring", 4096, Pages::Huge) {
    ///     Ok(shm) => assert!(shm.len() >= 4096 && shm.len() % (2 << 20) == 0),
    ///     Err(e) => assert_eq!(e.kind(), ErrorKind::OutOfMemory),
    /// }
    /// # }
    /// ```
    pub fn create_with(name: &str, len: usize, pages: Pages) -> io::Result<Self> {
        if len == 0 {
            return Err(empty());
        }
        let mut flags = MemfdFlags::CLOEXEC | MemfdFlags::ALLOW_SEALING;
        if pages == Pages::Huge {
            flags |= MemfdFlags::HUGETLB;
        }
        let fd = memfd_create(name, flags)?;
        let len = match pages {
            // A hugetlbfs file reports its page size as its block size.
            Pages::Huge => round_up(len, fstat(&fd)?.st_blksize)?,
            Pages::Normal | Pages::TransparentHuge => len,
        };
        ftruncate(&fd, len as u64)?;
        fcntl_add_seals(&fd, SealFlags::SHRINK | SealFlags::GROW | SealFlags::SEAL)?;
        let shm = Self::map(fd, len)?;
        if pages == Pages::TransparentHuge {
            // SAFETY: the range is this object's own mapping, made above and
            // alive until `drop`; the advice changes how it is backed, never
            // its contents or its addresses.
            let advised = unsafe { madvise(shm.ptr.as_ptr().cast(), len, Advice::LinuxHugepage) };
            // `EINVAL`: a kernel without transparent huge pages; the hint
            // is then dropped, as the variant says.
            if let Err(e) = advised {
                if e != Errno::INVAL {
                    return Err(e.into());
                }
            }
        }
        Ok(shm)
    }

    /// Maps the whole of a shared memory file received from a peer, once it
    /// is sealed against shrinking.
    ///
    /// A file made by [`create`](Self::create) is sealed already. A file
    /// that allows sealing but is not sealed yet (a memfd made with
    /// `MFD_ALLOW_SEALING` by another program) gets `F_SEAL_SHRINK` added here:
    /// this changes the file for every process that holds it, which is what
    /// lets this process map it safely, and which a ring's peer has no reason
    /// to mind. A file that cannot be sealed is refused. The size mapped is
    /// read after the seal is in place, so the file can never become shorter
    /// than the mapping (it may still grow if its creator did not seal that).
    ///
    /// # Errors
    ///
    /// [`OpenError::NotSealed`] for a file not sealed against shrinking that
    /// cannot be sealed now (a memfd made without `MFD_ALLOW_SEALING`, a file
    /// whose seals were frozen without `F_SEAL_SHRINK`, a regular file),
    /// [`OpenError::Empty`] for an empty file, [`OpenError::TooLarge`] for
    /// one larger than the address space, and [`OpenError::Io`] for any other
    /// error of `fcntl`, `fstat` or `mmap`. On error the descriptor is closed.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[cfg(not(miri))] { // Miri cannot make these system calls.
    /// use rustix::fs::{MemfdFlags, SealFlags, fcntl_get_seals, ftruncate, memfd_create};
    /// use uring_queue::{OpenError, SharedMemory, SharedRing};
    ///
    /// let mut creator = SharedMemory::create("ring", 8192).unwrap();
    /// // The peer is usually another process; here it is this one.
    /// let fd = creator.fd().try_clone_to_owned().unwrap();
    /// let mut peer = SharedMemory::open(fd).unwrap();
    /// // The whole file is mapped, and both mappings show the same bytes.
    /// assert_eq!(peer.len(), 8192);
    /// SharedRing::<u32>::init(creator.region(), 16).unwrap();
    /// assert_eq!(SharedRing::<u32>::attach(peer.region()).unwrap().capacity(), 16);
    ///
    /// // A memfd that allows sealing but is not sealed: `open` seals it.
    /// let fd = memfd_create("foreign", MemfdFlags::ALLOW_SEALING).unwrap();
    /// ftruncate(&fd, 4096).unwrap();
    /// let foreign = SharedMemory::open(fd).unwrap();
    /// assert!(fcntl_get_seals(foreign.fd()).unwrap().contains(SealFlags::SHRINK));
    /// assert!(ftruncate(foreign.fd(), 0).is_err());
    ///
    /// // A memfd that can never be sealed is refused.
    /// let fd = memfd_create("unsealable", MemfdFlags::empty()).unwrap();
    /// ftruncate(&fd, 4096).unwrap();
    /// assert!(matches!(SharedMemory::open(fd), Err(OpenError::NotSealed)));
    /// # }
    /// ```
    pub fn open(fd: OwnedFd) -> Result<Self, OpenError> {
        let seals = match fcntl_get_seals(&fd) {
            Ok(seals) => seals,
            // Not a file that takes seals (not shmem or hugetlbfs).
            Err(Errno::INVAL) => return Err(OpenError::NotSealed),
            Err(e) => return Err(OpenError::Io(e.into())),
        };
        if !seals.contains(SealFlags::SHRINK) {
            match fcntl_add_seals(&fd, SealFlags::SHRINK) {
                Ok(()) => {}
                // `EPERM`: sealing is not allowed on this file, or its seals
                // are frozen (`F_SEAL_SEAL`).
                Err(Errno::PERM | Errno::INVAL) => return Err(OpenError::NotSealed),
                Err(e) => return Err(OpenError::Io(e.into())),
            }
        }
        // Only now, with the seal in place, is the size a lower bound for
        // as long as the file exists: reading it before sealing would leave
        // a window in which the peer could shrink the file below what we map.
        let size = fstat(&fd).map_err(io::Error::from)?.st_size;
        let size = u64::try_from(size).map_err(|_| OpenError::Empty)?;
        if size == 0 {
            return Err(OpenError::Empty);
        }
        let len = usize::try_from(size).map_err(|_| OpenError::TooLarge { size })?;
        Self::map(fd, len).map_err(OpenError::Io)
    }

    /// Maps `len` bytes of `fd`, which its caller has sealed against
    /// shrinking with at least `len` bytes in it.
    fn map(fd: OwnedFd, len: usize) -> io::Result<Self> {
        // SAFETY: a fresh shared mapping chosen by the kernel (null hint), so
        // it overlaps nothing in this process; it stays until `drop` unmaps it.
        let ptr = unsafe {
            mmap(
                core::ptr::null_mut(),
                len,
                ProtFlags::READ | ProtFlags::WRITE,
                MapFlags::SHARED,
                &fd,
                0,
            )?
        };
        let ptr =
            NonNull::new(ptr.cast::<u8>()).ok_or_else(|| io::Error::other("mmap returned null"))?;
        Ok(Self { fd, ptr, len })
    }

    /// The descriptor, to hand to a peer.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[cfg(not(miri))] { // Miri cannot make these system calls.
    /// use uring_queue::{SharedMemory, SharedRing};
    ///
    /// let mut creator = SharedMemory::create("ring", 4096).unwrap();
    /// // The peer is usually another process; here it is this one.
    /// let mut peer = SharedMemory::open(creator.fd().try_clone_to_owned().unwrap()).unwrap();
    /// let mut tx = SharedRing::<u64>::init(creator.region(), 64).unwrap().into_producer();
    /// let mut rx = SharedRing::<u64>::attach(peer.region()).unwrap().into_consumer();
    /// tx.push(42).unwrap();
    /// assert_eq!(rx.pop(), Ok(42));
    /// # }
    /// ```
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    /// Whether a child process started after this call inherits the
    /// descriptor (clears or sets close-on-exec).
    ///
    /// # Errors
    ///
    /// Any error of `fcntl`.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[cfg(not(miri))] { // Miri cannot make these system calls.
    /// use std::os::fd::AsRawFd;
    /// use std::process::Command;
    /// use uring_queue::SharedMemory;
    ///
    /// let shm = SharedMemory::create("ring", 4096).unwrap();
    /// let fd = shm.fd().as_raw_fd();
    /// // Whether a child process has the descriptor open.
    /// let child_has_fd = || {
    ///     Command::new("sh")
    ///         .args(["-c", &format!("test -e /proc/self/fd/{fd}")])
    ///         .status()
    ///         .unwrap()
    ///         .success()
    /// };
    /// // Close-on-exec from the start: a child does not get it.
    /// assert!(!child_has_fd());
    /// shm.set_inheritable(true).unwrap();
    /// assert!(child_has_fd());
    /// # }
    /// ```
    pub fn set_inheritable(&self, inheritable: bool) -> io::Result<()> {
        let mut flags = fcntl_getfd(&self.fd)?;
        flags.set(FdFlags::CLOEXEC, !inheritable);
        fcntl_setfd(&self.fd, flags)?;
        Ok(())
    }

    /// Length of the mapping in bytes.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[cfg(not(miri))] { // Miri cannot make these system calls.
    /// let shm = uring_queue::SharedMemory::create("ring", 4096).unwrap();
    /// assert_eq!(shm.len(), 4096);
    /// # }
    /// ```
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the mapping is empty (never: empty files are refused).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[cfg(not(miri))] { // Miri cannot make these system calls.
    /// use uring_queue::SharedMemory;
    ///
    /// assert!(!SharedMemory::create("ring", 4096).unwrap().is_empty());
    /// assert!(SharedMemory::create("empty", 0).is_err());
    /// # }
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The mapping as a [`Region`]. Borrowing `self` mutably keeps this
    /// process from building two rings on the same bytes; the peer is kept in
    /// check by the ring's validation instead.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[cfg(not(miri))] { // Miri cannot make these system calls.
    /// use uring_queue::{SharedMemory, SharedRing};
    ///
    /// let mut shm = SharedMemory::create("rings", 8192).unwrap();
    /// assert_eq!(shm.region().len(), 8192);
    /// // One ring per direction, each in half of the mapping.
    /// let (requests, replies) = shm.region().split_at(4096).unwrap();
    /// let (mut tx, rx) = SharedRing::<u64>::init(requests, 256).unwrap().split();
    /// let (_, replies) = SharedRing::<u64>::init(replies, 256).unwrap().split();
    /// tx.push(1).unwrap();
    /// // The rings do not overlap: the element shows in one only.
    /// assert_eq!(rx.len(), 1);
    /// assert!(replies.is_empty());
    /// # }
    /// ```
    pub fn region(&mut self) -> Region<'_> {
        // SAFETY: the mapping is `len` readable, writable, initialised
        // (zero-filled by the kernel, or written by the peer) bytes until
        // `drop`, which the returned borrow prevents; the file is sealed
        // against shrinking with at least `len` bytes (`create`, `open`), so
        // no process can truncate it under the mapping; the exclusive borrow
        // means one region, so one producer and one consumer at most, in this
        // process. Rust references to the bytes exist only through it.
        unsafe { Region::from_raw_parts(self.ptr, self.len) }
    }
    /// The mapping as a region whose lifetime the caller chooses: for a type
    /// that owns both this mapping and the connection built on it.
    ///
    /// # Safety
    ///
    /// The caller keeps `self` (and so the mapping) alive for as long as the
    /// region, or anything built on it, is used, and makes one region per
    /// mapping: nothing else in this process may build on the same bytes.
    pub(crate) unsafe fn region_unbounded<'a>(&mut self) -> Region<'a> {
        // SAFETY: as in `region`; the lifetime is the caller's obligation,
        // delegated to it.
        unsafe { Region::from_raw_parts(self.ptr, self.len) }
    }
}

/// `len` rounded up to a multiple of `page` bytes.
fn round_up(len: usize, page: impl TryInto<usize>) -> io::Result<usize> {
    let page = page.try_into().ok().filter(|p| *p > 0);
    page.and_then(|p| len.checked_next_multiple_of(p))
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "huge page length overflows"))
}

fn empty() -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, "empty shared memory")
}

impl Drop for SharedMemory {
    fn drop(&mut self) {
        // SAFETY: the mapping was made in `map` with this address and length,
        // and every borrow of it (regions, rings) ended before `drop`.
        // An unmap error leaves the mapping in place: nothing to do about it.
        let _ = unsafe { munmap(self.ptr.as_ptr().cast(), self.len) };
    }
}

/// Why [`SharedMemory::open`](crate::SharedMemory::open) refused a file.
///
/// Converts into [`std::io::Error`] (with `?` in a function returning
/// `io::Result`): a system call's error as it was, the other causes as
/// [`InvalidInput`](std::io::ErrorKind::InvalidInput) errors that carry this
/// value.
///
/// # Examples
///
/// ```
/// # #[cfg(not(miri))] { // Miri cannot make these system calls.
/// use std::io::ErrorKind;
/// use uring_queue::{OpenError, SharedMemory};
///
/// // A file that can never be sealed against shrinking: a peer could
/// // truncate it under our mapping.
/// let file = std::fs::File::open("/proc/self/status").unwrap();
/// let err = SharedMemory::open(file.into()).unwrap_err();
/// assert!(matches!(err, OpenError::NotSealed));
/// assert_eq!(std::io::Error::from(err).kind(), ErrorKind::InvalidInput);
/// # }
/// ```
#[derive(Debug)]
pub enum OpenError {
    /// The file is not sealed against shrinking and cannot be sealed now (it
    /// was created without sealing allowed, its seals are frozen, or it is not
    /// a file that takes seals). Mapping it would let whoever holds the
    /// descriptor truncate it and crash us with `SIGBUS`.
    NotSealed,
    /// The file is empty.
    Empty,
    /// The file does not fit in this process's address space.
    TooLarge {
        /// The file's size in bytes.
        size: u64,
    },
    /// A system call (`fcntl`, `fstat`, `mmap`) failed.
    Io(std::io::Error),
}

impl fmt::Display for OpenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotSealed => f.write_str("shared memory file is not sealed against shrinking"),
            Self::Empty => f.write_str("shared memory file is empty"),
            Self::TooLarge { size } => {
                write!(
                    f,
                    "shared memory file of {size} bytes does not fit in memory"
                )
            }
            Self::Io(e) => write!(f, "mapping the shared memory file: {e}"),
        }
    }
}

// No `source`: `Io` shows the system call's error in its own message.
impl core::error::Error for OpenError {}

impl From<std::io::Error> for OpenError {
    fn from(e: std::io::Error) -> Self {
        Self::Io(e)
    }
}

impl From<OpenError> for std::io::Error {
    fn from(e: OpenError) -> Self {
        match e {
            OpenError::Io(e) => e,
            e => Self::new(std::io::ErrorKind::InvalidInput, e),
        }
    }
}
