//! A mock Template Provider (a Bitcoin node, as far as the pool can tell):
//! accepts one connection over Noise, answers the Template Distribution
//! setup, and once the pool has sent its `CoinbaseOutputConstraints`, sends
//! one future template and the previous hash that activates it. Records what
//! the pool sends it.

use crate::upstream::{AUTHORITY_PRIVATE_K, AUTHORITY_PUBLIC_K, MIN_NTIME};
use stratum_apps::key_utils::{Secp256k1PublicKey, Secp256k1SecretKey};
use stratum_apps::network_helpers::{accept_noise_connection, noise_stream::NoiseTcpWriteHalf};
use stratum_apps::stratum_core::binary_sv2::{Seq0255, U256};
use stratum_apps::stratum_core::common_messages_sv2::{Protocol, SetupConnectionSuccess};
use stratum_apps::stratum_core::framing_sv2::framing::MessageFrame;
use stratum_apps::stratum_core::parsers_sv2::{AnyMessage, CommonMessages, TemplateDistribution};
use stratum_apps::stratum_core::template_distribution_sv2::{NewTemplate, SetNewPrevHash};
use tokio::net::TcpListener;
use tokio::sync::mpsc;

/// The one template, and the previous block it builds on.
pub const TEMPLATE_ID: u64 = 1;
pub const VERSION: u32 = 0x2000_0000;
pub const PREV_HASH: [u8; 32] = [0x11; 32];
/// A mainnet-like difficulty, so that a share is almost never a block.
pub const NBITS: u32 = 0x1703_a30c;
const COINBASE_VALUE: u64 = 5_000_000_000;
/// A BIP34 height push and the template's one output, a zero-value witness
/// commitment: channels_sv2's own test vector of a template.
const COINBASE_PREFIX: [u8; 2] = [82, 0];
const WITNESS_COMMITMENT: [u8; 47] = [
    0, 0, 0, 0, 0, 0, 0, 0, 38, 106, 36, 170, 33, 169, 237, 226, 246, 28, 63, 113, 209, 222, 253,
    63, 169, 153, 223, 163, 105, 83, 117, 92, 105, 6, 137, 121, 153, 98, 180, 139, 235, 216, 54,
    151, 78, 140, 249,
];

/// What the Template Provider saw, sent as it happens.
#[derive(Debug)]
pub enum Event {
    /// A `SetupConnection` for the Template Distribution protocol.
    Setup,
    /// `CoinbaseOutputConstraints`: the pool's maximum additional size.
    Constraints(u32),
    /// `SubmitSolution`: a share that met the network target.
    Solution(u64),
    /// A frame that did not decode, or a message that did not parse.
    DecodeError(String),
    /// A message the mock does not handle (ext type, msg type).
    Other(u16, u8),
}

/// Binds the Template Provider; returns its port and the stream of its
/// events.
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
        let event = match AnyMessage::try_from((header, frame.payload())) {
            Ok(message) => answer(message, (ext, msg), &mut writer).await,
            Err(e) => Event::DecodeError(format!("{ext:#x}/{msg:#x}: {e:?}")),
        };
        let _ = events.send(event);
    }
}

async fn answer(
    message: AnyMessage<'_>,
    (ext, msg): (u16, u8),
    writer: &mut NoiseTcpWriteHalf,
) -> Event {
    match message {
        AnyMessage::Common(CommonMessages::SetupConnection(setup))
            if setup.protocol == Protocol::TemplateDistributionProtocol =>
        {
            let success = SetupConnectionSuccess {
                used_version: 2,
                flags: 0,
            };
            send(
                writer,
                AnyMessage::Common(CommonMessages::SetupConnectionSuccess(success)),
            )
            .await;
            Event::Setup
        }
        AnyMessage::TemplateDistribution(TemplateDistribution::CoinbaseOutputConstraints(c)) => {
            send_template(writer).await;
            Event::Constraints(c.coinbase_output_max_additional_size)
        }
        AnyMessage::TemplateDistribution(TemplateDistribution::SubmitSolution(s)) => {
            Event::Solution(s.template_id)
        }
        _ => Event::Other(ext, msg),
    }
}

/// A future template, then the previous hash that makes it the current one.
async fn send_template(writer: &mut NoiseTcpWriteHalf) {
    let template = NewTemplate {
        template_id: TEMPLATE_ID,
        future_template: true,
        version: VERSION,
        coinbase_tx_version: 2,
        coinbase_prefix: COINBASE_PREFIX[..].try_into().unwrap(),
        coinbase_tx_input_sequence: u32::MAX,
        coinbase_tx_value_remaining: COINBASE_VALUE,
        coinbase_tx_outputs_count: 1,
        coinbase_tx_outputs: WITNESS_COMMITMENT[..].try_into().unwrap(),
        coinbase_tx_locktime: 0,
        merkle_path: Seq0255::new(Vec::new()).unwrap(),
    };
    send(
        writer,
        AnyMessage::TemplateDistribution(TemplateDistribution::NewTemplate(template)),
    )
    .await;
    let target = network_target(NBITS);
    let prev_hash = SetNewPrevHash {
        template_id: TEMPLATE_ID,
        prev_hash: U256::from(&PREV_HASH),
        header_timestamp: MIN_NTIME,
        n_bits: NBITS,
        target: U256::from(&target),
    };
    send(
        writer,
        AnyMessage::TemplateDistribution(TemplateDistribution::SetNewPrevHash(prev_hash)),
    )
    .await;
}

/// The target `nbits` encodes, little-endian.
fn network_target(nbits: u32) -> [u8; 32] {
    let exponent = (nbits >> 24) as usize;
    let mut target = [0; 32];
    for (i, byte) in nbits.to_le_bytes()[..3].iter().enumerate() {
        target[exponent - 3 + i] = *byte;
    }
    target
}

async fn send(writer: &mut NoiseTcpWriteHalf, message: AnyMessage<'_>) {
    let frame = MessageFrame::<AnyMessage<'_>>::try_from(message).unwrap();
    writer.write_frame(frame).await.unwrap();
}
