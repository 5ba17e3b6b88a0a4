//! The scan's lean pass against one pass without branches.

extern crate alloc;

use alloc::vec;
use alloc::vec::Vec;

use proptest::prelude::*;

use super::scan_window;
use crate::ReadOp;

/// The scan as it was made before its lean pass: one pass without
/// branches over every op.
fn scan_reference(
    ops: &[(u64, usize)],
    max_transfer: u64,
    unit: u64,
    gap: u64,
) -> (bool, bool, u64) {
    let (mut one_fragment, mut near, mut bytes) = (true, false, 0u64);
    let mut prev_end = u64::MAX;
    for &(addr, len) in ops {
        let len = len as u64;
        let (end, overflow) = addr.overflowing_add(len);
        one_fragment &= (len.wrapping_sub(1) < max_transfer)
            & !overflow
            & ((addr ^ end.wrapping_sub(1)) & unit == 0);
        near |= addr.wrapping_sub(prev_end) <= gap;
        bytes = bytes.wrapping_add(len);
        prev_end = end;
    }
    (one_fragment, near, bytes)
}

fn scan_ops() -> impl Strategy<Value = Vec<(u64, usize)>> {
    prop::collection::vec(
        (
            0u8..4,
            prop_oneof![
                6 => 0u64..600,
                1 => (u64::MAX - 40)..=u64::MAX,
                1 => any::<u64>(),
            ],
            prop_oneof![4 => 1usize..9, 1 => 0usize..80],
        ),
        0..24,
    )
    .prop_map(|raw| {
        let mut ops: Vec<(u64, usize)> = Vec::new();
        for (mode, addr, len) in raw {
            // Some ops start where the one before ends, or just after.
            let addr = match ops.last() {
                Some(&(a, l)) if mode >= 2 => a.wrapping_add(l as u64 + u64::from(mode - 2) * 3),
                _ => addr,
            };
            ops.push((addr, len));
        }
        ops
    })
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: if cfg!(miri) { 4 } else { 2048 },
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// The scan's lean pass, and its hand-over to the pass without
    /// branches at any op, give what one pass without branches gives:
    /// the same `Scan` (`near` where merging asks for it) and the same
    /// batch, tagged by index.
    #[test]
    fn lean_scan_matches_branchless_scan(
        ops in scan_ops(),
        boundary in prop_oneof![Just(None), (0u32..10).prop_map(|s| Some(1u64 << s))],
        max_transfer in prop_oneof![1u64..70, Just(u64::MAX)],
        gap in prop_oneof![
            Just(None),
            Just(Some(0u64)),
            (1u64..8).prop_map(Some),
            Just(Some(u64::MAX)),
        ],
    ) {
        let unit = !boundary.map_or(u64::MAX, |b| b - 1);
        let mut bufs: Vec<Vec<u8>> = ops.iter().map(|&(_, len)| vec![0; len]).collect();
        let mut window: Vec<ReadOp<'_>> = bufs
            .iter_mut()
            .zip(&ops)
            .map(|(b, &(addr, _))| ReadOp::new(addr, b, 7))
            .collect();
        let mut batch: crate::stack::Stack<ReadOp<'_>, 24> = crate::stack::Stack::new();
        // As `read_direct` picks the lean pass.
        let scan = scan_window(&mut window, &mut batch, max_transfer, unit, gap);
        let (one_fragment, near, bytes) =
            scan_reference(&ops, max_transfer, unit, gap.unwrap_or(0));
        prop_assert_eq!(scan.one_fragment, one_fragment);
        prop_assert_eq!(scan.bytes, bytes);
        if gap.is_some() {
            prop_assert_eq!(scan.near, near);
        }
        let got: Vec<(u64, usize, usize)> =
            batch.iter().map(|op| (op.addr, op.buf.len(), op.tag)).collect();
        let want: Vec<(u64, usize, usize)> =
            ops.iter().enumerate().map(|(i, &(addr, len))| (addr, len, i)).collect();
        prop_assert_eq!(got, want);
    }
}
