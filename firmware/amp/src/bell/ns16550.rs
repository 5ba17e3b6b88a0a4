//! The doorbell UART of QEMU's `virt` machine: UART0, an NS16550A at
//! 0x1000_0000 (byte registers), whose interrupt is source 10 of the PLIC
//! at 0x0c00_0000; the core takes it as its machine external interrupt
//! (hart 0's machine-mode context of the PLIC is context 0).

use riscv::interrupt::Interrupt;

const UART0: usize = 0x1000_0000;
const RBR_THR: usize = UART0;
const IER: usize = UART0 + 1;
const FCR: usize = UART0 + 2;
const LCR: usize = UART0 + 3;
const MCR: usize = UART0 + 4;
const LSR: usize = UART0 + 5;
/// IER: an interrupt while received data waits.
const IER_RX: u8 = 1;
/// FCR: FIFOs on and cleared; the receive interrupt at one byte.
const FCR_FIFO: u8 = 0x07;
/// LCR: 8 data bits, no parity, one stop bit.
const LCR_8N1: u8 = 0x03;
/// MCR: OUT2, which gates the interrupt line on a PC's 16550.
const MCR_OUT2: u8 = 0x08;
const LSR_DATA_READY: u8 = 0x01;
const LSR_THR_EMPTY: u8 = 0x20;

const PLIC: usize = 0x0c00_0000;
const UART0_SOURCE: usize = 10;
const PRIORITY: usize = PLIC + 4 * UART0_SOURCE;
/// Context 0's enable bits for sources 0 to 31.
const ENABLE: usize = PLIC + 0x2000;
const THRESHOLD: usize = PLIC + 0x20_0000;
const CLAIM: usize = PLIC + 0x20_0004;

fn read8(reg: usize) -> u8 {
    // SAFETY: a register of UART0, which only this module touches.
    unsafe { core::ptr::read_volatile(reg as *const u8) }
}

fn write8(reg: usize, value: u8) {
    // SAFETY: as in `read8`.
    unsafe { core::ptr::write_volatile(reg as *mut u8, value) }
}

fn read32(reg: usize) -> u32 {
    // SAFETY: a register of the PLIC's source 10 or context 0, which only
    // this module touches.
    unsafe { core::ptr::read_volatile(reg as *const u32) }
}

fn write32(reg: usize, value: u32) {
    // SAFETY: as in `read32`.
    unsafe { core::ptr::write_volatile(reg as *mut u32, value) }
}

/// The machine external interrupt: claims it from the PLIC, hands the
/// doorbell every byte waiting, and completes the claim.
#[riscv_rt::core_interrupt(Interrupt::MachineExternal)]
fn machine_external() {
    let source = read32(CLAIM);
    while let Some(byte) = try_receive() {
        super::rung(byte);
    }
    if source != 0 {
        write32(CLAIM, source);
    }
}

/// Enables the UART with its receive interrupt through the PLIC, and the
/// machine timer.
pub(super) fn start() {
    write8(LCR, LCR_8N1);
    write8(FCR, FCR_FIFO);
    write8(MCR, MCR_OUT2);
    write8(IER, IER_RX);
    write32(PRIORITY, 1);
    write32(THRESHOLD, 0);
    write32(ENABLE, 1 << UART0_SOURCE);
    firmware::irq::start_ticks();
    // SAFETY: the handler above touches only the UART, the PLIC's claim
    // register and the doorbell's atomic count.
    unsafe {
        riscv::interrupt::enable_interrupt(Interrupt::MachineExternal);
        riscv::interrupt::enable();
    }
}

/// Turns the receive interrupt off, for polled reads: at the UART and at
/// the core, so that no request the PLIC latched before runs the handler.
pub(super) fn poll_only() {
    write8(IER, 0);
    riscv::interrupt::disable_interrupt(Interrupt::MachineExternal);
}

/// A received byte, if one waits.
pub(super) fn try_receive() -> Option<u8> {
    (read8(LSR) & LSR_DATA_READY != 0).then(|| read8(RBR_THR))
}

/// Writes `byte` once the transmitter has room.
pub(super) fn send(byte: u8) {
    while read8(LSR) & LSR_THR_EMPTY == 0 {}
    write8(RBR_THR, byte);
}

/// Sleeps until an interrupt is pending and enabled (even while masked).
pub(super) fn sleep() {
    riscv::asm::wfi();
}
