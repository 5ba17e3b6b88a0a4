//! A floor every firmware that moves bytes sits on: the compiler's
//! `memcpy`, `memset` and zeroing routines, called with lengths and byte
//! offsets the optimiser cannot see (so it can neither unroll them into
//! moves of its own nor pick a word-aligned variant). These are the three
//! the pool links; a firmware that copies or fills a byte buffer of unknown
//! length, or clears a struct of words, links them too.
#![no_std]
#![no_main]

static mut BYTES: [u8; 128] = [0; 128];
static mut WORDS: [u64; 10] = [0; 10];

#[cfg_attr(target_arch = "arm", cortex_m_rt::entry)]
#[cfg_attr(target_arch = "riscv32", riscv_rt::entry)]
fn main() -> ! {
    let (bytes, words) = (
        (&raw mut BYTES).cast::<u8>(),
        (&raw mut WORDS).cast::<u64>(),
    );
    let (at, len, value) = (size::input(1usize), size::input(16usize), size::input(3u8));
    let (at, len) = (at.min(32), len.min(32));
    // SAFETY: `at + len <= 64`: the copy reads bytes 0..64 of the 128 and
    // writes 64..128, the fill writes 0..64; ten words are cleared of ten.
    // Nothing else touches the statics.
    unsafe {
        core::ptr::copy_nonoverlapping(bytes.add(at), bytes.add(64 + at), len);
        core::ptr::write_bytes(bytes.add(at), value, len);
        words.write_bytes(0, size::input(10usize).min(10));
    }
    // The statics escape, so every write to them stays.
    size::done((bytes, words))
}
