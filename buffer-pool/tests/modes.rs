//! The seed's mode examples and the edge cases of the issue, through the
//! public API only.
#![cfg(not(loom))]
#![allow(
    clippy::std_instead_of_core,
    clippy::std_instead_of_alloc,
    reason = "tests use std"
)]

use buffer_pool::{
    Buffer, BufferError, BufferFromSystemMemory, BufferPool, PoolMode, PoolStorage, Slice, SlotMap,
};
use std::collections::VecDeque;

/// Writes `bytes` one `get_writable` per byte and hands the message out.
fn message<M: SlotMap>(pool: &mut BufferPool<BufferFromSystemMemory, M>, bytes: &[u8]) -> Slice<M> {
    for &b in bytes {
        pool.get_writable(1)[0] = b;
    }
    let slice = pool.get_data_owned();
    assert_eq!(
        slice.as_ref(),
        bytes,
        "handed-out bytes differ from written"
    );
    assert_eq!(slice.len(), bytes.len());
    slice
}

/// Five distinct bytes for message number `n`.
fn five(n: usize) -> [u8; 5] {
    let b = (n as u8).wrapping_mul(5);
    [b, b + 1, b + 2, b + 3, b.wrapping_add(4)]
}

/// Asserts every held slice still holds the bytes it was written with.
fn assert_intact(held: &VecDeque<(Slice, [u8; 5])>) {
    for (slice, bytes) in held {
        assert_eq!(slice.as_ref(), bytes, "a live slice changed");
    }
}

/// Eight 5-byte messages in Back mode, filling a 40-byte pool.
fn fill_back(pool: &mut BufferPool, held: &mut VecDeque<(Slice, [u8; 5])>, first: usize) {
    for n in first..first + 8 {
        let s = message(pool, &five(n));
        assert_eq!(pool.mode(), PoolMode::Back, "message {n}");
        assert!(s.is_pooled());
        held.push_back((s, five(n)));
    }
    assert_intact(held);
}

#[test]
fn forty_bytes_eight_messages_in_back_mode() {
    let mut pool = BufferPool::new(40);
    let mut held = VecDeque::new();
    fill_back(&mut pool, &mut held, 0);
    assert!(pool.is_back_mode() && !pool.is_front_mode() && !pool.is_alloc_mode());
}

#[test]
fn back_front_back() {
    let mut pool = BufferPool::new(40);
    let mut held = VecDeque::new();
    fill_back(&mut pool, &mut held, 0);
    // Drop the three oldest: the next three go to the front.
    held.drain(..3);
    for n in 8..11 {
        let s = message(&mut pool, &five(n));
        assert!(pool.is_front_mode(), "message {n}");
        assert!(s.is_pooled());
        held.push_front((s, five(n)));
    }
    assert_intact(&held);
    // Drop the three newest back-mode slices: the tail frees up, back again.
    held.drain(held.len() - 3..);
    for n in 11..14 {
        let s = message(&mut pool, &five(n));
        assert!(pool.is_back_mode(), "message {n}");
        assert!(s.is_pooled());
        held.push_back((s, five(n)));
    }
    assert_intact(&held);
}

#[test]
fn back_front_alloc() {
    let mut pool = BufferPool::new(40);
    let mut held = VecDeque::new();
    fill_back(&mut pool, &mut held, 0);
    held.drain(..3);
    for n in 8..11 {
        let s = message(&mut pool, &five(n));
        held.push_front((s, five(n)));
    }
    assert!(pool.is_front_mode());
    // Eight slices are out: every further message is system memory.
    for n in 11..41 {
        let s = message(&mut pool, &five(n));
        assert!(pool.is_alloc_mode(), "message {n}");
        assert!(!s.is_pooled());
        held.push_back((s, five(n)));
    }
    assert_intact(&held);
}

