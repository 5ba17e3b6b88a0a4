//! batch-reader as firmware: `read_many` fragments ops at the backend's
//! boundary, merges neighbours and reports injected faults per byte range,
//! over `MemoryBackend` and over an embedded-io reader; `AsyncReader` batches
//! joined reads under embassy-futures' `block_on`.
#![no_std]
#![no_main]

use batch_reader::backends::{EmbeddedIoBackend, Faulty, MemoryBackend};
use batch_reader::{
    AsyncReader, Completion, Geometry, PartialRead, ReadBackend, ReadErrorKind, ReadOp, Reader,
};
use core::ops::Range;
use core::pin::Pin;
use core::task::{Context, Poll};
use embassy_futures::block_on;
use firmware::{Outcome, ensure, join3};

#[cfg_attr(target_arch = "arm", cortex_m_rt::entry)]
#[cfg_attr(target_arch = "riscv32", riscv_rt::entry)]
fn main() -> ! {
    firmware::run(
        "batch_reader",
        &[
            (
                "read_many over memory: fragments, merges, faults",
                memory_batch,
            ),
            (
                "a backend that accepts one op per call still reads all",
                backpressure,
            ),
            ("read_many over an embedded-io reader", embedded_io_batch),
            (
                "AsyncReader batches joined reads into one backend call",
                async_joined,
            ),
            (
                "AsyncReader runs chains of dependent reads step by step",
                async_chains,
            ),
        ],
    )
}

/// 512 bytes, byte `i` holding `i % 256`.
static MEM: [u8; 512] = {
    let mut mem = [0u8; 512];
    let mut i = 0;
    while i < mem.len() {
        mem[i] = i as u8;
        i += 1;
    }
    mem
};
/// 64-byte boundary units, up to 64 bytes per backend op, 8 ops per call.
const GEOMETRY: Result<Geometry, batch_reader::GeometryError> = Geometry::new(Some(64), 64, 8);
/// The unmapped unit of every backend here.
const FAULT: Range<u64> = 256..320;

/// The memory behind `Faulty`, which injects the fault (and, in one story,
/// the backpressure).
type FaultyMemory = Faulty<MemoryBackend<'static>>;

/// The one place the scenario builds a memory backend with a fault.
fn faulty_memory() -> Result<FaultyMemory, &'static str> {
    let memory = MemoryBackend::new(&MEM, GEOMETRY.map_err(|_| "the geometry is valid")?);
    let mut backend = Faulty::new(memory);
    backend
        .inject_fault(FAULT, ReadErrorKind::Unmapped)
        .map_err(|_| "the fault map has room")?;
    Ok(backend)
}

/// Whether `buf` holds the memory at `addr`.
fn holds(buf: &[u8], addr: u64) -> bool {
    buf.iter().zip(addr as usize..).all(|(&b, i)| b == i as u8)
}

/// What one op's completion said: ok bytes, first error, fragments.
#[derive(Clone, Copy, PartialEq)]
struct Seen {
    ok: usize,
    error: Option<PartialRead>,
    fragments: usize,
}

/// Records each completion by tag.
fn record(seen: &mut [Option<Seen>]) -> impl FnMut(Completion<'_>) + '_ {
    |c: Completion<'_>| {
        if let Some(slot) = seen.get_mut(c.tag()) {
            *slot = Some(Seen {
                ok: c.ok_bytes(),
                error: c.first_error(),
                fragments: c.fragments().count(),
            });
        }
    }
}

const fn seen(ok: usize, error: Option<PartialRead>, fragments: usize) -> Option<Seen> {
    Some(Seen {
        ok,
        error,
        fragments,
    })
}

