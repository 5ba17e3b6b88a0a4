//! The CLINT's machine software and machine timer interrupts.

use core::ptr::{read_volatile, write_volatile};
use riscv::interrupt::Interrupt;

const CLINT: usize = 0x0200_0000;
const MSIP: *mut u32 = CLINT as *mut u32;
const MTIMECMP_LO: *mut u32 = (CLINT + 0x4000) as *mut u32;
const MTIMECMP_HI: *mut u32 = (CLINT + 0x4004) as *mut u32;
const MTIME_LO: *const u32 = (CLINT + 0xbff8) as *const u32;
const MTIME_HI: *const u32 = (CLINT + 0xbffc) as *const u32;

/// Timer period in `mtime` ticks (10 MHz on QEMU's `sifive_e`): 100 us.
const TICK: u32 = 1_000;

pub(super) fn enable() {
    // SAFETY: the handlers below touch only what `dispatch` guards.
    unsafe {
        riscv::interrupt::enable_interrupt(Interrupt::MachineSoft);
        riscv::interrupt::enable();
    }
}

pub(super) fn pend() {
    // SAFETY: `MSIP` is the CLINT's software interrupt register of hart 0.
    unsafe { write_volatile(MSIP, 1) };
    // The write reaches the hart some instructions later; the handler
    // clears the pending bit.
    while riscv::register::mip::read().msoft() {
        core::hint::spin_loop();
    }
}

fn mtime() -> u64 {
    loop {
        // SAFETY: the CLINT's `mtime` registers, read only.
        let (hi, lo, again) = unsafe {
            (
                read_volatile(MTIME_HI),
                read_volatile(MTIME_LO),
                read_volatile(MTIME_HI),
            )
        };
        if hi == again {
            return (u64::from(hi) << 32) | u64::from(lo);
        }
    }
}

fn set_mtimecmp(at: u64) {
    // SAFETY: the CLINT's `mtimecmp` registers of hart 0. The high word is
    // parked at its maximum first so no intermediate value fires early.
    unsafe {
        write_volatile(MTIMECMP_HI, u32::MAX);
        write_volatile(MTIMECMP_LO, at as u32);
        write_volatile(MTIMECMP_HI, (at >> 32) as u32);
    }
}

pub(super) fn start_ticks() {
    set_mtimecmp(mtime().wrapping_add(u64::from(TICK)));
    // SAFETY: as in `enable`.
    unsafe { riscv::interrupt::enable_interrupt(Interrupt::MachineTimer) };
}

pub(super) fn stop_ticks() {
    riscv::interrupt::disable_interrupt(Interrupt::MachineTimer);
}

/// Runs `f` with interrupts masked.
pub fn masked<R>(f: impl FnOnce() -> R) -> R {
    riscv::interrupt::free(f)
}

#[riscv_rt::core_interrupt(Interrupt::MachineSoft)]
fn machine_soft() {
    // SAFETY: as in `pend`.
    unsafe { write_volatile(MSIP, 0) };
    super::dispatch();
}

#[riscv_rt::core_interrupt(Interrupt::MachineTimer)]
fn machine_timer() {
    set_mtimecmp(mtime().wrapping_add(u64::from(TICK)));
    super::dispatch();
}
