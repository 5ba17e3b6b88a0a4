//! What goes over the wire, and the checks both sides make.
//!
//! A request is an `i32` header, the body's length, followed by the body; a
//! reply is an `i32` header, the bitwise NOT of the length (so a server that
//! echoes requests back fails the client's check), followed by a body of the
//! same length. Headers are little-endian.
//!
//! Bodies are prefixes of two fixed pseudo-random byte strings, one for
//! requests and one for replies, which both processes generate at start-up.
//! Every body is compared in full with the expected prefix: a slice
//! comparison, so one `memcmp` per body, the same cost for every variant.

use std::fmt;
use std::io;

/// Largest body the suite sends; a server refuses a longer one.
pub const MAX_BODY: usize = 4 << 20;

/// Bytes of a header.
pub const HEADER: usize = 4;

/// The expected bodies: `request[..len]` and `reply[..len]` for a body of
/// `len` bytes.
#[derive(Debug)]
pub struct Patterns {
    /// The request body pattern, `MAX_BODY` bytes.
    pub request: Vec<u8>,
    /// The reply body pattern, `MAX_BODY` bytes.
    pub reply: Vec<u8>,
}

impl Patterns {
    /// Generates both patterns (a few milliseconds).
    pub fn new() -> Self {
        Self::upto(MAX_BODY)
    }

    /// The first `max` bytes of both patterns: for a process that sends or
    /// checks only small bodies, which need not generate 8 MiB first.
    pub fn upto(max: usize) -> Self {
        Self {
            request: pseudo_random(0x243f_6a88_85a3_08d3, max),
            reply: pseudo_random(0x1319_8a2e_0370_7344, max),
        }
    }

    /// A request frame for every length up to `MAX_BODY`: the request
    /// pattern after `HEADER` spare bytes, where [`frame`] writes the header.
    pub fn request_frames(&self) -> Vec<u8> {
        with_header_room(&self.request)
    }

    /// The same for replies.
    pub fn reply_frames(&self) -> Vec<u8> {
        with_header_room(&self.reply)
    }
}

fn with_header_room(body: &[u8]) -> Vec<u8> {
    let mut v = vec![0; HEADER + body.len()];
    v[HEADER..].copy_from_slice(body);
    v
}

/// Writes `header` into `frames` (from [`Patterns::request_frames`] or
/// [`Patterns::reply_frames`]) and returns the frame for a body of `len`.
pub fn frame(frames: &mut [u8], header: i32, len: usize) -> &[u8] {
    frames[..HEADER].copy_from_slice(&header.to_le_bytes());
    &frames[..HEADER + len]
}

/// `len` bytes of xorshift64* output from `seed`.
fn pseudo_random(mut seed: u64, len: usize) -> Vec<u8> {
    let mut v = Vec::with_capacity(len);
    while v.len() < len {
        seed ^= seed >> 12;
        seed ^= seed << 25;
        seed ^= seed >> 27;
        let x = seed.wrapping_mul(0x2545_f491_4f6c_dd1d);
        let take = (len - v.len()).min(8);
        v.extend_from_slice(&x.to_le_bytes()[..take]);
    }
    v
}

/// The header of a request with a body of `len` bytes.
pub fn request_header(len: usize) -> i32 {
    // `len <= MAX_BODY`, which fits an i32.
    i32::try_from(len).expect("body length fits the header")
}

/// The header of the reply to a request with a body of `len` bytes.
pub fn reply_header(len: usize) -> i32 {
    !request_header(len)
}

/// The body length a request header announces, if it is one a server
/// accepts.
pub fn request_len(header: i32) -> Result<usize, IpcError> {
    usize::try_from(header)
        .ok()
        .filter(|&len| len <= MAX_BODY)
        .ok_or(IpcError::BadHeader {
            what: "request",
            got: header,
            expected: None,
        })
}

/// Checks a reply header against the request's body length.
pub fn check_reply_header(header: i32, len: usize) -> Result<(), IpcError> {
    if header == reply_header(len) {
        Ok(())
    } else {
        Err(IpcError::BadHeader {
            what: "reply",
            got: header,
            expected: Some(reply_header(len)),
        })
    }
}