#[test]
fn back_alloc_back() {
    let mut pool = BufferPool::new(40);
    let mut held = VecDeque::new();
    fill_back(&mut pool, &mut held, 0);
    for n in 8..38 {
        let s = message(&mut pool, &five(n));
        assert!(pool.is_alloc_mode());
        held.push_front((s, five(n)));
    }
    // Free the three newest pooled slices (the back of the deque).
    held.drain(held.len() - 3..);
    for n in 38..41 {
        let s = message(&mut pool, &five(n));
        assert!(pool.is_back_mode(), "message {n}");
        assert!(s.is_pooled());
        held.push_back((s, five(n)));
    }
    assert_intact(&held);
}

#[test]
fn back_alloc_front() {
    let mut pool = BufferPool::new(40);
    let mut held = VecDeque::new();
    fill_back(&mut pool, &mut held, 0);
    for n in 8..38 {
        let s = message(&mut pool, &five(n));
        assert!(pool.is_alloc_mode());
        held.push_back((s, five(n)));
    }
    // Free the three oldest (pooled) slices.
    held.drain(..3);
    for n in 38..41 {
        let s = message(&mut pool, &five(n));
        assert!(pool.is_front_mode(), "message {n}");
        assert!(s.is_pooled());
        held.push_back((s, five(n)));
    }
    assert_intact(&held);
}

#[test]
fn eight_bytes_one_byte_messages() {
    let mut pool = BufferPool::new(8);
    let mut held = VecDeque::new();
    for n in 0..4u8 {
        held.push_back((message(&mut pool, &[n]), n));
        assert!(pool.is_back_mode());
    }
    held.pop_front();
    held.push_back((message(&mut pool, &[4]), 4));
    assert!(pool.is_back_mode());
    let mut modes = Vec::new();
    for n in 5..9u8 {
        held.push_back((message(&mut pool, &[n]), n));
        modes.push(pool.mode());
    }
    assert_eq!(
        modes,
        [
            PoolMode::Back,
            PoolMode::Back,
            PoolMode::Back,
            PoolMode::Front
        ]
    );
    let s = message(&mut pool, &[9]);
    assert!(pool.is_alloc_mode() && !s.is_pooled());
    for (slice, n) in &held {
        assert_eq!(slice.as_ref(), &[*n]);
        assert!(slice.is_pooled());
    }
}

/// The seed README's case 2: all slices dropped resets to the start.
#[test]
fn dropping_everything_resets_to_back_mode() {
    let mut pool = BufferPool::new(40);
    let mut held = VecDeque::new();
    fill_back(&mut pool, &mut held, 0);
    for n in 8..20 {
        let _alloc = message(&mut pool, &five(n));
        assert!(pool.is_alloc_mode());
    }
    held.clear();
    let s = message(&mut pool, &[7; 40]);
    assert!(pool.is_back_mode() && s.is_pooled());
}

/// The seed README's case 3: back until full, front into the freed head,
/// back again when the tail frees up.
#[test]
fn readme_case_three() {
    let mut pool = BufferPool::new(40);
    let mut held = VecDeque::new();
    fill_back(&mut pool, &mut held, 0);
    // --345678
    held.pop_front();
    held.pop_front();
    for n in 8..10 {
        held.push_back((message(&mut pool, &five(n)), five(n)));
        assert!(pool.is_front_mode());
    }
    // 9a3456-- : drop 7 and 8 (indices 4 and 5 of [3..8, 9, a]).
    held.remove(5);
    held.remove(4);
    for n in 10..12 {
        held.push_back((message(&mut pool, &five(n)), five(n)));
        assert!(pool.is_back_mode());
    }
    assert_intact(&held);
    assert!(held.iter().all(|(s, _)| s.is_pooled()));
}

#[test]
fn capacity_zero_serves_everything_from_system_memory() {
    let mut pool = BufferPool::new(0);
    assert_eq!(pool.capacity(), 0);
    let s = message(&mut pool, b"abc");
    assert!(!s.is_pooled() && pool.is_alloc_mode());
    let empty = pool.get_data_owned();
    assert!(empty.is_empty() && !empty.is_pooled());
    assert!(pool.get_writable(0).is_empty());
}

