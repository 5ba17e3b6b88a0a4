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
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    /// Whether a child process started after this call inherits the
    /// descriptor (clears or sets close-on-exec).
    ///
    /// # Errors
    ///
    /// Any error of `fcntl`.
    pub fn set_inheritable(&self, inheritable: bool) -> io::Result<()> {
        let mut flags = fcntl_getfd(&self.fd)?;
        flags.set(FdFlags::CLOEXEC, !inheritable);
        fcntl_setfd(&self.fd, flags)?;
        Ok(())
    }

    /// Length of the mapping in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the mapping is empty (never: empty files are refused).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The mapping as a [`Region`]. Borrowing `self` mutably keeps this
    /// process from building two rings on the same bytes; the peer is kept in
    /// check by the ring's validation instead.
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
