//! What keeping a pre-image adds to an `edit` of a 1 MB file (issue #35):
//! the copy taken before the tool writes (on the edit's path, target < 2 ms),
//! and the check after the step that decides whether to keep it (off the
//! path: it runs with the deferred "after" snapshot). Median, p90 and min of
//! `RUNS` runs, each on a freshly written file so the page cache holds it
//! as it would after the model read it. `cargo bench --bench preimage [-- RUNS]`.

use std::time::{Duration, Instant};

use cairn::snapshot::{Captured, Snapshots};

const FILE_BYTES: usize = 1024 * 1024;

fn summary(mut runs: Vec<Duration>) -> String {
    runs.sort();
    let at = |q: f64| runs[((runs.len() - 1) as f64 * q) as usize];
    format!(
        "median {:.3} ms, p90 {:.3} ms, min {:.3} ms ({} runs)",
        at(0.5).as_secs_f64() * 1e3,
        at(0.9).as_secs_f64() * 1e3,
        runs[0].as_secs_f64() * 1e3,
        runs.len()
    )
}

fn main() {
    let runs: usize = std::env::args()
        .skip(1)
        .find_map(|arg| arg.parse().ok())
        .unwrap_or(200);
    let temp = tempfile::tempdir().expect("temp");
    let project = temp.path().join("project");
    std::fs::create_dir_all(&project).expect("project");
    let store = Snapshots::new(&temp.path().join("data"), &project, 10 * 1024 * 1024);
    let preimages = store.preimages();
    let file = project.join("big.rs");
    let line = "    let value = compute(input, &mut state); // a line of code\n";
    let content = line.repeat(FILE_BYTES / line.len() + 1);
    let content = &content[..FILE_BYTES];

    let (mut capture, mut settle) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        std::fs::write(&file, content).expect("write the file");
        let started = Instant::now();
        let captured = preimages.capture(&file).expect("capture");
        capture.push(started.elapsed());

        // The edit itself, then the check of the step's end.
        std::fs::write(&file, content.replacen("compute", "calculate", 1)).expect("edit");
        let started = Instant::now();
        assert!(!preimages.unchanged(&captured, &file));
        let after = cairn::snapshot::preimage::fingerprint(&file).expect("fingerprint");
        std::hint::black_box(after);
        settle.push(started.elapsed());
        if let Captured::Kept(id) = captured {
            preimages.discard(&id);
        }
    }
    println!(
        "pre-image of a 1 MiB file, taken before the edit writes: {}",
        summary(capture)
    );
    println!(
        "after the step: compare with the copy + fingerprint (off the edit's path): {}",
        summary(settle)
    );
}
