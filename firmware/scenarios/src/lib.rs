//! What every scenario binary shares: stories that check their results and
//! end the run through semihosting ([`story`]), the machine's interrupts
//! ([`irq`]), and a cell that hands values to an interrupt handler
//! ([`IrqCell`]), a join of futures that cannot panic ([`join3`]), and a
//! defmt logger that counts what it is given ([`log`]).
//!
//! Nothing here formats (no `core::fmt`) or indexes: the binaries must also
//! link with the panic-never handler (feature `panic-never`), so the
//! firmware's own code keeps no panic path either.
#![no_std]

pub mod irq;
mod join;
pub mod log;
mod panic;
mod shared;
pub mod story;

pub use join::join3;
pub use shared::IrqCell;
pub use story::{Outcome, Story, copy, ensure, run};

/// A `&'static mut` to a `static` of type `$ty` initialised with `$init`:
/// `Some` the first time this expression runs, `None` after. For the
/// memory a ring or a pool lives in for the rest of the run.
#[macro_export]
macro_rules! singleton {
    ($ty:ty = $init:expr) => {{
        static TAKEN: core::sync::atomic::AtomicBool = core::sync::atomic::AtomicBool::new(false);
        static mut VALUE: $ty = $init;
        $crate::irq::masked(|| {
            if TAKEN.load(core::sync::atomic::Ordering::Relaxed) {
                return None;
            }
            TAKEN.store(true, core::sync::atomic::Ordering::Relaxed);
            // SAFETY: `TAKEN`, checked and set with interrupts masked on a
            // single core, lets this reference be made only once.
            Some(unsafe { &mut *&raw mut VALUE })
        })
    }};
}
