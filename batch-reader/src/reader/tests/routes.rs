//! Every route against the general one.

extern crate alloc;

use alloc::vec::Vec;

use proptest::prelude::*;

use super::cases::{case, consistent, merging_case, run, run_single, shape, unruly_case};
use crate::backends::MemoryBackend;
use crate::{Geometry, Reader};

proptest! {
    #![proptest_config(ProptestConfig {
        cases: if cfg!(miri) { 3 } else { 512 },
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn direct_route_matches_general_route(c in case()) {
        let mem: Vec<u8> = (0..300u32).map(|i| (i * 7 + 1) as u8).collect();
        prop_assert_eq!(run::<16, 64>(&c, &mem, true), run::<16, 64>(&c, &mem, false));
        prop_assert_eq!(run::<5, 4>(&c, &mem, true), run::<5, 4>(&c, &mem, false));
        prop_assert_eq!(run::<40, 1>(&c, &mem, true), run::<40, 1>(&c, &mem, false));
    }

    #[test]
    fn in_order_route_keeps_one_completion_per_op_on_unruly_backends(c in unruly_case()) {
        // A backend that breaks its promise to report in order gets
        // other results, but every op still has its completions, in op
        // order, as on the general route, and each is consistent.
        let mem: Vec<u8> = (0..300u32).map(|i| (i * 7 + 1) as u8).collect();
        for (direct, general) in [
            (run::<16, 64>(&c, &mem, true), run::<16, 64>(&c, &mem, false)),
            (run::<5, 4>(&c, &mem, true), run::<5, 4>(&c, &mem, false)),
        ] {
            prop_assert_eq!(shape(&direct), shape(&general));
            prop_assert_eq!(
                (direct.1.ops, direct.1.fragments, direct.1.bytes_requested),
                (general.1.ops, general.1.fragments, general.1.bytes_requested)
            );
            prop_assert!(consistent(&direct));
        }
    }

    #[test]
    fn single_op_route_matches_general_route(c in case()) {
        let mem: Vec<u8> = (0..300u32).map(|i| (i * 7 + 1) as u8).collect();
        prop_assert_eq!(run_single(&c, &mem, true), run_single(&c, &mem, false));
    }

    #[test]
    fn scattered_direct_route_matches_general_route(c in merging_case()) {
        let mem: Vec<u8> = (0..300u32).map(|i| (i * 7 + 1) as u8).collect();
        prop_assert_eq!(run::<16, 64>(&c, &mem, true), run::<16, 64>(&c, &mem, false));
        prop_assert_eq!(run::<5, 4>(&c, &mem, true), run::<5, 4>(&c, &mem, false));
    }
}

#[test]
fn the_single_op_route_is_taken() {
    // Guards `single_op_route_matches_general_route` against comparing
    // the general route with itself: a plain op takes the single-op
    // route; one crossing a boundary does nothing there.
    let mem = [1u8; 64];
    let g = Geometry::new(Some(16), 16, 8).expect("valid geometry");
    let mut reader: Reader<_, _> = Reader::new(MemoryBackend::new(&mem, g), [0u8; 0]);
    let mut buf = [0u8; 8];
    let summary = reader.read_one(4, &mut buf).expect("one fragment");
    assert!(summary.is_ok());
    assert_eq!(buf, [1; 8]);
    let mut buf = [0u8; 8];
    assert_eq!(reader.read_one(12, &mut buf), None);
    assert_eq!(reader.read_one(4, &mut []), None);
    assert_eq!(buf, [0; 8]);
    assert_eq!(reader.counters().backend_calls, 1);
}
