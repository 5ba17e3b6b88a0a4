//! The embedded-io adapter against the naive oracle, with a device that
//! returns short reads and has bad sectors.
#![cfg(feature = "embedded-io")]

mod common;

use batch_reader::backends::EmbeddedIoBackend;
use batch_reader::{CoalescePolicy, Geometry, ReadErrorKind, ReadOp, Reader};
use common::{Collector, oracle};
use embedded_io::{ErrorKind, ErrorType, Read, Seek, SeekFrom};
use proptest::prelude::*;

/// A device: `data`, reads of at most 5 bytes, sectors of 16 bytes of which
/// those in `bad` fail.
struct Flash<'a> {
    data: &'a [u8],
    pos: u64,
    bad: &'a [u64],
}

impl ErrorType for Flash<'_> {
    type Error = ErrorKind;
}

impl Read for Flash<'_> {
    fn read(&mut self, buf: &mut [u8]) -> Result<usize, ErrorKind> {
        if self.bad.contains(&(self.pos / 16)) {
            return Err(ErrorKind::Other);
        }
        let at = self.pos as usize;
        let to_sector_end = 16 - at % 16;
        let n = buf
            .len()
            .min(5)
            .min(to_sector_end)
            .min(self.data.len().saturating_sub(at));
        buf[..n].copy_from_slice(&self.data[at..at + n]);
        self.pos += n as u64;
        Ok(n)
    }
}

impl Seek for Flash<'_> {
    fn seek(&mut self, pos: SeekFrom) -> Result<u64, ErrorKind> {
        match pos {
            SeekFrom::Start(p) if p <= self.data.len() as u64 => {
                self.pos = p;
                Ok(p)
            }
            _ => Err(ErrorKind::InvalidInput),
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: if cfg!(miri) { 3 } else { 128 },
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn adapter_matches_oracle(
        len in 0usize..300,
        bad in prop::collection::vec(0u64..20, 0..3),
        spec in prop::collection::vec((0u64..320, 0usize..60), 0..12),
        gap in prop_oneof![Just(None), Just(Some(0u64)), Just(Some(4))],
    ) {
        let data: Vec<u8> = (0..len).map(|i| (i * 5 + 3) as u8).collect();
        let g = Geometry::new(Some(16), 16, 8).unwrap();
        let flash = Flash { data: &data, pos: 0, bad: &bad };
        let mut reader: Reader<_, _> = Reader::new(EmbeddedIoBackend::new(flash, g), [0u8; 64]);
        reader.set_policy(gap.map_or(CoalescePolicy::disabled(), CoalescePolicy::with_gap));
        let mut bufs: Vec<Vec<u8>> = spec.iter().map(|&(_, l)| vec![0u8; l]).collect();
        let mut ops: Vec<ReadOp<'_>> = bufs
            .iter_mut()
            .zip(&spec)
            .enumerate()
            .map(|(i, (b, &(a, _)))| ReadOp::new(a, b, i))
            .collect();
        let mut got = Collector::default();
        reader.read_many(&mut ops, |c| got.push(&c));
        drop(ops);
        got.finish();
        let mut naive = EmbeddedIoBackend::new(Flash { data: &data, pos: 0, bad: &bad }, g);
        for (i, &(addr, l)) in spec.iter().enumerate() {
            let (want, _) = oracle(&mut naive, addr, &mut vec![0u8; l]);
            prop_assert_eq!(&got.ops[i].1, &want, "op {}", i);
            for s in &want {
                if let Err(kind) = s.result {
                    let at = addr + s.offset as u64;
                    if !bad.contains(&(at / 16)) {
                        prop_assert_eq!(kind, ReadErrorKind::OutOfBounds);
                    } else if at < len as u64 {
                        prop_assert_eq!(kind, ReadErrorKind::Other);
                    }
                }
            }
        }
        for (i, offset, bytes) in &got.ok_data {
            let at = spec[*i].0 as usize + offset;
            prop_assert_eq!(bytes.as_slice(), &data[at..at + bytes.len()]);
        }
    }
}
