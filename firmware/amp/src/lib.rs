//! What the amp firmware's two binaries share: the shared memory at the
//! linker-fixed address of the board's `AMP` memory, carved into the
//! `uring` region and the two stream rings of `amp_proto`, and the stream
//! both ways.
//!
//! The firmware lays the region out at every boot, before the host
//! attaches; the host validates what it finds there as it would a region
//! of another process.
#![no_std]

pub mod bell;
mod fault;

use amp_proto::{
    CONTROL_OFFSET, Control, DOWN_OFFSET, RING_CAPACITY, RING_LEN, SHARED_LEN, UP_OFFSET,
};
use core::ptr::NonNull;
use uring_queue::{Region, SharedRing};

unsafe extern "C" {
    /// Start of the board's `AMP` memory (its `memory.x`).
    static _amp_shared: u8;
    /// Its length, as the address of this symbol.
    static _amp_shared_len: u8;
}

/// A failed step of the firmware's run, named for the report.
pub type Outcome = Result<(), &'static str>;

/// The shared memory's first `SHARED_LEN` bytes, cut at `offset`, `len`
/// long; `None` if the board's `AMP` memory is smaller or the cut falls
/// outside it.
///
/// # Safety
///
/// At most one `Region` of each part may exist at a time: the caller makes
/// each once.
pub unsafe fn shared(offset: usize, len: usize) -> Option<Region<'static>> {
    let base = (&raw const _amp_shared).cast_mut();
    let available = (&raw const _amp_shared_len) as usize;
    if available < SHARED_LEN || offset.checked_add(len)? > SHARED_LEN {
        return None;
    }
    // SAFETY: `offset + len <= SHARED_LEN <= available`, so the pointer
    // stays inside the `AMP` memory, which the linker places nothing in.
    let ptr = NonNull::new(unsafe { base.add(offset) })?;
    // SAFETY: the bytes are memory of the machine that only this region
    // and the host's mapping touch; the caller makes one region per part.
    // The host is the peer the library validates against.
    Some(unsafe { Region::from_raw_parts(ptr, len) })
}

/// The test harness's control words.
pub fn control() -> Option<&'static Control> {
    // SAFETY: the control words are only ever accessed atomically, through
    // `Control`; no `Region` covers them.
    let region = unsafe { shared(CONTROL_OFFSET, size_of::<Control>()) }?;
    // SAFETY: inside the shared memory (checked by `shared`), aligned (the
    // `AMP` memory and `CONTROL_OFFSET` are page aligned), and `Control` is
    // atomics only, valid for any bytes.
    Some(unsafe { &*region.as_ptr().cast::<Control>() })
}

/// Stores `value` at byte `offset` of the `uring` region, as a hostile
/// peer would (the scribble commands).
pub fn scribble(offset: usize, value: u32) {
    if !offset.is_multiple_of(4) || offset + 4 > amp_proto::URING_LEN {
        return;
    }
    // SAFETY: made and dropped here; the word is inside the region.
    if let Some(region) = unsafe { shared(amp_proto::URING_OFFSET + offset, 4) } {
        // SAFETY: aligned (checked above), inside the shared memory; words
        // of the region are accessed atomically by everyone.
        let word = unsafe { &*region.as_ptr().cast::<core::sync::atomic::AtomicU32>() };
        word.store(value, core::sync::atomic::Ordering::Release);
    }
}

/// Loads the word at byte `offset` of the `uring` region (0 outside it).
pub fn peek(offset: usize) -> u32 {
    if !offset.is_multiple_of(4) || offset + 4 > amp_proto::URING_LEN {
        return 0;
    }
    // SAFETY: as in `scribble`.
    match unsafe { shared(amp_proto::URING_OFFSET + offset, 4) } {
        // SAFETY: as in `scribble`.
        Some(region) => unsafe { &*region.as_ptr().cast::<core::sync::atomic::AtomicU32>() }
            .load(core::sync::atomic::Ordering::Acquire),
        None => 0,
    }
}

/// The firmware's [`Notifier`](uring_queue::uring::Notifier): polls, as
/// `Spin` does, and publishes an id of this connection in the `pid` word of
/// its side's line, which the host's notifier compares with the one it
/// attached to (a new boot lays out a new connection with the next id, so
/// the host tells a rebooted firmware from the one it knew, and a fresh
/// layout from a stale one).
#[derive(Debug, Clone, Copy)]
pub struct Boot(pub u32);

impl uring_queue::uring::Notifier for Boot {
    fn wait(&self, _flag: &uring_queue::uring::WakeFlag, _timeout: core::time::Duration) {
        core::hint::spin_loop();
    }

    fn wake(&self, _flag: &uring_queue::uring::WakeFlag) {}

    fn process_id(&self) -> u32 {
        self.0
    }
}

/// The id the next connection publishes: one more than the one the region
/// holds from before (a previous boot, or a previous connection of this
/// one), never 0.
pub fn next_connection_id() -> u32 {
    match peek(amp_proto::SERVER_PID).wrapping_add(1) {
        0 => 1,
        id => id,
    }
}

/// The two stream rings, laid out fresh: the firmware produces into `up`
/// and consumes `down`.
pub struct Streams {
    up: uring_queue::Producer<'static, u32>,
    down: uring_queue::Consumer<'static, u32>,
}

impl Streams {
    /// Lays both rings out in their parts of the shared memory. Call once.
    pub fn init() -> Result<Self, &'static str> {
        // SAFETY: called once; each part is made once.
        let up = unsafe { shared(UP_OFFSET, RING_LEN) }.ok_or("the up ring fits")?;
        // SAFETY: as above.
        let down = unsafe { shared(DOWN_OFFSET, RING_LEN) }.ok_or("the down ring fits")?;
        let up = SharedRing::<u32>::init(up, RING_CAPACITY).map_err(|_| "the up ring lays out")?;
        let down =
            SharedRing::<u32>::init(down, RING_CAPACITY).map_err(|_| "the down ring lays out")?;
        Ok(Self {
            up: up.into_producer(),
            down: down.into_consumer(),
        })
    }

    /// Streams both ways (`amp_proto::stream`), the firmware's stream up.
    pub fn run(&mut self) -> Outcome {
        amp_proto::stream(&mut self.up, &mut self.down, true).map_err(|e| match e {
            amp_proto::StreamError::WrongValue { .. } => {
                "the host's stream arrives in order, every value right"
            }
            amp_proto::StreamError::Ring(_) => "the host's stream ring stays consistent",
        })
    }
}

/// Prints `what` and `n` through semihosting.
pub fn report(what: &str, n: u32) {
    firmware::story::print(what.as_bytes());
    firmware::story::print_u32(n);
    firmware::story::print(b"\n");
}

/// Ends the run: prints the outcome, exits 0 on success, 1 otherwise.
pub fn finish(name: &str, outcome: Outcome) -> ! {
    firmware::story::print(name.as_bytes());
    match outcome {
        Ok(()) => {
            firmware::story::print(b": ok\n");
            semihosting::process::exit(0)
        }
        Err(what) => {
            firmware::story::print(b": FAILED: ");
            firmware::story::print(what.as_bytes());
            firmware::story::print(b"\n");
            semihosting::process::exit(1)
        }
    }
}
