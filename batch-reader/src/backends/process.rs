//! [`ProcessBackend`]: another process's memory through `process_vm_readv`.

use core::ffi::c_void;
use std::io;

use crate::{Geometry, ReadBackend, ReadErrorKind, ReadOp, Report};

/// The most iovecs one `process_vm_readv` takes (Linux's `IOV_MAX`).
pub const IOV_MAX: usize = 1024;

/// Reads another process's memory with `process_vm_readv`: one system call
/// per batch, one iovec per op.
///
/// Its geometry splits reads at page boundaries, so each op lies within one
/// page and an unmapped page fails only the ops on it. The kernel stops a
/// call at the first remote iovec it cannot read; the backend reports the
/// transferred ops, fails that one with [`Unmapped`](ReadErrorKind::Unmapped)
/// and continues with a new call from the next op, so each unreadable page
/// costs one more system call.
///
/// Reading needs ptrace access to the target (the caller's own children, or
/// `CAP_SYS_PTRACE`); without it every op fails with
/// [`PermissionDenied`](ReadErrorKind::PermissionDenied).
///
/// # Examples
///
/// ```
/// use batch_reader::{backends::ProcessBackend, Reader};
///
/// # #[cfg(not(miri))] { // Miri cannot make this system call.
/// // Reading our own memory: a process may always read itself.
/// let secret = 0x1234_5678_u32;
/// let backend = ProcessBackend::new(std::process::id() as i32);
/// let mut reader: Reader<_, _> = Reader::new(backend, [0u8; 4096]);
/// let addr = &secret as *const u32 as u64;
/// assert_eq!(reader.read_val::<u32>(addr), Ok(0x1234_5678));
/// # }
/// ```
#[derive(Debug)]
pub struct ProcessBackend {
    pid: libc::pid_t,
    geometry: Geometry,
}

impl ProcessBackend {
    /// Reads the memory of process `pid`, splitting at the system page size
    /// and taking up to [`IOV_MAX`] ops per call.
    pub fn new(pid: libc::pid_t) -> Self {
        // SAFETY: sysconf has no preconditions; it only reads a system constant.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        let page = if page > 0 && (page as u64).is_power_of_two() {
            page as u64
        } else {
            4096
        };
        let geometry = Geometry::new(Some(page), page as usize, IOV_MAX).unwrap_or(FALLBACK);
        Self { pid, geometry }
    }

    /// The target process.
    pub fn pid(&self) -> libc::pid_t {
        self.pid
    }
}

/// 4 KiB pages: used only if the page size were not a power of two.
const FALLBACK: Geometry = match Geometry::new(Some(4096), 4096, IOV_MAX) {
    Ok(g) => g,
    Err(_) => panic!("4096 is a power of two"),
};

impl ReadBackend for ProcessBackend {
    #[inline]
    fn geometry(&self) -> Geometry {
        self.geometry
    }

    fn read_batch<R: FnMut(Report)>(&mut self, ops: &mut [ReadOp<'_>], mut report: R) -> usize {
        let n = ops.len().min(IOV_MAX);
        let ops = &mut ops[..n];
        let mut local: heapless::Vec<libc::iovec, IOV_MAX> = heapless::Vec::new();
        let mut remote: heapless::Vec<libc::iovec, IOV_MAX> = heapless::Vec::new();
        for op in ops.iter_mut() {
            let len = op.buf.len();
            // Cannot fail: at most IOV_MAX ops.
            let _ = local.push(libc::iovec {
                iov_base: op.buf.as_mut_ptr().cast::<c_void>(),
                iov_len: len,
            });
            let _ = remote.push(libc::iovec {
                iov_base: op.addr as usize as *mut c_void,
                iov_len: len,
            });
        }
        let mut i = 0;
        while i < n {
            let count = n - i;
            // SAFETY: `local[i..]` describes the buffers of `ops[i..]`, each a
            // live `&mut [u8]` of exactly `iov_len` bytes, borrowed mutably for
            // this whole function, so the kernel may write them; `count` is
            // the length of both iovec slices and at most IOV_MAX. The remote
            // iovecs are only addresses in the other process, which the kernel
            // checks and reports on.
            let r = unsafe {
                libc::process_vm_readv(
                    self.pid,
                    local[i..].as_ptr(),
                    count as libc::c_ulong,
                    remote[i..].as_ptr(),
                    count as libc::c_ulong,
                    0,
                )
            };
            if r < 0 {
                let err = io::Error::last_os_error();
                match err.raw_os_error() {
                    Some(libc::EINTR) => continue,
                    Some(libc::EFAULT) => {
                        // The first remote iovec is unreadable.
                        report(Report::failed(ops[i].tag, 0, ReadErrorKind::Unmapped));
                        i += 1;
                    }
                    Some(libc::ENOMEM) | Some(libc::EINVAL) => {
                        report(Report::failed(ops[i].tag, 0, ReadErrorKind::Other));
                        i += 1;
                    }
                    code => {
                        // The process is gone or not ours to read: nothing will succeed.
                        let kind = match code {
                            Some(libc::EPERM) => ReadErrorKind::PermissionDenied,
                            Some(libc::ESRCH) => ReadErrorKind::Unmapped,
                            _ => ReadErrorKind::Io,
                        };
                        for op in &ops[i..] {
                            report(Report::failed(op.tag, 0, kind));
                        }
                        return n;
                    }
                }
                continue;
            }
            let mut left = r as usize;
            let before = i;
            while i < n && left >= ops[i].buf.len() {
                left -= ops[i].buf.len();
                report(Report::ok(ops[i].tag, ops[i].buf.len()));
                i += 1;
            }
            if i < n {
                // The kernel stopped inside or at the start of op `i`.
                report(Report::failed(ops[i].tag, left, ReadErrorKind::Unmapped));
                i += 1;
            }
            debug_assert!(i > before);
        }
        n
    }
}
