//! Real Stratum V2 messages through `codec_sv2`'s encoder and decoder, over
//! the `buffer_sv2` shim: in whichever of codec_sv2's feature sets this crate
//! is built with (`noise_sv2`, `with_buffer_pool`, both or neither).
//!
//! The stream of encoded frames reaches the decoder in reads of random sizes,
//! as a socket delivers it; decoded frames are held for a random while and
//! dropped in random order, so a pool decoder goes through its Back, Front
//! and Alloc modes while frames it lent are alive. Every message must come
//! out as it went in.

use binary_sv2::{Deserialize, Serialize, Str0255, B064K};
use codec_sv2::{Encoder, MessageFrame};
use common_messages_sv2::{
    ChannelEndpointChanged, Protocol, Reconnect, SetupConnection, SetupConnectionError,
    SetupConnectionSuccess, MESSAGE_TYPE_CHANNEL_ENDPOINT_CHANGED, MESSAGE_TYPE_RECONNECT,
    MESSAGE_TYPE_SETUP_CONNECTION, MESSAGE_TYPE_SETUP_CONNECTION_ERROR,
    MESSAGE_TYPE_SETUP_CONNECTION_SUCCESS,
};
use framing_sv2::framing::SerializedFrame;
use std::collections::VecDeque;

/// Frames per run.
const FRAMES: usize = 3000;
/// A message type outside the common ones, for a message with a large payload.
const MESSAGE_TYPE_BULK: u8 = 0xfe;

/// xorshift64*: reproducible randomness without a dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn bytes(&mut self, len: usize) -> Vec<u8> {
        (0..len).map(|_| self.next() as u8).collect()
    }

    /// An ASCII string of up to `max` characters.
    fn text(&mut self, max: usize) -> Vec<u8> {
        let len = self.below(max + 1);
        (0..len).map(|_| b'a' + self.below(26) as u8).collect()
    }
}

/// A message with a payload of up to 64 KiB, so that Noise frames span
/// several encrypted chunks.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Bulk<'decoder> {
    id: u32,
    payload: B064K<'decoder>,
}

/// One of the messages, and its serialized payload as the sender built it.
struct Sent {
    msg_type: u8,
    payload: Vec<u8>,
}

fn str0255(bytes: &[u8]) -> Str0255<'_> {
    bytes.try_into().expect("at most 255 bytes")
}

/// Builds a message (its kind and contents drawn from `rng`), frames it,
/// and returns the frame with the payload it serializes to.
fn message(rng: &mut Rng) -> (Vec<u8>, Sent) {
    fn frame<T: Serialize + binary_sv2::GetSize + Clone>(
        message: T,
        msg_type: u8,
        channel_msg: bool,
    ) -> (Vec<u8>, Sent) {
        let mut payload = vec![0u8; message.get_size()];
        binary_sv2::to_writer(message.clone(), &mut payload).expect("serializes");
        let frame = MessageFrame::from_message(message, msg_type, 0, channel_msg).expect("fits");
        let mut encoder = Encoder::new();
        let encoded = encoder.encode(frame).expect("encodes");
        let encoded: &[u8] = encoded.as_ref();
        (encoded.to_vec(), Sent { msg_type, payload })
    }
    let texts = [
        rng.text(255),
        rng.text(64),
        rng.text(32),
        rng.text(32),
        rng.text(255),
    ];
    match rng.below(6) {
        0 => frame(
            SetupConnection {
                protocol: Protocol::MiningProtocol,
                min_version: 2,
                max_version: 2,
                flags: rng.next() as u32,
                endpoint_host: str0255(&texts[0]),
                endpoint_port: rng.next() as u16,
                vendor: str0255(&texts[1]),
                hardware_version: str0255(&texts[2]),
                firmware: str0255(&texts[3]),
                device_id: str0255(&texts[4]),
            },
            MESSAGE_TYPE_SETUP_CONNECTION,
            false,
        ),
        1 => frame(
            SetupConnectionSuccess {
                used_version: 2,
                flags: rng.next() as u32,
            },
            MESSAGE_TYPE_SETUP_CONNECTION_SUCCESS,
            false,
        ),
        2 => frame(
            SetupConnectionError {
                flags: rng.next() as u32,
                error_code: str0255(&texts[0]),
            },
            MESSAGE_TYPE_SETUP_CONNECTION_ERROR,
            false,
        ),
        3 => frame(
            ChannelEndpointChanged {
                channel_id: rng.next() as u32,
            },
            MESSAGE_TYPE_CHANNEL_ENDPOINT_CHANGED,
            true,
        ),
        4 => frame(
            Reconnect {
                new_host: str0255(&texts[4]),
                new_port: rng.next() as u16,
            },
            MESSAGE_TYPE_RECONNECT,
            false,
        ),
        _ => {
            let len = if rng.below(8) == 0 {
                rng.below(65_535)
            } else {
                rng.below(2048)
            };
            let payload = rng.bytes(len);
            frame(
                Bulk {
                    id: rng.next() as u32,
                    payload: payload[..].try_into().expect("under 64 KiB"),
                },
                MESSAGE_TYPE_BULK,
                false,
            )
        }
    }
}

