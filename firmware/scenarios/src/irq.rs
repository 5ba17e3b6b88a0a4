//! The interrupts each machine really delivers under QEMU, behind one API:
//! a software-triggered interrupt ([`pend`]) and a periodic timer
//! ([`start_ticks`]), both running the handler set with [`set_handler`].
//!
//! - Cortex-M (`microbit`, `mps2-an386`): external interrupt 20 pended in the
//!   NVIC (SWI0 on the nRF51, unused on the MPS2), and SysTick.
//! - RISC-V (`sifive_e`): the CLINT's machine software interrupt (`msip`)
//!   and machine timer (`mtimecmp`).

use crate::IrqCell;
use core::sync::atomic::{AtomicU32, Ordering};

#[cfg(target_arch = "arm")]
#[path = "irq/cortex_m.rs"]
mod arch;
#[cfg(target_arch = "riscv32")]
#[path = "irq/riscv.rs"]
mod arch;

pub use arch::masked;
#[cfg(target_arch = "arm")]
pub use arch::set_external;

static HANDLER: IrqCell<fn()> = IrqCell::new();
/// Written only by the handlers (which do not nest), read by `main`.
static RUNS: AtomicU32 = AtomicU32::new(0);

/// Makes both interrupt sources run `handler`, and unmasks the software
/// interrupt.
pub fn set_handler(handler: fn()) {
    HANDLER.put(handler);
    arch::enable();
}

/// Raises the software interrupt; its handler has run when this returns.
/// Call it from `main` with interrupts unmasked.
pub fn pend() {
    arch::pend();
}

/// Starts the periodic timer interrupt.
pub fn start_ticks() {
    arch::start_ticks();
}

/// Stops the periodic timer interrupt.
pub fn stop_ticks() {
    arch::stop_ticks();
}

/// How many times an interrupt handler has run.
pub fn runs() -> u32 {
    RUNS.load(Ordering::Acquire)
}

/// What both interrupt handlers do.
fn dispatch() {
    // Load and store, not `fetch_add`: Cortex-M0 and RV32IMC have no
    // read-modify-write atomics, and handlers do not preempt each other.
    RUNS.store(
        RUNS.load(Ordering::Relaxed).wrapping_add(1),
        Ordering::Release,
    );
    if let Some(handler) = HANDLER.with(|h| *h) {
        handler();
    }
}
