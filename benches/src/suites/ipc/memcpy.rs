//! The floors, in one process: what moving the bytes costs with no
//! transport at all.
//!
//! - `memcpy`: one copy of the body in each direction per request (client
//!   buffer to server buffer, server buffer to client buffer): the yardstick
//!   of the 4 MiB target.
//! - `memcpy_checked`: the same, plus the two full-body comparisons every
//!   transport variant makes (the server's check of the request, the
//!   client's check of the reply): the floor of the work the suite asks for.

use super::Transport;
use super::wire::{self, IpcError, MAX_BODY, Patterns};
use std::hint::black_box;
use std::time::{Duration, Instant};

/// The body buffers the two sides of a transport would hold.
#[derive(Debug)]
pub struct Floor<'p> {
    patterns: &'p Patterns,
    checked: bool,
    server_in: Vec<u8>,
    client_in: Vec<u8>,
    // Each side's own copy of what it expects, as in two processes.
    server_expects: Vec<u8>,
    client_expects: Vec<u8>,
}

impl<'p> Floor<'p> {
    /// The copies alone (`checked == false`) or with the checks.
    pub fn new(patterns: &'p Patterns, checked: bool) -> Self {
        Self {
            patterns,
            checked,
            // Faulted in now, as a transport's buffers are before timing.
            server_in: vec![1; MAX_BODY],
            client_in: vec![1; MAX_BODY],
            server_expects: patterns.request.clone(),
            client_expects: patterns.reply.clone(),
        }
    }
}

impl Transport for Floor<'_> {
    fn exchange(&mut self, len: usize, count: usize, _depth: usize) -> Result<Duration, IpcError> {
        let request = &self.patterns.request[..len];
        let reply = &self.patterns.reply[..len];
        let server_in = &mut self.server_in[..len];
        let client_in = &mut self.client_in[..len];
        let start = Instant::now();
        for _ in 0..count {
            server_in.copy_from_slice(black_box(request));
            black_box(&mut *server_in);
            if self.checked {
                wire::check_body("request", server_in, &self.server_expects[..len])?;
            }
            client_in.copy_from_slice(black_box(reply));
            black_box(&mut *client_in);
            if self.checked {
                wire::check_body("reply", client_in, &self.client_expects[..len])?;
            }
        }
        Ok(start.elapsed())
    }
}
