//! `pool_sv2` 0.7 (from the registry, built over whichever `buffer_sv2` the
//! workspace patches in) on a mock Template Provider over Noise, serving
//! `translator_sv2` 0.6, which serves SV1 test miners:
//!
//! ```text
//! miners --SV1--> translator --Noise--> relay --Noise--> pool --Noise--> template provider
//! ```
//!
//! The Template Provider answers the pool's setup and, after its
//! `CoinbaseOutputConstraints`, sends a future template and the previous hash
//! that activates it; the pool builds its job from them. The relay forwards
//! every frame between the translator and the pool unchanged and records a
//! decoded copy, which is how the test sees what the pool acknowledged.
//!
//! Every share must be accepted by the translator, reach the pool exactly as
//! it was submitted (the job, nonce, ntime and version, and the extranonce
//! that the miner's extranonce1 past the pool's prefix and its extranonce2
//! make), and be acknowledged by the pool, one `SubmitSharesSuccess` per
//! share, with no `SubmitSharesError`; every frame the relay and the Template
//! Provider read must decode.
//!
//! `SV2_ROLE_SHARES` sets the number of shares (default 2,000), spread over
//! `MINERS` miners; `RUST_LOG` (`info`, `debug`) prints the roles' logs.
//! Needs `--features pool`.

use pool_sv2::config::{AuthorityConfig, ConnectionConfig, PoolConfig};
use pool_sv2::PoolSv2;
use std::collections::HashSet;
use std::net::SocketAddr;
use std::time::{Duration, Instant};
use stratum_apps::config_helpers::CoinbaseRewardScript;
use stratum_apps::key_utils::{Secp256k1PublicKey, Secp256k1SecretKey};
use stratum_apps::tp_type::TemplateProviderType;
use sv2_roles::check::{check_forwarded, Channel};
use sv2_roles::miner;
use sv2_roles::relay::{self, Direction};
use sv2_roles::template_provider;
use sv2_roles::translator::{config, free_port};
use sv2_roles::upstream::{Share, AUTHORITY_PRIVATE_K, AUTHORITY_PUBLIC_K};
use tokio::sync::mpsc::UnboundedReceiver;
use translator_sv2::TranslatorSv2;

const MINERS: u32 = 8;
/// The pool pays the whole reward to its own script.
const USER_IDENTITY: &str = "sri/donate";
/// The share rate the pool expects of a channel. Set far above what the
/// miners reach, so that the pool's vardiff never raises the target past
/// what every share meets (the target stays the largest, as the translator
/// asks), and its duplicate-share budget (1,200 minutes of this rate, at most
/// 2^20 hashes) holds every share under the one previous hash.
const SHARES_PER_MINUTE: f32 = 1_000_000.0;

fn pool_config(listen_port: u16, template_provider_port: u16) -> PoolConfig {
    let public: Secp256k1PublicKey = AUTHORITY_PUBLIC_K.parse().unwrap();
    let secret: Secp256k1SecretKey = AUTHORITY_PRIVATE_K.parse().unwrap();
    let listen = SocketAddr::from(([127, 0, 0, 1], listen_port));
    let template_provider = TemplateProviderType::Sv2Tp {
        address: format!("127.0.0.1:{template_provider_port}"),
        public_key: Some(public),
    };
    let reward =
        CoinbaseRewardScript::from_descriptor("addr(bc1qtzqxqaxyy6lda2fhdtp5dp0v56vlf6g0tljy2x)")
            .unwrap();
    PoolConfig::new(
        ConnectionConfig::new(listen, 3600, "sv2-roles".into()),
        template_provider,
        AuthorityConfig::new(public, secret),
        reward,
        SHARES_PER_MINUTE,
        // Batches of one: every share gets its own acknowledgement.
        1,
        1,
        Vec::new(),
        Vec::new(),
        None,
        None,
        None,
    )
}

