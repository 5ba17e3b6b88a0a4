//! `syscall`: pieces of 8–64 bytes of another process's memory, one
//! `process_vm_readv` per piece, the raw call and the crate's
//! `ProcessBackend` each batched 16/64/256 pieces at a time, the same with
//! the pieces adjacent fields of a few structs, and the pieces awaited
//! through `AsyncReader`.

use super::{Lcg, Log, logged, paired_rows};
use crate::harness::{Compare, Ctx};
use batch_reader::backends::ProcessBackend;
use batch_reader::{AsyncReader, ReadBackend, ReadOp, Reader};
use std::hint::black_box;
use std::time::{Duration, Instant};

/// A forked child holding `len` bytes at `base` (the same address as in this
/// process), killed on drop.
struct Child {
    pid: libc::pid_t,
}

impl Drop for Child {
    fn drop(&mut self) {
        // SAFETY: `pid` is our child; killed and reaped exactly once.
        unsafe {
            libc::kill(self.pid, libc::SIGKILL);
            let mut status = 0;
            libc::waitpid(self.pid, &mut status, 0);
        }
    }
}

fn spawn_child(mem: &[u8]) -> Option<Child> {
    let mut ready = [0; 2];
    // SAFETY: the array has room for the two descriptors pipe writes.
    if unsafe { libc::pipe(ready.as_mut_ptr()) } != 0 {
        return None;
    }
    // SAFETY: the child calls only write and pause (async-signal-safe) on
    // memory and descriptors it inherited.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        let byte = 1u8;
        // SAFETY: writes a live one-byte local, then waits for SIGKILL.
        unsafe {
            libc::write(ready[1], (&raw const byte).cast(), 1);
            loop {
                libc::pause();
            }
        }
    }
    let mut byte = 0u8;
    // SAFETY: reads one byte into a live local, then closes our pipe ends.
    let got = unsafe {
        let n = libc::read(ready[0], (&raw mut byte).cast(), 1);
        libc::close(ready[0]);
        libc::close(ready[1]);
        n
    };
    // Keep `mem` alive and unmoved until the child exists.
    black_box(mem.as_ptr());
    (pid > 0 && got == 1).then_some(Child { pid })
}

/// One `process_vm_readv` over `pieces` (remote address, length) into `dst`.
fn raw_readv(pid: libc::pid_t, pieces: &[(usize, usize)], dst: &mut [u8]) -> isize {
    let mut local: heapless::Vec<libc::iovec, 256> = heapless::Vec::new();
    let mut remote: heapless::Vec<libc::iovec, 256> = heapless::Vec::new();
    let mut rest = dst;
    for &(addr, len) in pieces.iter().take(256) {
        let (head, tail) = std::mem::take(&mut rest).split_at_mut(len);
        rest = tail;
        let _ = local.push(libc::iovec {
            iov_base: head.as_mut_ptr().cast(),
            iov_len: len,
        });
        let _ = remote.push(libc::iovec {
            iov_base: addr as *mut libc::c_void,
            iov_len: len,
        });
    }
    // SAFETY: each local iovec describes a distinct part of `dst`, borrowed
    // mutably for this call; both arrays hold the same number of entries.
    unsafe {
        libc::process_vm_readv(
            pid,
            local.as_ptr(),
            local.len() as libc::c_ulong,
            remote.as_ptr(),
            remote.len() as libc::c_ulong,
            0,
        )
    }
}

