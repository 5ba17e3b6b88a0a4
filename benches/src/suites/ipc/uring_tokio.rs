//! The crate's reactor-driven pair: `uring_queue::uring::tokio` over a
//! memfd, the client an `AsyncClient` and the server an `AsyncServer`, each
//! on a `current_thread` runtime of its own, woken through eventfds.
//!
//! The same requests, blocks and checks as the `uring_queue` variant (see
//! [`uring`](super::uring)); only the driving differs: `client.call(request).await`
//! on the client's runtime, `server.recv().await` on the server's. With 64
//! in flight, 64 `call` futures (boxed: one allocation per request, in the
//! benchmark's batch only) started by one pass, then finished in order.
//! Default options on both sides.

use super::Transport;
use super::peer::Peer;
use super::uring::{Batch, SLOTS, answer, check, config, err, populate, request};
use super::wire::{IpcError, Patterns};
use std::os::fd::{AsFd, OwnedFd};
use std::time::{Duration, Instant};
use tokio::runtime::{Builder, Runtime};
use uring_queue::SharedMemory;
use uring_queue::uring::tokio::{AsyncClient, AsyncServer};
use uring_queue::uring::{self as uq, EventFd, NotifierKind, Uring};

fn runtime() -> Result<Runtime, IpcError> {
    Ok(Builder::new_current_thread().enable_all().build()?)
}

/// The client end, its runtime and its server process.
#[derive(Debug)]
pub struct Client<'m, 'p> {
    // Dropped before the runtime it is registered with.
    client: AsyncClient<'m, SLOTS>,
    rt: Runtime,
    patterns: &'p Patterns,
    peer: Peer,
}

impl<'m, 'p> Client<'m, 'p> {
    /// Sets up the connection in `shm` (from
    /// [`uring::memory`](super::uring::memory) with the same `deep_max`)
    /// and starts a server process (on `cpu` if given) attached to it.
    pub fn spawn(
        shm: &'m mut SharedMemory,
        deep_max: usize,
        patterns: &'p Patterns,
        cpu: Option<usize>,
    ) -> Result<Self, IpcError> {
        let fd = shm.fd().try_clone_to_owned()?;
        populate(shm);
        let (mine, theirs) = EventFd::pair()?;
        let config = config(deep_max).with_notifier(NotifierKind::EventFd);
        let client = Uring::init(shm.region(), config)
            .map_err(err)?
            .into_client::<SLOTS, _>(mine);
        let (own, peer_fd) = theirs.into_fds();
        let peer = Peer::spawn(
            "uring_queue_tokio",
            &[fd.as_fd(), own.as_fd(), peer_fd.as_fd()],
            cpu,
        )?;
        let rt = runtime()?;
        let client = {
            let _ctx = rt.enter();
            AsyncClient::new(client)?
        };
        Ok(Self {
            client,
            rt,
            patterns,
            peer,
        })
    }

    /// Closes the connection and waits for the server to exit cleanly.
    pub fn finish(self) -> Result<(), IpcError> {
        {
            let _ctx = self.rt.enter();
            drop(self.client);
        }
        drop(self.rt);
        self.peer.finish()
    }
}

impl Transport for Client<'_, '_> {
    fn exchange(&mut self, len: usize, count: usize, depth: usize) -> Result<Duration, IpcError> {
        let (client, patterns) = (&self.client, self.patterns);
        let blocking = client.client();
        let depth = depth.clamp(1, SLOTS);
        let mut batch = Batch::with_capacity(depth);
        self.rt.block_on(async {
            let start = Instant::now();
            let mut left = count;
            while left > 0 {
                let k = left.min(depth);
                if k == 1 {
                    let reply = client.call(request(blocking, patterns, len)?).await;
                    check(blocking, patterns, reply, len)?;
                } else {
                    for _ in 0..k {
                        let call = client.call(request(blocking, patterns, len)?);
                        batch.start(Box::pin(call)).await;
                    }
                    batch
                        .finish(|reply| check(blocking, patterns, reply, len))
                        .await?;
                }
                left -= k;
            }
            Ok(start.elapsed())
        })
    }
}

/// The server: a task on a `current_thread` runtime, answering requests
/// until the client closes its end.
pub fn serve(fds: Vec<OwnedFd>) -> Result<(), IpcError> {
    let [memfd, own, peer_fd]: [OwnedFd; 3] = fds
        .try_into()
        .map_err(|_| IpcError::Transport("uring_queue_tokio: three descriptors".into()))?;
    let mut shm = SharedMemory::open(memfd).map_err(std::io::Error::from)?;
    populate(&mut shm);
    let server = Uring::attach_with(shm.region(), NotifierKind::EventFd)
        .map_err(err)?
        .into_server(EventFd::from_fds(own, peer_fd));
    let patterns = Patterns::new();
    runtime()?.block_on(async {
        let mut server = AsyncServer::new(server)?;
        loop {
            match server.recv().await {
                Ok(incoming) => answer(server.server_mut(), incoming, &patterns)?,
                Err(uq::Error::PeerGone) => return Ok(()),
                Err(e) => return Err(err(e)),
            }
        }
    })
}
