//! Every `Buffer` impl against a `Vec<u8>` model of the pending message.

use io_traits::{Buffer, BufferError, BufferFromSystemMemory, FixedBuffer};
use proptest::prelude::*;

/// Operations per case; Miri runs each one far more slowly.
const MAX_OPS: usize = if cfg!(miri) { 8 } else { 32 };

#[derive(Debug, Clone)]
enum Op {
    /// `try_get_writable(len)`, then fill the bytes with `fill`.
    Write { len: usize, fill: u8 },
    /// `get_data_owned()`.
    Take,
    /// `get_data_by_ref(len)` and `get_data_by_ref_(len)`.
    Peek(usize),
    /// `danger_set_start(i)`.
    SetStart(usize),
    /// Overwrite the view from the start through `AsMut`.
    Poke(u8),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0usize..40, any::<u8>()).prop_map(|(len, fill)| Op::Write { len, fill }),
        1 => Just(Op::Take),
        1 => (0usize..100).prop_map(Op::Peek),
        1 => (0usize..100).prop_map(Op::SetStart),
        1 => any::<u8>().prop_map(Op::Poke),
    ]
}

/// Runs `ops` on `buf` and on the model; `limit` is the buffer's fixed
/// capacity, if it has one.
fn check<B>(mut buf: B, limit: Option<usize>, ops: &[Op]) -> Result<(), TestCaseError>
where
    B: Buffer + AsRef<[u8]> + AsMut<[u8]>,
{
    let mut pending: Vec<u8> = Vec::new();
    let mut start = 0usize;
    for op in ops {
        match *op {
            Op::Write { len, fill } => {
                let fits = limit.is_none_or(|n| pending.len() + len <= n);
                match buf.try_get_writable(len) {
                    Ok(bytes) => {
                        prop_assert!(fits);
                        prop_assert_eq!(bytes.len(), len);
                        bytes.fill(fill);
                        pending.extend(core::iter::repeat_n(fill, len));
                    }
                    Err(e) => {
                        prop_assert!(!fits);
                        let available = limit.unwrap() - pending.len();
                        prop_assert_eq!(
                            e,
                            BufferError::CapacityExceeded {
                                requested: len,
                                available
                            }
                        );
                    }
                }
            }
            Op::Take => {
                let slice = buf.get_data_owned();
                prop_assert_eq!(slice.as_ref(), &pending[..]);
                pending.clear();
                start = 0;
            }
            Op::Peek(len) => {
                let n = len.min(pending.len());
                prop_assert_eq!(buf.get_data_by_ref_(len), &pending[..n]);
                prop_assert_eq!(&*buf.get_data_by_ref(len), &pending[..n]);
            }
            Op::SetStart(i) => {
                buf.danger_set_start(i);
                start = i;
            }
            Op::Poke(b) => {
                buf.as_mut().fill(b);
                if start < pending.len() {
                    pending[start..].fill(b);
                }
            }
        }
        prop_assert_eq!(buf.len(), pending.len());
        prop_assert_eq!(buf.is_empty(), pending.is_empty());
        prop_assert_eq!(buf.as_ref(), pending.get(start..).unwrap_or_default());
        prop_assert!(buf.is_droppable());
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: if cfg!(miri) { 3 } else { 512 },
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn fixed_buffer_matches_model(ops in proptest::collection::vec(op(), 0..MAX_OPS)) {
        check(FixedBuffer::<64>::new(), Some(64), &ops)?;
    }

    #[test]
    fn tiny_fixed_buffer_matches_model(ops in proptest::collection::vec(op(), 0..MAX_OPS)) {
        check(FixedBuffer::<1>::new(), Some(1), &ops)?;
        check(FixedBuffer::<0>::new(), Some(0), &ops)?;
    }

    #[test]
    fn system_memory_matches_model(cap in 0usize..64, ops in proptest::collection::vec(op(), 0..MAX_OPS)) {
        check(BufferFromSystemMemory::new(cap), None, &ops)?;
    }
}

#[test]
fn system_memory_honours_initial_capacity() {
    let mut buf = BufferFromSystemMemory::new(4096);
    buf.get_writable(3).copy_from_slice(b"abc");
    let first = buf.get_data_owned();
    assert!(first.capacity() >= 4096);
    buf.get_writable(1);
    assert!(buf.get_data_owned().capacity() >= 4096);
}

#[test]
fn huge_requests_are_errors_not_aborts() {
    let mut buf = BufferFromSystemMemory::new(0);
    assert_eq!(
        buf.try_get_writable(usize::MAX),
        Err(BufferError::OutOfMemory)
    );
    assert!(buf.is_empty());
    let mut fixed = FixedBuffer::<8>::new();
    assert_eq!(
        fixed.try_get_writable(usize::MAX),
        Err(BufferError::CapacityExceeded {
            requested: usize::MAX,
            available: 8
        })
    );
    assert!(fixed.is_empty());
}

#[test]
#[should_panic(expected = "buffer full")]
fn fixed_get_writable_panics_when_full_as_documented() {
    let mut fixed = FixedBuffer::<2>::new();
    fixed.get_writable(3);
}

#[test]
fn slices_are_send() {
    fn assert_send<T: Send>() {}
    assert_send::<<FixedBuffer<8> as Buffer>::Slice>();
    assert_send::<<BufferFromSystemMemory as Buffer>::Slice>();
}

/// A decoder written the way `buffer_sv2`'s users write one: fill a header,
/// read the length from it, fill the body, take the frame.
fn decode_frame<B: Buffer>(buf: &mut B, wire: &mut &[u8]) -> B::Slice {
    let header = buf.get_writable(2);
    header.copy_from_slice(&wire[..2]);
    let body_len = usize::from(u16::from_le_bytes([header[0], header[1]]));
    *wire = &wire[2..];
    buf.get_writable(body_len)
        .copy_from_slice(&wire[..body_len]);
    *wire = &wire[body_len..];
    assert_eq!(buf.len(), 2 + body_len);
    assert_eq!(buf.get_data_by_ref_(2), &(body_len as u16).to_le_bytes());
    buf.get_data_owned()
}

#[test]
fn decoder_pattern_works_with_every_buffer() {
    let wire: &[u8] = &[3, 0, b'a', b'b', b'c', 1, 0, b'z'];
    for take in 0..2 {
        let mut input = wire;
        let frames: Vec<Vec<u8>> = if take == 0 {
            let mut buf = FixedBuffer::<16>::new();
            (0..2)
                .map(|_| decode_frame(&mut buf, &mut input).to_vec())
                .collect()
        } else {
            let mut buf = BufferFromSystemMemory::new(16);
            (0..2).map(|_| decode_frame(&mut buf, &mut input)).collect()
        };
        assert_eq!(frames, [&wire[..5], &wire[5..]]);
        assert!(input.is_empty());
    }
}

#[test]
fn fixed_slice_reads_compares_and_orders_as_its_bytes() {
    use core::hash::{Hash, Hasher};
    use io_traits::FixedSlice;
    use std::collections::hash_map::DefaultHasher;

    let hash = |b: &dyn Fn(&mut DefaultHasher)| {
        let mut h = DefaultHasher::new();
        b(&mut h);
        h.finish()
    };
    let ab = FixedSlice::<4>::try_from(&b"ab"[..]).unwrap();
    let abc = FixedSlice::<8>::try_from(&b"abc"[..]).unwrap();
    assert_eq!(ab.len(), 2);
    assert_eq!(ab.capacity(), 4);
    assert_eq!(ab, *b"ab");
    assert_eq!(ab, &b"ab"[..]);
    assert_ne!(ab, abc);
    assert!(ab < FixedSlice::<4>::try_from(&b"b"[..]).unwrap());
    assert_eq!(hash(&|h| ab.hash(h)), hash(&|h| b"ab"[..].hash(h)));
    assert_eq!(format!("{ab:?}"), format!("{:?}", &b"ab"[..]));
    assert_eq!(ab.iter().copied().collect::<Vec<u8>>(), b"ab");
    assert_eq!(
        FixedSlice::<2>::try_from(&b"abc"[..]),
        Err(BufferError::CapacityExceeded {
            requested: 3,
            available: 2
        })
    );
    assert!(FixedSlice::<0>::new().is_empty());
}

#[test]
fn fixed_buffer_hands_out_zeroed_bytes_after_a_shorter_message() {
    let mut buf = FixedBuffer::<4>::new();
    buf.get_writable(4).copy_from_slice(&[9; 4]);
    let first = buf.get_data_owned();
    assert_eq!(first, [9; 4]);
    assert_eq!(buf.get_writable(3), &[0, 0, 0]);
    assert_eq!(buf.get_data_owned(), [0; 3]);
}
