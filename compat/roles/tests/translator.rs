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

use std::time::{Duration, Instant};
use sv2_roles::check::{check_forwarded, Channel};
use sv2_roles::miner;
use sv2_roles::translator::{config, free_port};
use sv2_roles::upstream::{self, Event, Share};
use tokio::sync::mpsc::UnboundedReceiver;
use translator_sv2::TranslatorSv2;

const MINERS: u32 = 8;

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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn translator_forwards_every_share_byte_for_byte() {
    let shares: u32 = std::env::var("SV2_ROLE_SHARES").map_or(2_000, |s| s.parse().unwrap());
    let started = Instant::now();
    let (upstream_port, mut events) = upstream::start().await;
    let downstream_port = free_port();
    let translator = TranslatorSv2::new(config(upstream_port, downstream_port, "sv2-roles"));
    let running = translator.clone();
    tokio::spawn(async move { running.start().await });

    let reports = miner::swarm(downstream_port, MINERS, shares).await;
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
    let channel = Channel {
        id: upstream::CHANNEL_ID,
        extranonce_prefix: upstream::EXTRANONCE_PREFIX.to_vec(),
        job_id: upstream::JOB_ID,
        version: upstream::VERSION,
    };
    check_forwarded(&channel, &reports, &forwarded);
    let _ = tokio::time::timeout(Duration::from_secs(10), translator.shutdown()).await;
}
