//! `translator_sv2` 0.6 (from the registry, built over whichever
//! `buffer_sv2` the workspace patches in) between SV1 test miners and a mock
//! Stratum V2 upstream over Noise. The upstream sets up the connection, opens
//! the extended channel the translator asks for, and sends a job and the
//! previous hash; the miners submit shares on that job.
//!
//! Every share must be accepted, and must reach the upstream exactly as it
//! was submitted: the same job, nonce, ntime and version, and the extranonce
//! that the miner's extranonce1 (past the upstream's prefix) and extranonce2
//! make; every frame the upstream reads must decode.
//!
//! `SV2_ROLE_SHARES` sets the number of shares (default 2,000), spread over
//! `MINERS` miners.

use std::collections::HashMap;
use std::time::{Duration, Instant};
use stratum_apps::key_utils::Secp256k1PublicKey;
use sv2_roles::miner;
use sv2_roles::upstream::{self, Event, Share};
use tokio::sync::mpsc::UnboundedReceiver;
use translator_sv2::config::{DownstreamDifficultyConfig, TranslatorConfig, Upstream};
use translator_sv2::TranslatorSv2;

const MINERS: u32 = 8;
/// Bytes of extranonce2 each SV1 miner rolls.
const EXTRANONCE2_SIZE: u16 = 4;

fn config(upstream_port: u16, downstream_port: u16) -> TranslatorConfig {
    let authority: Secp256k1PublicKey = upstream::AUTHORITY_PUBLIC_K.parse().unwrap();
    let upstream = Upstream::new(
        "127.0.0.1".into(),
        upstream_port,
        authority,
        "sv2-roles".into(),
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

/// A port nothing listens on now, for the translator's SV1 side.
fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

/// Reads the upstream's events until `expected` shares arrived or nothing
/// came for 10 s; returns the shares and the decode errors.
async fn collect(
    events: &mut UnboundedReceiver<Event>,
    expected: usize,
) -> (Vec<Share>, Vec<String>) {
    let (mut shares, mut errors) = (Vec::with_capacity(expected), Vec::new());
    while shares.len() < expected {
        match tokio::time::timeout(Duration::from_secs(10), events.recv()).await {
            Ok(Some(Event::Share(share))) => shares.push(share),
            Ok(Some(Event::DecodeError(e))) => errors.push(e),
            Ok(Some(Event::Other(..))) => {}
            Ok(None) | Err(_) => break,
        }
    }
    (shares, errors)
}

/// The share the upstream must receive for `submitted` from a miner with
/// `extranonce1`.
fn expected(extranonce1: &[u8], submitted: &miner::Submitted) -> Share {
    let mut extranonce = extranonce1[upstream::EXTRANONCE_PREFIX.len()..].to_vec();
    extranonce.extend_from_slice(&submitted.extranonce2);
    Share {
        channel_id: upstream::CHANNEL_ID,
        sequence_number: 0,
        job_id: upstream::JOB_ID,
        nonce: submitted.nonce,
        ntime: submitted.ntime,
        version: upstream::VERSION,
        extranonce,
    }
}

/// Every forwarded share, matched by nonce, equals the one submitted; the
/// sequence numbers are all different.
fn check_forwarded(reports: &[miner::Report], forwarded: &[Share]) {
    let by_nonce: HashMap<u32, &Share> = forwarded.iter().map(|s| (s.nonce, s)).collect();
    assert_eq!(
        by_nonce.len(),
        forwarded.len(),
        "a nonce was forwarded twice"
    );
    for report in reports {
        assert!(report.extranonce1.starts_with(&upstream::EXTRANONCE_PREFIX));
        for submitted in &report.submitted {
            let got = by_nonce
                .get(&submitted.nonce)
                .expect("every share is forwarded");
            let want = Share {
                sequence_number: got.sequence_number,
                ..expected(&report.extranonce1, submitted)
            };
            assert_eq!(**got, want, "a share changed on its way upstream");
        }
    }
    let mut sequence: Vec<u32> = forwarded.iter().map(|s| s.sequence_number).collect();
    sequence.sort_unstable();
    sequence.dedup();
    assert_eq!(
        sequence.len(),
        forwarded.len(),
        "a sequence number was used twice"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn translator_forwards_every_share_byte_for_byte() {
    let shares: u32 = std::env::var("SV2_ROLE_SHARES").map_or(2_000, |s| s.parse().unwrap());
    let started = Instant::now();
    let (upstream_port, mut events) = upstream::start().await;
    let downstream_port = free_port();
    let translator = TranslatorSv2::new(config(upstream_port, downstream_port));
    let running = translator.clone();
    tokio::spawn(async move { running.start().await });

    let per_miner = shares / MINERS;
    let miners: Vec<_> = (0..MINERS)
        .map(|i| {
            tokio::spawn(miner::run(
                downstream_port,
                i,
                per_miner + u32::from(i < shares % MINERS),
            ))
        })
        .collect();
    let mut reports = Vec::new();
    for m in miners {
        reports.push(m.await.unwrap());
    }
    let submitted: usize = reports.iter().map(|r| r.submitted.len()).sum();
    let accepted: usize = reports.iter().map(|r| r.accepted).sum();
    let (forwarded, decode_errors) = collect(&mut events, submitted).await;
    println!(
        "translator_sv2 0.6: {submitted} shares from {MINERS} SV1 miners, {accepted} accepted, \
         {} forwarded, {} upstream decode errors, {:.1} s",
        forwarded.len(),
        decode_errors.len(),
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
        "rejected shares, first ones: {rejected:?}"
    );
    assert!(decode_errors.is_empty(), "decode errors: {decode_errors:?}");
    assert_eq!(forwarded.len(), submitted, "shares forwarded upstream");
    check_forwarded(&reports, &forwarded);
    let _ = tokio::time::timeout(Duration::from_secs(10), translator.shutdown()).await;
}
