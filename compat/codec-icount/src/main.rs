//! Replays the timed region of one of codec_sv2 7.0.0's benchmarks `iters`
//! times: `codec-icount <path> <iters>`. Each region is a function of its
//! own (`timed_*`, never inlined) holding exactly what the benchmark times,
//! so that `valgrind --tool=callgrind --toggle-collect='codec_icount::timed_*'`
//! counts it and nothing of the untimed setup. Prints the heap allocations
//! the regions made, per region, as the benchmark's own allocator counts them
//! (alloc and realloc).

// The loops are the benchmarks', as written there.
#![allow(clippy::drop_non_drop)]

use codec_sv2::{Decoded, Decoder, Encoder};
use framing_sv2::framing::{EncodableFrame, MessageFrame};
use std::alloc::{GlobalAlloc, Layout, System};
use std::collections::VecDeque;
use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};

// codec_sv2's `benches/common.rs`, copied in by codec-icount.sh (so not
// here for rustfmt to find).
#[allow(dead_code)]
#[rustfmt::skip]
mod common;

use common::{acquire_frame, make_encoded_frame, OwnedMsg, Slice, TestMsg, ZeroCopyMsg};

type DecodedFrame = framing_sv2::framing::SerializedFrame<Slice>;

static ALLOCS: AtomicU64 = AtomicU64::new(0);

struct Counting;

// SAFETY: forwards to `System`, counting calls.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: the caller's contract, passed on.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract, passed on.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: the caller's contract, passed on.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Allocations made by `f`.
fn counted<R>(allocs: &mut u64, f: impl FnOnce() -> R) -> R {
    let before = ALLOCS.load(Ordering::Relaxed);
    let r = f();
    *allocs += ALLOCS.load(Ordering::Relaxed) - before;
    r
}

fn small_frame() -> Vec<u8> {
    let frame = MessageFrame::<TestMsg>::from_message(TestMsg { data: 7 }, 0, 0, true).unwrap();
    let mut buf = vec![0; frame.encoded_length()];
    frame.encode_into(&mut buf).unwrap();
    buf
}

/// Writes the first read window (the header) into `dec`: the untimed start of
/// `buffer_exhaustion`'s decoder loops. Returns the offset reached.
fn write_header(dec: &mut Decoder, enc: &[u8]) -> usize {
    let w = dec.writable();
    let len = w.len();
    w.copy_from_slice(&enc[..len]);
    len
}

/// `buffer_exhaustion`'s timed decoder loop: from the header on to a frame.
#[inline(never)]
fn timed_decode_rest(dec: &mut Decoder, enc: &[u8], offset: usize) -> DecodedFrame {
    decode_rest(dec, enc, offset)
}

/// From the header on to a frame. (Not `timed_*`: callgrind toggles
/// collection at each entry to such a function, so they must not nest.)
#[inline(always)]
fn decode_rest(dec: &mut Decoder, enc: &[u8], mut offset: usize) -> DecodedFrame {
    loop {
        match dec.next_frame() {
            Ok(Decoded::Frame(f)) => return f,
            Ok(Decoded::Incomplete(_)) => {
                let w = dec.writable();
                let n = w.len();
                w.copy_from_slice(&enc[offset..offset + n]);
                offset += n;
            }
            Err(e) => panic!("decode error: {e:?}"),
        }
    }
}

/// `decoder/plain`: one iteration, the frame dropped inside it.
#[inline(never)]
fn timed_decoder_plain(dec: &mut Decoder, enc: &[u8]) {
    let offset = write_header(dec, enc);
    black_box(decode_rest(dec, enc, offset));
}

/// `buffer_exhaustion`'s `back_mode` over `enc`: a new decoder each time.
fn decoder_back(iters: u64, enc: &[u8], allocs: &mut u64) {
    for _ in 0..iters {
        let mut dec = Decoder::new();
        let offset = write_header(&mut dec, enc);
        let f = counted(allocs, || timed_decode_rest(&mut dec, enc, offset));
        black_box(f);
    }
}

/// `buffer_exhaustion`'s `alloc_mode_*` over `enc`: the ninth frame, eight held.
fn decoder_ninth(iters: u64, enc: &[u8], allocs: &mut u64) {
    for _ in 0..iters {
        let mut dec = Decoder::new();
        let mut held: Vec<_> = (0..8).map(|_| acquire_frame(&mut dec, enc)).collect();
        let offset = write_header(&mut dec, enc);
        held.push(counted(allocs, || timed_decode_rest(&mut dec, enc, offset)));
        drop(held);
    }
}

type TestFrame = MessageFrame<TestMsg>;

fn test_frame(data: u8) -> TestFrame {
    MessageFrame::from_message(TestMsg { data }, 0, 0, true).unwrap()
}

#[inline(never)]
fn timed_encode(enc: &mut Encoder, frame: TestFrame) -> Slice {
    enc.encode(black_box(frame)).unwrap()
}

/// `encoder/pool_exhaustion/*`: a new encoder, `held` frames held, one timed.
fn encoder_after(iters: u64, held: u8, recover: bool, allocs: &mut u64) {
    for _ in 0..iters {
        let mut enc = Encoder::new();
        let pre: Vec<_> = (0..held).map(|i| encode_untimed(&mut enc, i)).collect();
        if recover {
            drop(encode_untimed(&mut enc, 99));
            drop(pre);
            let frame = test_frame(1);
            black_box(counted(allocs, || timed_encode(&mut enc, frame)));
        } else {
            let frame = test_frame(42);
            black_box(counted(allocs, || timed_encode(&mut enc, frame)));
            drop(pre);
        }
    }
}

