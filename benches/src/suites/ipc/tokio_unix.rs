//! tokio over a Unix socket: a current-thread runtime on each side.
//!
//! The same frames and buffering as the `unix` anchor. With 64 in flight the
//! client's one task writes the batch and reads its replies concurrently
//! (`join!` of the two halves), as an async client would.

use super::Transport;
use super::peer::{self, Peer};
use super::unix::READ_BUF;
use super::wire::{self, HEADER, IpcError, MAX_BODY, Patterns};
use std::future::{Future, poll_fn};
use std::os::fd::{AsFd, OwnedFd};
use std::pin::pin;
use std::task::Poll;
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::UnixStream;
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};
use tokio::runtime::{Builder, Runtime};

fn runtime() -> Result<Runtime, IpcError> {
    Ok(Builder::new_current_thread().enable_io().build()?)
}

fn to_tokio(rt: &Runtime, std: std::os::unix::net::UnixStream) -> Result<UnixStream, IpcError> {
    std.set_nonblocking(true)?;
    let _ctx = rt.enter();
    Ok(UnixStream::from_std(std)?)
}

/// The client end, with its runtime and server process.
#[derive(Debug)]
pub struct Client<'p> {
    rt: Runtime,
    reader: BufReader<OwnedReadHalf>,
    writer: OwnedWriteHalf,
    patterns: &'p Patterns,
    frames: Vec<u8>,
    body: Vec<u8>,
    peer: Peer,
}

impl<'p> Client<'p> {
    /// Starts a server process (on `cpu` if given) and connects to it.
    pub fn spawn(patterns: &'p Patterns, cpu: Option<usize>) -> Result<Self, IpcError> {
        let (ours, theirs) = std::os::unix::net::UnixStream::pair()?;
        let peer = Peer::spawn("tokio", &[theirs.as_fd()], cpu)?;
        drop(theirs);
        let rt = runtime()?;
        let (reader, writer) = to_tokio(&rt, ours)?.into_split();
        Ok(Self {
            rt,
            reader: BufReader::with_capacity(READ_BUF, reader),
            writer,
            patterns,
            frames: patterns.request_frames(),
            body: vec![0; MAX_BODY],
            peer,
        })
    }

    /// Hangs up and waits for the server to exit cleanly.
    pub fn finish(self) -> Result<(), IpcError> {
        {
            let _ctx = self.rt.enter();
            drop(self.reader);
            drop(self.writer);
        }
        drop(self.rt);
        self.peer.finish()
    }
}

async fn read_reply(
    reader: &mut BufReader<OwnedReadHalf>,
    body: &mut [u8],
    patterns: &Patterns,
) -> Result<(), IpcError> {
    let mut header = [0; HEADER];
    reader.read_exact(&mut header).await?;
    wire::check_reply_header(i32::from_le_bytes(header), body.len())?;
    reader.read_exact(body).await?;
    wire::check_body("reply", body, &patterns.reply[..body.len()])
}

impl Transport for Client<'_> {
    fn exchange(&mut self, len: usize, count: usize, depth: usize) -> Result<Duration, IpcError> {
        let Self {
            rt,
            reader,
            writer,
            patterns,
            frames,
            body,
            ..
        } = self;
        let frame = wire::frame(frames, wire::request_header(len), len);
        let body = &mut body[..len];
        let depth = depth.max(1);
        rt.block_on(async {
            let start = Instant::now();
            let mut left = count;
            while left > 0 {
                let k = left.min(depth);
                if k == 1 {
                    writer.write_all(frame).await?;
                    read_reply(reader, body, patterns).await?;
                } else {
                    let write = async {
                        for _ in 0..k {
                            writer.write_all(frame).await?;
                        }
                        Ok::<_, IpcError>(())
                    };
                    let read = async {
                        for _ in 0..k {
                            read_reply(reader, body, patterns).await?;
                        }
                        Ok::<_, IpcError>(())
                    };
                    let (w, r) = join(write, read).await;
                    r?;
                    w?;
                }
                left -= k;
            }
            Ok(start.elapsed())
        })
    }
}

