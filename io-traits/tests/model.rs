//! Every `Write` and `Buffer` impl checked against a `Vec<u8>` model, and
//! `Write for &mut [u8]` against `std::io::Write for &mut [u8]` byte for byte.

use io_traits::embedded::{FromEmbeddedIo, ToEmbeddedIo};
use io_traits::std_io::{FromStd, ToStd};
use io_traits::{Write, WriteError};
use proptest::prelude::*;

/// Operations per case; Miri runs each one far more slowly.
const MAX_OPS: usize = if cfg!(miri) { 8 } else { 32 };

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: if cfg!(miri) { 3 } else { 512 },
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

#[derive(Debug, Clone)]
enum WriteOp {
    Write(Vec<u8>),
    WriteAll(Vec<u8>),
    Flush,
}

fn write_op() -> impl Strategy<Value = WriteOp> {
    let bytes = || proptest::collection::vec(any::<u8>(), 0..24);
    prop_oneof![
        bytes().prop_map(WriteOp::Write),
        bytes().prop_map(WriteOp::WriteAll),
        Just(WriteOp::Flush),
    ]
}

/// What `std::io::Write for &mut [u8]` does with `ops` on a sink of `size`
/// bytes: per-op outcomes, and the final storage.
fn std_reference(size: usize, ops: &[WriteOp]) -> (Vec<Result<usize, ()>>, Vec<u8>, usize) {
    let mut storage = vec![0u8; size];
    let mut sink: &mut [u8] = &mut storage;
    let outcomes = ops
        .iter()
        .map(|op| match op {
            WriteOp::Write(b) => std::io::Write::write(&mut sink, b).map_err(drop),
            WriteOp::WriteAll(b) => std::io::Write::write_all(&mut sink, b)
                .map(|()| b.len())
                .map_err(drop),
            WriteOp::Flush => std::io::Write::flush(&mut sink).map(|()| 0).map_err(drop),
        })
        .collect();
    let left = sink.len();
    (outcomes, storage, left)
}

fn run_ours<W: Write>(sink: &mut W, ops: &[WriteOp]) -> Vec<Result<usize, WriteError>> {
    ops.iter()
        .map(|op| match op {
            WriteOp::Write(b) => sink.write(b),
            WriteOp::WriteAll(b) => sink.write_all(b).map(|()| b.len()),
            WriteOp::Flush => sink.flush().map(|()| 0),
        })
        .collect()
}

fn same_outcomes(ours: &[Result<usize, WriteError>], std: &[Result<usize, ()>]) {
    assert_eq!(ours.len(), std.len());
    for (a, b) in ours.iter().zip(std) {
        match (a, b) {
            (Ok(x), Ok(y)) => assert_eq!(x, y),
            (Err(e), Err(())) => assert_eq!(*e, WriteError::WriteZero),
            _ => panic!("outcome differs: ours {a:?}, std {b:?}"),
        }
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn slice_matches_std_byte_for_byte(size in 0usize..96, ops in proptest::collection::vec(write_op(), 0..MAX_OPS)) {
        let (std_outcomes, std_storage, std_left) = std_reference(size, &ops);
        let mut storage = vec![0u8; size];
        let mut sink: &mut [u8] = &mut storage;
        let outcomes = run_ours(&mut sink, &ops);
        let left = sink.len();
        same_outcomes(&outcomes, &std_outcomes);
        prop_assert_eq!(&storage, &std_storage);
        prop_assert_eq!(left, std_left);
    }

    #[test]
    fn vec_appends_everything(ops in proptest::collection::vec(write_op(), 0..MAX_OPS)) {
        let mut model = Vec::new();
        let mut sink = Vec::new();
        for op in &ops {
            match op {
                WriteOp::Write(b) => {
                    prop_assert_eq!(sink.write(b), Ok(b.len()));
                    model.extend_from_slice(b);
                }
                WriteOp::WriteAll(b) => {
                    prop_assert_eq!(sink.write_all(b), Ok(()));
                    model.extend_from_slice(b);
                }
                WriteOp::Flush => prop_assert_eq!(sink.flush(), Ok(())),
            }
        }
        prop_assert_eq!(sink, model);
    }

    #[test]
    fn embedded_io_bridges_match_std(size in 0usize..96, ops in proptest::collection::vec(write_op(), 0..MAX_OPS)) {
        let (std_outcomes, std_storage, _) = std_reference(size, &ops);

        // embedded-io's slice writer seen through our trait behaves as that
        // writer does, with "full" reported as `Ok(0)` by `write`.
        let mut direct = vec![0u8; size];
        let mut direct_sink: &mut [u8] = &mut direct;
        let expected: Vec<Result<usize, WriteError>> = ops
            .iter()
            .map(|op| match op {
                WriteOp::Write(b) => Ok(embedded_io::Write::write(&mut direct_sink, b).unwrap_or(0)),
                WriteOp::WriteAll(b) => embedded_io::Write::write_all(&mut direct_sink, b)
                    .map(|()| b.len())
                    .map_err(|_| WriteError::WriteZero),
                WriteOp::Flush => embedded_io::Write::flush(&mut direct_sink).map(|()| 0).map_err(|_| WriteError::Other),
            })
            .collect();
        let mut storage = vec![0u8; size];
        let outcomes = run_ours(&mut FromEmbeddedIo::new(&mut storage[..]), &ops);
        prop_assert_eq!(outcomes, expected);
        prop_assert_eq!(&storage, &direct);

        // Our slice writer seen through embedded-io, and back again.
        let mut storage = vec![0u8; size];
        let outcomes = run_ours(&mut FromEmbeddedIo::new(ToEmbeddedIo::new(&mut storage[..])), &ops);
        same_outcomes(&outcomes, &std_outcomes);
        prop_assert_eq!(&storage, &std_storage);
    }

    #[test]
    fn std_bridges_match_std(size in 0usize..96, ops in proptest::collection::vec(write_op(), 0..MAX_OPS)) {
        let (std_outcomes, std_storage, _) = std_reference(size, &ops);
        let mut storage = vec![0u8; size];
        let outcomes = run_ours(&mut FromStd::new(ToStd::new(&mut storage[..])), &ops);
        same_outcomes(&outcomes, &std_outcomes);
        prop_assert_eq!(&storage, &std_storage);
    }
}
