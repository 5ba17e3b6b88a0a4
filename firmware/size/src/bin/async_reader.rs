//! `AsyncReader` on top of the reader's work: two joined reads under
//! embassy-futures' `block_on`.
#![no_std]
#![no_main]

use batch_reader::backends::MemoryBackend;
use batch_reader::{AsyncReader, Geometry};
use embassy_futures::{block_on, join::join};

#[path = "../reader_work.rs"]
mod work;

#[cfg_attr(target_arch = "arm", cortex_m_rt::entry)]
#[cfg_attr(target_arch = "riscv32", riscv_rt::entry)]
fn main() -> ! {
    let Ok(geometry) = Geometry::new(Some(64), 64, 8) else {
        size::done(0u32)
    };
    let backend = MemoryBackend::new(size::memory(), geometry);
    let mut reader = AsyncReader::<_, _, 8, 256>::new(backend, [0u8; 64]);
    let mut buf = [0u8; 8];
    let (read, value) = block_on(reader.run(|r| {
        join(
            r.read(size::input(16), &mut buf),
            r.read_val::<u32>(size::input(40)),
        )
    }));
    size::done((work::reader_work(), read.is_ok(), value.ok(), buf[0]))
}
