//! `Write for &mut [u8]` and `FixedBuffer` against `std::io::Write for &mut [u8]`
//! and a `Vec<u8>` model, on fuzz-chosen sink sizes and write sequences.
#![no_main]

use io_traits::{Buffer, FixedBuffer, Write};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: (u8, Vec<(bool, Vec<u8>)>)| {
    let (size, ops) = input;
    let size = usize::from(size);
    let mut ours_storage = vec![0u8; size];
    let mut std_storage = vec![0u8; size];
    let mut ours: &mut [u8] = &mut ours_storage;
    let mut theirs: &mut [u8] = &mut std_storage;
    let mut fixed = FixedBuffer::<64>::new();
    let mut model = Vec::new();
    for (all, bytes) in &ops {
        if *all {
            let a = Write::write_all(&mut ours, bytes).is_ok();
            let b = std::io::Write::write_all(&mut theirs, bytes).is_ok();
            assert_eq!(a, b, "write_all outcome differs from std");
        } else {
            let a = Write::write(&mut ours, bytes).expect("slice write never fails");
            let b = std::io::Write::write(&mut theirs, bytes).expect("std slice write never fails");
            assert_eq!(a, b, "write count differs from std");
        }
        assert_eq!(ours.len(), theirs.len());
        match fixed.try_get_writable(bytes.len()) {
            Ok(dst) => {
                dst.copy_from_slice(bytes);
                model.extend_from_slice(bytes);
            }
            Err(_) => assert!(
                model.len() + bytes.len() > 64,
                "fixed buffer refused a fitting write"
            ),
        }
        assert_eq!(fixed.get_data_by_ref_(usize::MAX), &model[..]);
    }
    assert_eq!(ours_storage, std_storage);
    assert_eq!(fixed.get_data_owned().as_slice(), &model[..]);
    assert!(fixed.is_empty());
});
