//! `PoolStorage<256>` in a static: claim, one message written and handed
//! out, its bytes read, the slice dropped, the mode asked.
#![no_std]
#![no_main]

use buffer_pool::{Buffer, PoolStorage};

static STORAGE: PoolStorage<256> = PoolStorage::new();

#[cfg_attr(target_arch = "arm", cortex_m_rt::entry)]
#[cfg_attr(target_arch = "riscv32", riscv_rt::entry)]
fn main() -> ! {
    let Ok(mut pool) = STORAGE.pool() else {
        size::done(0u32)
    };
    let len = size::input(16);
    let sum = match pool.try_get_writable(len) {
        Ok(bytes) => {
            bytes.fill(size::input(3));
            let slice = pool.get_data_owned();
            slice.iter().map(|&b| u32::from(b)).sum::<u32>()
        }
        Err(_) => 0,
    };
    size::done((sum, pool.mode()))
}
