//! The client's work, the same for every transport: `count` requests of a
//! `len`-byte body, `depth` kept in flight (a new request goes out as each
//! reply comes back and is checked), every reply checked in full.

use crate::suites::ipc::unix::read_reply;
use crate::suites::ipc::uring::{self, SLOTS};
use crate::suites::ipc::wire::{self, HEADER, IpcError, Patterns};
use std::collections::VecDeque;
use std::io::{BufReader, Write};
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};
use uring_queue::uring::{Client, Notifier, Ticket};

/// Over the crate's request/response pair, through its blocking calls
/// (`submit`, then `wait` for the oldest): a plain pair or a service's
/// connection alike. How a call waits is the client's options.
pub fn pair<W: Notifier>(
    client: &Client<'_, SLOTS, W>,
    patterns: &Patterns,
    (len, count, depth): (usize, usize, usize),
) -> Result<Duration, IpcError> {
    let depth = depth.clamp(1, SLOTS);
    let mut tickets = VecDeque::<Ticket>::with_capacity(depth);
    let submit = |tickets: &mut VecDeque<Ticket>| -> Result<(), IpcError> {
        let request = uring::request(client, patterns, len)?;
        tickets.push_back(client.submit(request).map_err(uring::err)?);
        Ok(())
    };
    let start = Instant::now();
    for _ in 0..count.min(depth) {
        submit(&mut tickets)?;
    }
    let mut sent = count.min(depth);
    while let Some(ticket) = tickets.pop_front() {
        uring::check(client, patterns, client.wait(ticket), len)?;
        if sent < count {
            submit(&mut tickets)?;
            sent += 1;
        }
    }
    Ok(start.elapsed())
}

/// One end of a Unix socket, framed as the `ipc` suite frames it.
#[derive(Debug)]
pub struct Socket {
    reader: BufReader<UnixStream>,
    writer: UnixStream,
    frames: Vec<u8>,
    body: Vec<u8>,
}

impl Socket {
    /// Frames requests of up to `max` bytes on `stream`.
    pub fn new(stream: UnixStream, patterns: &Patterns, max: usize) -> Result<Self, IpcError> {
        let mut frames = vec![0; HEADER + max];
        frames[HEADER..].copy_from_slice(&patterns.request[..max]);
        Ok(Self {
            reader: BufReader::with_capacity(4096, stream.try_clone()?),
            writer: stream,
            frames,
            body: vec![0; max],
        })
    }

    /// The same work over the socket, blocking: `depth` frames written,
    /// then one more as each reply is read and checked. Small frames all
    /// fit the socket's buffer, so one thread can do both.
    pub fn exchange(
        &mut self,
        patterns: &Patterns,
        (len, count, depth): (usize, usize, usize),
    ) -> Result<Duration, IpcError> {
        let frame = wire::frame(&mut self.frames, wire::request_header(len), len);
        let body = &mut self.body[..len];
        let start = Instant::now();
        let first = count.min(depth.max(1));
        for _ in 0..first {
            self.writer.write_all(frame)?;
        }
        for sent in first..count + first {
            read_reply(&mut self.reader, body, patterns)?;
            if sent < count {
                self.writer.write_all(frame)?;
            }
        }
        Ok(start.elapsed())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suites::ipc::tokio_unix::serve_on;

    #[test]
    fn a_socket_keeps_its_depth_in_flight_and_a_long_body_is_refused() {
        let patterns = Patterns::upto(64);
        let (ours, theirs) = UnixStream::pair().unwrap();
        std::thread::scope(|s| {
            let server = s.spawn(|| {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_io()
                    .build()
                    .unwrap();
                theirs.set_nonblocking(true).unwrap();
                let stream = {
                    let _ctx = rt.enter();
                    tokio::net::UnixStream::from_std(theirs).unwrap()
                };
                rt.block_on(serve_on(stream, &patterns))
            });
            let mut socket = Socket::new(ours, &patterns, 64).unwrap();
            for work in [(4, 1, 1), (4, 100, 16), (64, 5, 16), (0, 2, 1)] {
                socket.exchange(&patterns, work).unwrap();
            }
            // A body longer than the server's patterns is refused, not
            // answered: the server hangs up with the reason.
            socket.frames = vec![0; HEADER + 65];
            socket.body = vec![0; 65];
            let long = Patterns::upto(65);
            assert!(socket.exchange(&long, (65, 1, 1)).is_err());
            drop(socket);
            let served = server.join().unwrap();
            assert!(
                matches!(&served, Err(IpcError::Transport(m)) if m.contains("65-byte")),
                "{served:?}"
            );
        });
    }
}
