//! The doorbell of the amp scenario on `mps2-an386`: UART0 (a CMSDK APB
//! UART at 0x4000_4000, receive interrupt 0), which QEMU wires to a socket
//! the host holds (`-serial chardev:...`). A byte the firmware writes makes
//! the host's socket readable; a byte the host writes raises the receive
//! interrupt, whose handler takes it. [`Bell`] is the firmware's
//! `Notifier` over it: it sleeps in `WFI` until an interrupt (the doorbell,
//! or the SysTick that bounds every wait) and rings by writing a byte.
//!
//! The same UART carries the baseline of the latency comparison: 64-byte
//! messages echoed over the UART alone ([`echo`]).

use core::sync::atomic::{AtomicU32, Ordering};
use core::time::Duration;
use uring_queue::uring::{Notifier, WakeFlag};

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

/// Doorbells taken by the receive interrupt.
static RUNG: AtomicU32 = AtomicU32::new(0);

fn read(reg: usize) -> u32 {
    // SAFETY: a register of UART0, which only this module touches.
    unsafe { core::ptr::read_volatile(reg as *const u32) }
}

fn write(reg: usize, value: u32) {
    // SAFETY: as in `read`.
    unsafe { core::ptr::write_volatile(reg as *mut u32, value) }
}

/// The receive interrupt: takes the byte and counts it.
fn received(_irq: u16) {
    while read(STATE) & RX_FULL != 0 {
        let _ = read(DATA);
        RUNG.store(
            RUNG.load(Ordering::Relaxed).wrapping_add(1),
            Ordering::Release,
        );
    }
    write(INTCLEAR, RX_INT);
}

/// Doorbells received so far.
pub fn rung() -> u32 {
    RUNG.load(Ordering::Acquire)
}

/// The firmware's notifier over UART0, with the connection id it publishes
/// (as [`Boot`](crate::Boot)'s).
#[derive(Debug)]
pub struct Bell(pub u32);

impl Bell {
    /// Enables UART0 with its receive interrupt, and SysTick, which bounds
    /// every wait.
    pub fn new(id: u32) -> Self {
        write(BAUDDIV, 16);
        write(CTRL, TX_EN | RX_EN | RX_INT_EN);
        firmware::irq::set_external(UART0_RX_IRQ, received);
        firmware::irq::start_ticks();
        Self(id)
    }
}

/// Reads a byte, polling.
fn receive() -> u8 {
    while read(STATE) & RX_FULL == 0 {}
    read(DATA) as u8
}

/// Writes `byte` once the transmitter has room.
fn send(byte: u8) {
    while read(STATE) & TX_FULL != 0 {}
    write(DATA, u32::from(byte));
}

impl Notifier for Bell {
    fn wait(&self, flag: &WakeFlag, _timeout: Duration) {
        // Masked, so that an interrupt between the check and `WFI` is not
        // lost: `WFI` wakes on a pending interrupt even while masked, and
        // its handler runs once the mask is lifted.
        firmware::irq::masked(|| {
            if flag.is_armed() {
                cortex_m::asm::wfi();
            }
        });
    }

    fn wake(&self, _flag: &WakeFlag) {
        send(1);
    }

    fn process_id(&self) -> u32 {
        self.0
    }
}

/// The latency baseline: `count` 64-byte messages over the UART alone,
/// each read byte by byte (polled, the receive interrupt off) and written
/// back.
/// Doorbell bytes still in flight are skipped: each side sends
/// `UART_START` first.
pub fn echo(count: u32) {
    write(CTRL, TX_EN | RX_EN);
    send(amp_proto::UART_START);
    while receive() != amp_proto::UART_START {}
    let mut message = [0u8; 64];
    for _ in 0..count {
        for b in message.iter_mut() {
            *b = receive();
        }
        for &b in message.iter() {
            send(b);
        }
    }
}
