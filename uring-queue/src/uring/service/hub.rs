//! Many clients, one thread: every session of a service served from one
//! epoll set (the listening socket, each client's socket and eventfd), a
//! bounded batch of requests per client per round.

use super::admission::Peer;
use super::listener::{ACCEPT_RETRY, Failure, Service, is_exhaustion};
use super::session::Session;
use crate::uring::eventfd::drain;
use crate::uring::{Error, Incoming, Options};
use alloc::vec::Vec;
use core::mem::MaybeUninit;
use core::time::Duration;
use rustix::event::Timespec;
use rustix::event::epoll::{self, CreateFlags, Event, EventData, EventFlags};
use rustix::fd::{AsFd, OwnedFd};
use rustix::io::Errno;
use std::io;
use std::time::Instant;

/// The event data of the listening socket; client `i`'s socket is
/// `1 + 2i`, its eventfd `2 + 2i`.
const LISTENER: u64 = 0;

/// Events taken from the kernel per wait.
const EVENTS: usize = 256;

/// What one [`Hub::turn`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Turn {
    /// Clients admitted.
    pub accepted: usize,
    /// Clients turned away (and told why).
    pub refused: usize,
    /// Clients dropped: gone, or broke the protocol.
    pub dropped: usize,
    /// Requests completed.
    pub served: usize,
}

/// One client in the hub.
#[derive(Debug)]
struct Entry {
    session: Session,
    /// It may have requests waiting: serve it this round. Exactly the
    /// clients marked so are in the hub's ready list, once each.
    ready: bool,
}

/// Serves every client of a [`Service`] from one thread.
///
/// Each [`turn`](Self::turn) waits (with epoll) until a client's eventfd,
/// a client's socket or the listening socket is ready, then serves each
/// client that has requests waiting, at most
/// [`batch`](Self::set_batch) of them per client (so a client that floods
/// cannot starve the others: its surplus waits for the next round), drops
/// every client whose socket hung up or who broke the protocol, and admits
/// new clients. Clients with requests left over make the next turn's wait
/// return at once.
///
/// An idle client costs nothing per round: its wake flag stays armed, and
/// it is looked at only when its eventfd fires. A round visits the clients
/// marked ready and no other, so its cost does not grow with the number
/// connected.
///
/// When the process runs out of descriptors (or memory) to accept with,
/// the listening socket, which stays readable while clients wait, leaves
/// the epoll set until a client is dropped or [`ACCEPT_RETRY`] has passed,
/// so the hub sleeps rather than wake at once for nothing; the clients
/// wait in the backlog meanwhile.
///
/// # Examples
///
/// ```
/// # #[cfg(not(miri))] { // Miri cannot make these system calls.
/// use std::time::Duration;
/// use uring_queue::uring::Request;
/// use uring_queue::uring::service::{BindOptions, ClientConfig, Hub, Service, connect};
///
/// let name = format!("doc-hub-{}", std::process::id());
/// let mut hub = Hub::new(Service::bind(name.as_str(), BindOptions::default()).unwrap()).unwrap();
/// std::thread::scope(|s| {
///     let clients = s.spawn(|| {
///         let a = connect::<4>(name.as_str(), ClientConfig::default()).unwrap();
///         let b = connect::<4>(name.as_str(), ClientConfig::default()).unwrap();
///         assert_eq!(a.call(Request::new(1)).unwrap().result, 2);
///         assert_eq!(b.call(Request::new(20)).unwrap().result, 40);
///     });
///     while !clients.is_finished() {
///         hub.turn(Some(Duration::from_millis(1)), &mut |_peer, incoming, _body, _out| {
///             (incoming.opcode() as i32 * 2, 0)
///         })
///         .unwrap();
///     }
///     clients.join().unwrap();
/// });
/// # }
/// ```
pub struct Hub {
    service: Service,
    epoll: OwnedFd,
    clients: Vec<Option<Entry>>,
    /// The indices of the clients marked ready, each once: those the next
    /// round serves.
    ready: Vec<usize>,
    /// The round being served (the ready list taken at its start); kept
    /// for its allocation.
    round: Vec<usize>,
    batch: usize,
    /// Whether the listening socket is in the epoll set.
    listening: Listening,
}

