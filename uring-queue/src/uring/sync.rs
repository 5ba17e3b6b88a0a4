//! What the request/response layer needs beyond the crate's `loom` facade:
//! the fence of the wake-up handshake and the spin hint. Picked the same way
//! as the facade picks its atomics, so loom checks the code that ships.

pub(crate) use crate::loom::{AtomicU32, Ordering};

#[cfg(all(not(loom), not(feature = "portable-atomic")))]
pub(crate) use core::sync::atomic::fence;
#[cfg(loom)]
pub(crate) use loom::sync::atomic::fence;
#[cfg(all(not(loom), feature = "portable-atomic"))]
pub(crate) use portable_atomic::fence;

/// One step of a busy wait. Under loom a yield, so that a model with a
/// spinning thread still lets the other threads run.
#[inline]
pub(crate) fn spin_loop() {
    #[cfg(loom)]
    loom::thread::yield_now();
    #[cfg(not(loom))]
    core::hint::spin_loop();
}
