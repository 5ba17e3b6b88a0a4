//! The restart run, against the firmware server. The host calls; the
//! script kills QEMU mid-stream (after the host printed `READY`): the
//! host's call must end with `PeerGone` (its notifier sees the emulator's
//! process gone), not hang and not return a reply. The script boots the
//! firmware again on the same file, whose memory still holds the old
//! boot's connection: the host must wait for the new boot's connection
//! (a new connection id), attach it, and the new boot must serve exactly
//! the requests sent to it (its count, which it prints after `STOP`, is
//! checked by the script): no request of the old boot is answered or
//! accepted.
//!
//! The emulator's process id is read from `<file>.pid`, which the script
//! writes after starting each QEMU.

use super::peer::Firmware;
use super::{Result, Shared, calls};
use amp_proto::{IN_FLIGHT, SERVER_PID, STOP};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};
use uring_queue::uring::{Client, Error, Request};

/// How long the script may take to kill and boot QEMU.
const PATIENCE: Duration = Duration::from_secs(120);

pub fn run(shared: &Shared, file: &str, requests: u32) -> Result<()> {
    let first = attach(shared, file, 0)?;
    let id = first.notifier_id;
    calls(&first.client, 0, requests)?;
    println!("READY");
    let gone = Instant::now();
    let mut i = requests;
    let ended = loop {
        match calls(&first.client, i, 1) {
            Ok(()) => i += 1,
            Err(e) => break e,
        }
    };
    match ended.downcast_ref::<Error>() {
        Some(Error::PeerGone) => {}
        _ => {
            return Err(
                format!("the old boot's connection ended with {ended}, not PeerGone").into(),
            );
        }
    }
    println!(
        "amp-host restart: PeerGone after {} requests to the first boot ({} ms after READY)",
        i,
        gone.elapsed().as_millis()
    );
    drop(first);
    let second = attach(shared, file, id)?;
    calls(&second.client, 0, requests)?;
    second.client.call(Request::new(STOP))?;
    println!(
        "amp-host restart: the second boot (connection id {}, the first was {id}) served {requests} requests",
        second.notifier_id
    );
    let (up, down) = shared.streams()?;
    amp_proto::stream(&mut down.into_producer(), &mut up.into_consumer(), false)?;
    Ok(())
}

struct Attached {
    client: Client<'static, IN_FLIGHT, Firmware>,
    notifier_id: u32,
}

/// Attaches the connection the firmware laid out last, once its id is
/// neither 0 (being laid out) nor `old` (the previous boot's, whose memory
/// the file still holds).
fn attach(shared: &Shared, file: &str, old: u32) -> Result<Attached> {
    let deadline = Instant::now() + PATIENCE;
    loop {
        let id = shared.word(SERVER_PID).load(Ordering::Acquire);
        if id != 0 && id != old {
            let emulator = std::fs::read_to_string(format!("{file}.pid"))
                .ok()
                .and_then(|p| p.trim().parse().ok());
            let uring = shared.attach_uring()?;
            let client = uring.into_client(Firmware {
                id,
                emulator,
                bell: None,
                woken: Default::default(),
            });
            return Ok(Attached {
                client,
                notifier_id: id,
            });
        }
        if Instant::now() > deadline {
            return Err("timed out waiting for the firmware's new connection".into());
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}