#[test]
fn capacity_one() {
    let mut pool = BufferPool::new(1);
    let a = message(&mut pool, b"a");
    assert!(a.is_pooled() && pool.is_back_mode());
    let b = message(&mut pool, b"b");
    assert!(!b.is_pooled() && pool.is_alloc_mode());
    drop(a);
    let c = message(&mut pool, b"c");
    assert!(c.is_pooled() && pool.is_back_mode());
    let d = message(&mut pool, b"dd");
    assert!(!d.is_pooled());
    assert_eq!(
        (b.as_ref(), c.as_ref(), d.as_ref()),
        (&b"b"[..], &b"c"[..], &b"dd"[..])
    );
}

#[test]
fn message_longer_than_capacity_is_not_sticky() {
    let mut pool = BufferPool::new(16);
    // Starts in the pool, outgrows it, moves to system memory with its bytes.
    let long: Vec<u8> = (0..40).collect();
    let s = message(&mut pool, &long);
    assert!(!s.is_pooled() && pool.is_alloc_mode());
    let fits = message(&mut pool, &[9; 16]);
    assert!(fits.is_pooled() && pool.is_back_mode());
    assert_eq!(s.as_ref(), &long[..]);
}

#[test]
fn growing_message_moves_to_the_front_with_its_bytes() {
    let mut pool = BufferPool::new(20);
    let a = message(&mut pool, &[1; 12]);
    let b = message(&mut pool, &[2; 4]);
    drop(a);
    // 4 bytes left at the back, enough for a message like the last one: the
    // message starts there, then needs 6 and moves to the 12 at the front.
    pool.get_writable(3).copy_from_slice(b"xyz");
    assert!(pool.is_back_mode());
    pool.get_writable(3).copy_from_slice(b"uvw");
    assert!(pool.is_front_mode());
    assert_eq!(pool.get_data_by_ref_(usize::MAX), b"xyzuvw");
    let c = pool.get_data_owned();
    assert!(c.is_pooled());
    assert_eq!((b.as_ref(), c.as_ref()), (&[2; 4][..], &b"xyzuvw"[..]));
}

/// A message that grows into space freed just before it moves down over
/// itself, a byte at a time here, and keeps its bytes.
#[test]
fn growing_message_moves_down_over_itself() {
    let mut pool = BufferPool::new(10);
    let a = message(&mut pool, &[1; 4]);
    let b = message(&mut pool, &[2]);
    // Bytes 5..10: the whole back region.
    pool.get_writable(5).copy_from_slice(b"abcde");
    drop(b);
    // One more byte fits only from byte 4 on, which overlaps the message.
    pool.get_writable(1)[0] = b'f';
    assert!(pool.is_back_mode());
    let c = pool.get_data_owned();
    assert!(c.is_pooled());
    assert_eq!((a.as_ref(), c.as_ref()), (&[1; 4][..], &b"abcdef"[..]));
    // The next message starts after `c`: it was recorded at bytes 4..10.
    pool.get_writable(1);
    assert!(pool.is_alloc_mode());
}

/// A new message goes where one as long as the last message fits, so a run
/// of similar messages is not started in a gap too small for it.
#[test]
fn new_messages_are_placed_by_the_last_length() {
    let mut pool = BufferPool::new(20);
    let a = message(&mut pool, &[1; 12]);
    let b = message(&mut pool, &[2; 6]);
    drop(a);
    // 2 bytes at the back, 12 at the front; the last message had 6 bytes.
    pool.get_writable(1)[0] = 7;
    assert!(pool.is_front_mode());
    let c = pool.get_data_owned();
    assert!(c.is_pooled());
    assert_eq!((b.as_ref(), c.as_ref()), (&[2; 6][..], &[7][..]));
}

