//! A mock Stratum V2 upstream (a pool, as far as the translator can tell):
//! accepts one connection over Noise, answers the setup, opens the extended
//! channel the translator asks for, sends it a job and the previous hash, and
//! records every share the translator forwards.

use stratum_apps::key_utils::{Secp256k1PublicKey, Secp256k1SecretKey};
use stratum_apps::network_helpers::{accept_noise_connection, noise_stream::NoiseTcpWriteHalf};
use stratum_apps::stratum_core::binary_sv2::{Seq0255, Sv2Option, U256};
use stratum_apps::stratum_core::common_messages_sv2::SetupConnectionSuccess;
use stratum_apps::stratum_core::framing_sv2::framing::MessageFrame;
use stratum_apps::stratum_core::mining_sv2::{
    NewExtendedMiningJob, OpenExtendedMiningChannel, OpenExtendedMiningChannelSuccess,
    SetNewPrevHash,
};
use stratum_apps::stratum_core::parsers_sv2::{AnyMessage, CommonMessages, Mining};
use tokio::net::TcpListener;
use tokio::sync::mpsc;

pub const AUTHORITY_PUBLIC_K: &str = "9auqWEzQDVyd2oe1JVGFLMLHZtCo2FFqZwtKA5gd9xbuEu7PH72";
pub const AUTHORITY_PRIVATE_K: &str = "mkDLTBBRxdBv998612qipDYoTK3YUrqLe8uWw7gu3iXbSrn2n";

/// The channel the upstream opens, and the prefix of every extranonce on it.
pub const CHANNEL_ID: u32 = 7;
pub const EXTRANONCE_PREFIX: [u8; 4] = [0xa1, 0xb2, 0xc3, 0xd4];
pub const JOB_ID: u32 = 1;
pub const VERSION: u32 = 0x2000_0000;
pub const MIN_NTIME: u32 = 1_700_000_000;
/// A mainnet-like difficulty, so that a share is almost never a block.
const NBITS: u32 = 0x1703_a30c;

/// A share as it arrived upstream: every field of `SubmitSharesExtended`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Share {
    pub channel_id: u32,
    pub sequence_number: u32,
    pub job_id: u32,
    pub nonce: u32,
    pub ntime: u32,
    pub version: u32,
    pub extranonce: Vec<u8>,
}

/// What the upstream saw, sent as it happens.
#[derive(Debug)]
pub enum Event {
    Share(Share),
    /// A frame that did not decode, or a message that did not parse.
    DecodeError(String),
    /// A message the mock does not handle (ext type, msg type).
    Other(u16, u8),
}

/// Binds the upstream; returns its port and the stream of its events.
pub async fn start() -> (u16, mpsc::UnboundedReceiver<Event>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let (events, rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        let (tcp, _) = listener.accept().await.unwrap();
        let public: Secp256k1PublicKey = AUTHORITY_PUBLIC_K.parse().unwrap();
        let secret: Secp256k1SecretKey = AUTHORITY_PRIVATE_K.parse().unwrap();
        let noise = accept_noise_connection(tcp, public, secret, 3600)
            .await
            .unwrap();
        serve(noise, events).await;
    });
    (port, rx)
}

async fn serve(
    noise: stratum_apps::network_helpers::noise_stream::NoiseTcpStream,
    events: mpsc::UnboundedSender<Event>,
) {
    let (mut reader, mut writer) = noise.into_split();
    loop {
        let mut frame = match reader.read_frame().await {
            Ok(frame) => frame,
            Err(stratum_apps::network_helpers::Error::SocketClosed) => return,
            Err(e) => {
                let _ = events.send(Event::DecodeError(format!("{e:?}")));
                return;
            }
        };
        let header = frame.header();
        let (ext, msg) = (header.ext_type(), header.msg_type());
        match AnyMessage::try_from((header, frame.payload())) {
            Ok(message) => answer(message, (ext, msg), &mut writer, &events).await,
            Err(e) => {
                let _ = events.send(Event::DecodeError(format!("{ext:#x}/{msg:#x}: {e:?}")));
            }
        }
    }
}

