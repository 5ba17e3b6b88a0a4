//! The skeleton alone: what every other size binary is measured against.
#![no_std]
#![no_main]

#[cfg_attr(target_arch = "arm", cortex_m_rt::entry)]
#[cfg_attr(target_arch = "riscv32", riscv_rt::entry)]
fn main() -> ! {
    size::done(size::input(0u32))
}
