//! The reader's host cost in instructions, for callgrind: 20,000
//! `read_many`s of 16 scattered 8-byte reads, then 100,000 `read_val`s,
//! over `MemoryBackend`. Build it with and without the `small` feature and
//! count each part with
//!
//! ```text
//! cargo build --release -p ncio-batch-reader --example icount [--features small]
//! valgrind --tool=callgrind --toggle-collect='icount::read_many_part' target/release/examples/icount
//! valgrind --tool=callgrind --toggle-collect='icount::read_val_part' target/release/examples/icount
//! ```

use core::hint::black_box;

use batch_reader::backends::MemoryBackend;
use batch_reader::{Geometry, ReadOp, Reader};

/// 20,000 windows of 16 reads of 8 bytes, 40 bytes apart (none merge).
#[inline(never)]
fn read_many_part(reader: &mut Reader<MemoryBackend<'_>, [u8; 256]>) -> u64 {
    let mut ok = 0u64;
    let mut bufs = [[0u8; 8]; 16];
    for round in 0..20_000u64 {
        let base = black_box(round % 64);
        let mut ops: [ReadOp<'_>; 16] = {
            let mut it = bufs.iter_mut().enumerate();
            core::array::from_fn(|_| match it.next() {
                Some((i, b)) => ReadOp::new(base + 48 * i as u64, b, i),
                None => ReadOp::new(0, &mut [], 0),
            })
        };
        reader.read_many(&mut ops, |c| ok += c.ok_bytes() as u64);
    }
    ok
}

/// 100,000 reads of a `u64`.
#[inline(never)]
fn read_val_part(reader: &mut Reader<MemoryBackend<'_>, [u8; 256]>) -> u64 {
    let mut sum = 0u64;
    for round in 0..100_000u64 {
        let addr = black_box((round * 8) % 1024);
        sum = sum.wrapping_add(reader.read_val::<u64>(addr).unwrap_or(0));
    }
    sum
}

fn main() -> Result<(), batch_reader::GeometryError> {
    let mem: Vec<u8> = (0..1024u32).map(|i| (i % 251) as u8).collect();
    let backend = MemoryBackend::new(&mem, Geometry::new(None, 4096, 64)?);
    let mut reader: Reader<_, _> = Reader::new(backend, [0u8; 256]);
    let ok = read_many_part(&mut reader);
    let sum = read_val_part(&mut reader);
    let c = reader.counters();
    println!(
        "read_many ok bytes {ok}, read_val sum {sum}, backend calls {}, backend ops {}",
        c.backend_calls, c.backend_ops
    );
    Ok(())
}
