//! The `process_vm_readv` backend against a child process whose memory layout
//! the test knows: four pages mapped at the same address in parent and child,
//! the third unmapped in the child, and bytes only the child wrote.
#![cfg(all(feature = "std", target_os = "linux"))]

use batch_reader::backends::ProcessBackend;
use batch_reader::{ReadErrorKind, ReadOp, Reader, Segment};

/// The byte the child writes at offset `i` of the mapping.
fn pattern(i: usize) -> u8 {
    (i.wrapping_mul(7) ^ (i >> 8)) as u8 ^ 0x5a
}

struct Child {
    pid: libc::pid_t,
}

impl Drop for Child {
    fn drop(&mut self) {
        // SAFETY: `pid` is our child, killed and reaped exactly once here.
        // (Killing rather than waking it: children forked by tests running
        // in parallel inherit each other's pipe ends, so end-of-file on a
        // pipe cannot be relied on.)
        unsafe {
            libc::kill(self.pid, libc::SIGKILL);
            let mut status = 0;
            libc::waitpid(self.pid, &mut status, 0);
        }
    }
}

/// Maps four pages and forks a child that unmaps the third, fills the other
/// three with `pattern` and then waits. Returns the child, the base address
/// and the page size.
fn spawn_child() -> (Child, usize, usize) {
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize;
    // SAFETY: an anonymous private mapping at an address of the kernel's
    // choosing; the result is checked below.
    let base = unsafe {
        libc::mmap(
            core::ptr::null_mut(),
            4 * page,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    assert_ne!(base, libc::MAP_FAILED);
    let base = base as usize;
    // The parent's own bytes differ from the child's, so reading the wrong
    // process would show.
    // SAFETY: the mapping is 4 pages, readable and writable, and ours.
    unsafe { core::ptr::write_bytes(base as *mut u8, 0xee, 4 * page) };
    let mut ready = [0; 2];
    // SAFETY: the array has room for the two descriptors pipe writes.
    assert_eq!(unsafe { libc::pipe(ready.as_mut_ptr()) }, 0);
    // SAFETY: the child only writes memory it owns and calls munmap, write and
    // pause, all async-signal-safe, so forking a threaded test is sound.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0);
    if pid == 0 {
        // Unmapping in the single-threaded child: no other thread can map
        // something into the hole before the parent reads it.
        // SAFETY: unmaps the third page of the child's copy of the mapping;
        // nothing refers to it.
        unsafe { libc::munmap((base + 2 * page) as *mut libc::c_void, page) };
        for i in (0..2 * page).chain(3 * page..4 * page) {
            // SAFETY: pages 0, 1 and 3 of the mapping are mapped and writable
            // in the child too (copied at fork).
            unsafe { *((base + i) as *mut u8) = pattern(i) };
        }
        let byte = 1u8;
        // SAFETY: a plain write of a live one-byte local to an inherited
        // descriptor, then waiting for the parent's SIGKILL.
        unsafe {
            libc::write(ready[1], (&raw const byte).cast(), 1);
            loop {
                libc::pause();
            }
        }
    }
    let mut byte = 0u8;
    // SAFETY: reading one byte into a live local from our pipe's read end;
    // then closing the ends the parent does not use.
    unsafe {
        assert_eq!(libc::read(ready[0], (&raw mut byte).cast(), 1), 1);
        libc::close(ready[0]);
        libc::close(ready[1]);
    }
    (Child { pid }, base, page)
}

fn ok(offset: usize, len: usize) -> Segment {
    Segment {
        offset,
        len,
        result: Ok(()),
    }
}

fn unmapped(offset: usize, len: usize) -> Segment {
    Segment {
        offset,
        len,
        result: Err(ReadErrorKind::Unmapped),
    }
}

#[test]
#[cfg_attr(miri, ignore = "fork and process_vm_readv are system calls")]
fn reads_a_child_with_an_unmapped_hole_per_fragment() {
    let (child, base, page) = spawn_child();
    let mut reader: Reader<_, _> = Reader::new(ProcessBackend::new(child.pid), vec![0u8; page]);
    let b = base as u64;
    let p = page as u64;
    let spec: [(u64, usize); 6] = [
        (b + 10, 8),           // inside page 0
        (b, 4 * page),         // all four pages
        (b + 2 * p - 4, 8),    // page 1 into the hole
        (b + 2 * p + 100, 16), // inside the hole
        (b + 3 * p - 8, 16),   // hole into page 3
        (b + 3 * p + 40, 8),   // inside page 3, after the hole
    ];
    let mut bufs: Vec<Vec<u8>> = spec.iter().map(|&(_, l)| vec![0u8; l]).collect();
    let mut ops: Vec<ReadOp<'_>> = bufs
        .iter_mut()
        .zip(&spec)
        .enumerate()
        .map(|(i, (buf, &(a, _)))| ReadOp::new(a, buf, i))
        .collect();
    let mut out = Vec::new();
    reader.read_many(&mut ops, |c| {
        assert!(c.is_last());
        out.push((c.tag(), c.segments().collect::<Vec<_>>()));
    });
    drop(ops);
    assert_eq!(
        out,
        vec![
            (0, vec![ok(0, 8)]),
            (
                1,
                vec![
                    ok(0, 2 * page),
                    unmapped(2 * page, page),
                    ok(3 * page, page)
                ]
            ),
            (2, vec![ok(0, 4), unmapped(4, 4)]),
            (3, vec![unmapped(0, 16)]),
            (4, vec![unmapped(0, 8), ok(8, 8)]),
            (5, vec![ok(0, 8)]),
        ]
    );
    // The bytes are the child's, not the parent's 0xee.
    for (buf, &(a, _)) in bufs.iter().zip(&spec) {
        for (i, &byte) in buf.iter().enumerate() {
            let off = (a - b) as usize + i;
            if !(2 * page..3 * page).contains(&off) {
                assert_eq!(byte, pattern(off), "byte {off}");
            }
        }
    }
    // One backend call for the whole batch; the backend continued past each
    // unreadable fragment within it.
    assert_eq!(reader.counters().backend_calls, 1);
}

#[test]
#[cfg_attr(miri, ignore = "fork and process_vm_readv are system calls")]
fn scattered_and_adjacent_pieces_of_a_child() {
    let (child, base, page) = spawn_child();
    let mut reader: Reader<_, _, 16, 256> =
        Reader::with_window(ProcessBackend::new(child.pid), vec![0u8; page]);
    // 64 adjacent 8-byte fields in page 0: coalesced into one iovec.
    let mut buf = vec![0u8; 512];
    let mut ops: Vec<ReadOp<'_>> = buf
        .chunks_mut(8)
        .enumerate()
        .map(|(i, c)| ReadOp::new((base + 64 + i * 8) as u64, c, i))
        .collect();
    let mut n = 0;
    reader.read_many(&mut ops, |c| {
        assert!(c.is_ok());
        n += 1;
    });
    drop(ops);
    assert_eq!(n, 64);
    assert!(buf.iter().enumerate().all(|(i, &x)| x == pattern(64 + i)));
    let c = reader.counters();
    assert_eq!((c.backend_calls, c.backend_ops, c.merged_ops), (1, 1, 64));
    drop(child);
}

#[test]
#[cfg_attr(miri, ignore = "fork and process_vm_readv are system calls")]
fn a_process_that_is_gone_fails_every_op() {
    let (child, base, _) = spawn_child();
    let pid = child.pid;
    drop(child); // exits and is reaped
    let mut reader: Reader<_, _> = Reader::new(ProcessBackend::new(pid), [0u8; 0]);
    let s = reader.read_buf(base as u64, &mut [0u8; 8]);
    assert_eq!(s.ok_bytes(), 0);
    assert!(s.first_error().is_some());
}

#[test]
#[cfg_attr(miri, ignore = "fork and process_vm_readv are system calls")]
fn a_merged_read_of_more_than_iov_max_parts_is_split_not_retried() {
    let (child, base, page) = spawn_child();
    let parts = 3000.min(page);
    let mut reader: Reader<_, _, 16, 4096> =
        Reader::with_window(ProcessBackend::new(child.pid), [0u8; 0]);
    // One-byte fields, adjacent in the child, each into a buffer of its
    // own that is not next to the one before: one merged read of 3000
    // parts, 3000 local iovecs.
    let mut bufs = vec![[0u8; 2]; parts];
    let mut ops: Vec<ReadOp<'_>> = bufs
        .iter_mut()
        .enumerate()
        .map(|(i, b)| ReadOp::new((base + i) as u64, &mut b[..1], i))
        .collect();
    let mut ok = 0;
    reader.read_many(&mut ops, |c| {
        if c.is_ok() {
            ok += 1;
        }
    });
    drop(ops);
    assert_eq!(ok, parts);
    assert!(bufs.iter().enumerate().all(|(i, b)| b == &[pattern(i), 0]));
    let c = reader.counters();
    // One reader call, one merged backend op, nothing read again alone.
    assert_eq!(
        (c.backend_calls, c.backend_ops, c.merged_ops, c.retried_ops),
        (1, 1, parts as u64, 0)
    );
    drop(child);
}

/// Op `i` reads 8 bytes at `base + offsets[i]` into `bufs[i]`, tagged
/// `1000 + i`.
fn ops_of<'b>(bufs: &'b mut [[u8; 8]], base: usize, offsets: &[usize]) -> Vec<ReadOp<'b>> {
    bufs.iter_mut()
        .zip(offsets)
        .enumerate()
        .map(|(i, (b, &o))| ReadOp::new((base + o) as u64, &mut b[..], 1000 + i))
        .collect()
}