/// Checks that a decoded payload deserializes as the type its header names,
/// and that it is byte for byte what was sent.
fn check(msg_type: u8, payload: &mut [u8], sent: &Sent) {
    assert_eq!(msg_type, sent.msg_type);
    assert_eq!(&payload[..], &sent.payload[..], "payload bytes changed");
    let parsed = match msg_type {
        MESSAGE_TYPE_SETUP_CONNECTION => binary_sv2::from_bytes::<SetupConnection>(payload).is_ok(),
        MESSAGE_TYPE_SETUP_CONNECTION_SUCCESS => {
            binary_sv2::from_bytes::<SetupConnectionSuccess>(payload).is_ok()
        }
        MESSAGE_TYPE_SETUP_CONNECTION_ERROR => {
            binary_sv2::from_bytes::<SetupConnectionError>(payload).is_ok()
        }
        MESSAGE_TYPE_CHANNEL_ENDPOINT_CHANGED => {
            binary_sv2::from_bytes::<ChannelEndpointChanged>(payload).is_ok()
        }
        MESSAGE_TYPE_RECONNECT => binary_sv2::from_bytes::<Reconnect>(payload).is_ok(),
        _ => binary_sv2::from_bytes::<Bulk>(payload).is_ok(),
    };
    assert!(parsed, "message type {msg_type:#x} does not deserialize");
}

/// The receiving side of a socket: the bytes sent, delivered in reads of
/// random sizes (at most what the reader asks for).
struct Wire {
    bytes: Vec<u8>,
    at: usize,
}

impl Wire {
    /// Fills `dst` as a loop of short socket reads does.
    fn read_into(&mut self, dst: &mut [u8], rng: &mut Rng) {
        let mut filled = 0;
        while filled < dst.len() {
            let want = dst.len() - filled;
            let n = (1 + rng.below(1500))
                .min(want)
                .min(self.bytes.len() - self.at);
            assert!(n > 0, "the decoder asked for bytes that were never sent");
            dst[filled..filled + n].copy_from_slice(&self.bytes[self.at..self.at + n]);
            filled += n;
            self.at += n;
        }
    }
}

/// The application on the receiving side: checks each decoded frame against
/// what was sent, and holds the frames' bytes for a while, dropping them in
/// random order.
struct Application<B> {
    held: VecDeque<B>,
    received: usize,
    pooled: usize,
}

impl<B: AsRef<[u8]> + AsMut<[u8]> + Pooled> Application<B> {
    fn new() -> Self {
        Self {
            held: VecDeque::new(),
            received: 0,
            pooled: 0,
        }
    }

    fn receive(&mut self, mut frame: SerializedFrame<B>, sent: &Sent, rng: &mut Rng) {
        check(frame.header().msg_type(), frame.payload(), sent);
        let bytes = frame.into_bytes();
        self.received += 1;
        self.pooled += usize::from(bytes.pooled());
        self.held.push_back(bytes);
        // Hold up to ~12 frames, more than the pool's 8 slots, and drop one
        // from anywhere, so slots come back out of order.
        while self.held.len() > rng.below(13) {
            let at = rng.below(self.held.len());
            drop(self.held.remove(at));
        }
    }

    /// With the pool, most frames come from pool memory, and some (with more
    /// than eight held) from system memory.
    fn check_pooled(&self) {
        let (pooled, received) = (self.pooled, self.received);
        if cfg!(feature = "with_buffer_pool") {
            assert!(pooled > received / 2, "{pooled} of {received} pooled");
            assert!(pooled < received, "{pooled} of {received} pooled");
        }
    }
}

/// Whether a decoded frame's bytes came from the pool's memory.
trait Pooled {
    fn pooled(&self) -> bool;
}

#[cfg(feature = "with_buffer_pool")]
impl Pooled for buffer_sv2::Slice {
    fn pooled(&self) -> bool {
        self.is_pooled()
    }
}

/// Without `with_buffer_pool`, frames are vectors.
impl Pooled for Vec<u8> {
    fn pooled(&self) -> bool {
        false
    }
}

#[cfg(not(feature = "noise_sv2"))]
#[test]
fn messages_round_trip_through_the_plain_codec() {
    use codec_sv2::{Decoded, Decoder};

    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let (mut wire, mut sent) = (Vec::new(), Vec::new());
    for _ in 0..FRAMES {
        let (frame, message) = message(&mut rng);
        wire.extend_from_slice(&frame);
        sent.push(message);
    }
    let mut wire = Wire { bytes: wire, at: 0 };
    let mut decoder = Decoder::new();
    let mut application = Application::new();
    for message in &sent {
        let frame = loop {
            match decoder.next_frame().expect("decodes") {
                Decoded::Frame(frame) => break frame,
                Decoded::Incomplete(_) => wire.read_into(decoder.writable(), &mut rng),
            }
        };
        application.receive(frame, message, &mut rng);
    }
    assert_eq!(wire.at, wire.bytes.len(), "bytes left undecoded");
    application.check_pooled();
}

