//! The reader's work, included by the `reader` and `async_reader` binaries.

use batch_reader::backends::MemoryBackend;
use batch_reader::{Geometry, ReadOp, Reader};

/// One `read_many` of three ops (two adjacent), then one `read_val`.
pub fn reader_work() -> u64 {
    let Ok(geometry) = Geometry::new(Some(64), 64, 8) else {
        return 0;
    };
    let backend = MemoryBackend::new(size::memory(), geometry);
    let mut reader: Reader<_, _> = Reader::new(backend, [0u8; 64]);
    let (mut a, mut b, mut c) = ([0u8; 4], [0u8; 4], [0u8; 8]);
    let base = size::input(0);
    let mut ops = [
        ReadOp::new(base, &mut a, 0),
        ReadOp::new(base + 4, &mut b, 1),
        ReadOp::new(base + 124, &mut c, 2),
    ];
    let mut ok = 0u64;
    reader.read_many(&mut ops, |done| ok += done.ok_bytes() as u64);
    let value = reader.read_val::<u32>(size::input(8)).unwrap_or(0);
    ok + u64::from(value) + u64::from(a[0]) + u64::from(b[0]) + u64::from(c[0])
}
