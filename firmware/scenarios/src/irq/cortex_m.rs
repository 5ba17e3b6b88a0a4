//! NVIC interrupt 20 and SysTick.

use cortex_m::interrupt::InterruptNumber;
use cortex_m::peripheral::{NVIC, SYST, syst::SystClkSource};
use cortex_m_rt::exception;

/// The external interrupt the firmware pends by software.
#[derive(Clone, Copy)]
struct Software;

const SOFTWARE: u16 = 20;

// SAFETY: 20 is a valid external interrupt number on both machines (the
// nRF51 has 26, QEMU's MPS2 32).
unsafe impl InterruptNumber for Software {
    fn number(self) -> u16 {
        SOFTWARE
    }
}

/// SysTick period in core clock cycles.
const TICK_CYCLES: u32 = 4_000;

pub(super) fn enable() {
    // SAFETY: the handler below touches only what `dispatch` guards.
    unsafe { NVIC::unmask(Software) };
}

pub(super) fn pend() {
    NVIC::pend(Software);
    // Make the pended interrupt taken before the next instruction.
    cortex_m::asm::dsb();
    cortex_m::asm::isb();
}

fn syst() -> SYST {
    // SAFETY: SysTick is used only here, from `main`; its registers are
    // written with interrupts masked.
    unsafe { cortex_m::Peripherals::steal() }.SYST
}

pub(super) fn start_ticks() {
    masked(|| {
        let mut syst = syst();
        syst.set_clock_source(SystClkSource::Core);
        syst.set_reload(TICK_CYCLES);
        syst.clear_current();
        syst.enable_interrupt();
        syst.enable_counter();
    });
}

pub(super) fn stop_ticks() {
    masked(|| {
        let mut syst = syst();
        syst.disable_interrupt();
        syst.disable_counter();
    });
}

/// Runs `f` with interrupts masked.
pub fn masked<R>(f: impl FnOnce() -> R) -> R {
    cortex_m::interrupt::free(|_| f())
}

#[exception]
fn SysTick() {
    super::dispatch();
}

/// The handler of every other external interrupt (a device's), with its
/// number; `None` until [`set_external`] sets one.
static EXTERNAL: crate::IrqCell<fn(u16)> = crate::IrqCell::new();

/// Makes `handler` run for external interrupt `number` (and any other
/// unmasked external interrupt but 20), and unmasks `number` in the NVIC.
pub fn set_external(number: u16, handler: fn(u16)) {
    #[derive(Clone, Copy)]
    struct Line(u16);
    // SAFETY: the number is an external interrupt of the machine, which
    // the caller names; its handler is the one just stored.
    unsafe impl InterruptNumber for Line {
        fn number(self) -> u16 {
            self.0
        }
    }
    EXTERNAL.put(handler);
    // SAFETY: the handler is in place before the line is unmasked.
    unsafe { NVIC::unmask(Line(number)) };
}

#[exception]
unsafe fn DefaultHandler(irqn: i16) {
    if irqn == SOFTWARE as i16 {
        super::dispatch();
    } else if let Ok(number) = u16::try_from(irqn) {
        EXTERNAL.with(|handler| handler(number));
    }
}
