//! [`ProcessBackend`]: another process's memory through `process_vm_readv`.

use core::ffi::c_void;
use std::io;

use crate::{Geometry, ReadBackend, ReadErrorKind, ReadOp, Report, ScatterOp};

/// The most iovecs one `process_vm_readv` takes (Linux's `IOV_MAX`).
pub(crate) const IOV_MAX: usize = 1024;

/// Reads another process's memory with `process_vm_readv`: one system call
/// per batch, one remote iovec per op. Merged reads are scattered straight
/// into the callers' buffers (one local iovec per member).
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
    /// and taking up to 1024 ops (Linux's `IOV_MAX`) per call.
    ///
    /// # Examples
    ///
    /// ```
    /// use batch_reader::{backends::ProcessBackend, ReadBackend};
    ///
    /// let g = ProcessBackend::new(std::process::id() as i32).geometry();
    /// let page = g.boundary().unwrap();
    /// assert!(page.is_power_of_two());
    /// assert_eq!((g.max_transfer() as u64, g.max_ops()), (page, 1024));
    /// ```
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
    ///
    /// # Examples
    ///
    /// ```
    /// use batch_reader::backends::ProcessBackend;
    ///
    /// let pid = std::process::id() as i32;
    /// assert_eq!(ProcessBackend::new(pid).pid(), pid);
    /// ```
    pub fn pid(&self) -> libc::pid_t {
        self.pid
    }
}

/// 4 KiB pages: used only if the page size were not a power of two.
const FALLBACK: Geometry = match Geometry::new(Some(4096), 4096, IOV_MAX) {
    Ok(g) => g,
    Err(_) => panic!("4096 is a power of two"),
};

impl ProcessBackend {
    /// Runs `process_vm_readv` over the ops described by `remote` (one iovec
    /// each), whose bytes go to `local` from index `first_part(i)` on, until
    /// every op is reported under `tag(i)`, in order, with its index `i`.
    /// Each unreadable op costs one more call.
    #[inline]
    fn transfer<R: FnMut(usize, Report)>(
        &self,
        local: &[libc::iovec],
        remote: &[libc::iovec],
        first_part: impl Fn(usize) -> usize,
        tag: impl Fn(usize) -> usize,
        mut report: R,
    ) {
        let n = remote.len();
        let mut i = 0;
        while i < n {
            let Some(local_rest) = local.get(first_part(i)..) else {
                return;
            };
            // SAFETY: every local iovec describes a distinct part of a live
            // `&mut [u8]` borrowed mutably by the caller for this whole call,
            // with exactly `iov_len` bytes; both counts are the lengths of the
            // slices passed and at most IOV_MAX. The remote iovecs are only
            // addresses in the other process, which the kernel checks.
            let r = unsafe {
                libc::process_vm_readv(
                    self.pid,
                    local_rest.as_ptr(),
                    local_rest.len() as libc::c_ulong,
                    remote[i..].as_ptr(),
                    (n - i) as libc::c_ulong,
                    0,
                )
            };
            if r < 0 {
                match io::Error::last_os_error().raw_os_error() {
                    Some(libc::EINTR) => continue,
                    Some(libc::EFAULT) => {
                        // The first remote iovec is unreadable.
                        report(i, Report::failed(tag(i), 0, ReadErrorKind::Unmapped));
                        i += 1;
                    }
                    Some(libc::ENOMEM) | Some(libc::EINVAL) => {
                        report(i, Report::failed(tag(i), 0, ReadErrorKind::Other));
                        i += 1;
                    }
                    code => {
                        // The process is gone or not ours to read: nothing
                        // will succeed.
                        let kind = match code {
                            Some(libc::EPERM) => ReadErrorKind::PermissionDenied,
                            Some(libc::ESRCH) => ReadErrorKind::Unmapped,
                            _ => ReadErrorKind::Io,
                        };
                        for k in i..n {
                            report(k, Report::failed(tag(k), 0, kind));
                        }
                        return;
                    }
                }
                continue;
            }
            let mut left = r as usize;
            for op in &remote[i..] {
                if left < op.iov_len {
                    break;
                }
                left -= op.iov_len;
                report(i, Report::ok(tag(i), op.iov_len));
                i += 1;
            }
            if i < n {
                // The kernel stopped inside or at the start of op `i`.
                report(i, Report::failed(tag(i), left, ReadErrorKind::Unmapped));
                i += 1;
            }
        }
    }
}

