//! How a side waits for its inbound ring: spin, then park.

use crate::loom::{hint, thread};

/// Step `i` (from 0) of a busy wait that yields the CPU after every
/// `yield_every` steps (0: never; a yield without `std` is a spin hint).
#[inline]
pub(crate) fn spin_step(i: u32, yield_every: u32) {
    if yield_every != 0 && (i + 1).is_multiple_of(yield_every) {
        thread::yield_now();
    } else {
        hint::spin_loop();
    }
}