fn encode_untimed(enc: &mut Encoder, data: u8) -> Slice {
    enc.encode(test_frame(data)).unwrap()
}

/// `pool_lifecycle/throughput/zc_hold`: `n` frames decoded and held.
#[inline(never)]
fn timed_zc_hold(dec: &mut Decoder, enc: &[u8], n: usize, held: &mut Vec<DecodedFrame>) {
    for _ in 0..n {
        let mut frame = acquire_frame(dec, enc);
        let msg: ZeroCopyMsg<'_> = binary_sv2::from_bytes(frame.payload()).unwrap();
        black_box(&msg);
        drop(msg);
        held.push(frame);
    }
}

/// `pool_lifecycle/throughput/owned_release`: `n` frames decoded, copied, dropped.
#[inline(never)]
fn timed_owned_release(dec: &mut Decoder, enc: &[u8], n: usize, held: &mut Vec<OwnedMsg>) {
    for _ in 0..n {
        let mut frame = acquire_frame(dec, enc);
        let msg: ZeroCopyMsg<'_> = binary_sv2::from_bytes(frame.payload()).unwrap();
        let owned = OwnedMsg::from_zc(msg);
        drop(frame);
        held.push(owned);
    }
}

fn throughput(iters: u64, n: usize, owned: bool, allocs: &mut u64) {
    let enc = make_encoded_frame(64);
    for _ in 0..iters {
        let mut dec = Decoder::new();
        if owned {
            let mut held = Vec::with_capacity(n);
            counted(allocs, || timed_owned_release(&mut dec, &enc, n, &mut held));
            black_box(&held);
        } else {
            let mut held = Vec::with_capacity(n);
            counted(allocs, || timed_zc_hold(&mut dec, &enc, n, &mut held));
        }
    }
}

/// `pool_lifecycle/sliding_window/zc`: one frame into a window of `k`.
#[inline(never)]
fn timed_window_frame(dec: &mut Decoder, enc: &[u8]) -> DecodedFrame {
    let mut frame = acquire_frame(black_box(dec), enc);
    let msg: ZeroCopyMsg<'_> = binary_sv2::from_bytes(frame.payload()).unwrap();
    black_box(&msg);
    drop(msg);
    frame
}

/// 200 frames through a window of `k`, as one benchmark iteration does.
fn sliding_window(iters: u64, k: usize, allocs: &mut u64) {
    let enc = make_encoded_frame(64);
    for _ in 0..iters {
        let mut dec = Decoder::new();
        let mut window: VecDeque<DecodedFrame> = VecDeque::with_capacity(k + 1);
        for _ in 0..k {
            window.push_back(acquire_frame(&mut dec, &enc));
        }
        for _ in 0..200 {
            if window.len() >= k {
                window.pop_front();
            }
            window.push_back(counted(allocs, || timed_window_frame(&mut dec, &enc)));
        }
    }
}

/// `decoder/plain`: one decoder for all iterations.
fn decoder_plain(iters: u64, allocs: &mut u64) {
    let enc = small_frame();
    let mut dec = Decoder::new();
    for _ in 0..iters {
        counted(allocs, || timed_decoder_plain(&mut dec, &enc));
    }
}

/// How many timed regions one iteration of `path` runs, and the run.
fn run(path: &str, iters: u64, allocs: &mut u64) -> Option<u64> {
    let small = small_frame();
    let large = make_encoded_frame(64);
    let per_iter = match path {
        "decoder/plain" => {
            decoder_plain(iters, allocs);
            1
        }
        "decoder/pool_exhaustion/back_mode" => {
            decoder_back(iters, &small, allocs);
            1
        }
        "decoder/pool_exhaustion/alloc_mode_after_pool_exhausted" => {
            decoder_ninth(iters, &small, allocs);
            1
        }
        "decoder/zerocopy_pool_exhaustion/back_mode" => {
            decoder_back(iters, &large, allocs);
            1
        }
        "decoder/zerocopy_pool_exhaustion/alloc_mode_8_zc_frames_held" => {
            decoder_ninth(iters, &large, allocs);
            1
        }
        "encoder/pool_exhaustion/back_mode" => {
            encoder_after(iters, 0, false, allocs);
            1
        }
        "encoder/pool_exhaustion/alloc_mode_after_pool_exhausted" => {
            encoder_after(iters, 8, false, allocs);
            1
        }
        "encoder/pool_exhaustion/recovery_after_full_release" => {
            encoder_after(iters, 8, true, allocs);
            1
        }
        "pool_lifecycle/sliding_window/zc/window_size/8" => {
            sliding_window(iters, 8, allocs);
            200
        }
        _ => {
            let (owned, n) = if let Some(n) =
                path.strip_prefix("pool_lifecycle/throughput/zc_hold/total_messages/")
            {
                (false, n)
            } else {
                let n =
                    path.strip_prefix("pool_lifecycle/throughput/owned_release/total_messages/")?;
                (true, n)
            };
            let n = n.parse().ok()?;
            throughput(iters, n, owned, allocs);
            1
        }
    };
    Some(per_iter)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(path), Some(iters)) = (args.get(1), args.get(2).and_then(|s| s.parse().ok())) else {
        eprintln!("usage: codec-icount <benchmark path> <iterations>");
        std::process::exit(2);
    };
    let mut allocs = 0;
    let Some(per_iter) = run(path, iters, &mut allocs) else {
        eprintln!("codec-icount: no replay of {path}");
        std::process::exit(2);
    };
    println!("regions {} allocs {}", iters * per_iter, allocs);
}
