//! The `cairn` binary: parse arguments, load config, start the TUI or the headless runner.

fn main() {
    println!("cairn {}", env!("CARGO_PKG_VERSION"));
}
