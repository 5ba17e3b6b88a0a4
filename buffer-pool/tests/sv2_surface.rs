//! The parts of the API that code written for `buffer_sv2` names: the
//! fallback as `BufferPool`'s first type parameter, `Slice: From<Vec<u8>>`,
//! and `AeadBuffer` for both pools, which AEAD ciphers encrypt and decrypt
//! in place in.
#![cfg(not(loom))]
#![allow(
    clippy::std_instead_of_core,
    clippy::std_instead_of_alloc,
    reason = "tests use std"
)]

use buffer_pool::{
    AeadBuffer, Buffer, BufferFromSystemMemory, BufferPool, PoolMode, PoolStorage, Slice,
};

#[test]
fn the_fallback_is_the_first_type_parameter() {
    let mut pool = BufferPool::<BufferFromSystemMemory>::new(8);
    pool.get_writable(3).copy_from_slice(b"abc");
    let a: Slice = pool.get_data_owned();
    assert!(a.is_pooled());
    // The slot map width comes second.
    let mut wide = BufferPool::<BufferFromSystemMemory, u16>::with_slot_map(16);
    let held: Vec<Slice<u16>> = (0..16u8)
        .map(|i| {
            wide.get_writable(1)[0] = i;
            wide.get_data_owned()
        })
        .collect();
    assert!(held.iter().all(Slice::is_pooled));
    wide.get_writable(1);
    assert_eq!(
        wide.mode(),
        PoolMode::Alloc,
        "a seventeenth slice has no slot"
    );
}

#[test]
fn a_vector_converts_into_a_slice_of_its_length() {
    let slice: Slice = vec![7u8; 300].into();
    assert_eq!(slice.len(), 300);
    assert!(!slice.is_pooled());
    assert_eq!(slice.as_ref(), &[7u8; 300][..]);
    let empty: Slice = Vec::new().into();
    assert!(empty.is_empty());
}

/// What an AEAD cipher does to a buffer when it seals a message in place:
/// reads and writes the view, then appends the tag.
fn seal(buf: &mut impl AeadBuffer, tag: &[u8]) {
    for b in buf.as_mut() {
        *b ^= 0x5a;
    }
    buf.extend_from_slice(tag).unwrap();
}

/// And when it opens one: splits the tag off the view, checks it, and
/// truncates it away.
fn open(buf: &mut impl AeadBuffer, tag_len: usize) -> Vec<u8> {
    let at = AeadBuffer::len(buf) - tag_len;
    let tag = buf.as_ref()[at..].to_vec();
    for b in &mut buf.as_mut()[..at] {
        *b ^= 0x5a;
    }
    buf.truncate(at);
    tag
}

#[test]
fn ciphers_work_in_place_on_the_view_after_the_start() {
    let mut pool = BufferPool::new(64);
    // A header the cipher must not touch, then the payload.
    pool.get_writable(2).copy_from_slice(b"HD");
    pool.get_writable(5).copy_from_slice(b"hello");
    pool.danger_set_start(2);
    seal(&mut pool, b"TAG");
    assert_eq!(AeadBuffer::len(&pool), 8);
    assert_eq!(Buffer::len(&pool), 10);
    assert_eq!(&pool.get_data_by_ref_(10)[..2], b"HD");
    assert_eq!(open(&mut pool, 3), b"TAG");
    assert_eq!(pool.as_ref(), b"hello");
    pool.danger_set_start(0);
    let message = pool.get_data_owned();
    assert_eq!(message.as_ref(), b"HDhello");
    assert!(message.is_pooled());
}

#[test]
fn truncating_past_the_end_changes_nothing_and_to_zero_lends_nothing() {
    let mut pool = BufferPool::new(16);
    pool.get_writable(4).copy_from_slice(b"abcd");
    AeadBuffer::truncate(&mut pool, 100);
    assert_eq!(pool.as_ref(), b"abcd");
    AeadBuffer::truncate(&mut pool, 0);
    assert!(Buffer::is_empty(&pool));
    let empty = pool.get_data_owned();
    assert!(empty.is_empty() && !empty.is_pooled());
    // No slot was taken: all eight are still free, and the bytes are reused.
    let held: Vec<Slice> = (0..8)
        .map(|_| {
            pool.get_writable(2);
            pool.get_data_owned()
        })
        .collect();
    assert!(held.iter().all(Slice::is_pooled));
}

#[test]
fn ciphers_work_on_messages_in_system_memory() {
    let mut pool = BufferPool::new(4);
    pool.get_writable(6).copy_from_slice(b"header");
    assert_eq!(pool.mode(), PoolMode::Alloc);
    seal(&mut pool, b"T");
    assert_eq!(open(&mut pool, 1), b"T");
    let message = pool.get_data_owned();
    assert_eq!(
        (message.as_ref(), message.is_pooled()),
        (&b"header"[..], false)
    );
}

#[test]
fn a_full_static_pool_refuses_the_tag() {
    static STORAGE: PoolStorage<8> = PoolStorage::new();
    let mut pool = STORAGE.pool().unwrap();
    pool.try_get_writable(6).unwrap().copy_from_slice(b"secret");
    assert!(AeadBuffer::extend_from_slice(&mut pool, b"TAG").is_err());
    assert_eq!(pool.as_ref(), b"secret", "a refused tag changes nothing");
    seal(&mut pool, b"TG");
    assert_eq!(open(&mut pool, 2), b"TG");
    assert_eq!(pool.get_data_owned().as_ref(), b"secret");
}
