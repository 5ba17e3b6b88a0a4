//! `decode_hold`: `codec_sv2`'s decoder (7.0.0, `with_buffer_pool`) over the
//! `buffer_sv2` shim of `compat/`, so its frames come out of
//! `buffer_pool::BufferPool`. The stream is a run of frames of any header and
//! of payloads up to two 64 KiB chunks long (read a chunk at a time, so one
//! frame takes several `get_writable` calls), then raw bytes; it reaches the
//! decoder in the reads the decoder asks for. Each decoded frame is dropped
//! at once, held on this thread and released in random order, or held on
//! another thread for a random time.
//!
//! The decoder must hand out exactly the frames a reference parser finds in
//! the stream, in order, and every held frame must keep its bytes (header and
//! payload) until it is dropped, whatever is decoded meanwhile.
//!
//! ```text
//! cd fuzz && cargo +nightly fuzz run decode_hold corpus/decode_hold -- -max_total_time=30
//! ```
#![no_main]

use arbitrary::Arbitrary;
use buffer_pool::Slice;
use codec_sv2::{Decoded, Decoder};
use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;
use std::sync::mpsc::{self, Sender};
use std::thread;
use std::time::{Duration, Instant};

#[path = "common/holder.rs"]
mod holder;
use holder::{Cmd, worker};

/// The Stratum V2 frame header: extension type (2), message type (1),
/// payload length (3, little endian).
const HEADER: usize = 6;
/// The most frames a run decodes, held or not.
const MAX_FRAMES: usize = 48;
/// The most frames held on this thread at once.
const MAX_HELD: usize = 16;

#[derive(Arbitrary, Debug)]
struct Input {
    frames: Vec<FrameSpec>,
    /// Appended after the frames: more frames, or one whose declared length
    /// runs past the end of the stream.
    tail: Vec<u8>,
    /// What happens to the frames the tail holds, by frame index.
    tail_to: Vec<(u8, u16)>,
}

#[derive(Arbitrary, Debug)]
struct FrameSpec {
    extension_type: u16,
    msg_type: u8,
    /// Payload length, plus 65,535 (one chunk) when `long`.
    len: u16,
    long: bool,
    fill: u8,
    /// 0: dropped at once; 1: held here; 2: held on another thread.
    to: u8,
    /// Held here: which held frame to release; on another thread: how many
    /// µs (mod 1000) it is held.
    hold: u16,
}

impl FrameSpec {
    fn bytes(&self, index: usize) -> Vec<u8> {
        let len = usize::from(self.len) + if self.long { 65_535 } else { 0 };
        let mut frame = Vec::with_capacity(HEADER + len);
        frame.extend_from_slice(&self.extension_type.to_le_bytes());
        frame.push(self.msg_type);
        frame.extend_from_slice(&(len as u32).to_le_bytes()[..3]);
        frame.extend((0..len).map(|k| self.fill ^ (index as u8) ^ (k as u8).rotate_left(3)));
        frame
    }
}

/// The frames a Stratum V2 stream holds: each is a header and the payload
/// length it declares; the stream ends at the first frame it cuts short.
fn reference_frames(stream: &[u8]) -> Vec<&[u8]> {
    let mut frames = Vec::new();
    let mut rest = stream;
    while let Some(header) = rest.get(..HEADER) {
        let len = u32::from_le_bytes([header[3], header[4], header[5], 0]) as usize;
        let Some(frame) = rest.get(..HEADER + len) else {
            break;
        };
        frames.push(frame);
        rest = &rest[HEADER + len..];
    }
    frames
}

/// One thread that holds frames for a while and checks them as they arrive
/// and when it drops them.
fn holder() -> &'static Sender<Cmd> {
    static HOLDER: OnceLock<Sender<Cmd>> = OnceLock::new();
    HOLDER.get_or_init(|| {
        let (tx, rx) = mpsc::channel();
        thread::spawn(move || worker(rx, "thread"));
        tx
    })
}

/// The frames decoded so far that this thread holds, with their bytes.
struct Held(Vec<(Slice, Vec<u8>)>);

impl Held {
    fn check_all(&self) {
        for (slice, bytes) in &self.0 {
            assert!(slice.as_ref() == &bytes[..], "a held frame changed");
        }
    }

    /// Places a decoded frame as `(to, hold)` says.
    fn place(&mut self, slice: Slice, bytes: Vec<u8>, (to, hold): (u8, u16)) {
        match to % 3 {
            0 => drop(slice),
            1 => {
                self.0.push((slice, bytes));
                if self.0.len() > MAX_HELD || hold % 4 == 0 {
                    let at = usize::from(hold) % self.0.len();
                    let (slice, bytes) = self.0.swap_remove(at);
                    assert!(slice.as_ref() == &bytes[..], "a released frame changed");
                }
            }
            _ => {
                let due = Instant::now() + Duration::from_micros(u64::from(hold % 1000));
                holder()
                    .send(Cmd::Hold(Box::new(slice), bytes, due))
                    .unwrap();
            }
        }
    }
}

/// Reads the next frame from `stream` at `*at`, in the reads the decoder
/// asks for; `None` when the stream ends before a frame is complete.
fn next_frame(decoder: &mut Decoder, stream: &[u8], at: &mut usize) -> Option<Slice> {
    loop {
        match decoder.next_frame() {
            Ok(Decoded::Frame(frame)) => return Some(frame.into_bytes()),
            Ok(Decoded::Incomplete(n)) => {
                let src = stream.get(*at..*at + n)?;
                let dst = decoder.writable();
                assert_eq!(dst.len(), n, "writable() differs from Incomplete's count");
                dst.copy_from_slice(src);
                *at += n;
            }
            Err(e) => panic!("a well-framed stream failed to decode: {e:?}"),
        }
    }
}

fuzz_target!(|input: Input| {
    let mut stream = Vec::new();
    let mut placement = Vec::new();
    for (i, spec) in input.frames.iter().take(MAX_FRAMES).enumerate() {
        stream.extend_from_slice(&spec.bytes(i));
        placement.push((spec.to, spec.hold));
    }
    stream.extend_from_slice(&input.tail);
    let expected = reference_frames(&stream);
    placement.extend(input.tail_to.iter().copied());

    let mut decoder = Decoder::new();
    let (mut at, mut held) = (0, Held(Vec::new()));
    for (i, want) in expected.iter().take(MAX_FRAMES).enumerate() {
        let slice = next_frame(&mut decoder, &stream, &mut at).expect("a complete frame");
        assert!(slice.as_ref() == *want, "frame {i} decoded wrong");
        let to = placement.get(i).copied().unwrap_or((0, 0));
        held.place(slice, want.to_vec(), to);
        held.check_all();
    }
    if expected.len() <= MAX_FRAMES {
        assert!(
            next_frame(&mut decoder, &stream, &mut at).is_none(),
            "a frame decoded past the stream's last one"
        );
    }
    held.check_all();
    drop(held);
    let (ack, done) = mpsc::channel();
    holder().send(Cmd::Flush(ack)).unwrap();
    done.recv().unwrap();
});
