//! What finding a local model server costs a start with nothing configured:
//! the four flavours probed in parallel when nothing listens (connections
//! refused, the usual case), when one server answers, and when one accepts
//! and never answers (the budget caps it).
//!
//! Run: `cargo bench --bench discover`. Target: under 150 ms in all
//! (`discover::BUDGET`), a few ms when nothing listens.

use std::time::Duration;

use cairn::provider::discover::{self, Candidate, Flavour};
use criterion::{Criterion, criterion_group, criterion_main};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// A root URL whose port was bound and released: connections are refused.
fn closed_port() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    format!("http://{}", listener.local_addr().expect("address"))
}

/// A vLLM-like server answering every request with a one-model list.
async fn answering_server() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("address"));
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buffer = [0u8; 4096];
                let _ = socket.read(&mut buffer).await;
                let body = r#"{"data":[{"id":"m","max_model_len":32768}]}"#;
                let head = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                    body.len()
                );
                let _ = socket.write_all(head.as_bytes()).await;
                let _ = socket.write_all(body.as_bytes()).await;
            });
        }
    });
    url
}

/// Accepts connections and never answers.
async fn stalled_server() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("address"));
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket);
        }
    });
    url
}

fn candidates(roots: [String; 4]) -> Vec<Candidate> {
    Flavour::ALL
        .into_iter()
        .zip(roots)
        .map(|(flavour, root)| Candidate { flavour, root })
        .collect()
}

fn bench(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let nothing = candidates([closed_port(), closed_port(), closed_port(), closed_port()]);
    let answering = runtime.block_on(answering_server());
    let one = candidates([closed_port(), closed_port(), closed_port(), answering]);
    let stalled = runtime.block_on(stalled_server());
    let hung = candidates([closed_port(), closed_port(), closed_port(), stalled]);
    let mut group = c.benchmark_group("discover");
    group.measurement_time(Duration::from_secs(5));
    group.bench_function("nothing_listens", |b| {
        b.iter(|| runtime.block_on(discover::discover(&nothing, discover::BUDGET)))
    });
    group.bench_function("one_vllm_answers", |b| {
        b.iter(|| {
            let found = runtime.block_on(discover::discover(&one, discover::BUDGET));
            assert_eq!(found.len(), 1);
        })
    });
    group.sample_size(10);
    group.bench_function("one_server_never_answers", |b| {
        b.iter(|| runtime.block_on(discover::discover(&hung, discover::BUDGET)))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
