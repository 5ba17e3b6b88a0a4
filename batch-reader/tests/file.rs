//! The file backend against the naive oracle, past the end of the file too.
#![cfg(all(feature = "std", unix))]

mod common;

use batch_reader::backends::FileBackend;
use batch_reader::{CoalescePolicy, Geometry, ReadErrorKind, ReadOp, Reader};
use common::{Collector, oracle};

#[test]
#[cfg_attr(miri, ignore = "file reads are system calls")]
fn file_reads_match_the_oracle() {
    let path = std::env::temp_dir().join(format!("batch-reader-file-test-{}", std::process::id()));
    let data: Vec<u8> = (0..10_000u32).map(|i| (i * 13 + 1) as u8).collect();
    std::fs::write(&path, &data).unwrap();
    let g = Geometry::new(Some(512), 4096, 32).unwrap();
    let spec: Vec<(u64, usize)> = vec![
        (0, 100),
        (100, 100),
        (200, 5000),
        (9_990, 20),
        (10_000, 4),
        (20_000, 8),
        (510, 4),
        (u64::MAX - 2, 8),
        // Adjacent ops whose merged read runs past the end of the file.
        (9_980, 10),
        (9_990, 8),
        (9_998, 6),
        (10_004, 2),
    ];
    for gap in [0, 8] {
        let mut bufs: Vec<Vec<u8>> = spec.iter().map(|&(_, l)| vec![0u8; l]).collect();
        let mut reader: Reader<_, _> = Reader::new(
            FileBackend::new(std::fs::File::open(&path).unwrap(), g),
            vec![0u8; 8192],
        );
        // Gap 0: merged reads scatter with preadv; gap 8: through scratch.
        reader.set_policy(CoalescePolicy::with_gap(gap));
        let mut ops: Vec<ReadOp<'_>> = bufs
            .iter_mut()
            .zip(&spec)
            .enumerate()
            .map(|(i, (b, &(a, _)))| ReadOp::new(a, b, i))
            .collect();
        let mut got = Collector::default();
        reader.read_many(&mut ops, |c| got.push(&c));
        drop(ops);
        got.finish();
        let mut naive = FileBackend::new(std::fs::File::open(&path).unwrap(), g);
        for (i, &(addr, len)) in spec.iter().enumerate() {
            let (want, _) = oracle(&mut naive, addr, &mut vec![0u8; len]);
            assert_eq!(got.ops[i].1, want, "op {i}");
        }
        assert_eq!(got.ops[3].1[1].result, Err(ReadErrorKind::OutOfBounds));
        for (i, offset, bytes) in &got.ok_data {
            let at = spec[*i].0 as usize + offset;
            assert_eq!(bytes.as_slice(), &data[at..at + bytes.len()]);
        }
        // The first two ops are adjacent and merge; so do the last four, whose
        // merged read fails at the end of the file, so the members are retried.
        let c = reader.counters();
        assert!(c.merged_ops >= 6, "{c:?}");
        assert!(c.retried_ops >= 2, "{c:?}");
    }
    std::fs::remove_file(&path).unwrap();
}

#[test]
#[cfg_attr(miri, ignore = "file reads are system calls")]
fn one_buffer_cut_into_ops_reads_like_the_oracle() {
    // The ops' buffers lie back to back in memory, so a merged read of them
    // is one iovec; it runs past the end of the file, and every op still
    // gets its own result and bytes.
    let path = std::env::temp_dir().join(format!("batch-reader-file-cut-{}", std::process::id()));
    let data: Vec<u8> = (0..10_000u32).map(|i| (i * 7 + 3) as u8).collect();
    std::fs::write(&path, &data).unwrap();
    let g = Geometry::new(None, 1 << 20, 64).unwrap();
    let mut buf = vec![0u8; 12 * 1024];
    let mut reader: Reader<_, _> = Reader::new(
        FileBackend::new(std::fs::File::open(&path).unwrap(), g),
        vec![0u8; 0],
    );
    let ops: Vec<ReadOp<'_>> = buf
        .chunks_mut(1024)
        .enumerate()
        .map(|(i, b)| ReadOp::new(i as u64 * 1024, b, i))
        .collect();
    let mut got = Collector::default();
    reader.read_iter(ops, |c| got.push(&c));
    got.finish();
    let mut naive = FileBackend::new(std::fs::File::open(&path).unwrap(), g);
    for i in 0..12 {
        let (want, _) = oracle(&mut naive, i as u64 * 1024, &mut [0u8; 1024]);
        assert_eq!(got.ops[i].1, want, "op {i}");
    }
    assert_eq!(&buf[..10_000], &data[..]);
    assert_eq!(got.ops[9].1[1].result, Err(ReadErrorKind::OutOfBounds));
    let c = reader.counters();
    // One merged read of all twelve, failing at byte 10 000; ops 9 to 11 are
    // then read alone.
    assert_eq!(
        (c.backend_calls, c.merged_reads, c.merged_ops, c.retried_ops),
        (2, 1, 12, 3)
    );
    std::fs::remove_file(&path).unwrap();
}
