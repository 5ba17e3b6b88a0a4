//! A defmt global logger that keeps nothing: it counts the bytes of the
//! frames it is handed, so that a story can check that a value was
//! formatted (its `defmt::Format` ran) with no probe or decoder attached.
//! Under QEMU nothing reads defmt's binary frames, so nothing is lost.

use core::sync::atomic::{AtomicUsize, Ordering};

/// Bytes of defmt frames written since the start.
static BYTES: AtomicUsize = AtomicUsize::new(0);

#[defmt::global_logger]
struct Counting;

// SAFETY: defmt asks that a frame's writes between `acquire` and `release`
// not interleave with another frame's; this logger keeps no frame, only a
// count, and the scenarios log from `main` alone, never from an interrupt
// handler, so no two frames are ever open at once.
unsafe impl defmt::Logger for Counting {
    fn acquire() {}

    unsafe fn flush() {}

    unsafe fn release() {}

    unsafe fn write(bytes: &[u8]) {
        // A load and a store, not `fetch_add`: the Cortex-M0 and the RV32IMC
        // have no read-modify-write atomics, and only `main` logs.
        let total = BYTES.load(Ordering::Relaxed).wrapping_add(bytes.len());
        BYTES.store(total, Ordering::Relaxed);
    }
}

/// Bytes of defmt frames logged so far: grows with every `defmt::info!`
/// and the like, by what the values' `Format` impls encoded.
pub fn logged_bytes() -> usize {
    BYTES.load(Ordering::Relaxed)
}
