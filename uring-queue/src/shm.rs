//! Memory shared between processes on Linux: a memfd mapped with `MAP_SHARED`.

use crate::Region;
use core::ptr::NonNull;
use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use rustix::fs::{MemfdFlags, fstat, ftruncate, memfd_create};
use rustix::io::{FdFlags, fcntl_getfd, fcntl_setfd};
use rustix::mm::{MapFlags, ProtFlags, mmap, munmap};
use std::io;

/// An anonymous shared memory file (memfd) and its mapping in this process.
///
/// The creator makes it with [`create`](Self::create), hands the descriptor to
/// the peer (for example to a child process, after
/// [`set_inheritable`](Self::set_inheritable)), and the peer maps it with
/// [`open`](Self::open). Each side then builds its ring in
/// [`region`](Self::region).
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

impl SharedMemory {
    /// Creates a memfd of `len` bytes (zero-filled) and maps it. The
    /// descriptor is close-on-exec until [`set_inheritable`](Self::set_inheritable).
    ///
    /// # Errors
    ///
    /// Any error of `memfd_create`, `ftruncate` or `mmap`, or
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
    /// assert_eq!(
    ///     SharedMemory::create("empty", 0).unwrap_err().kind(),
    ///     ErrorKind::InvalidInput
    /// );
    /// # }
    /// ```
    pub fn create(name: &str, len: usize) -> io::Result<Self> {
        let fd = memfd_create(name, MemfdFlags::CLOEXEC)?;
        ftruncate(&fd, len as u64)?;
        Self::map(fd, len)
    }

    /// Maps the whole of a shared memory file received from a peer.
    ///
    /// # Errors
    ///
    /// Any error of `fstat` or `mmap`, or [`io::ErrorKind::InvalidInput`]
    /// for an empty file.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[cfg(not(miri))] { // Miri cannot make these system calls.
    /// use uring_queue::{SharedMemory, SharedRing};
    ///
    /// let mut creator = SharedMemory::create("ring", 8192).unwrap();
    /// // The peer is usually another process; here it is this one.
    /// let fd = creator.fd().try_clone_to_owned().unwrap();
    /// let mut peer = SharedMemory::open(fd).unwrap();
    /// // The whole file is mapped, and both mappings show the same bytes.
    /// assert_eq!(peer.len(), 8192);
    /// SharedRing::<u32>::init(creator.region(), 16).unwrap();
    /// assert_eq!(SharedRing::<u32>::attach(peer.region()).unwrap().capacity(), 16);
    /// # }
    /// ```
    pub fn open(fd: OwnedFd) -> io::Result<Self> {
        let size = fstat(&fd)?.st_size;
        let len = usize::try_from(size)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "bad file size"))?;
        Self::map(fd, len)
    }

    fn map(fd: OwnedFd, len: usize) -> io::Result<Self> {
        if len == 0 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "empty shared memory",
            ));
        }
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
        // `drop`, which the returned borrow prevents; the exclusive borrow
        // means one region, so one producer and one consumer at most, in this
        // process. Rust references to the bytes exist only through it.
        unsafe { Region::from_raw_parts(self.ptr, self.len) }
    }
}

impl Drop for SharedMemory {
    fn drop(&mut self) {
        // SAFETY: the mapping was made in `map` with this address and length,
        // and every borrow of it (regions, rings) ended before `drop`.
        // An unmap error leaves the mapping in place: nothing to do about it.
        let _ = unsafe { munmap(self.ptr.as_ptr().cast(), self.len) };
    }
}