#[test]
fn ninth_live_slice_comes_from_system_memory() {
    let mut pool = BufferPool::new(1024);
    let held: Vec<_> = (0..8u8).map(|n| message(&mut pool, &[n; 3])).collect();
    let ninth = message(&mut pool, &[8; 3]);
    assert!(!ninth.is_pooled() && pool.is_alloc_mode());
    drop(held);
    assert!(message(&mut pool, &[0; 3]).is_pooled());
}

#[test]
fn wide_slot_maps_lend_one_slice_per_bit() {
    fn lend_all<M: SlotMap>(slots: usize) {
        let mut pool = BufferPool::<_, M>::with_slot_map(slots * 2);
        let held: Vec<_> = (0..slots)
            .map(|n| message(&mut pool, &[n as u8, 1]))
            .collect();
        assert!(held.iter().all(Slice::is_pooled));
        let extra = message(&mut pool, &[0, 0]);
        assert!(!extra.is_pooled());
        for (n, s) in held.iter().enumerate() {
            assert_eq!(s.as_ref(), &[n as u8, 1]);
        }
    }
    lend_all::<u8>(8);
    lend_all::<u16>(16);
    lend_all::<u32>(32);
    lend_all::<u64>(64);
}

#[test]
fn huge_len_is_an_error_and_changes_nothing() {
    let mut pool = BufferPool::new(64);
    pool.get_writable(2).copy_from_slice(b"ok");
    assert_eq!(
        pool.try_get_writable(usize::MAX),
        Err(BufferError::OutOfMemory)
    );
    assert_eq!(
        pool.try_get_writable(usize::MAX - 1),
        Err(BufferError::OutOfMemory)
    );
    assert_eq!(pool.len(), 2);
    pool.get_writable(1).copy_from_slice(b"!");
    assert_eq!(pool.get_data_owned().as_ref(), b"ok!");
    // In system memory too.
    pool.get_writable(65);
    assert!(pool.is_alloc_mode());
    assert_eq!(
        pool.try_get_writable(isize::MAX as usize),
        Err(BufferError::OutOfMemory)
    );
    assert_eq!(pool.len(), 65);
}

#[test]
#[should_panic(expected = "BufferPool::get_writable")]
fn get_writable_panics_where_documented() {
    let mut pool = BufferPool::new(8);
    pool.get_writable(1);
    pool.get_writable(usize::MAX);
}

#[test]
fn buffer_trait_views() {
    let mut pool = BufferPool::new(32);
    assert!(pool.is_empty() && pool.is_droppable());
    pool.get_writable(5).copy_from_slice(b"hello");
    assert_eq!(pool.get_data_by_ref(3), b"hel");
    assert_eq!(pool.get_data_by_ref_(99), b"hello");
    pool.get_data_by_ref(1)[0] = b'j';
    pool.danger_set_start(2);
    assert_eq!(pool.as_ref(), b"llo");
    pool.as_mut()[0] = b'L';
    pool.danger_set_start(9);
    assert!(pool.as_ref().is_empty());
    let s = pool.get_data_owned();
    assert_eq!(s.as_ref(), b"jeLlo");
    // get_data_owned resets the start.
    pool.get_writable(2).copy_from_slice(b"ab");
    assert_eq!(pool.as_ref(), b"ab");
}

#[test]
fn slices_outlive_the_pool_and_drop_anywhere() {
    let mut pool = BufferPool::new(64);
    let a = message(&mut pool, b"first");
    let b = message(&mut pool, b"second");
    drop(pool);
    assert_eq!(a.as_ref(), b"first");
    let t = std::thread::spawn(move || {
        assert_eq!(b.as_ref(), b"second");
    });
    t.join().unwrap();
    drop(a);
}

