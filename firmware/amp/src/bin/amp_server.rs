//! The amp scenario, firmware as the server: lays out the `uring` region
//! and the two stream rings in the shared memory, answers the host's echo
//! requests (checking every body byte, writing every response byte) until
//! `STOP`, then streams both ways. Polls: the `Spin` notifier.
#![no_std]
#![no_main]

use amp::{Outcome, Streams};
use amp_proto::{ECHO, STOP, URING_LEN, URING_OFFSET};
use uring_queue::uring::{Incoming, Server, Spin, Uring};

#[cfg_attr(target_arch = "arm", cortex_m_rt::entry)]
#[cfg_attr(target_arch = "riscv32", riscv_rt::entry)]
fn main() -> ! {
    amp::finish("amp_server", serve())
}

fn serve() -> Outcome {
    // SAFETY: made once, here.
    let region = unsafe { amp::shared(URING_OFFSET, URING_LEN) }.ok_or("the region fits")?;
    let mut streams = Streams::init()?;
    let uring = Uring::init(region, amp_proto::config()).map_err(|_| "the region lays out")?;
    let mut server = uring.into_server(Spin);
    let mut served = 0u32;
    loop {
        let incoming = match server.try_recv() {
            Ok(Some(incoming)) => incoming,
            Ok(None) => continue,
            Err(_) => return Err("the host's requests are well formed"),
        };
        let stop = incoming.opcode() == STOP;
        answer(&mut server, incoming)?;
        if stop {
            break;
        }
        served += 1;
    }
    amp::report("amp_server: requests served and checked: ", served);
    streams.run()?;
    amp::report(
        "amp_server: stream values each way: ",
        amp_proto::STREAM_VALUES,
    );
    Ok(())
}

/// Checks an echo request's body and writes its response; answers `STOP`
/// with nothing. A body with a wrong byte is answered (with the count of
/// wrong bytes) and ends the run.
fn answer(server: &mut Server<'_, Spin>, incoming: Incoming) -> Outcome {
    let (result, len) = match incoming.opcode() {
        ECHO => {
            let (body, response) = server
                .buffers(&incoming)
                .map_err(|_| "the request is this server's")?;
            amp_proto::answer_echo(incoming.flags(), body, response)
        }
        STOP => (0, 0),
        _ => (-2, 0),
    };
    server
        .complete(incoming, result, len)
        .map_err(|_| "the completion is posted")?;
    if result == 0 {
        Ok(())
    } else {
        Err("every body byte the host wrote is right")
    }
}
