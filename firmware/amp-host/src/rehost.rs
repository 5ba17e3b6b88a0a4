//! The host-restart run, against the firmware server, which keeps running
//! while the host process is killed and started again.
//!
//! `amp-host host-first` attaches (the first client of the firmware's
//! connection: epoch 1) and makes `<requests>` echo requests, every byte
//! checked; then leaves two requests answered and unread (their
//! completions wait in the completion ring), asks the firmware to take no
//! more requests (`Command::Hold`), submits two more (they wait in the
//! submission ring), prints `READY` and waits to be killed. The script
//! kills it with `SIGKILL`: nothing in the region says it is gone.
//!
//! `amp-host host-second` is the process started in its place. It attaches
//! the connection it finds, and its epoch (2) tells it an earlier client
//! used it: it submits nothing there, drops it, and waits for the
//! firmware's next connection, which its attach made the firmware lay out
//! (the server's `check_peer` saw the new epoch). There it is the first
//! client again (epoch 1), and makes `<requests>` echo requests numbered
//! from `SECOND_HOST_FIRST`, every byte checked, then `STOP` and the
//! streams. The firmware's report of each connection (its count and range
//! of request numbers, checked by the script) shows that none of the old
//! host's requests was answered or taken after the restart, and none of
//! the new host's went to the old connection.

use super::hostile::Ring;
use super::{Result, Shared, calls, submit, wait_for};
use amp_proto::{Command, SECOND_HOST_FIRST, SERVER_PID, STOP};
use std::io::Write;
use std::sync::atomic::Ordering;
use std::time::Duration;
use uring_queue::uring::Request;

/// The killed host: see the module's docs.
pub fn first(shared: &Shared, requests: u32) -> Result<()> {
    let (client, used) = shared.attach_fresh()?;
    if let Some(epoch) = used {
        return Err(format!("the first host found the connection used (epoch {epoch})").into());
    }
    calls(&client, 0, requests)?;
    let cq = Ring::of(shared, 20);
    let queued = || {
        let tail = shared.word(cq.tail()).load(Ordering::Acquire);
        tail.wrapping_sub(shared.word(cq.head()).load(Ordering::Acquire))
    };
    // Tickets this host never redeems: it is killed first.
    let mut unredeemed = Vec::new();
    for i in requests..requests + 2 {
        unredeemed.push(submit(&client, i)?.ok_or("an unread request fits")?);
    }
    wait_for(|| queued() == 2, "two completions wait unread")?;
    let control = shared.control();
    control.post(1, Command::Hold);
    wait_for(|| control.last_done() == 1, "the firmware holds")?;
    for i in requests + 2..requests + 4 {
        unredeemed.push(submit(&client, i)?.ok_or("a request to leave in the ring fits")?);
    }
    println!("READY");
    std::io::stdout().flush()?;
    loop {
        std::thread::sleep(Duration::from_secs(1));
    }
}

/// The host started in the killed one's place: see the module's docs.
pub fn second(shared: &Shared, requests: u32) -> Result<()> {
    let (client, used) = shared.attach_fresh()?;
    let Some(epoch) = used else {
        return Err(
            "the second host found no connection of the first: nothing was restarted".into(),
        );
    };
    let id = shared.word(SERVER_PID).load(Ordering::Acquire);
    calls(&client, SECOND_HOST_FIRST, requests)?;
    client.call(Request::new(STOP))?;
    println!(
        "amp-host host-second: found the first host's connection (client epoch {epoch}), \
         submitted nothing there, and attached the firmware's next (connection id {id}, epoch 1): \
         {requests} requests, every byte checked"
    );
    let (up, down) = shared.streams()?;
    amp_proto::stream(&mut down.into_producer(), &mut up.into_consumer(), false)?;
    Ok(())
}
