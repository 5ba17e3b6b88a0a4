//! The server process: a service bound to a name, every client served from
//! one thread by the crate's blocking [`Hub`] (epoll over the listening
//! socket and each client's socket and eventfd, at most 16 requests per
//! client per round).
//!
//! It checks every request body in full and writes the reply body into the
//! response block, as the `ipc` servers do. A request that fails a check
//! gets a reply header no client accepts ([`REFUSED`]), so the client
//! stops the run, and the server exits with the first such error.

use super::SMALL;
use super::control::{Control, field};
use crate::suites::ipc::uring::SLOTS;
use crate::suites::ipc::wire::{self, IpcError, Patterns};
use std::os::fd::OwnedFd;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use uring_queue::uring::service::{BindOptions, Hub, Service};
use uring_queue::uring::{Config, Incoming};

/// The reply header to a request that failed a check: `!i32::MIN`, which
/// no reply to a body of `0..=MAX_BODY` bytes carries.
const REFUSED: i32 = i32::MAX;

/// Each client's region: as many ring entries and in-flight slots as the
/// clients use, and a payload area for their small bodies.
pub fn options() -> BindOptions {
    BindOptions {
        config: Config::new(SLOTS, SLOTS, 64 << 10),
        ..BindOptions::default()
    }
}

/// The server role: binds the name in its setup, answers `ok`, then serves
/// until the suite hangs up.
pub fn serve(fds: Vec<OwnedFd>) -> Result<(), IpcError> {
    allow_many_descriptors();
    let mut control = Control::inherited(fds)?;
    let setup = control.setup()?;
    let hub = field(&setup, "name").and_then(|name| {
        let service = Service::bind(name, options())?;
        Ok(Hub::new(service)?)
    });
    let mut hub = control.answer(hub)?;
    let stop = Arc::new(AtomicBool::new(false));
    let watcher = {
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || {
            let r = control.until_hang_up();
            stop.store(true, Ordering::Relaxed);
            r
        })
    };
    let served = serve_until(&mut hub, &stop, &Patterns::upto(SMALL));
    watcher.join().expect("the control thread panicked")?;
    served
}

/// Serves `hub`'s clients until `stop` is set (noticed within 10 ms); the
/// first request that failed its check, if any, is the error.
fn serve_until(hub: &mut Hub, stop: &AtomicBool, patterns: &Patterns) -> Result<(), IpcError> {
    let mut failure = None;
    while !stop.load(Ordering::Relaxed) {
        hub.turn(
            Some(Duration::from_millis(10)),
            &mut |_, incoming, body, out| {
                answer(incoming, body, out, patterns).unwrap_or_else(|e| {
                    failure.get_or_insert(e);
                    (REFUSED, 0)
                })
            },
        )?;
    }
    failure.map_or(Ok(()), Err)
}

/// Checks one request and writes its reply: `(reply header, reply length)`.
fn answer(
    incoming: &Incoming,
    body: &[u8],
    out: &mut [u8],
    patterns: &Patterns,
) -> Result<(i32, usize), IpcError> {
    let len = wire::request_len(incoming.opcode() as i32)?;
    let expected = patterns.request.get(..len).ok_or_else(|| {
        IpcError::Transport(format!("a {len}-byte request; this server takes {SMALL}"))
    })?;
    wire::check_body("request", body, expected)?;
    let capacity = out.len();
    let out = out.get_mut(..len).ok_or_else(|| {
        IpcError::Transport(format!(
            "response block of {capacity} bytes for a {len}-byte reply"
        ))
    })?;
    out.copy_from_slice(&patterns.reply[..len]);
    Ok((wire::reply_header(len), len))
}

/// Raises this process's descriptor limit to the most it may have: each
/// client holds a socket, a memfd and two eventfds here, and a soft limit
/// of 1024 would refuse the 256th client.
pub fn allow_many_descriptors() {
    // SAFETY: `limit` is a writable rlimit; getrlimit fills it.
    let mut limit = unsafe { std::mem::zeroed::<libc::rlimit>() };
    // SAFETY: as above; RLIMIT_NOFILE is a valid resource.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } == 0 {
        limit.rlim_cur = limit.rlim_max;
        // SAFETY: `limit` is a valid rlimit; raising the soft limit to the
        // hard one needs no privilege and touches no memory of ours.
        unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &limit) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suites::ipc::uring;
    use crate::suites::service::flight;
    use uring_queue::uring::Request;
    use uring_queue::uring::service::{ClientConfig, connect};

    #[test]
    fn the_hub_answers_good_requests_and_refuses_a_corrupt_one() {
        let name = format!("compare-service-test-{}", std::process::id());
        let mut hub = Hub::new(Service::bind(name.as_str(), options()).unwrap()).unwrap();
        let stop = AtomicBool::new(false);
        let patterns = Patterns::upto(SMALL);
        std::thread::scope(|s| {
            let server = s.spawn(|| serve_until(&mut hub, &stop, &patterns));
            let client = connect::<SLOTS>(name.as_str(), ClientConfig::default()).unwrap();
            for work in [(4, 1, 1), (4, 40, 16), (SMALL, 8, 4), (0, 3, 2)] {
                flight::pair(&client, &patterns, work).unwrap();
            }
            // One flipped byte: the reply carries REFUSED, which the
            // client's check rejects, and the server reports the body.
            let mut body = client.alloc(4).unwrap();
            let bytes = client.bytes_mut(&mut body).unwrap();
            bytes.copy_from_slice(&patterns.request[..4]);
            bytes[2] ^= 1;
            let request = Request::new(wire::request_header(4) as u32)
                .with_payload(body)
                .with_response(client.alloc(4).unwrap());
            let reply = client.call(request);
            assert_eq!(reply.as_ref().unwrap().result, REFUSED);
            let checked = uring::check(&client, &patterns, reply, 4);
            assert!(
                matches!(checked, Err(IpcError::BadHeader { got: REFUSED, .. })),
                "{checked:?}"
            );
            stop.store(true, Ordering::Relaxed);
            let served = server.join().unwrap();
            assert!(
                matches!(served, Err(IpcError::BadBody { at: 2, .. })),
                "{served:?}"
            );
        });
    }
}