/// Four ops: two adjacent (merged), one across a boundary (two fragments),
/// one running into the fault. Returns what each op's completion said.
fn four_ops<B: ReadBackend>(
    reader: &mut Reader<B, [u8; 128], 8, 16>,
) -> Result<[Option<Seen>; 4], &'static str> {
    let (mut a, mut b, mut c, mut d) = ([0u8; 4], [0u8; 4], [0u8; 8], [0u8; 12]);
    let mut ops = [
        ReadOp::new(0, &mut a, 0),
        ReadOp::new(4, &mut b, 1),
        ReadOp::new(60, &mut c, 2),
        ReadOp::new(250, &mut d, 3),
    ];
    let mut seen = [None; 4];
    reader.read_many(&mut ops, record(&mut seen));
    ensure(
        holds(&a, 0) && holds(&b, 4) && holds(&c, 60),
        "the bytes are the memory's",
    )?;
    ensure(
        d.get(..6).is_some_and(|ok| holds(ok, 250)),
        "the bytes before the fault",
    )?;
    ensure(
        d.get(6..).is_some_and(|rest| rest.iter().all(|&b| b == 0)),
        "none after it",
    )?;
    Ok(seen)
}

const FOUR_OPS: [Option<Seen>; 4] = [
    seen(4, None, 1),
    seen(4, None, 1),
    seen(8, None, 2),
    seen(
        6,
        Some(PartialRead {
            valid: 6,
            kind: ReadErrorKind::Unmapped,
        }),
        2,
    ),
];

fn memory_batch() -> Outcome {
    let mut reader = Reader::<_, _, 8, 16>::with_window(faulty_memory()?, [0u8; 128]);
    ensure(
        four_ops(&mut reader)? == FOUR_OPS,
        "each op completes with its ranges",
    )?;
    let counters = reader.counters();
    ensure(counters.backend_calls == 1, "one backend call")?;
    ensure(counters.fragments == 6, "the ops are six fragments")?;
    ensure(counters.merged_ops >= 2, "the adjacent ops merged")?;
    ensure(
        reader.read_val::<u32>(8) == Ok(u32::from_le_bytes([8, 9, 10, 11])),
        "read_val",
    )?;
    let faulted = reader.read_val::<u16>(300);
    ensure(faulted == Err(ReadErrorKind::Unmapped), "a faulted value")?;
    // What a firmware logs here, through the crate's `defmt` feature.
    let logged = firmware::log::logged_bytes();
    defmt::println!("read_val: {}, after {}", faulted, reader.counters());
    ensure(
        firmware::log::logged_bytes() > logged,
        "defmt formats the error and the counters",
    )?;
    ensure(
        reader.read_val::<u32>(510) == Err(ReadErrorKind::OutOfBounds),
        "past the end",
    )
}

fn backpressure() -> Outcome {
    let mut backend = faulty_memory()?;
    backend.set_accept_limit(1);
    let mut reader = Reader::<_, _, 8, 16>::with_window(backend, [0u8; 128]);
    ensure(four_ops(&mut reader)? == FOUR_OPS, "the same completions")?;
    ensure(
        reader.counters().backend_calls > 1,
        "one op per call: several calls",
    )
}

/// A flash chip behind `embedded_io::Read + Seek`: the memory, with reads
/// of the fault's range failing.
struct Flash {
    pos: u64,
}

impl embedded_io::ErrorType for Flash {
    type Error = embedded_io::ErrorKind;
}

impl embedded_io::Read for Flash {
    fn read(&mut self, buf: &mut [u8]) -> Result<usize, Self::Error> {
        if FAULT.contains(&self.pos) {
            return Err(embedded_io::ErrorKind::NotFound);
        }
        // Stop at the fault or the end, whichever comes first.
        let end = if self.pos < FAULT.start {
            FAULT.start
        } else {
            MEM.len() as u64
        };
        let available = MEM.get(self.pos as usize..end as usize).unwrap_or_default();
        let n = buf.len().min(available.len());
        for (out, &b) in buf.iter_mut().zip(available) {
            *out = b;
        }
        self.pos += n as u64;
        Ok(n)
    }
}

