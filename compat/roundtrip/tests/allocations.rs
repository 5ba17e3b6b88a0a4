//! Heap allocations per decoded frame, counted by a global allocator as
//! codec_sv2's `pool_lifecycle` benchmark counts them (per thread here, so
//! that tests running beside each other do not count each other's): with the
//! pool (`with_buffer_pool`), decoding a frame allocates nothing while the
//! frames held fit the pool's eight slots, and once (the frame's own bytes)
//! for each frame held past them.
#![cfg(all(feature = "with_buffer_pool", not(feature = "noise_sv2")))]

use codec_sv2::{Decoded, Decoder, Encoder, MessageFrame};
use common_messages_sv2::{SetupConnectionSuccess, MESSAGE_TYPE_SETUP_CONNECTION_SUCCESS};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

struct Counting;

thread_local! {
    /// Allocations and reallocations made by this thread.
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

fn count() {
    ALLOCATIONS.with(|n| n.set(n.get() + 1));
}

// SAFETY: every call is forwarded to `System` with the caller's arguments.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count();
        // SAFETY: delegated to the caller.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: delegated to the caller.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count();
        // SAFETY: delegated to the caller.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn encoded_frame() -> Vec<u8> {
    let message = SetupConnectionSuccess {
        used_version: 2,
        flags: 7,
    };
    let frame =
        MessageFrame::from_message(message, MESSAGE_TYPE_SETUP_CONNECTION_SUCCESS, 0, false)
            .expect("fits");
    let encoded = Encoder::new()
        .encode(frame)
        .expect("encodes")
        .as_ref()
        .to_vec();
    encoded
}

/// Decodes `frames` copies of `wire`, holding the last `held` frames; returns
/// the allocations counted while decoding.
fn allocations_while_decoding(wire: &[u8], frames: usize, held: usize) -> u64 {
    let mut decoder = Decoder::new();
    let mut kept = std::collections::VecDeque::with_capacity(held + 1);
    let before = ALLOCATIONS.with(Cell::get);
    for _ in 0..frames {
        let mut at = 0;
        let frame = loop {
            match decoder.next_frame().expect("decodes") {
                Decoded::Frame(frame) => break frame,
                Decoded::Incomplete(n) => {
                    decoder.writable().copy_from_slice(&wire[at..at + n]);
                    at += n;
                }
            }
        };
        kept.push_back(frame);
        if kept.len() > held {
            drop(kept.pop_front());
        }
    }
    ALLOCATIONS.with(Cell::get) - before
}

#[test]
fn decoding_allocates_nothing_per_frame_while_held_frames_fit_the_slots() {
    let wire = encoded_frame();
    for held in [0, 1, 7] {
        assert_eq!(
            allocations_while_decoding(&wire, 1000, held),
            0,
            "{held} held"
        );
    }
}

#[test]
fn each_frame_held_past_the_slots_allocates_once() {
    let wire = encoded_frame();
    // As pool_lifecycle's zc_hold: every frame stays held. The first eight
    // take the eight slots; each later one is a `Vec` of its own.
    let frames = 100;
    assert_eq!(
        allocations_while_decoding(&wire, frames, frames),
        frames as u64 - 8
    );
}
