//! An SV1 test miner: subscribes, authorizes, waits for a job and submits
//! shares on it, each with a nonce of its own, reading the translator's
//! answers as they come.

use serde_json::{json, Value};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::tcp::OwnedReadHalf;
use tokio::net::TcpStream;

/// The first request id of a share; lower ids are subscribe and authorize.
const FIRST_SHARE_ID: u64 = 3;

/// A share as the miner submitted it.
#[derive(Debug, Clone)]
pub struct Submitted {
    pub nonce: u32,
    pub ntime: u32,
    pub extranonce2: Vec<u8>,
}

/// What one miner did and was told.
#[derive(Debug)]
pub struct Report {
    pub extranonce1: Vec<u8>,
    pub submitted: Vec<Submitted>,
    pub accepted: usize,
    pub rejected: Vec<Value>,
}

/// The job a miner works on.
struct Job {
    id: String,
    ntime: u32,
}

/// Runs `miners` miners at once through the translator at `port`,
/// `shares` shares in all; returns their reports.
pub async fn swarm(port: u16, miners: u32, shares: u32) -> Vec<Report> {
    let per_miner = shares / miners;
    let running: Vec<_> = (0..miners)
        .map(|i| tokio::spawn(run(port, i, per_miner + u32::from(i < shares % miners))))
        .collect();
    let mut reports = Vec::with_capacity(running.len());
    for miner in running {
        reports.push(miner.await.unwrap());
    }
    reports
}

/// Submits `shares` shares as miner `index` through the translator at `port`.
pub async fn run(port: u16, index: u32, shares: u32) -> Report {
    let tcp = connect(port).await;
    let (read, mut write) = tcp.into_split();
    let mut lines = BufReader::new(read).lines();
    let worker = format!("miner{index}");
    send(
        &mut write,
        json!({"id": 1, "method": "mining.subscribe", "params": ["sv2-roles/1.0"]}),
    )
    .await;
    send(
        &mut write,
        json!({"id": 2, "method": "mining.authorize", "params": [worker, "x"]}),
    )
    .await;
    let (extranonce1, extranonce2_size, job) = handshake(&mut lines).await;
    let answers = tokio::spawn(count_answers(lines, shares));
    let mut submitted = Vec::with_capacity(shares as usize);
    for k in 0..shares {
        let share = Submitted {
            nonce: (index << 24) | k,
            ntime: job.ntime + k % 600,
            extranonce2: extranonce2(index, k, extranonce2_size),
        };
        let params = json!([
            worker,
            job.id,
            hex(&share.extranonce2),
            format!("{:08x}", share.ntime),
            format!("{:08x}", share.nonce),
        ]);
        let id = FIRST_SHARE_ID + u64::from(k);
        send(
            &mut write,
            json!({"id": id, "method": "mining.submit", "params": params}),
        )
        .await;
        submitted.push(share);
    }
    let (accepted, rejected) = answers.await.unwrap();
    Report {
        extranonce1,
        submitted,
        accepted,
        rejected,
    }
}

/// The translator binds its port once its upstream is up: retry until then.
async fn connect(port: u16) -> TcpStream {
    for _ in 0..600 {
        if let Ok(tcp) = TcpStream::connect(("127.0.0.1", port)).await {
            return tcp;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the translator never listened on {port}");
}

async fn send(write: &mut tokio::net::tcp::OwnedWriteHalf, message: Value) {
    let mut line = message.to_string();
    line.push('\n');
    write.write_all(line.as_bytes()).await.unwrap();
}

/// Reads until the subscription's extranonce, the authorization and a job
/// have all arrived.
async fn handshake(
    lines: &mut tokio::io::Lines<BufReader<OwnedReadHalf>>,
) -> (Vec<u8>, usize, Job) {
    let (mut subscribed, mut authorized, mut job) = (None, false, None);
    while subscribed.is_none() || !authorized || job.is_none() {
        let line = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
            .await
            .expect("the translator answers within 30 s")
            .unwrap()
            .expect("the translator keeps the connection open");
        let message: Value = serde_json::from_str(&line).unwrap();
        match (message["id"].as_u64(), message["method"].as_str()) {
            (Some(1), _) => {
                let result = &message["result"];
                let extranonce1 = unhex(result[1].as_str().unwrap());
                subscribed = Some((extranonce1, result[2].as_u64().unwrap() as usize));
            }
            (Some(2), _) => authorized = message["result"] == json!(true),
            (_, Some("mining.notify")) => {
                let params = &message["params"];
                let ntime = u32::from_str_radix(params[7].as_str().unwrap(), 16).unwrap();
                job = Some(Job {
                    id: params[0].as_str().unwrap().to_owned(),
                    ntime,
                });
            }
            _ => {}
        }
    }
    let (extranonce1, size) = subscribed.unwrap();
    (extranonce1, size, job.unwrap())
}

/// Counts the answers to `shares` submissions: accepted, and the rejections.
async fn count_answers(
    mut lines: tokio::io::Lines<BufReader<OwnedReadHalf>>,
    shares: u32,
) -> (usize, Vec<Value>) {
    let (mut accepted, mut rejected) = (0, Vec::new());
    while accepted + rejected.len() < shares as usize {
        let line = tokio::time::timeout(Duration::from_secs(60), lines.next_line())
            .await
            .expect("the translator answers every share")
            .unwrap()
            .expect("the translator keeps the connection open");
        let message: Value = serde_json::from_str(&line).unwrap();
        match message["id"].as_u64() {
            Some(id) if id >= FIRST_SHARE_ID => {
                if message["result"] == json!(true) {
                    accepted += 1;
                } else {
                    rejected.push(message);
                }
            }
            _ => {}
        }
    }
    (accepted, rejected)
}

/// A different extranonce2 for every share of every miner.
fn extranonce2(index: u32, k: u32, size: usize) -> Vec<u8> {
    let seed = (u64::from(index) << 32 | u64::from(k)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    seed.to_be_bytes()
        .iter()
        .cycle()
        .take(size)
        .copied()
        .collect()
}

pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> Vec<u8> {
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).unwrap())
        .collect()
}