impl embedded_io::Seek for Flash {
    fn seek(&mut self, pos: embedded_io::SeekFrom) -> Result<u64, Self::Error> {
        match pos {
            embedded_io::SeekFrom::Start(p) => self.pos = p,
            _ => return Err(embedded_io::ErrorKind::Unsupported),
        }
        Ok(self.pos)
    }
}

fn embedded_io_batch() -> Outcome {
    let backend = EmbeddedIoBackend::new(Flash { pos: 0 }, GEOMETRY.map_err(|_| "valid")?);
    let mut reader = Reader::<_, _, 8, 16>::with_window(backend, [0u8; 128]);
    ensure(
        four_ops(&mut reader)? == FOUR_OPS,
        "each op completes with its ranges",
    )?;
    ensure(reader.read_val::<u8>(511) == Ok(255), "the last byte")?;
    ensure(
        reader.read_val::<u8>(512) == Err(ReadErrorKind::OutOfBounds),
        "past the end",
    )
}

/// The one place the scenario builds an async reader: 8 queued ops, 256
/// bytes of staging.
type Async = AsyncReader<FaultyMemory, [u8; 64], 8, 256>;

fn async_joined() -> Outcome {
    let mut reader = Async::new(faulty_memory()?, [0u8; 64]);
    let (mut a, mut c) = ([0u8; 16], [0xaa; 8]);
    let (ra, rb, rc) = block_on(reader.run(|r| {
        join3(
            r.read(64, &mut a),
            r.read_val::<u32>(100),
            r.read(252, &mut c),
        )
    }));
    ensure(ra == Ok(()) && holds(&a, 64), "a whole read")?;
    ensure(
        rb == Ok(u32::from_le_bytes([100, 101, 102, 103])),
        "a value",
    )?;
    let partial = PartialRead {
        valid: 4,
        kind: ReadErrorKind::Unmapped,
    };
    ensure(rc == Err(partial), "a read into the fault is a PartialRead")?;
    ensure(
        c.get(..4).is_some_and(|ok| holds(ok, 252)),
        "its valid prefix",
    )?;
    ensure(
        reader.counters().backend_calls == 1,
        "three joined reads, one backend call",
    )
}

/// A chain of dependent reads: each step reads one byte at `addr`, and
/// the next step reads at that byte's value plus one. Written out as a
/// future (not an `async` block, whose resumption after completion is a
/// panic path).
struct Chain<'r> {
    reader: &'r Async,
    addr: u64,
    steps: usize,
    step: Option<batch_reader::ReadValFuture<'r, u8, FaultyMemory, [u8; 64], 8, 256>>,
}

impl<'r> Chain<'r> {
    fn new(reader: &'r Async, addr: u64, steps: usize) -> Self {
        Self {
            reader,
            addr,
            steps,
            step: None,
        }
    }
}

impl core::future::Future for Chain<'_> {
    type Output = Result<u64, ReadErrorKind>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        while self.steps > 0 {
            let (reader, addr) = (self.reader, self.addr);
            let step = self.step.get_or_insert_with(|| reader.read_val::<u8>(addr));
            match Pin::new(step).poll(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Err(kind)) => return Poll::Ready(Err(kind)),
                Poll::Ready(Ok(byte)) => {
                    self.step = None;
                    self.addr = u64::from(byte) + 1;
                    self.steps -= 1;
                }
            }
        }
        Poll::Ready(Ok(self.addr))
    }
}

fn async_chains() -> Outcome {
    let mut reader = Async::new(faulty_memory()?, [0u8; 64]);
    let (a, b, c) = block_on(reader.run(|r| {
        join3(
            Chain::new(r, 0, 1),
            Chain::new(r, 10, 3),
            Chain::new(r, 200, 5),
        )
    }));
    ensure(
        (a, b, c) == (Ok(1), Ok(13), Ok(205)),
        "each chain ends where it should",
    )?;
    ensure(
        reader.counters().backend_calls == 5,
        "one backend call per step of the longest",
    )
}
