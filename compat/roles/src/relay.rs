//! A relay between a role and its Stratum V2 upstream, over Noise on both
//! sides: it answers the role with the upstream's authority key, connects to
//! the upstream as the role would, and forwards every frame unchanged, after
//! decoding a copy of it to record what went by: the shares going up, and
//! the channel, jobs and share acknowledgements coming down.

use crate::upstream::{Share, AUTHORITY_PRIVATE_K, AUTHORITY_PUBLIC_K};
use std::time::Duration;
use stratum_apps::key_utils::{Secp256k1PublicKey, Secp256k1SecretKey};
use stratum_apps::network_helpers::noise_stream::{NoiseTcpReadHalf, NoiseTcpWriteHalf};
use stratum_apps::network_helpers::{accept_noise_connection, connect_with_noise, Error};
use stratum_apps::stratum_core::framing_sv2::framing::SerializedFrame;
use stratum_apps::stratum_core::parsers_sv2::{AnyMessage, Mining};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

/// Which way a frame went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// From the role to its upstream.
    Up,
    /// From the upstream to the role.
    Down,
}

/// What went through the relay, sent as it happens.
#[derive(Debug)]
pub enum Event {
    /// `SubmitSharesExtended`, going up.
    Share(Share),
    /// `OpenExtendedMiningChannelSuccess`, coming down.
    ChannelOpened {
        channel_id: u32,
        extranonce_prefix: Vec<u8>,
    },
    /// `NewExtendedMiningJob`, coming down.
    Job {
        channel_id: u32,
        job_id: u32,
        version: u32,
    },
    /// `SubmitSharesSuccess`, coming down.
    Acknowledged {
        channel_id: u32,
        last_sequence_number: u32,
        accepted: u32,
    },
    /// `SubmitSharesError`, coming down.
    Rejected {
        sequence_number: u32,
        error_code: String,
    },
    /// A frame that did not decode, or a message that did not parse.
    DecodeError(Direction, String),
    /// Any other message (ext type, msg type).
    Other(Direction, u16, u8),
}

/// Binds the relay in front of the upstream at `upstream_port`; returns the
/// relay's port and the stream of its events.
pub async fn start(upstream_port: u16) -> (u16, mpsc::UnboundedReceiver<Event>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let (events, rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        let (tcp, _) = listener.accept().await.unwrap();
        let public: Secp256k1PublicKey = AUTHORITY_PUBLIC_K.parse().unwrap();
        let secret: Secp256k1SecretKey = AUTHORITY_PRIVATE_K.parse().unwrap();
        let role = accept_noise_connection(tcp, public, secret, 3600)
            .await
            .unwrap();
        let upstream = connect_with_noise(connect(upstream_port).await, Some(public))
            .await
            .unwrap();
        let (role_read, role_write) = role.into_split();
        let (upstream_read, upstream_write) = upstream.into_split();
        tokio::spawn(pump(
            upstream_read,
            role_write,
            Direction::Down,
            events.clone(),
        ));
        pump(role_read, upstream_write, Direction::Up, events).await;
    });
    (port, rx)
}

/// The upstream binds its port once it is ready: retry until then.
async fn connect(port: u16) -> TcpStream {
    for _ in 0..1200 {
        if let Ok(tcp) = TcpStream::connect(("127.0.0.1", port)).await {
            return tcp;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the upstream never listened on {port}");
}

/// Forwards every frame from `from` to `to` unchanged, recording each.
async fn pump(
    mut from: NoiseTcpReadHalf,
    mut to: NoiseTcpWriteHalf,
    direction: Direction,
    events: mpsc::UnboundedSender<Event>,
) {
    loop {
        let frame = match from.read_frame().await {
            Ok(frame) => frame,
            Err(Error::SocketClosed) => return,
            Err(e) => {
                let _ = events.send(Event::DecodeError(direction, format!("{e:?}")));
                return;
            }
        };
        let _ = events.send(inspect(frame.as_bytes().to_vec(), direction));
        if to.write_frame(frame).await.is_err() {
            return;
        }
    }
}

/// Decodes a copy of a frame's bytes.
fn inspect(bytes: Vec<u8>, direction: Direction) -> Event {
    let mut frame = match SerializedFrame::from_bytes(bytes) {
        Ok(frame) => frame,
        Err(hint) => return Event::DecodeError(direction, format!("frame: {hint:?}")),
    };
    let header = frame.header();
    let (ext, msg) = (header.ext_type(), header.msg_type());
    match AnyMessage::try_from((header, frame.payload())) {
        Ok(AnyMessage::Mining(message)) => {
            mining(message).unwrap_or(Event::Other(direction, ext, msg))
        }
        Ok(_) => Event::Other(direction, ext, msg),
        Err(e) => Event::DecodeError(direction, format!("{ext:#x}/{msg:#x}: {e:?}")),
    }
}

/// The mining messages the relay records.
fn mining(message: Mining<'_>) -> Option<Event> {
    Some(match message {
        Mining::SubmitSharesExtended(s) => Event::Share(Share {
            channel_id: s.channel_id,
            sequence_number: s.sequence_number,
            job_id: s.job_id,
            nonce: s.nonce,
            ntime: s.ntime,
            version: s.version,
            extranonce: s.extranonce.as_bytes().to_vec(),
        }),
        Mining::OpenExtendedMiningChannelSuccess(s) => Event::ChannelOpened {
            channel_id: s.channel_id,
            extranonce_prefix: s.extranonce_prefix.as_bytes().to_vec(),
        },
        Mining::NewExtendedMiningJob(j) => Event::Job {
            channel_id: j.channel_id,
            job_id: j.job_id,
            version: j.version,
        },
        Mining::SubmitSharesSuccess(s) => Event::Acknowledged {
            channel_id: s.channel_id,
            last_sequence_number: s.last_sequence_number,
            accepted: s.new_submits_accepted_count,
        },
        Mining::SubmitSharesError(e) => Event::Rejected {
            sequence_number: e.sequence_number,
            error_code: e.error_code.as_utf8_or_hex(),
        },
        _ => return None,
    })
}