#[cfg(feature = "noise_sv2")]
mod noise {
    use super::*;
    use codec_sv2::{
        Decoded, Decrypted, Handshake, NoiseDecoder, NoiseEncoder, TransportDecryptState,
        TransportEncryptState,
    };
    use key_utils::{Secp256k1PublicKey, Secp256k1SecretKey};
    use noise_sv2::{Initiator, Responder};
    use std::time::Duration;

    const AUTHORITY_PUBLIC_K: &str = "9auqWEzQDVyd2oe1JVGFLMLHZtCo2FFqZwtKA5gd9xbuEu7PH72";
    const AUTHORITY_PRIVATE_K: &str = "mkDLTBBRxdBv998612qipDYoTK3YUrqLe8uWw7gu3iXbSrn2n";

    /// Runs the handshake with every message through the Noise encoder and
    /// decoder, and returns the initiator's sending half and the
    /// responder's receiving half.
    fn handshake(rng: &mut Rng) -> (TransportEncryptState, TransportDecryptState) {
        let public: Secp256k1PublicKey = AUTHORITY_PUBLIC_K.to_string().try_into().unwrap();
        let secret: Secp256k1SecretKey = AUTHORITY_PRIVATE_K.to_string().try_into().unwrap();
        let initiator = Handshake::initiator(Initiator::from_raw_k(public.into_bytes()).unwrap());
        let responder = Handshake::responder(
            Responder::from_authority_kp(
                &public.into_bytes(),
                &secret.into_bytes(),
                Duration::from_secs(3600),
            )
            .unwrap(),
        );
        let (mut to_responder, mut to_initiator) = (NoiseEncoder::new(), NoiseEncoder::new());
        let (mut at_responder, mut at_initiator) = (NoiseDecoder::new(), NoiseDecoder::new());

        let (first, initiator) = initiator.step_0().unwrap();
        let first = to_responder.encode_handshake(first);
        let mut wire = Wire {
            bytes: AsRef::<[u8]>::as_ref(&first).to_vec(),
            at: 0,
        };
        let first = loop {
            match at_responder.next_handshake_frame::<Responder>().unwrap() {
                Decoded::Frame(message) => break message,
                Decoded::Incomplete(_) => wire.read_into(at_responder.writable(), rng),
            }
        };
        let (second, responder) = responder
            .step_1(first.payload().try_into().unwrap())
            .unwrap();
        let second = to_initiator.encode_handshake(second);
        let mut wire = Wire {
            bytes: AsRef::<[u8]>::as_ref(&second).to_vec(),
            at: 0,
        };
        let second = loop {
            match at_initiator
                .next_handshake_frame::<codec_sv2::InitiatorSent>()
                .unwrap()
            {
                Decoded::Frame(message) => break message,
                Decoded::Incomplete(_) => wire.read_into(at_initiator.writable(), rng),
            }
        };
        let initiator = initiator
            .step_2(second.payload().try_into().unwrap())
            .unwrap();
        let (send, _) = initiator.split();
        let (_, receive) = responder.split();
        (send, receive)
    }

    #[test]
    fn messages_round_trip_through_the_noise_codec() {
        let mut rng = Rng(0x2545_f491_4f6c_dd1d);
        let (mut send, mut receive) = handshake(&mut rng);
        let mut encoder = NoiseEncoder::new();
        let (mut wire, mut sent) = (Vec::new(), Vec::new());
        for _ in 0..FRAMES / 3 {
            let (frame, message) = message(&mut rng);
            let frame =
                codec_sv2::SerializedFrame::from_bytes(frame.into()).expect("one whole frame");
            let encrypted = encoder
                .encode_transport(frame, &mut send)
                .expect("encrypts");
            wire.extend_from_slice(AsRef::<[u8]>::as_ref(&encrypted));
            sent.push(message);
        }
        let mut wire = Wire { bytes: wire, at: 0 };
        let mut decoder = NoiseDecoder::new();
        let mut application = Application::new();
        for message in &sent {
            let frame = loop {
                match decoder.next_transport_frame(receive).expect("decrypts") {
                    Decrypted::Frame(frame, state) => {
                        receive = state;
                        break frame;
                    }
                    Decrypted::Incomplete(_, state) => {
                        receive = state;
                        wire.read_into(decoder.writable(), &mut rng);
                    }
                }
            };
            application.receive(frame, message, &mut rng);
        }
        assert_eq!(wire.at, wire.bytes.len(), "bytes left undecoded");
        application.check_pooled();
    }
}