pub(super) fn run(ctx: &Ctx) {
    let pieces_per_sample: usize = ctx.pick(8192, 1024);
    let region = 8usize << 20;
    let mem: Vec<u8> = (0..region).map(|i| (i * 13) as u8).collect();
    let Some(child) = spawn_child(&mem) else {
        eprintln!("  batch syscall: fork failed, skipped");
        return;
    };
    let pieces = Pieces::new(&mem, region, pieces_per_sample);
    let logs = Logs::default();
    let mut c = Compare::new("batch", "syscall", "single");
    raw_variants(&mut c, child.pid, &pieces.scattered, &logs);
    crate_variants(&mut c, child.pid, &pieces, &logs);
    // The scattered pieces awaited through `AsyncReader`, as `K` chains
    // joined in one task, each awaiting its pieces one after the other: one
    // chain makes one call per piece (as `single`), 16 and 64 chains 16 and
    // 64 pieces per call (as `crate16` and `crate64`). What batching on
    // `.await` gains where a backend call is a system call.
    let pid = child.pid;
    c.variant("auto1", timed_chains::<1>(pid, pieces.scattered.clone()));
    c.variant("auto16", timed_chains::<16>(pid, pieces.scattered.clone()));
    let mut auto64 = timed_chains::<64>(pid, pieces.scattered.clone());
    let auto64_log = &logs.auto64;
    c.variant("auto64", move || logged(auto64_log, auto64()));
    // A sample is about 1.5 ms, so many rounds cost little and steady the
    // medians, whose run-to-run spread at 21 rounds was about ±2%.
    let r = c.run(ctx.rounds(101, 3));
    r.emit_rate_ratio(pieces_per_sample as f64 / 1e6, "Mpieces/s");
    paired_rows(&[
        ("syscall.crate64.rate_vs_raw64", &logs.raw64, &logs.crate64),
        (
            "syscall.crate_structs.rate_vs_single_structs",
            &logs.single_structs,
            &logs.crate_structs,
        ),
        (
            "syscall.auto64.rate_vs_crate64",
            &logs.crate64,
            &logs.auto64,
        ),
    ]);
    drop(child);
    drop(mem);
}

/// The sample logs of the variants that ratio rows pair with each other.
#[derive(Default)]
struct Logs {
    raw64: Log,
    crate64: Log,
    single_structs: Log,
    crate_structs: Log,
    auto64: Log,
}

/// The pieces every variant reads, as (address in the child, length).
struct Pieces {
    /// Anywhere in the region, 8–64 bytes, never across a page.
    scattered: Vec<(usize, usize)>,
    /// 8 structs of 8 adjacent fields (8–32 bytes each) per batch.
    structs: Vec<(usize, usize)>,
}

impl Pieces {
    fn new(mem: &[u8], region: usize, count: usize) -> Self {
        // Pages of the region, from its first page boundary (the allocation
        // itself need not start on one), so that "within a page" below is
        // within a page of the kernel's too.
        let base = (mem.as_ptr() as usize).next_multiple_of(4096);
        let pages = region / 4096 - 1;
        let mut rng = Lcg(7);
        let scattered = (0..count)
            .map(|_| {
                let len = 8 + (rng.next() as usize % 57);
                let page = rng.next() as usize % pages;
                let off = rng.next() as usize % (4096 - len);
                (base + page * 4096 + off, len)
            })
            .collect();
        let structs = (0..count / 8)
            .flat_map(|_| {
                let page = rng.next() as usize % pages;
                let mut addr = base + page * 4096 + (rng.next() as usize % 16) * 8;
                let sizes: Vec<usize> = (0..8).map(|_| 8 + (rng.next() as usize % 4) * 8).collect();
                sizes
                    .into_iter()
                    .map(move |len| {
                        let a = addr;
                        addr += len;
                        (a, len)
                    })
                    .collect::<Vec<_>>()
            })
            .collect();
        Self { scattered, structs }
    }
}

/// Room for the widest batch's pieces, packed.
fn dst() -> Vec<u8> {
    vec![0u8; 64 * 256]
}

/// One `process_vm_readv` per piece, over `pieces` into `dst`.
fn one_by_one(pid: libc::pid_t, pieces: &[(usize, usize)], dst: &mut [u8]) -> Duration {
    let t = Instant::now();
    for &p in pieces {
        black_box(raw_readv(pid, &[p], &mut dst[..p.1]));
    }
    t.elapsed()
}

/// The raw calls: one piece per call, and 16, 64 and 256 per call.
fn raw_variants<'a>(
    c: &mut Compare<'a>,
    pid: libc::pid_t,
    scattered: &[(usize, usize)],
    logs: &'a Logs,
) {
    let pieces = scattered.to_vec();
    let mut d = dst();
    c.variant("single", move || one_by_one(pid, &pieces, &mut d));
    for (name, k) in [("raw16", 16usize), ("raw64", 64), ("raw256", 256)] {
        let pieces = scattered.to_vec();
        let mut d = dst();
        let log = (k == 64).then_some(&logs.raw64);
        c.variant(name, move || {
            let t = Instant::now();
            for chunk in pieces.chunks(k) {
                black_box(raw_readv(pid, chunk, &mut d));
            }
            let t = t.elapsed();
            log.map_or(t, |log| logged(log, t))
        });
    }
}