#[test]
fn slices_are_writable_and_independent() {
    let mut pool = BufferPool::new(16);
    let mut a = message(&mut pool, b"aaaa");
    let b = message(&mut pool, b"bbbb");
    a.as_mut().copy_from_slice(b"AAAA");
    a[1] = b'z';
    assert_eq!((a.as_ref(), b.as_ref()), (&b"AzAA"[..], &b"bbbb"[..]));
    assert_eq!(format!("{a:?}"), "Slice { len: 4, pooled: true, .. }");
}

#[test]
fn static_storage_full_is_an_error() {
    static STORAGE: PoolStorage<16> = PoolStorage::new();
    let mut pool = STORAGE.pool().unwrap();
    assert_eq!(pool.capacity(), 16);
    pool.try_get_writable(10).unwrap().fill(1);
    let a = pool.get_data_owned();
    assert!(a.is_pooled());
    assert_eq!(
        pool.try_get_writable(7),
        Err(BufferError::CapacityExceeded {
            requested: 7,
            available: 6
        })
    );
    assert!(
        pool.is_empty(),
        "a failed call leaves the message unchanged"
    );
    pool.try_get_writable(6).unwrap().fill(2);
    let b = pool.get_data_owned();
    drop(a);
    // 10 free bytes at the front.
    pool.try_get_writable(4).unwrap().fill(3);
    assert!(pool.is_front_mode());
    assert_eq!(
        pool.try_get_writable(7),
        Err(BufferError::CapacityExceeded {
            requested: 7,
            available: 6
        })
    );
    pool.try_get_writable(6).unwrap().fill(3);
    let c = pool.get_data_owned();
    assert!(pool.is_front_mode());
    assert_eq!((b.as_ref(), c.as_ref()), (&[2; 6][..], &[3; 10][..]));
}

#[test]
fn static_storage_ninth_slice_is_an_error() {
    static STORAGE: PoolStorage<64> = PoolStorage::new();
    let mut pool = STORAGE.pool().unwrap();
    let held: Vec<_> = (0..8u8)
        .map(|n| {
            pool.try_get_writable(1).unwrap()[0] = n;
            pool.get_data_owned()
        })
        .collect();
    // 56 of the 64 bytes are free, but all eight slots are lent.
    let err = pool.try_get_writable(1).unwrap_err();
    assert_eq!(err, BufferError::NoFreeSlot);
    assert_eq!(
        err.to_string(),
        "no free slot: every slot is lent to a message still alive"
    );
    assert!(
        pool.is_empty(),
        "a failed call leaves the message unchanged"
    );
    assert!(
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            pool.get_writable(1);
        }))
        .is_err()
    );
    for (n, s) in held.iter().enumerate() {
        assert_eq!(s.as_ref(), &[n as u8]);
    }
}

#[test]
fn static_storage_reclaimed_while_slices_live() {
    static STORAGE: PoolStorage<8, u16> = PoolStorage::new();
    let mut pool = STORAGE.pool().unwrap();
    pool.try_get_writable(4).unwrap().copy_from_slice(b"keep");
    let kept = pool.get_data_owned();
    assert!(STORAGE.pool().is_err());
    drop(pool);
    let mut pool = STORAGE.pool().unwrap();
    // The new pool does not know where `kept` lies: it places nothing yet.
    assert!(pool.try_get_writable(1).is_err());
    assert_eq!(kept.as_ref(), b"keep");
    std::thread::spawn(move || drop(kept)).join().unwrap();
    pool.try_get_writable(8).unwrap().fill(9);
    assert_eq!(pool.get_data_owned().as_ref(), &[9; 8]);
}

#[test]
fn static_storage_of_zero_bytes() {
    static STORAGE: PoolStorage<0> = PoolStorage::new();
    let mut pool = STORAGE.pool().unwrap();
    assert!(pool.try_get_writable(0).unwrap().is_empty());
    assert_eq!(
        pool.try_get_writable(1),
        Err(BufferError::CapacityExceeded {
            requested: 1,
            available: 0
        })
    );
    assert!(pool.get_data_owned().is_empty());
}

