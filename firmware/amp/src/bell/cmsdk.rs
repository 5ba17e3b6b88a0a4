//! The doorbell UART of `mps2-an386`: UART0, a CMSDK APB UART at
//! 0x4000_4000 with its receive interrupt on NVIC line 0.

const UART0: usize = 0x4000_4000;
const DATA: usize = UART0;
const STATE: usize = UART0 + 0x04;
const CTRL: usize = UART0 + 0x08;
const INTCLEAR: usize = UART0 + 0x0c;
const BAUDDIV: usize = UART0 + 0x10;
const TX_FULL: u32 = 1;
const RX_FULL: u32 = 2;
const TX_EN: u32 = 1;
const RX_EN: u32 = 2;
const RX_INT_EN: u32 = 8;
const RX_INT: u32 = 2;
/// UART0's receive interrupt on the MPS2 boards.
const UART0_RX_IRQ: u16 = 0;

fn read(reg: usize) -> u32 {
    // SAFETY: a register of UART0, which only this module touches.
    unsafe { core::ptr::read_volatile(reg as *const u32) }
}

fn write(reg: usize, value: u32) {
    // SAFETY: as in `read`.
    unsafe { core::ptr::write_volatile(reg as *mut u32, value) }
}

/// The receive interrupt: hands the doorbell every byte waiting.
fn received(_irq: u16) {
    while let Some(byte) = try_receive() {
        super::rung(byte);
    }
    write(INTCLEAR, RX_INT);
}

/// Enables the UART with its receive interrupt, and SysTick.
pub(super) fn start() {
    write(BAUDDIV, 16);
    write(CTRL, TX_EN | RX_EN | RX_INT_EN);
    firmware::irq::set_external(UART0_RX_IRQ, received);
    firmware::irq::start_ticks();
}

/// Turns the receive interrupt off, for polled reads.
pub(super) fn poll_only() {
    write(CTRL, TX_EN | RX_EN);
}

/// A received byte, if one waits.
pub(super) fn try_receive() -> Option<u8> {
    (read(STATE) & RX_FULL != 0).then(|| read(DATA) as u8)
}

/// Writes `byte` once the transmitter has room.
pub(super) fn send(byte: u8) {
    while read(STATE) & TX_FULL != 0 {}
    write(DATA, u32::from(byte));
}

/// Sleeps until an interrupt is pending (even a masked one).
pub(super) fn sleep() {
    cortex_m::asm::wfi();
}