/// The crate's `ProcessBackend` with 64, 16 and 256 pieces per batch
/// (beside raw64, raw16 and raw256: the crate's rate against the batch
/// size), and the struct fields one by one and through the crate, where
/// coalescing merges them.
fn crate_variants<'a>(c: &mut Compare<'a>, pid: libc::pid_t, pieces: &Pieces, logs: &'a Logs) {
    let mut reader =
        Reader::<_, _, 64, 256>::with_window(ProcessBackend::new(pid), vec![0u8; 4096]);
    let scattered = pieces.scattered.clone();
    let mut d = dst();
    c.variant("crate64", move || {
        logged(
            &logs.crate64,
            crate_batches(&mut reader, &scattered, &mut d),
        )
    });
    let mut reader =
        Reader::<_, _, 16, 256>::with_window(ProcessBackend::new(pid), vec![0u8; 4096]);
    let scattered = pieces.scattered.clone();
    let mut d = dst();
    c.variant("crate16", move || {
        crate_batches(&mut reader, &scattered, &mut d)
    });
    let mut reader =
        Reader::<_, _, 256, 256>::with_window(ProcessBackend::new(pid), vec![0u8; 4096]);
    let scattered = pieces.scattered.clone();
    let mut d = dst();
    c.variant("crate256", move || {
        crate_batches(&mut reader, &scattered, &mut d)
    });
    let structs = pieces.structs.clone();
    let mut d = dst();
    c.variant("single_structs", move || {
        logged(&logs.single_structs, one_by_one(pid, &structs, &mut d))
    });
    let mut reader =
        Reader::<_, _, 64, 256>::with_window(ProcessBackend::new(pid), vec![0u8; 4096]);
    let structs = pieces.structs.clone();
    let mut d = dst();
    c.variant("crate_structs", move || {
        logged(
            &logs.crate_structs,
            crate_batches(&mut reader, &structs, &mut d),
        )
    });
}

/// A sample of [`piece_chains`] over `pieces` on an `AsyncReader` of
/// process `pid`: the time of one pass.
fn timed_chains<const K: usize>(
    pid: libc::pid_t,
    pieces: Vec<(usize, usize)>,
) -> impl FnMut() -> Duration {
    let mut auto = AsyncReader::<_, _>::new(ProcessBackend::new(pid), [0u8; 0]);
    move || {
        let t = Instant::now();
        black_box(embassy_futures::block_on(
            auto.run(|r| piece_chains::<K, _>(r, &pieces)),
        ));
        t.elapsed()
    }
}

/// `K` chains joined, chain `k` awaiting the pieces of the `k`-th `K`-th of
/// `pieces` one after the other, each into a buffer of its own: `K` pieces
/// per flush. The bytes each chain read.
async fn piece_chains<const K: usize, B: ReadBackend>(
    r: &AsyncReader<B, [u8; 0]>,
    pieces: &[(usize, usize)],
) -> [usize; K] {
    let part = pieces.len().div_ceil(K);
    embassy_futures::join::join_array(core::array::from_fn::<_, K, _>(|k| async move {
        let mut buf = [0u8; 64];
        let mut ok = 0usize;
        for &(addr, len) in pieces.chunks(part).nth(k).unwrap_or(&[]) {
            if let Some(buf) = buf.get_mut(..len) {
                if r.read(addr as u64, buf).await.is_ok() {
                    ok += len;
                }
            }
        }
        ok
    }))
    .await
}

/// Reads `pieces` through the crate, 64 per `read_many`, packed into `dst`
/// as `raw_readv` packs them.
fn crate_batches<const K: usize>(
    reader: &mut Reader<ProcessBackend, Vec<u8>, K, 256>,
    pieces: &[(usize, usize)],
    dst: &mut [u8],
) -> Duration {
    let t = Instant::now();
    let mut ok = 0usize;
    for chunk in pieces.chunks(K) {
        let mut ops: heapless::Vec<ReadOp<'_>, K> = heapless::Vec::new();
        let mut rest = &mut *dst;
        for (i, &(addr, len)) in chunk.iter().enumerate() {
            let (head, tail) = std::mem::take(&mut rest).split_at_mut(len);
            rest = tail;
            let _ = ops.push(ReadOp::new(addr as u64, head, i));
        }
        reader.read_many(&mut ops, |c| ok += c.ok_bytes());
    }
    black_box(ok);
    t.elapsed()
}
