//! Rebuilds `src/token/o200k_base.ranks`, the vocabulary cairn's token
//! counter embeds, from tiktoken-rs's `o200k_base` (the reference the tests
//! compare against). Run from the repository root after upgrading
//! tiktoken-rs: `cargo run --example o200k_ranks [OUTPUT]`.

use anyhow::Context;

fn main() -> anyhow::Result<()> {
    let output = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "src/token/o200k_base.ranks".to_string());
    let bpe = tiktoken_rs::o200k_base().context("load tiktoken-rs's o200k_base")?;
    // Ranks are dense from 0; the first rank that does not decode is the end.
    let tokens: Vec<Vec<u8>> = (0..)
        .map_while(|rank: u32| bpe.decode_bytes(&[rank]).ok())
        .collect();
    let bytes = cairn::token::o200k::encode_vocabulary(&tokens);
    std::fs::write(&output, &bytes).with_context(|| format!("write {output}"))?;
    println!("{output}: {} tokens, {} bytes", tokens.len(), bytes.len());
    Ok(())
}