impl ProcessBackend {
    /// [`read_batch`](ReadBackend::read_batch) for the first `M` (at most
    /// IOV_MAX) of `ops`, with iovec lists of room `M`: one remote iovec per
    /// op and its buffer as the local one. Never inlined, so that each size
    /// keeps its own stack frame.
    #[inline(never)]
    fn read_ops<const M: usize, R: FnMut(&ReadOp<'_>, Report)>(
        &self,
        ops: &mut [ReadOp<'_>],
        report: &mut R,
    ) -> usize {
        let n = ops.len().min(M).min(IOV_MAX);
        let ops = &mut ops[..n];
        let mut local: crate::stack::Stack<libc::iovec, M> = crate::stack::Stack::new();
        let mut remote: crate::stack::Stack<libc::iovec, M> = crate::stack::Stack::new();
        for op in ops.iter_mut() {
            let len = op.buf.len();
            // Neither can fail: at most `M` ops.
            let _ = local.push(libc::iovec {
                iov_base: op.buf.as_mut_ptr().cast::<c_void>(),
                iov_len: len,
            });
            let _ = remote.push(libc::iovec {
                iov_base: op.addr as usize as *mut c_void,
                iov_len: len,
            });
        }
        // Op `i`'s bytes go to local iovec `i`. An op is handed to `report`
        // (which may read its buffer) only once the transfer is past it:
        // later calls write only to the ops after it.
        let ops = &*ops;
        self.transfer(
            &local,
            &remote,
            |i| i,
            |i| ops[i].tag,
            |i, r| report(&ops[i], r),
        );
        n
    }

    /// Reads one op with more parts than one call takes: consecutive calls,
    /// each carrying up to IOV_MAX parts (parts that lie back to back in
    /// memory share one iovec) and the matching stretch of the remote range,
    /// until the op is read or a call stops short.
    fn read_long(&self, op: &mut ScatterOp<'_, '_>) -> Report {
        let mut done = 0usize;
        let mut parts = op.parts.iter_mut().peekable();
        while parts.peek().is_some() {
            let mut local: crate::stack::Stack<libc::iovec, IOV_MAX> = crate::stack::Stack::new();
            let mut len = 0usize;
            while let Some(part) = parts.peek_mut() {
                let (base, part_len) = (part.as_mut_ptr(), part.len());
                match local.last_mut() {
                    Some(last)
                        if (last.iov_base as usize).wrapping_add(last.iov_len) == base as usize =>
                    {
                        last.iov_len += part_len;
                    }
                    _ => {
                        if local
                            .push(libc::iovec {
                                iov_base: base.cast::<c_void>(),
                                iov_len: part_len,
                            })
                            .is_err()
                        {
                            break;
                        }
                    }
                }
                len += part_len;
                parts.next();
            }
            let remote = libc::iovec {
                iov_base: (op.addr as usize).wrapping_add(done) as *mut c_void,
                iov_len: len,
            };
            let r = loop {
                // SAFETY: each local iovec describes one part, or several
                // parts back to back in memory, of the op's buffers, each a
                // live `&mut [u8]` borrowed mutably for this whole call; no
                // two overlap and `local.len()` (at most IOV_MAX) are passed.
                // The one remote iovec is only an address range in the other
                // process, which the kernel checks.
                let r = unsafe {
                    libc::process_vm_readv(
                        self.pid,
                        local.as_ptr(),
                        local.len() as libc::c_ulong,
                        &remote,
                        1,
                        0,
                    )
                };
                if r >= 0 || io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
                    break r;
                }
            };
            if r < 0 {
                let kind = match io::Error::last_os_error().raw_os_error() {
                    Some(libc::EPERM) => ReadErrorKind::PermissionDenied,
                    Some(libc::EFAULT) | Some(libc::ESRCH) => ReadErrorKind::Unmapped,
                    Some(libc::ENOMEM) | Some(libc::EINVAL) => ReadErrorKind::Other,
                    _ => ReadErrorKind::Io,
                };
                return Report::failed(op.tag, done, kind);
            }
            let got = (r as usize).min(len);
            done += got;
            if got < len {
                return Report::failed(op.tag, done, ReadErrorKind::Unmapped);
            }
        }
        Report::ok(op.tag, done)
    }
}

impl ReadBackend for ProcessBackend {
    #[inline]
    fn geometry(&self) -> Geometry {
        self.geometry
    }

    fn read_batch<R: FnMut(Report)>(&mut self, ops: &mut [ReadOp<'_>], mut report: R) -> usize {
        self.read_batch_in_order(ops, |_, r| report(r))
    }

    fn reports_in_order(&self) -> bool {
        true
    }

    fn read_batch_in_order<R: FnMut(&ReadOp<'_>, Report)>(
        &mut self,
        ops: &mut [ReadOp<'_>],
        mut report: R,
    ) -> usize {
        // The iovec lists live on the stack, so their room is what each call
        // pays to set up (and, past a page, to probe): a single read, the
        // common batch sizes and the largest get lists of their own size.
        match ops.len() {
            0 => 0,
            1 => self.read_ops::<1, R>(ops, &mut report),
            2..=64 => self.read_ops::<64, R>(ops, &mut report),
            _ => self.read_ops::<IOV_MAX, R>(ops, &mut report),
        }
    }

    fn scatters(&self) -> bool {
        true
    }

    fn read_scattered<R: FnMut(Report)>(
        &mut self,
        ops: &mut [ScatterOp<'_, '_>],
        mut report: R,
    ) -> usize {
        let mut local: crate::stack::Stack<libc::iovec, IOV_MAX> = crate::stack::Stack::new();
        let mut remote: crate::stack::Stack<libc::iovec, IOV_MAX> = crate::stack::Stack::new();
        let mut first_part: crate::stack::Stack<usize, IOV_MAX> = crate::stack::Stack::new();
        let mut tags: crate::stack::Stack<usize, IOV_MAX> = crate::stack::Stack::new();
        let mut n = 0;
        for op in ops.iter_mut() {
            if remote.is_full() || local.len() + op.parts.len() > IOV_MAX {
                break;
            }
            let _ = first_part.push(local.len());
            let mut len = 0;
            for part in op.parts.iter_mut() {
                len += part.len();
                let _ = local.push(libc::iovec {
                    iov_base: part.as_mut_ptr().cast::<c_void>(),
                    iov_len: part.len(),
                });
            }
            let _ = remote.push(libc::iovec {
                iov_base: op.addr as usize as *mut c_void,
                iov_len: len,
            });
            let _ = tags.push(op.tag);
            n += 1;
        }
        if n == 0 {
            if let Some(op) = ops.first_mut() {
                // More parts than one call can carry: this op alone, in
                // calls of up to IOV_MAX parts each.
                report(self.read_long(op));
                return 1;
            }
        }
        self.transfer(
            &local,
            &remote,
            |i| first_part[i],
            |i| tags[i],
            |_, r| report(r),
        );
        n
    }
}