/// Whether the hub watches its listening socket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Listening {
    /// In the epoll set.
    Yes,
    /// Out of it since accepting ran out of descriptors or memory: back in
    /// at this time, or when a client is dropped.
    PausedUntil(Instant),
}

impl core::fmt::Debug for Hub {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Hub")
            .field("service", &self.service)
            .field("clients", &self.clients())
            .field("batch", &self.batch)
            .finish_non_exhaustive()
    }
}

/// A session's options in a hub: no spinning, which would keep the one
/// thread from every other client.
fn hub_options() -> Options {
    Options {
        spin: 0,
        min_spin: 0,
        ..Options::default()
    }
}

impl Hub {
    /// A hub serving `service`'s clients (those it admits from now on).
    ///
    /// # Errors
    ///
    /// When the epoll set cannot be made.
    pub fn new(service: Service) -> io::Result<Self> {
        let epoll = epoll::create(CreateFlags::CLOEXEC)?;
        epoll::add(
            &epoll,
            service.listener(),
            EventData::new_u64(LISTENER),
            EventFlags::IN,
        )?;
        Ok(Self {
            service,
            epoll,
            clients: Vec::new(),
            ready: Vec::new(),
            round: Vec::new(),
            batch: 16,
            listening: Listening::Yes,
        })
    }

    /// The most requests served per client per round (at least 1; 16 by
    /// default).
    pub fn set_batch(&mut self, batch: usize) {
        self.batch = batch.max(1);
    }

    /// Clients connected now.
    pub fn clients(&self) -> usize {
        self.clients.iter().flatten().count()
    }

    /// The service.
    pub fn service(&self) -> &Service {
        &self.service
    }

    /// Waits up to `timeout` (`None`: until something happens) for clients
    /// to serve, then serves one round: at most the batch of each client
    /// with requests, `handler` answering each (`(result, response_len)`,
    /// as [`Server::handle`](crate::uring::Server::handle)).
    ///
    /// # Errors
    ///
    /// Only the epoll set's or the listening socket's failures, and not
    /// when the process is out of descriptors or memory: then the clients
    /// waiting stay in the backlog, and the listening socket is not
    /// watched, until a client is dropped or [`ACCEPT_RETRY`] has passed
    /// (a turn may then end before `timeout` having done nothing). A
    /// client's failure, its region's included, refuses or drops that
    /// client.
    pub fn turn<F>(&mut self, timeout: Option<Duration>, handler: &mut F) -> io::Result<Turn>
    where
        F: FnMut(&Peer, &Incoming, &[u8], &mut [u8]) -> (i32, usize),
    {
        let mut turn = Turn::default();
        self.resume_if_due()?;
        let timeout = if self.is_busy() {
            Some(Duration::ZERO)
        } else {
            self.until_resume(timeout)
        };
        let accept = self.wait(timeout, &mut turn)?;
        // Clients that stay ready go back on the (now empty) ready list for
        // the next round.
        let mut round = core::mem::replace(&mut self.ready, core::mem::take(&mut self.round));
        for &index in &round {
            self.serve(index, handler, &mut turn);
        }
        round.clear();
        self.round = round;
        if accept {
            self.accept(&mut turn)?;
        }
        if turn.dropped > 0 {
            // Descriptors came back: accept again now.
            self.resume()?;
        }
        Ok(turn)
    }

    /// When the listening socket is due back in the epoll set, if it is
    /// out of it.
    pub(crate) fn resume_at(&self) -> Option<Instant> {
        match self.listening {
            Listening::Yes => None,
            Listening::PausedUntil(at) => Some(at),
        }
    }

