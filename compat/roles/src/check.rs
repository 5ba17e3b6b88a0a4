//! The checks a role run makes on the shares it forwarded upstream.

use crate::miner;
use crate::upstream::Share;
use std::collections::HashMap;

/// The channel the upstream opened for the translator, and the job on it:
/// every forwarded share must carry these.
#[derive(Debug, Clone)]
pub struct Channel {
    pub id: u32,
    pub extranonce_prefix: Vec<u8>,
    pub job_id: u32,
    pub version: u32,
}

/// The share the upstream must receive for `submitted` from a miner with
/// `extranonce1`: the miner's extranonce1 past the channel's prefix, then its
/// extranonce2.
fn expected(channel: &Channel, extranonce1: &[u8], submitted: &miner::Submitted) -> Share {
    let mut extranonce = extranonce1[channel.extranonce_prefix.len()..].to_vec();
    extranonce.extend_from_slice(&submitted.extranonce2);
    Share {
        channel_id: channel.id,
        sequence_number: 0,
        job_id: channel.job_id,
        nonce: submitted.nonce,
        ntime: submitted.ntime,
        version: channel.version,
        extranonce,
    }
}

/// Every forwarded share, matched by nonce, equals the one submitted; the
/// sequence numbers are all different.
pub fn check_forwarded(channel: &Channel, reports: &[miner::Report], forwarded: &[Share]) {
    let by_nonce: HashMap<u32, &Share> = forwarded.iter().map(|s| (s.nonce, s)).collect();
    assert_eq!(
        by_nonce.len(),
        forwarded.len(),
        "a nonce was forwarded twice"
    );
    for report in reports {
        assert!(report.extranonce1.starts_with(&channel.extranonce_prefix));
        for submitted in &report.submitted {
            let got = by_nonce
                .get(&submitted.nonce)
                .expect("every share is forwarded");
            let want = Share {
                sequence_number: got.sequence_number,
                ..expected(channel, &report.extranonce1, submitted)
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