/// Runs two futures concurrently in the calling task and returns both
/// outputs (tokio's `join!`, without the `macros` feature).
async fn join<A: Future, B: Future>(a: A, b: B) -> (A::Output, B::Output) {
    let (mut a, mut b) = (pin!(a), pin!(b));
    let (mut ra, mut rb) = (None, None);
    poll_fn(|cx| {
        if ra.is_none() {
            if let Poll::Ready(v) = a.as_mut().poll(cx) {
                ra = Some(v);
            }
        }
        if rb.is_none() {
            if let Poll::Ready(v) = b.as_mut().poll(cx) {
                rb = Some(v);
            }
        }
        if ra.is_some() && rb.is_some() {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    })
    .await;
    (ra.expect("ready"), rb.expect("ready"))
}

/// The server: answers requests in order until the client hangs up.
pub fn serve(fds: Vec<OwnedFd>) -> Result<(), IpcError> {
    let fd = peer::one_fd(fds, "socket")?;
    let rt = runtime()?;
    let stream = to_tokio(&rt, std::os::unix::net::UnixStream::from(fd))?;
    rt.block_on(serve_on(stream, &Patterns::new()))
}

/// The server loop on a connected socket: takes bodies as long as
/// `patterns` (a longer one is an error).
pub async fn serve_on(stream: UnixStream, patterns: &Patterns) -> Result<(), IpcError> {
    let mut stream = BufReader::with_capacity(READ_BUF, stream);
    let mut body = vec![0; patterns.request.len()];
    let mut frames = patterns.reply_frames();
    loop {
        if stream.fill_buf().await?.is_empty() {
            return Ok(()); // the client hung up between requests
        }
        let mut header = [0; HEADER];
        stream.read_exact(&mut header).await?;
        let len = wire::request_len(i32::from_le_bytes(header))?;
        let max = body.len();
        let body = body.get_mut(..len).ok_or_else(|| {
            IpcError::Transport(format!("a {len}-byte request; this server takes {max}"))
        })?;
        stream.read_exact(body).await?;
        wire::check_body("request", body, &patterns.request[..len])?;
        stream
            .write_all(wire::frame(&mut frames, wire::reply_header(len), len))
            .await?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    fn with_server(client: impl FnOnce(std::os::unix::net::UnixStream)) -> Result<(), IpcError> {
        let patterns = Patterns::new();
        let (ours, theirs) = std::os::unix::net::UnixStream::pair().unwrap();
        std::thread::scope(|s| {
            let server = s.spawn(|| {
                let rt = runtime()?;
                let stream = to_tokio(&rt, theirs)?;
                rt.block_on(serve_on(stream, &patterns))
            });
            client(ours);
            server.join().unwrap()
        })
    }

    #[test]
    fn server_answers_and_refuses_a_corrupt_request() {
        let patterns = Patterns::new();
        let mut requests = patterns.request_frames();
        let r = with_server(|mut stream| {
            for len in [4, 4 << 20] {
                stream
                    .write_all(wire::frame(&mut requests, wire::request_header(len), len))
                    .unwrap();
                let mut reply = vec![0; HEADER + len];
                stream.read_exact(&mut reply).unwrap();
                wire::check_reply_header(i32::from_le_bytes(reply[..4].try_into().unwrap()), len)
                    .unwrap();
                wire::check_body("reply", &reply[HEADER..], &patterns.reply[..len]).unwrap();
            }
        });
        assert!(r.is_ok(), "{r:?}");
        let r = with_server(|mut stream| {
            let mut req = wire::frame(&mut requests, wire::request_header(64), 64).to_vec();
            req[HEADER] ^= 1;
            stream.write_all(&req).unwrap();
        });
        assert!(matches!(r, Err(IpcError::BadBody { at: 0, .. })), "{r:?}");
    }
}
