//! What the amp firmware's two binaries share: the shared memory at the
//! linker-fixed address of the board's `AMP` memory, carved into the
//! `uring` region and the two stream rings of `amp_proto`, and the stream
//! both ways.
//!
//! The firmware lays the region out at every boot, before the host
//! attaches; the host validates what it finds there as it would a region
//! of another process.
#![no_std]

use amp_proto::{DOWN_OFFSET, RING_CAPACITY, RING_LEN, SHARED_LEN, UP_OFFSET};
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