    /// `timeout`, cut short to when the listening socket is due back.
    fn until_resume(&self, timeout: Option<Duration>) -> Option<Duration> {
        let Some(at) = self.resume_at() else {
            return timeout;
        };
        let left = at.saturating_duration_since(Instant::now());
        Some(timeout.map_or(left, |t| t.min(left)))
    }

    /// Takes the listening socket out of the epoll set until a client is
    /// dropped or [`ACCEPT_RETRY`] has passed.
    fn pause(&mut self) -> io::Result<()> {
        if self.listening == Listening::Yes {
            epoll::delete(&self.epoll, self.service.listener())?;
        }
        self.listening = Listening::PausedUntil(Instant::now() + ACCEPT_RETRY);
        Ok(())
    }

    /// Puts the listening socket back in the epoll set if it was out.
    fn resume(&mut self) -> io::Result<()> {
        if self.listening != Listening::Yes {
            epoll::add(
                &self.epoll,
                self.service.listener(),
                EventData::new_u64(LISTENER),
                EventFlags::IN,
            )?;
            self.listening = Listening::Yes;
        }
        Ok(())
    }

    /// [`resume`](Self::resume) once the pause is over.
    fn resume_if_due(&mut self) -> io::Result<()> {
        match self.resume_at() {
            Some(at) if at <= Instant::now() => self.resume(),
            _ => Ok(()),
        }
    }

    /// Whether a client has requests left over from the last round.
    pub(crate) fn is_busy(&self) -> bool {
        !self.ready.is_empty()
    }

    /// Marks client `index` ready (once) if it is connected.
    fn mark_ready(&mut self, index: usize) {
        if let Some(Some(entry)) = self.clients.get_mut(index) {
            if !entry.ready {
                entry.ready = true;
                self.ready.push(index);
            }
        }
    }