/// Checks that `got` equals `expected` byte for byte.
pub fn check_body(what: &'static str, got: &[u8], expected: &[u8]) -> Result<(), IpcError> {
    if got == expected {
        return Ok(());
    }
    // The slow path: say where.
    let at = got
        .iter()
        .zip(expected)
        .position(|(a, b)| a != b)
        .unwrap_or(got.len().min(expected.len()));
    Err(IpcError::BadBody {
        what,
        len: expected.len(),
        got_len: got.len(),
        at,
        got: got.get(at).copied(),
        expected: expected.get(at).copied(),
    })
}

/// Why a request or reply did not go through.
#[derive(Debug)]
pub enum IpcError {
    /// A system call failed, or the peer closed the connection.
    Io(io::Error),
    /// A header was not what the protocol allows.
    BadHeader {
        /// `request` or `reply`.
        what: &'static str,
        /// The header received.
        got: i32,
        /// The header expected, where one value is.
        expected: Option<i32>,
    },
    /// A body differs from the expected pattern.
    BadBody {
        /// `request` or `reply`.
        what: &'static str,
        /// Expected length.
        len: usize,
        /// Received length.
        got_len: usize,
        /// Offset of the first difference.
        at: usize,
        /// The byte received there, if any.
        got: Option<u8>,
        /// The byte expected there, if any.
        expected: Option<u8>,
    },
    /// A transport-specific failure.
    Transport(String),
}

impl fmt::Display for IpcError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Io(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
                write!(f, "the peer closed the connection mid-message ({e})")
            }
            Self::Io(e) => write!(f, "I/O error: {e}"),
            Self::BadHeader {
                what,
                got,
                expected: Some(x),
            } => write!(f, "bad {what} header {got}, expected {x}"),
            Self::BadHeader {
                what,
                got,
                expected: None,
            } => write!(f, "bad {what} header {got} (0..={MAX_BODY} allowed)"),
            Self::BadBody {
                what,
                len,
                got_len,
                at,
                got,
                expected,
            } => write!(
                f,
                "{what} body of {got_len} bytes (expected {len}) differs at byte {at}: \
                 got {got:02x?}, expected {expected:02x?}"
            ),
            Self::Transport(msg) => f.write_str(msg),
        }
    }
}

impl std::error::Error for IpcError {}

impl From<io::Error> for IpcError {
    fn from(e: io::Error) -> Self {
        Self::Io(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_differ_and_are_not_trivial() {
        let p = Patterns::new();
        assert_eq!(p.request.len(), MAX_BODY);
        assert_ne!(p.request[..64], p.reply[..64]);
        // No short period: a body shifted by a page still fails.
        assert_ne!(p.request[..4096], p.request[4096..8192]);
        assert_eq!(Patterns::new().request, p.request, "both sides agree");
        let small = Patterns::upto(64);
        assert_eq!(small.request, p.request[..64]);
        assert_eq!(small.reply, p.reply[..64]);
    }

    #[test]
    fn every_corrupt_byte_is_caught_and_located() {
        let p = Patterns::new();
        let expected = &p.request[..4096];
        for at in [0, 1, 2047, 4095] {
            let mut got = expected.to_vec();
            got[at] ^= 0x40;
            match check_body("request", &got, expected) {
                Err(IpcError::BadBody { at: a, len, .. }) => {
                    assert_eq!((a, len), (at, 4096));
                }
                other => panic!("corruption at {at} not caught: {other:?}"),
            }
        }
        assert!(check_body("request", expected, expected).is_ok());
        assert!(check_body("reply", &expected[..4095], expected).is_err());
        assert!(check_body("reply", &p.reply[..4096], expected).is_err());
    }

    #[test]
    fn headers_are_validated() {
        assert_eq!(request_len(request_header(64)).unwrap(), 64);
        assert!(request_len(-1).is_err());
        assert!(request_len(MAX_BODY as i32 + 1).is_err());
        assert!(check_reply_header(reply_header(4), 4).is_ok());
        // An echoed request header is not a reply.
        assert!(check_reply_header(request_header(4), 4).is_err());
        assert!(check_reply_header(reply_header(5), 4).is_err());
    }

    #[test]
    fn frames_carry_header_then_body() {
        let p = Patterns::new();
        let mut frames = p.request_frames();
        let f = frame(&mut frames, request_header(3), 3);
        assert_eq!(f.len(), HEADER + 3);
        assert_eq!(f[..HEADER], 3i32.to_le_bytes());
        assert_eq!(f[HEADER..], p.request[..3]);
    }
}