async fn answer(
    message: AnyMessage<'_>,
    (ext, msg): (u16, u8),
    writer: &mut NoiseTcpWriteHalf,
    events: &mpsc::UnboundedSender<Event>,
) {
    match message {
        AnyMessage::Common(CommonMessages::SetupConnection(_)) => {
            let success = SetupConnectionSuccess {
                used_version: 2,
                flags: 0,
            };
            send(
                writer,
                AnyMessage::Common(CommonMessages::SetupConnectionSuccess(success)),
            )
            .await;
        }
        AnyMessage::Mining(Mining::OpenExtendedMiningChannel(open)) => {
            open_channel(open, writer).await;
        }
        AnyMessage::Mining(Mining::SubmitSharesExtended(s)) => {
            let share = Share {
                channel_id: s.channel_id,
                sequence_number: s.sequence_number,
                job_id: s.job_id,
                nonce: s.nonce,
                ntime: s.ntime,
                version: s.version,
                extranonce: s.extranonce.as_bytes().to_vec(),
            };
            let _ = events.send(Event::Share(share));
        }
        _ => {
            let _ = events.send(Event::Other(ext, msg));
        }
    }
}

/// The channel's success, then a job and the previous hash that activates it.
async fn open_channel(open: OpenExtendedMiningChannel<'_>, writer: &mut NoiseTcpWriteHalf) {
    let extranonce_size = open.min_extranonce_size;
    let max_target = [0xff; 32];
    let success = OpenExtendedMiningChannelSuccess {
        request_id: open.request_id,
        channel_id: CHANNEL_ID,
        target: U256::from(&max_target),
        extranonce_size,
        extranonce_prefix: EXTRANONCE_PREFIX[..].try_into().unwrap(),
        group_channel_id: 0,
    };
    send(
        writer,
        AnyMessage::Mining(Mining::OpenExtendedMiningChannelSuccess(success)),
    )
    .await;
    let full_extranonce = EXTRANONCE_PREFIX.len() + usize::from(extranonce_size);
    let (prefix, suffix) = coinbase(full_extranonce);
    let job = NewExtendedMiningJob {
        channel_id: CHANNEL_ID,
        job_id: JOB_ID,
        min_ntime: Sv2Option::new(None),
        version: VERSION,
        version_rolling_allowed: true,
        merkle_path: Seq0255::new(Vec::new()).unwrap(),
        coinbase_tx_prefix: prefix[..].try_into().unwrap(),
        coinbase_tx_suffix: suffix[..].try_into().unwrap(),
    };
    send(
        writer,
        AnyMessage::Mining(Mining::NewExtendedMiningJob(job)),
    )
    .await;
    let previous_block = [0x11; 32];
    let prev_hash = SetNewPrevHash {
        channel_id: CHANNEL_ID,
        job_id: JOB_ID,
        prev_hash: U256::from(&previous_block),
        min_ntime: MIN_NTIME,
        nbits: NBITS,
    };
    send(
        writer,
        AnyMessage::Mining(Mining::SetNewPrevHash(prev_hash)),
    )
    .await;
}

/// A legacy (non-segwit) coinbase split around an extranonce of `len`
/// bytes at the end of its script: one input, one output.
fn coinbase(len: usize) -> (Vec<u8>, Vec<u8>) {
    let mut prefix = vec![1, 0, 0, 0, 1];
    prefix.extend_from_slice(&[0; 32]);
    prefix.extend_from_slice(&[0xff; 4]);
    prefix.push(4 + len as u8);
    prefix.extend_from_slice(&[3, 1, 0, 0]); // BIP34 height 1
    let mut suffix = vec![0xff; 4];
    suffix.push(1);
    suffix.extend_from_slice(&5_000_000_000u64.to_le_bytes());
    suffix.extend_from_slice(&[22, 0, 20]);
    suffix.extend_from_slice(&[0x42; 20]);
    suffix.extend_from_slice(&[0; 4]);
    (prefix, suffix)
}

async fn send(writer: &mut NoiseTcpWriteHalf, message: AnyMessage<'_>) {
    let frame = MessageFrame::<AnyMessage<'_>>::try_from(message).unwrap();
    writer.write_frame(frame).await.unwrap();
}
