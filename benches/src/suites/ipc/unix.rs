//! The anchor: std's `UnixStream`, blocking, one process per side.
//!
//! The client writes a whole request frame with one `write_all` and reads
//! replies through a `BufReader`, as the server reads requests, so a small
//! message costs one `write` and about one `read` on each side. With 64 in
//! flight a second client thread writes the 64 requests while the first
//! reads the replies: one thread doing both would deadlock once a batch
//! outgrows the socket buffers (the server stops reading while its replies
//! are not read).

use super::Transport;
use super::peer::{self, Peer};
use super::wire::{self, HEADER, IpcError, MAX_BODY, Patterns};
use std::io::{BufRead, BufReader, Read, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

/// Read buffer of either side: many small messages per `read`, while a
/// large body bypasses it and goes straight to its destination.
pub(crate) const READ_BUF: usize = 64 << 10;

/// The client end, with its server process.
#[derive(Debug)]
pub struct Client<'p> {
    reader: BufReader<UnixStream>,
    writer: UnixStream,
    patterns: &'p Patterns,
    frames: Vec<u8>,
    body: Vec<u8>,
    peer: Peer,
}

impl<'p> Client<'p> {
    /// Starts a server process (on `cpu` if given) and connects to it.
    pub fn spawn(patterns: &'p Patterns, cpu: Option<usize>) -> Result<Self, IpcError> {
        let (ours, theirs) = UnixStream::pair()?;
        let peer = Peer::spawn("unix", &[theirs.as_fd()], cpu)?;
        drop(theirs);
        Ok(Self {
            writer: ours.try_clone()?,
            reader: BufReader::with_capacity(READ_BUF, ours),
            patterns,
            frames: patterns.request_frames(),
            body: vec![0; MAX_BODY],
            peer,
        })
    }

    /// Hangs up and waits for the server to exit cleanly.
    pub fn finish(self) -> Result<(), IpcError> {
        drop(self.reader);
        drop(self.writer);
        self.peer.finish()
    }

    fn read_reply(&mut self, len: usize) -> Result<(), IpcError> {
        read_reply(&mut self.reader, &mut self.body[..len], self.patterns)
    }
}

/// Reads one reply of `body.len()` bytes into `body` and checks it.
pub(crate) fn read_reply(
    reader: &mut BufReader<UnixStream>,
    body: &mut [u8],
    patterns: &Patterns,
) -> Result<(), IpcError> {
    let mut header = [0; HEADER];
    reader.read_exact(&mut header)?;
    wire::check_reply_header(i32::from_le_bytes(header), body.len())?;
    reader.read_exact(body)?;
    wire::check_body("reply", body, &patterns.reply[..body.len()])
}

impl Transport for Client<'_> {
    fn exchange(&mut self, len: usize, count: usize, depth: usize) -> Result<Duration, IpcError> {
        if depth <= 1 {
            let start = Instant::now();
            for _ in 0..count {
                let frame = wire::frame(&mut self.frames, wire::request_header(len), len);
                self.writer.write_all(frame)?;
                self.read_reply(len)?;
            }
            return Ok(start.elapsed());
        }
        let Self {
            reader,
            writer,
            patterns,
            frames,
            body,
            ..
        } = self;
        let writer: &UnixStream = writer;
        let frame = wire::frame(frames, wire::request_header(len), len);
        let body = &mut body[..len];
        thread::scope(|s| {
            let (batches, todo) = mpsc::channel::<usize>();
            let writing = s.spawn({
                move || -> std::io::Result<()> {
                    // Created on the client's core, the thread stays there.
                    let mut w = writer;
                    for k in todo {
                        for _ in 0..k {
                            w.write_all(frame)?;
                        }
                    }
                    Ok(())
                }
            });
            let start = Instant::now();
            let read = (|| -> Result<Duration, IpcError> {
                let mut left = count;
                while left > 0 {
                    let k = left.min(depth);
                    batches
                        .send(k)
                        .map_err(|_| IpcError::Transport("the writing thread stopped".into()))?;
                    for _ in 0..k {
                        read_reply(reader, body, patterns)?;
                    }
                    left -= k;
                }
                Ok(start.elapsed())
            })();
            drop(batches);
            if read.is_err() {
                // Unblocks a writer stuck on a full socket.
                let _ = writer.shutdown(std::net::Shutdown::Both);
            }
            let wrote = writing.join().expect("writing thread panicked");
            let elapsed = read?;
            wrote?;
            Ok(elapsed)
        })
    }
}