#[test]
#[cfg_attr(miri, ignore = "fork and process_vm_readv are system calls")]
fn every_batch_size_reports_each_op_once_in_order() {
    use batch_reader::{ReadBackend, Report};
    let (child, base, page) = spawn_child();
    let mut backend = ProcessBackend::new(child.pid);
    // Sizes on both sides of each iovec list's room (1, 64, IOV_MAX): the
    // ops walk 8-byte pieces across the four pages, so every batch of more
    // than one op has some on the unmapped third page.
    for n in [1usize, 2, 63, 64, 65, 1023, 1024, 1025, 1500] {
        for first in [0usize, 2 * page / 8 - 1] {
            let offsets: Vec<usize> = (0..n).map(|i| ((first + i * 3) * 8) % (4 * page)).collect();
            let mut bufs = vec![[0u8; 8]; n];
            let mut ops = ops_of(&mut bufs, base, &offsets);
            let mut reports: Vec<Report> = Vec::new();
            let taken = backend.read_batch(&mut ops, |r| reports.push(r));
            drop(ops);
            assert_eq!(taken, n.min(1024), "n = {n}");
            let want: Vec<Report> = offsets[..taken]
                .iter()
                .enumerate()
                .map(|(i, &o)| {
                    if (2 * page..3 * page).contains(&o) {
                        Report::failed(1000 + i, 0, ReadErrorKind::Unmapped)
                    } else {
                        Report::ok(1000 + i, 8)
                    }
                })
                .collect();
            assert_eq!(reports, want, "n = {n}, first = {first}");
            for (i, (b, &o)) in bufs.iter().zip(&offsets).enumerate() {
                let expect: [u8; 8] = if i < taken && !(2 * page..3 * page).contains(&o) {
                    core::array::from_fn(|k| pattern(o + k))
                } else {
                    [0; 8]
                };
                assert_eq!(b, &expect, "n = {n}, op {i}");
            }
            // In order with the ops themselves: the same reports, each with
            // its op, whose buffer holds its bytes by then.
            let mut bufs = vec![[0u8; 8]; n];
            let mut ops = ops_of(&mut bufs, base, &offsets);
            let mut seen: Vec<(Report, u64, [u8; 8])> = Vec::new();
            assert!(backend.reports_in_order());
            let taken = backend.read_batch_in_order(&mut ops, |op, r| {
                let bytes = <[u8; 8]>::try_from(&*op.buf).unwrap_or_default();
                seen.push((r, op.addr, bytes));
            });
            assert_eq!(taken, n.min(1024), "n = {n}");
            let want_seen: Vec<(Report, u64, [u8; 8])> = want
                .iter()
                .zip(&offsets)
                .map(|(&r, &o)| {
                    let bytes = if r.error.is_none() {
                        core::array::from_fn(|k| pattern(o + k))
                    } else {
                        [0; 8]
                    };
                    (r, (base + o) as u64, bytes)
                })
                .collect();
            assert_eq!(seen, want_seen, "in order, n = {n}, first = {first}");
        }
    }
    drop(child);
}
