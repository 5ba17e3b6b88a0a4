//! `file`: seed 002, a file read 4 KiB at a time with a fresh buffer per
//! read, one 1 MiB read at a time into a reused buffer (the ceiling), and
//! `read_iter` of 4 KiB ops coalesced into one reused buffer; with the
//! memcpy of the same volume as the reference for GB/s.

use super::{Log, logged, paired_rows};
use crate::harness::{Compare, Ctx, row};
use batch_reader::backends::FileBackend;
use batch_reader::{Geometry, ReadOp, Reader};
use std::cell::RefCell;
use std::fs::File;
use std::hint::black_box;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::time::Instant;

const CHUNK: usize = 4096;
const BIG: usize = 1 << 20;

/// A temporary file, removed on drop.
struct TempFile(PathBuf);

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

impl TempFile {
    /// A file of `size` bytes (a whole number of `BIG` blocks), synced so
    /// that no writeback runs while the reads are timed.
    fn new(size: usize) -> Self {
        let path = Self(std::env::temp_dir().join(format!("batch-bench-{}", std::process::id())));
        let block: Vec<u8> = (0..BIG).map(|i| (i * 31) as u8).collect();
        let mut f = File::create(&path.0).expect("create the bench file");
        for _ in 0..size / BIG {
            std::io::Write::write_all(&mut f, &block).expect("write the bench file");
        }
        f.sync_all().expect("sync the bench file");
        path
    }
}

pub(super) fn run(ctx: &Ctx) {
    let size: usize = ctx.pick(256 << 20, 16 << 20);
    let path = TempFile::new(size);
    let f = File::open(&path.0).expect("open the bench file");
    // The ceiling and read_iter read into the same 1 MiB buffer: where a
    // buffer's pages fall alone moves a 1 MiB copy by 10% or more here, which
    // would otherwise decide the comparison.
    let dest = RefCell::new(vec![0u8; BIG]);
    let (ceiling_log, read_iter_log) = (Log::default(), Log::default());
    let mut c = Compare::new("batch", "file", "naive");
    plain_reads(&mut c, &f, size, &dest, &ceiling_log);
    let geometry = Geometry::new(None, BIG, 1024).expect("valid geometry");
    let mut reader =
        Reader::<_, _, 256, 256>::with_window(FileBackend::new(&f, geometry), vec![0u8; BIG]);
    let dest = &dest;
    let log = &read_iter_log;
    c.variant("read_iter", move || {
        let mut buf = dest.borrow_mut();
        let t = Instant::now();
        let mut ok = 0usize;
        let mut off = 0u64;
        while off < size as u64 {
            let ops = buf
                .chunks_mut(CHUNK)
                .enumerate()
                .map(|(i, b)| ReadOp::new(off + (i * CHUNK) as u64, b, i));
            reader.read_iter(ops, |c| ok += c.ok_bytes());
            black_box(&buf);
            off += BIG as u64;
        }
        black_box(ok);
        logged(log, t.elapsed())
    });
    let src = vec![0x5au8; BIG];
    let mut dst = vec![0u8; BIG];
    c.variant("memcpy", move || {
        let t = Instant::now();
        for _ in 0..size / BIG {
            dst.copy_from_slice(black_box(&src));
            black_box(&mut dst);
        }
        t.elapsed()
    });
    let r = c.run(ctx.rounds(11, 3));
    r.emit_time_ratio();
    let memcpy = size as f64 / r.median("memcpy").as_secs_f64() / 1e9;
    for v in ["naive", "ceiling", "read_iter"] {
        let gbs = size as f64 / r.median(v).as_secs_f64() / 1e9;
        row("batch", &format!("file.{v}.gb_per_s"), gbs, "GB/s");
        row(
            "batch",
            &format!("file.{v}.memcpy_fraction"),
            gbs / memcpy,
            "fraction",
        );
    }
    paired_rows(&[("file.read_iter.t_vs_ceiling", &read_iter_log, &ceiling_log)]);
    drop(path);
}

/// The file read without the crate: 4 KiB at a time into a fresh buffer
/// each (seed 002's naive loop), and 1 MiB at a time into `dest` (the
/// ceiling).
fn plain_reads<'a>(
    c: &mut Compare<'a>,
    f: &'a File,
    size: usize,
    dest: &'a RefCell<Vec<u8>>,
    ceiling_log: &'a Log,
) {
    c.variant("naive", move || {
        let t = Instant::now();
        let mut off = 0u64;
        while off < size as u64 {
            let mut buf = vec![0u8; CHUNK];
            let n = f.read_at(&mut buf, off).unwrap_or(0);
            black_box(&buf);
            if n == 0 {
                break;
            }
            off += n as u64;
        }
        t.elapsed()
    });
    c.variant("ceiling", move || {
        let mut big = dest.borrow_mut();
        let t = Instant::now();
        let mut off = 0u64;
        while off < size as u64 {
            let n = f.read_at(&mut big, off).unwrap_or(0);
            black_box(&big);
            if n == 0 {
                break;
            }
            off += n as u64;
        }
        logged(ceiling_log, t.elapsed())
    });
}
