//! The one message of the handshake: the server's answer to a connecting
//! client, sent at once after `accept` (the client sends nothing). An
//! admitted answer carries the region's memfd and the client's two
//! eventfds (`SCM_RIGHTS`); a refusal carries the reason and no
//! descriptor.
//!
//! Eight native-endian words: magic `"URQS"`, version, verdict (0
//! admitted, else a [`Refusal`] code), two words of detail, one reserved,
//! then the region's length as a `u64`. Both processes are on one host, so
//! native endianness is the host's.

use super::admission::Refusal;
use super::error::ConnectError;

/// The magic word, `"URQS"` in memory order.
pub(crate) const OFFER_MAGIC: u32 = u32::from_ne_bytes(*b"URQS");
/// The handshake's version.
pub(crate) const OFFER_VERSION: u32 = 1;
/// Bytes of an answer.
pub(crate) const OFFER_LEN: usize = 32;

/// The server's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Offer {
    /// Admitted: a region of this many bytes comes with the answer.
    Admitted {
        /// The region's length.
        region_len: u64,
    },
    /// Refused, and why.
    Refused(Refusal),
}

impl Offer {
    /// The answer's bytes.
    pub(crate) fn encode(&self) -> [u8; OFFER_LEN] {
        let (verdict, detail, len) = match self {
            Self::Admitted { region_len } => (0, [0, 0], *region_len),
            Self::Refused(why) => (why.code(), why.detail(), 0),
        };
        let words = [OFFER_MAGIC, OFFER_VERSION, verdict, detail[0], detail[1], 0];
        let mut out = [0u8; OFFER_LEN];
        for (chunk, word) in out.chunks_exact_mut(4).zip(words) {
            chunk.copy_from_slice(&word.to_ne_bytes());
        }
        out[24..].copy_from_slice(&len.to_ne_bytes());
        out
    }

    /// The answer in `bytes` (as many as arrived).
    ///
    /// # Errors
    ///
    /// [`ConnectError::NotAService`] for a short answer or another magic,
    /// [`ConnectError::Version`] for another version, and `NotAService`
    /// for an unknown verdict.
    pub(crate) fn decode(bytes: &[u8]) -> Result<Self, ConnectError> {
        let bytes: &[u8; OFFER_LEN] = bytes.try_into().map_err(|_| ConnectError::NotAService)?;
        let word = |i: usize| {
            let mut w = [0u8; 4];
            w.copy_from_slice(&bytes[i * 4..i * 4 + 4]);
            u32::from_ne_bytes(w)
        };
        if word(0) != OFFER_MAGIC {
            return Err(ConnectError::NotAService);
        }
        if word(1) != OFFER_VERSION {
            return Err(ConnectError::Version { found: word(1) });
        }
        let mut len = [0u8; 8];
        len.copy_from_slice(&bytes[24..]);
        match word(2) {
            0 => Ok(Self::Admitted {
                region_len: u64::from_ne_bytes(len),
            }),
            code => Refusal::from_code(code, [word(3), word(4)])
                .map(Self::Refused)
                .ok_or(ConnectError::NotAService),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_survive_the_wire() {
        for offer in [
            Offer::Admitted {
                region_len: 1 << 33,
            },
            Offer::Refused(Refusal::Full { max: 16 }),
            Offer::Refused(Refusal::OtherUser {
                uid: 5,
                server_uid: 6,
            }),
        ] {
            assert_eq!(Offer::decode(&offer.encode()).unwrap(), offer);
        }
    }

    #[test]
    fn garbage_is_not_an_answer() {
        let good = Offer::Admitted { region_len: 4096 }.encode();
        assert!(matches!(
            Offer::decode(&good[..31]),
            Err(ConnectError::NotAService)
        ));
        assert!(matches!(
            Offer::decode(&[0; 40]),
            Err(ConnectError::NotAService)
        ));
        let mut other = good;
        other[0] ^= 1;
        assert!(matches!(
            Offer::decode(&other),
            Err(ConnectError::NotAService)
        ));
        let mut version = good;
        version[4..8].copy_from_slice(&9u32.to_ne_bytes());
        assert!(matches!(
            Offer::decode(&version),
            Err(ConnectError::Version { found: 9 })
        ));
        let mut verdict = good;
        verdict[8..12].copy_from_slice(&77u32.to_ne_bytes());
        assert!(matches!(
            Offer::decode(&verdict),
            Err(ConnectError::NotAService)
        ));
    }
}
