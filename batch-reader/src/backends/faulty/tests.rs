extern crate alloc;

use super::*;
use crate::backends::MemoryBackend;
use alloc::vec::Vec;

fn geometry() -> Geometry {
    match Geometry::new(Some(16), 16, 4) {
        Ok(g) => g,
        Err(e) => panic!("{e}"),
    }
}

fn read(b: &mut Faulty<MemoryBackend<'_>, 4>, addr: u64, len: usize) -> (Report, [u8; 32]) {
    let mut buf = [0u8; 32];
    let mut ops = [ReadOp::new(addr, &mut buf[..len], 1)];
    let mut got = None;
    assert_eq!(b.read_batch(&mut ops, |r| got = Some(r)), 1);
    (got.expect("one report"), buf)
}

#[test]
fn reads_stop_at_the_first_fault_or_the_end() {
    let mem: [u8; 40] = core::array::from_fn(|i| i as u8);
    let mut b = Faulty::<_, 4>::with_room(MemoryBackend::with_base(&mem, 100, geometry()));
    b.inject_fault(104..106, ReadErrorKind::Unmapped).unwrap();
    let (r, buf) = read(&mut b, 101, 8);
    assert_eq!(r, Report::failed(1, 3, ReadErrorKind::Unmapped));
    // Nothing from the fault on was read.
    assert_eq!(&buf[..8], &[1, 2, 3, 0, 0, 0, 0, 0]);
    assert_eq!(
        read(&mut b, 105, 4).0,
        Report::failed(1, 0, ReadErrorKind::Unmapped)
    );
    assert_eq!(read(&mut b, 106, 4).0, Report::ok(1, 4));
    // The first failing byte decides the kind, fault or end.
    b.inject_fault(138..200, ReadErrorKind::Io).unwrap();
    assert_eq!(
        read(&mut b, 136, 8).0,
        Report::failed(1, 2, ReadErrorKind::Io)
    );
    b.inject_fault(150..160, ReadErrorKind::Io).unwrap();
    let mut far = Faulty::<_, 4>::with_room(MemoryBackend::with_base(&mem, 100, geometry()));
    far.inject_fault(145..150, ReadErrorKind::Io).unwrap();
    assert_eq!(
        read(&mut far, 136, 16).0,
        Report::failed(1, 4, ReadErrorKind::OutOfBounds)
    );
    assert_eq!(
        read(&mut b, u64::MAX - 2, 8).0,
        Report::failed(1, 0, ReadErrorKind::OutOfBounds)
    );
}

#[test]
fn bad_ranges_and_a_full_map_are_errors() {
    let mem = [0u8; 4];
    let mut b = Faulty::<_, 1>::with_room(MemoryBackend::new(&mem, geometry()));
    #[allow(clippy::reversed_empty_ranges)] // The bad input under test.
    let reversed = 10..5;
    assert_eq!(
        b.inject_fault(reversed, ReadErrorKind::Io),
        Err(FaultMapError::ReversedRange { start: 10, end: 5 })
    );
    assert_eq!(
        b.inject_fault(3..3, ReadErrorKind::Io),
        Err(FaultMapError::EmptyRange { at: 3 })
    );
    assert!(b.faults().is_empty());
    assert_eq!(b.inject_fault(0..1, ReadErrorKind::Io), Ok(()));
    assert_eq!(
        b.inject_fault(1..2, ReadErrorKind::Io),
        Err(FaultMapError::Full { capacity: 1 })
    );
    b.clear_faults();
    assert!(b.faults().is_empty());
}

#[test]
fn accepts_at_most_max_ops_and_the_limit() {
    let mem = [0u8; 64];
    let mut b = Faulty::new(MemoryBackend::new(&mem, geometry()));
    let mut bufs = [[0u8; 1]; 6];
    let mut ops: Vec<ReadOp<'_>> = bufs
        .iter_mut()
        .enumerate()
        .map(|(i, buf)| ReadOp::new(i as u64, buf, i))
        .collect();
    let mut seen = 0;
    assert_eq!(b.read_batch(&mut ops, |_| seen += 1), 4);
    assert_eq!(seen, 4);
    b.set_accept_limit(2);
    assert_eq!(b.read_batch(&mut ops, |_| seen += 1), 2);
    b.inject_fault(40..41, ReadErrorKind::Io).unwrap();
    assert_eq!(b.read_batch(&mut ops, |_| seen += 1), 2);
    b.set_accept_limit(0);
    assert_eq!(b.read_batch(&mut ops, |_| seen += 1), 0);
    assert_eq!(seen, 8);
}

#[test]
fn in_order_reports_come_with_the_ops_themselves() {
    let mem: [u8; 32] = core::array::from_fn(|i| i as u8);
    let mut b = Faulty::new(MemoryBackend::new(&mem, geometry()));
    b.inject_fault(9..10, ReadErrorKind::Io).unwrap();
    let mut bufs = [[0u8; 4]; 3];
    let [x, y, z] = &mut bufs;
    let mut ops = [
        ReadOp::new(0, x, 7),
        ReadOp::new(8, y, 8),
        ReadOp::new(16, z, 9),
    ];
    let at = ops.as_ptr();
    let mut seen = Vec::new();
    let n = b.read_batch_in_order(&mut ops, |op, r| {
        let index = (op as *const ReadOp<'_> as usize - at as usize) / size_of::<ReadOp<'_>>();
        seen.push((index, r));
    });
    assert_eq!(n, 3);
    assert_eq!(
        seen,
        [
            (0, Report::ok(7, 4)),
            (1, Report::failed(8, 1, ReadErrorKind::Io)),
            (2, Report::ok(9, 4)),
        ]
    );
    assert_eq!(bufs, [[0, 1, 2, 3], [8, 0, 0, 0], [16, 17, 18, 19]]);
}

#[test]
fn scattered_reads_stop_at_the_first_fault() {
    let mem: [u8; 32] = core::array::from_fn(|i| i as u8);
    let mut b = Faulty::new(MemoryBackend::new(&mem, geometry()));
    b.inject_fault(6..7, ReadErrorKind::Unmapped).unwrap();
    let (mut p, mut q, mut r) = ([0u8; 2], [0u8; 3], [0u8; 2]);
    let mut parts: [&mut [u8]; 3] = [&mut p, &mut q, &mut r];
    let mut ops = [ScatterOp {
        addr: 2,
        parts: &mut parts,
        tag: 5,
    }];
    let mut got = None;
    assert_eq!(b.read_scattered(&mut ops, |rep| got = Some(rep)), 1);
    assert_eq!(got, Some(Report::failed(5, 4, ReadErrorKind::Unmapped)));
    assert_eq!((p, q, r), ([2, 3], [4, 5, 0], [0, 0]));
}