    /// The epoll set: readable while something waits to be served.
    #[cfg(feature = "tokio")]
    pub(crate) fn epoll(&self) -> rustix::fd::BorrowedFd<'_> {
        self.epoll.as_fd()
    }

    /// Waits for events and marks what they say; returns whether clients
    /// wait to be accepted.
    fn wait(&mut self, timeout: Option<Duration>, turn: &mut Turn) -> io::Result<bool> {
        let ts = timeout.map(|t| Timespec {
            tv_sec: t.as_secs().try_into().unwrap_or(i64::MAX),
            tv_nsec: t.subsec_nanos().into(),
        });
        // On the stack, not in the hub: rustix's events hold a pointer
        // variant, which would make the hub `!Send`.
        let mut events = [MaybeUninit::<Event>::uninit(); EVENTS];
        let ready: &[Event] = match epoll::wait(&self.epoll, &mut events, ts.as_ref()) {
            Ok((ready, _)) => ready,
            Err(Errno::INTR) => &[],
            Err(e) => return Err(e.into()),
        };
        let mut accept = false;
        for event in ready {
            let data = event.data.u64();
            if data == LISTENER {
                accept = true;
                continue;
            }
            let index = ((data - 1) / 2) as usize;
            if data % 2 == 1 {
                // The client sends nothing after the handshake: readable
                // means gone, or garbage.
                self.drop_client(index, turn);
            } else if let Some(Some(entry)) = self.clients.get_mut(index) {
                drain(entry.session.server_mut().notifier().as_fd());
                self.mark_ready(index);
            }
        }
        Ok(accept)
    }

    /// Serves up to a batch of client `index`'s requests, then re-arms its
    /// wake flag unless more wait.
    fn serve<F>(&mut self, index: usize, handler: &mut F, turn: &mut Turn)
    where
        F: FnMut(&Peer, &Incoming, &[u8], &mut [u8]) -> (i32, usize),
    {
        let Some(Some(entry)) = self.clients.get_mut(index) else {
            return;
        };
        if !entry.ready {
            return;
        }
        let peer = entry.session.peer();
        let mut served = 0;
        let outcome = loop {
            if served == self.batch {
                break Ok(true);
            }
            match serve_one(&mut entry.session, &peer, handler) {
                Ok(true) => served += 1,
                Ok(false) => break Ok(false),
                Err(e) => break Err(e),
            }
        };
        turn.served += served;
        let server = entry.session.server_mut();
        match outcome {
            Ok(more) => {
                // Beats the heartbeat and notices a close at once.
                let alive = server.reactor_check(false);
                entry.ready = more || server.reactor_arm();
                if !alive {
                    self.drop_client(index, turn);
                } else if entry.ready {
                    self.ready.push(index);
                }
            }
            Err(_) => self.drop_client(index, turn),
        }
    }

    /// Admits every client waiting.
    fn accept(&mut self, turn: &mut Turn) -> io::Result<()> {
        loop {
            match self.service.try_admit() {
                Ok(Some(session)) => match self.insert(session) {
                    Ok(()) => turn.accepted += 1,
                    // No room in the epoll set: the session is gone, and
                    // its client sees `PeerGone`.
                    Err(_) => turn.dropped += 1,
                },
                Ok(None) => return Ok(()),
                // Turned away, or its region could not be made (it was
                // told): the others are served all the same.
                Err(Failure::Client(_)) => turn.refused += 1,
                // Out of descriptors or memory: the clients wait in the
                // backlog until some are freed. The listening socket stays
                // readable meanwhile; watched, it would wake every wait at
                // once, for nothing.
                Err(Failure::Listener(e)) if is_exhaustion(&e) => return self.pause(),
                Err(Failure::Listener(e)) => return Err(e),
            }
        }
    }

    /// Registers a new client's socket and eventfd.
    fn insert(&mut self, mut session: Session) -> io::Result<()> {
        session.set_options(hub_options());
        let index = match self.clients.iter().position(Option::is_none) {
            Some(free) => free,
            None => {
                self.clients.push(None);
                self.clients.len() - 1
            }
        };
        let token = 1 + 2 * index as u64;
        epoll::add(
            &self.epoll,
            session.socket(),
            EventData::new_u64(token),
            EventFlags::IN | EventFlags::RDHUP,
        )?;
        let eventfd = session.server_mut().notifier().as_fd();
        if let Err(e) = epoll::add(
            &self.epoll,
            eventfd,
            EventData::new_u64(token + 1),
            EventFlags::IN,
        ) {
            let _ = epoll::delete(&self.epoll, session.socket());
            return Err(e.into());
        }
        self.clients[index] = Some(Entry {
            session,
            ready: true,
        });
        self.ready.push(index);
        Ok(())
    }

    /// Drops client `index`: unmaps its region and closes its descriptors.
    fn drop_client(&mut self, index: usize, turn: &mut Turn) {
        let Some(slot) = self.clients.get_mut(index) else {
            return;
        };
        if let Some(mut entry) = slot.take() {
            if entry.ready {
                // Off the ready list, so that a client admitted into the
                // same place later is on it once.
                self.ready.retain(|&i| i != index);
            }
            let _ = epoll::delete(&self.epoll, entry.session.socket());
            let _ = epoll::delete(&self.epoll, entry.session.server_mut().notifier().as_fd());
            turn.dropped += 1;
        }
    }
}

/// Serves one request if one waits: `Ok(false)` when none does.
fn serve_one<F>(session: &mut Session, peer: &Peer, handler: &mut F) -> Result<bool, Error>
where
    F: FnMut(&Peer, &Incoming, &[u8], &mut [u8]) -> (i32, usize),
{
    let Some(incoming) = session.try_recv()? else {
        return Ok(false);
    };
    let (body, response) = session.buffers(&incoming)?;
    let (result, len) = handler(peer, &incoming, body, response);
    let len = len.min(incoming.response_capacity());
    session
        .complete(incoming, result, len)
        .map_err(|r| r.error)?;
    Ok(true)
}

