//! `Reader` over `MemoryBackend`: one `read_many` of three ops and one
//! `read_val`.
#![no_std]
#![no_main]

#[path = "../reader_work.rs"]
mod work;

#[cfg_attr(target_arch = "arm", cortex_m_rt::entry)]
#[cfg_attr(target_arch = "riscv32", riscv_rt::entry)]
fn main() -> ! {
    size::done(work::reader_work())
}
