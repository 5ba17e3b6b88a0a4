//! The amp scenario, firmware as the client: lays out the `uring` region
//! and the two stream rings in the shared memory, asks the host's server
//! how many echo requests to send (`HELLO`), sends them one call at a time
//! (every body byte written here, every response byte checked here; the
//! host checks the bodies), then `STOP`, then streams both ways. Polls:
//! the `Spin` notifier.
#![no_std]
#![no_main]

use amp::{Outcome, Streams};
use amp_proto::{ECHO, HELLO, IN_FLIGHT, STOP, URING_LEN, URING_OFFSET};
use uring_queue::uring::{Client, Request, Spin, Uring};

#[cfg_attr(target_arch = "arm", cortex_m_rt::entry)]
#[cfg_attr(target_arch = "riscv32", riscv_rt::entry)]
fn main() -> ! {
    amp::finish("amp_client", run())
}

fn run() -> Outcome {
    // SAFETY: made once, here.
    let region = unsafe { amp::shared(URING_OFFSET, URING_LEN) }.ok_or("the region fits")?;
    let mut streams = Streams::init()?;
    let uring = Uring::init(region, amp_proto::config()).map_err(|_| "the region lays out")?;
    let client = uring.into_client::<IN_FLIGHT, _>(Spin);
    let requests = hello(&client)?;
    for i in 0..requests {
        echo(&client, i)?;
    }
    client
        .call(Request::new(STOP))
        .map_err(|_| "the host answers STOP")?;
    amp::report("amp_client: requests sent and checked: ", requests);
    streams.run()?;
    amp::report(
        "amp_client: stream values each way: ",
        amp_proto::STREAM_VALUES,
    );
    Ok(())
}

/// Asks the server how many echo requests to send.
fn hello(client: &Client<'_, IN_FLIGHT, Spin>) -> Result<u32, &'static str> {
    let out = client.alloc(4).map_err(|_| "4 bytes of response fit")?;
    let reply = client
        .call(Request::new(HELLO).with_response(out))
        .map_err(|_| "the host answers HELLO")?;
    let count = client
        .response(&reply)
        .ok()
        .and_then(|r| <[u8; 4]>::try_from(r).ok())
        .map(u32::from_le_bytes);
    client.free_reply(reply);
    count.ok_or("HELLO's response is a u32")
}

/// Echo request `i`: writes its body, calls, checks every response byte.
fn echo(client: &Client<'_, IN_FLIGHT, Spin>, i: u32) -> Outcome {
    let mut body = client
        .alloc(amp_proto::body_len(i))
        .map_err(|_| "the body fits")?;
    let out = client
        .alloc(amp_proto::response_len(i))
        .map_err(|_| "the response fits")?;
    amp_proto::fill(
        client
            .bytes_mut(&mut body)
            .map_err(|_| "the block is this client's")?,
        i,
        false,
    );
    let request = Request::new(ECHO)
        .with_flags(i)
        .with_payload(body)
        .with_response(out);
    let reply = client.call(request).map_err(|_| "the host answers")?;
    let wrong = match client.response(&reply) {
        Ok(response) if reply.result == 0 => amp_proto::wrong_bytes(response, i, true),
        _ => None,
    };
    client.free_reply(reply);
    if wrong == Some(0) {
        Ok(())
    } else {
        Err("the host found every body byte right and wrote every response byte right")
    }
}