/// What went through the relay.
#[derive(Debug, Default)]
struct Seen {
    channels: Vec<(u32, Vec<u8>)>,
    jobs: Vec<(u32, u32, u32)>,
    shares: Vec<Share>,
    /// (channel, last sequence number, shares accepted) of each acknowledgement.
    acknowledged: Vec<(u32, u32, u32)>,
    rejected: Vec<(u32, String)>,
    decode_errors: Vec<String>,
    frames_up: usize,
    frames_down: usize,
}

impl Seen {
    fn accepted_by_pool(&self) -> usize {
        self.acknowledged.iter().map(|a| a.2 as usize).sum()
    }

    fn record(&mut self, event: relay::Event) {
        match event {
            relay::Event::Share(_) | relay::Event::Other(Direction::Up, ..) => self.frames_up += 1,
            relay::Event::DecodeError(..) => {}
            _ => self.frames_down += 1,
        }
        match event {
            relay::Event::Share(share) => self.shares.push(share),
            relay::Event::ChannelOpened {
                channel_id,
                extranonce_prefix,
            } => self.channels.push((channel_id, extranonce_prefix)),
            relay::Event::Job {
                channel_id,
                job_id,
                version,
            } => self.jobs.push((channel_id, job_id, version)),
            relay::Event::Acknowledged {
                channel_id,
                last_sequence_number,
                accepted,
            } => self
                .acknowledged
                .push((channel_id, last_sequence_number, accepted)),
            relay::Event::Rejected {
                sequence_number,
                error_code,
            } => self.rejected.push((sequence_number, error_code)),
            relay::Event::DecodeError(direction, e) => {
                self.decode_errors.push(format!("{direction:?}: {e}"))
            }
            relay::Event::Other(..) => {}
        }
    }
}

/// Reads the relay's events until the pool has answered `expected` shares
/// or nothing came for 30 s.
async fn collect(events: &mut UnboundedReceiver<relay::Event>, expected: usize) -> Seen {
    let mut seen = Seen::default();
    while seen.accepted_by_pool() + seen.rejected.len() < expected {
        match tokio::time::timeout(Duration::from_secs(30), events.recv()).await {
            Ok(Some(event)) => seen.record(event),
            Ok(None) | Err(_) => break,
        }
    }
    seen
}

/// What the Template Provider saw: (setups, constraints, solutions, other
/// messages, decode errors).
fn template_provider_events(
    events: &mut UnboundedReceiver<template_provider::Event>,
) -> (usize, usize, usize, usize, Vec<String>) {
    let (mut setups, mut constraints, mut solutions, mut other) = (0, 0, 0, 0);
    let mut errors = Vec::new();
    while let Ok(event) = events.try_recv() {
        match event {
            template_provider::Event::Setup => setups += 1,
            template_provider::Event::Constraints(_) => constraints += 1,
            template_provider::Event::Solution(_) => solutions += 1,
            template_provider::Event::Other(..) => other += 1,
            template_provider::Event::DecodeError(e) => errors.push(e),
        }
    }
    (setups, constraints, solutions, other, errors)
}

/// The one channel the pool opened and the one job on it.
fn channel(seen: &Seen) -> Channel {
    assert_eq!(
        seen.channels.len(),
        1,
        "channels opened: {:?}",
        seen.channels
    );
    let (id, extranonce_prefix) = seen.channels[0].clone();
    let jobs: Vec<_> = seen.jobs.iter().filter(|j| j.0 == id).collect();
    assert_eq!(jobs.len(), 1, "jobs on the channel: {jobs:?}");
    Channel {
        id,
        extranonce_prefix,
        job_id: jobs[0].1,
        version: jobs[0].2,
    }
}