/// When every back-mode slice is gone, the front-mode slices become the back
/// group, and the space before them is the new front region.
#[test]
fn front_group_becomes_back_group_when_back_empties() {
    let mut pool = BufferPool::new(12);
    let a = message(&mut pool, &[1; 8]);
    let b = message(&mut pool, &[2; 4]);
    drop(a);
    let d1 = message(&mut pool, &[3; 5]);
    assert!(pool.is_front_mode());
    let d2 = message(&mut pool, &[4; 3]);
    assert!(pool.is_front_mode());
    drop(d1);
    drop(b);
    // d2 (bytes 5..8) is all that is lent: 4 bytes after it, 5 before it.
    let e = message(&mut pool, &[5; 5]);
    assert!(e.is_pooled() && pool.is_front_mode());
    let f = message(&mut pool, &[6; 4]);
    assert!(f.is_pooled() && pool.is_back_mode());
    assert_eq!(
        (d2.as_ref(), e.as_ref(), f.as_ref()),
        (&[4; 3][..], &[5; 5][..], &[6; 4][..])
    );
}

/// A long message in system memory, written in small pieces: it crosses its
/// buffer's capacity many times.
#[test]
fn long_messages_in_system_memory_keep_their_bytes() {
    let mut pool = BufferPool::new(16);
    let long: Vec<u8> = (0..5000u32).map(|i| (i % 251) as u8).collect();
    for chunk in long.chunks(7) {
        pool.get_writable(chunk.len()).copy_from_slice(chunk);
    }
    assert!(pool.is_alloc_mode());
    assert_eq!(pool.get_data_by_ref_(usize::MAX), &long[..]);
    let a = pool.get_data_owned();
    // The next message starts with room for 5000 bytes; it is shorter.
    let shorter = &long[..3000];
    for chunk in shorter.chunks(1000) {
        pool.get_writable(chunk.len()).copy_from_slice(chunk);
    }
    let b = pool.get_data_owned();
    assert!(!a.is_pooled() && !b.is_pooled());
    assert_eq!((a.len(), b.len()), (5000, 3000));
    assert_eq!((a.as_ref(), b.as_ref()), (&long[..], shorter));
}

/// Messages in system memory longer than the part zero-filled at a time
/// (16 KiB): the first grows its buffer many times, the second starts with
/// room for all of it and crosses the zero-filled part (twice, once under
/// Miri); both keep every byte, and every byte handed out in system memory
/// is zeroed.
#[test]
fn system_memory_messages_longer_than_the_zero_step_keep_their_bytes() {
    // Shorter messages (still past one step) and larger pieces under Miri,
    // which runs this slowly.
    let (len, small, large) = if cfg!(miri) {
        (20_000, 61, 97)
    } else {
        (40_000, 7, 13)
    };
    let mut pool = BufferPool::new(16);
    let first: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
    for chunk in first.chunks(small) {
        let bytes = pool.get_writable(chunk.len());
        let zeroed = bytes.iter().all(|&b| b == 0);
        bytes.copy_from_slice(chunk);
        assert!(zeroed || !pool.is_alloc_mode());
    }
    let a = pool.get_data_owned();
    let second: Vec<u8> = (1..len).map(|i| (i % 241) as u8 ^ 0x5a).collect();
    for chunk in second.chunks(large) {
        let bytes = pool.get_writable(chunk.len());
        let zeroed = bytes.iter().all(|&b| b == 0);
        bytes.copy_from_slice(chunk);
        assert!(zeroed || !pool.is_alloc_mode());
    }
    assert!(pool.is_alloc_mode());
    let b = pool.get_data_owned();
    assert!(!a.is_pooled() && !b.is_pooled());
    assert_eq!((a.as_ref(), b.as_ref()), (&first[..], &second[..]));
}