/// The server: answers requests in order until the client hangs up.
pub fn serve(fds: Vec<OwnedFd>) -> Result<(), IpcError> {
    let fd = peer::one_fd(fds, "socket")?;
    serve_on(UnixStream::from(fd), &Patterns::new())
}

/// The server loop on a connected socket.
pub fn serve_on(stream: UnixStream, patterns: &Patterns) -> Result<(), IpcError> {
    let mut reader = BufReader::with_capacity(READ_BUF, &stream);
    let mut writer = &stream;
    let mut body = vec![0; MAX_BODY];
    let mut frames = patterns.reply_frames();
    loop {
        if reader.fill_buf()?.is_empty() {
            return Ok(()); // the client hung up between requests
        }
        let mut header = [0; HEADER];
        reader.read_exact(&mut header)?;
        let len = wire::request_len(i32::from_le_bytes(header))?;
        let body = &mut body[..len];
        reader.read_exact(body)?;
        wire::check_body("request", body, &patterns.request[..len])?;
        writer.write_all(wire::frame(&mut frames, wire::reply_header(len), len))?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::OnceLock;

    fn patterns() -> &'static Patterns {
        static P: OnceLock<Patterns> = OnceLock::new();
        P.get_or_init(Patterns::new)
    }

    /// Runs `client` against `serve_on` in a thread; returns the server's result.
    fn with_server(client: impl FnOnce(UnixStream)) -> Result<(), IpcError> {
        let (ours, theirs) = UnixStream::pair().unwrap();
        thread::scope(|s| {
            let server = s.spawn(|| serve_on(theirs, patterns()));
            client(ours);
            server.join().unwrap()
        })
    }

    fn request(len: usize) -> Vec<u8> {
        let mut frames = patterns().request_frames();
        wire::frame(&mut frames, wire::request_header(len), len).to_vec()
    }

    #[test]
    fn server_answers_every_size_in_order_and_exits_on_hang_up() {
        let r = with_server(|stream| {
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut body = vec![0; MAX_BODY];
            for len in [0, 4, 64, 4096, 65536, MAX_BODY] {
                (&stream).write_all(&request(len)).unwrap();
                read_reply(&mut reader, &mut body[..len], patterns()).unwrap();
            }
            // Pipelined: three requests, then three replies.
            for len in [4, 64, 4] {
                (&stream).write_all(&request(len)).unwrap();
            }
            for len in [4, 64, 4] {
                read_reply(&mut reader, &mut body[..len], patterns()).unwrap();
            }
        });
        assert!(r.is_ok(), "{r:?}");
    }

    #[test]
    fn server_refuses_a_corrupt_request() {
        let r = with_server(|stream| {
            let mut req = request(4096);
            req[HEADER + 1000] ^= 1;
            (&stream).write_all(&req).unwrap();
        });
        match r {
            Err(IpcError::BadBody { what, at, .. }) => assert_eq!((what, at), ("request", 1000)),
            other => panic!("corrupt request accepted: {other:?}"),
        }
    }

    #[test]
    fn server_refuses_an_oversize_or_negative_header() {
        for header in [MAX_BODY as i32 + 1, -4] {
            let r = with_server(|stream| {
                (&stream).write_all(&header.to_le_bytes()).unwrap();
            });
            assert!(
                matches!(r, Err(IpcError::BadHeader { got, .. }) if got == header),
                "{r:?}"
            );
        }
    }

    #[test]
    fn server_reports_a_request_cut_short() {
        let r = with_server(|stream| {
            (&stream).write_all(&request(4096)[..100]).unwrap();
        });
        assert!(
            matches!(&r, Err(IpcError::Io(e)) if e.kind() == std::io::ErrorKind::UnexpectedEof),
            "{r:?}"
        );
    }

    #[test]
    fn client_refuses_a_corrupt_or_echoed_reply() {
        let len = 64;
        let mut frames = patterns().reply_frames();
        let good = wire::frame(&mut frames, wire::reply_header(len), len).to_vec();
        let mut bad_body = good.clone();
        bad_body[HEADER + len - 1] ^= 0x80;
        for (reply, what) in [(bad_body, "body"), (request(len), "echo")] {
            let (ours, theirs) = UnixStream::pair().unwrap();
            (&theirs).write_all(&reply).unwrap();
            let mut reader = BufReader::new(ours);
            let mut body = vec![0; len];
            let r = read_reply(&mut reader, &mut body, patterns());
            assert!(r.is_err(), "{what} accepted");
        }
        let (ours, theirs) = UnixStream::pair().unwrap();
        (&theirs).write_all(&good).unwrap();
        let mut body = vec![0; len];
        read_reply(&mut BufReader::new(ours), &mut body, patterns()).unwrap();
    }
}
