//! `FixedBuffer<64>`: a message written in two parts, a refused request,
//! and the message handed out.
#![no_std]
#![no_main]

use io_traits::{Buffer, FixedBuffer};

#[cfg_attr(target_arch = "arm", cortex_m_rt::entry)]
#[cfg_attr(target_arch = "riscv32", riscv_rt::entry)]
fn main() -> ! {
    let buf = size::statik!(FixedBuffer<64> = FixedBuffer::new());
    let header = match buf.try_get_writable(size::input(4)) {
        Ok(bytes) => {
            bytes.fill(size::input(1));
            true
        }
        Err(_) => false,
    };
    let body = match buf.try_get_writable(8) {
        Ok(bytes) => {
            bytes.copy_from_slice(size::input(&[2u8; 8]));
            true
        }
        Err(_) => false,
    };
    let refused = buf.try_get_writable(size::input(100)).is_err();
    let message = buf.get_data_owned();
    size::done((header, body, refused, message))
}
