//! The translator's configuration in the role runs.

use crate::upstream::AUTHORITY_PUBLIC_K;
use stratum_apps::key_utils::Secp256k1PublicKey;
use translator_sv2::config::{DownstreamDifficultyConfig, TranslatorConfig, Upstream};

/// Bytes of extranonce2 each SV1 miner rolls.
pub const EXTRANONCE2_SIZE: u16 = 4;

/// Aggregated mode (one extended channel upstream for every miner), no
/// vardiff, the easiest target for the miners; the upstream at
/// `upstream_port` is known by its authority key.
pub fn config(upstream_port: u16, downstream_port: u16, user_identity: &str) -> TranslatorConfig {
    let authority: Secp256k1PublicKey = AUTHORITY_PUBLIC_K.parse().unwrap();
    let upstream = Upstream::new(
        "127.0.0.1".into(),
        upstream_port,
        authority,
        user_identity.into(),
    );
    // A hashrate this low makes the easiest target: every share is valid.
    let difficulty = DownstreamDifficultyConfig::new(0.001, 60.0, false, 0);
    TranslatorConfig::new(
        vec![upstream],
        "127.0.0.1".into(),
        downstream_port,
        difficulty,
        2,
        2,
        EXTRANONCE2_SIZE,
        false,
        true,
        Vec::new(),
        Vec::new(),
        None,
        None,
    )
}

/// A port nothing listens on now.
pub fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}