/// Every share the pool received was acknowledged on its own, on the
/// channel, by its sequence number.
fn check_acknowledged(channel: &Channel, seen: &Seen) {
    assert!(
        seen.rejected.is_empty(),
        "rejected by the pool: {:?}",
        &seen.rejected[..3.min(seen.rejected.len())]
    );
    assert!(seen
        .acknowledged
        .iter()
        .all(|a| a.0 == channel.id && a.2 == 1));
    let acknowledged: HashSet<u32> = seen.acknowledged.iter().map(|a| a.1).collect();
    let forwarded: HashSet<u32> = seen.shares.iter().map(|s| s.sequence_number).collect();
    assert_eq!(
        acknowledged.len(),
        seen.acknowledged.len(),
        "a share acknowledged twice"
    );
    assert_eq!(
        acknowledged, forwarded,
        "the acknowledged shares are the forwarded ones"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pool_acknowledges_every_share_through_the_translator() {
    let shares: u32 = std::env::var("SV2_ROLE_SHARES").map_or(2_000, |s| s.parse().unwrap());
    if std::env::var_os("RUST_LOG").is_some() {
        // The roles' own logs, as their binaries would print them.
        stratum_apps::config_helpers::logging::init_logging(None);
    }
    let started = Instant::now();
    let (template_provider_port, mut tp_events) = template_provider::start().await;
    let pool_port = free_port();
    let pool = PoolSv2::new(pool_config(pool_port, template_provider_port));
    let running = pool.clone();
    tokio::spawn(async move { running.start().await });
    let (relay_port, mut relay_events) = relay::start(pool_port).await;
    let downstream_port = free_port();
    let translator = TranslatorSv2::new(config(relay_port, downstream_port, USER_IDENTITY));
    let running = translator.clone();
    tokio::spawn(async move { running.start().await });

    let reports = miner::swarm(downstream_port, MINERS, shares).await;
    let submitted: usize = reports.iter().map(|r| r.submitted.len()).sum();
    let accepted: usize = reports.iter().map(|r| r.accepted).sum();
    let seen = collect(&mut relay_events, submitted).await;
    let (setups, constraints, solutions, tp_other, tp_errors) =
        template_provider_events(&mut tp_events);
    println!(
        "pool_sv2 0.7 behind translator_sv2 0.6: {submitted} shares from {MINERS} SV1 miners, \
         {accepted} accepted by the translator, {} forwarded to the pool, {} acknowledged by the \
         pool, {} rejected by it, {} decode errors ({} frames up, {} down through the relay; \
         template provider: {setups} setup, {constraints} constraints, {solutions} solutions, \
         {tp_other} other, {} decode errors), {:.1} s",
        seen.shares.len(),
        seen.accepted_by_pool(),
        seen.rejected.len(),
        seen.decode_errors.len(),
        seen.frames_up,
        seen.frames_down,
        tp_errors.len(),
        started.elapsed().as_secs_f64()
    );
    assert_eq!(submitted, shares as usize);
    let rejected: Vec<_> = reports
        .iter()
        .flat_map(|r| r.rejected.iter())
        .take(3)
        .collect();
    assert!(
        rejected.is_empty(),
        "rejected by the translator, first ones: {rejected:?}"
    );
    assert!(
        seen.decode_errors.is_empty(),
        "decode errors: {:?}",
        seen.decode_errors
    );
    assert!(
        tp_errors.is_empty(),
        "template provider decode errors: {tp_errors:?}"
    );
    assert_eq!(
        (setups, constraints),
        (1, 1),
        "the pool's setup with the template provider"
    );
    let channel = channel(&seen);
    assert_eq!(seen.shares.len(), submitted, "shares forwarded to the pool");
    check_forwarded(&channel, &reports, &seen.shares);
    check_acknowledged(&channel, &seen);
    assert_eq!(
        seen.accepted_by_pool(),
        submitted,
        "shares acknowledged by the pool"
    );
    let _ = tokio::time::timeout(Duration::from_secs(10), translator.shutdown()).await;
    let _ = tokio::time::timeout(Duration::from_secs(10), pool.shutdown()).await;
}
