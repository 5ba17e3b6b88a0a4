//! io-traits as firmware: a message built in a `FixedBuffer`, a full buffer
//! reported as an error, and the embedded-io adapters both ways.
#![no_std]
#![no_main]

use firmware::{Outcome, copy, ensure};
use io_traits::embedded::{FromEmbeddedIo, ToEmbeddedIo};
use io_traits::{Buffer, BufferError, FixedBuffer, Write, WriteError};

#[cfg_attr(target_arch = "arm", cortex_m_rt::entry)]
#[cfg_attr(target_arch = "riscv32", riscv_rt::entry)]
fn main() -> ! {
    firmware::run(
        "io_traits",
        &[
            (
                "a message is built in a FixedBuffer and handed out",
                build_message,
            ),
            (
                "a full FixedBuffer is an error that changes nothing",
                full_buffer,
            ),
            ("a byte slice is a Write sink", slice_sink),
            (
                "embedded-io sinks and io-traits sinks adapt both ways",
                embedded_io_adapters,
            ),
        ],
    )
}

fn build_message() -> Outcome {
    let mut buf = FixedBuffer::<16>::new();
    for part in [&b"id:"[..], b"42", b";"] {
        let space = buf.try_get_writable(part.len());
        copy(space.map_err(|_| "each part fits")?, part)?;
    }
    ensure(buf.len() == 6, "the pending message holds the three parts")?;
    ensure(
        buf.get_data_by_ref_(3) == b"id:",
        "get_data_by_ref_ shows the prefix",
    )?;
    let message = buf.get_data_owned();
    ensure(
        message.as_slice() == b"id:42;",
        "the handed-out message holds the parts",
    )?;
    ensure(buf.is_empty(), "the buffer starts a new message")?;
    ensure(buf.is_droppable(), "a FixedBuffer lends nothing")
}

fn full_buffer() -> Outcome {
    let mut buf = FixedBuffer::<8>::new();
    copy(
        buf.try_get_writable(6).map_err(|_| "6 of 8 bytes fit")?,
        b"header",
    )?;
    let full = BufferError::CapacityExceeded {
        requested: 3,
        available: 2,
    };
    ensure(
        buf.try_get_writable(3) == Err(full),
        "3 more bytes are CapacityExceeded",
    )?;
    ensure(
        buf.get_data_by_ref_(8) == b"header",
        "the refused request changed nothing",
    )?;
    ensure(
        buf.try_get_writable(2).is_ok(),
        "the last 2 bytes still fit",
    )
}

fn slice_sink() -> Outcome {
    let mut storage = [0u8; 5];
    let mut sink: &mut [u8] = &mut storage;
    ensure(sink.write(b"abc") == Ok(3), "write takes what fits")?;
    ensure(
        sink.write_all(b"defg") == Err(WriteError::WriteZero),
        "overflow is WriteZero",
    )?;
    ensure(sink.write(b"h") == Ok(0), "a full slice takes nothing")?;
    ensure(&storage == b"abcde", "the bytes that fitted stay written")
}

fn embedded_io_adapters() -> Outcome {
    // An io-traits sink used where embedded-io is expected.
    let mut storage = [0u8; 4];
    let mut sink = ToEmbeddedIo::new(&mut storage[..]);
    ensure(
        embedded_io::Write::write_all(&mut sink, b"ab").is_ok(),
        "2 bytes fit",
    )?;
    let overflow = embedded_io::Write::write_all(&mut sink, b"cde");
    let kind = overflow.map_err(|e| embedded_io::Error::kind(&e));
    ensure(
        kind == Err(embedded_io::ErrorKind::WriteZero),
        "overflow is WriteZero",
    )?;
    ensure(&storage == b"abcd", "embedded-io wrote through the adapter")?;

    // An embedded-io sink used where io-traits is expected.
    let mut storage = [0u8; 3];
    let mut sink = FromEmbeddedIo::new(&mut storage[..]);
    ensure(sink.write_all(b"xy") == Ok(()), "2 bytes fit")?;
    ensure(sink.write(b"zw") == Ok(1), "write takes the byte that fits")?;
    ensure(
        sink.write(b"!") == Ok(0),
        "a full embedded-io sink reports Ok(0)",
    )?;
    ensure(
        sink.write_all(b"!") == Err(WriteError::WriteZero),
        "write_all reports WriteZero",
    )?;
    ensure(&storage == b"xyz", "io-traits wrote through the adapter")
}