#[cfg(all(test, not(miri)))]
mod tests {
    use super::*;
    use crate::uring::Request;
    use crate::uring::service::{BindOptions, ClientConfig, connect};
    use alloc::{format, vec};
    use std::sync::mpsc;

    /// The ready list holds exactly the clients marked ready, once each.
    fn assert_ready_list(hub: &Hub) {
        let mut listed = hub.ready.clone();
        listed.sort_unstable();
        listed.dedup();
        assert_eq!(
            listed.len(),
            hub.ready.len(),
            "listed twice: {:?}",
            hub.ready
        );
        let marked: Vec<usize> = (0..hub.clients.len())
            .filter(|&i| matches!(&hub.clients[i], Some(e) if e.ready))
            .collect();
        assert_eq!(listed, marked);
    }

    #[test]
    fn a_round_serves_the_clients_marked_ready_and_no_other() {
        let name = format!("hub-ready-{}", std::process::id());
        let mut hub =
            Hub::new(Service::bind(name.as_str(), BindOptions::default()).unwrap()).unwrap();
        hub.set_batch(2);
        let mut answer = |_: &Peer, incoming: &Incoming, _: &[u8], _: &mut [u8]| {
            (incoming.opcode() as i32 + 1, 0)
        };
        let mut turn = |hub: &mut Hub, timeout: Duration| {
            let t = hub.turn(Some(timeout), &mut answer).unwrap();
            assert_ready_list(hub);
            t
        };
        let (go, next) = mpsc::channel::<&str>();
        let (done, finished) = mpsc::channel::<Vec<u32>>();
        std::thread::scope(|s| {
            // Owned here, so that a failed assertion drops them and the hub,
            // and the client thread stops waiting.
            let (go, finished, mut hub) = (go, finished, hub);
            let name = name.as_str();
            s.spawn(move || {
                let clients: Vec<_> = (0..3)
                    .map(|_| connect::<4>(name, ClientConfig::default()).unwrap())
                    .collect();
                done.send(vec![]).unwrap();
                // Client 1 submits four requests at once; the others stay idle.
                next.recv().unwrap();
                let tickets: Vec<_> = (0..4)
                    .map(|k| clients[1].submit(Request::new(10 + k)).unwrap())
                    .collect();
                done.send(vec![]).unwrap();
                let results = tickets
                    .into_iter()
                    .map(|t| clients[1].wait(t).unwrap().result as u32)
                    .collect();
                done.send(results).unwrap();
                // Client 0 hangs up.
                next.recv().unwrap();
                drop(clients);
                done.send(vec![]).unwrap();
            });
            while finished.try_recv().is_err() {
                turn(&mut hub, Duration::from_millis(1));
            }
            assert_eq!(hub.clients(), 3);
            // Admitted clients are marked ready once; a round with nothing
            // waiting arms their flags and leaves them off the list.
            turn(&mut hub, Duration::ZERO);
            assert!(hub.ready.is_empty() && !hub.is_busy());
            go.send("submit").unwrap();
            finished.recv().unwrap();
            // Only client 1 is served, two requests a round; it stays on
            // the list while requests are left.
            let mut served = Vec::new();
            for _ in 0..100 {
                if served.iter().sum::<usize>() == 4 {
                    break;
                }
                let t = turn(&mut hub, Duration::from_millis(50));
                if t.served > 0 {
                    served.push(t.served);
                    assert!(hub.ready.len() <= 1, "{:?}", hub.ready);
                }
            }
            assert_eq!(served, [2, 2]);
            assert_eq!(finished.recv().unwrap(), [11, 12, 13, 14]);
            go.send("hang up").unwrap();
            finished.recv().unwrap();
            while hub.clients() > 0 {
                turn(&mut hub, Duration::from_secs(5));
            }
            assert!(hub.ready.is_empty());
        });
    }
}
