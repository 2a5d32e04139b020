//! The command line as a user types it: the real binary, its output and exit codes.

use std::process::{Command, Output};

/// Runs cairn in an empty temp directory with a private config and data dir.
fn cairn(args: &[&str]) -> (Output, tempfile::TempDir) {
    let temp = tempfile::tempdir().expect("temp dir");
    let mut command = Command::new(env!("CARGO_BIN_EXE_cairn"));
    command
        .args(args)
        .current_dir(temp.path())
        .env("HOME", temp.path())
        .env("XDG_CONFIG_HOME", temp.path().join("config"))
        .env("CAIRN_DATA_DIR", temp.path().join("data"));
    for (name, _) in std::env::vars().filter(|(name, _)| name.starts_with("CAIRN_")) {
        if name != "CAIRN_DATA_DIR" {
            command.env_remove(name);
        }
    }
    let output = command.output().expect("run cairn");
    (output, temp)
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn version_prints_the_package_version_and_touches_nothing() {
    let (output, temp) = cairn(&["--version"]);
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(
        text(&output.stdout),
        format!("cairn {}\n", env!("CARGO_PKG_VERSION"))
    );
    // --version must not create the data directory (nor open the log).
    assert!(!temp.path().join("data").exists());

    // Nor read config: a broken project file does not matter.
    std::fs::write(temp.path().join("cairn.toml"), "[broken").expect("write");
    let output = Command::new(env!("CARGO_BIN_EXE_cairn"))
        .arg("--version")
        .current_dir(temp.path())
        .output()
        .expect("run cairn");
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
}

#[test]
fn help_lists_every_command_and_flag() {
    let (output, _temp) = cairn(&["--help"]);
    assert_eq!(output.status.code(), Some(0));
    let help = text(&output.stdout);
    for expected in [
        "run",
        "sessions",
        "config",
        "--continue",
        "--session",
        "--model",
        "--agent",
        "--yolo",
        "--version",
    ] {
        assert!(help.contains(expected), "--help lacks {expected}:\n{help}");
    }
    let (output, _temp) = cairn(&["run", "--help"]);
    let help = text(&output.stdout);
    for expected in [
        "--format",
        "text",
        "json",
        "--continue",
        "--session",
        // Optional: without it the message is read from stdin.
        "[MESSAGE]",
    ] {
        assert!(
            help.contains(expected),
            "run --help lacks {expected}:\n{help}"
        );
    }
}

#[test]
fn usage_errors_exit_2() {
    for args in [
        &["--no-such-flag"][..],
        &["run"],
        &["run", "--format", "xml", "hi"],
        &["--continue", "--session", "x"],
    ] {
        let (output, _temp) = cairn(args);
        assert_eq!(
            output.status.code(),
            Some(2),
            "{args:?}: {}",
            text(&output.stderr)
        );
        assert!(text(&output.stderr).contains("error:"), "{args:?}");
    }
}

#[test]
fn config_errors_exit_1_with_one_error_line() {
    let temp = tempfile::tempdir().expect("temp dir");
    std::fs::write(temp.path().join("cairn.toml"), "[log]\nlevel = 3\n").expect("write");
    let output = Command::new(env!("CARGO_BIN_EXE_cairn"))
        .arg("config")
        .current_dir(temp.path())
        .env("XDG_CONFIG_HOME", temp.path().join("config"))
        .env("CAIRN_DATA_DIR", temp.path().join("data"))
        .env_remove("CAIRN_CONFIG")
        .output()
        .expect("run cairn");
    assert_eq!(output.status.code(), Some(1));
    let stderr = text(&output.stderr);
    let expected = format!(
        "error: {}:2: log.level: invalid type: integer `3`, expected a string\n",
        temp.path().join("cairn.toml").display()
    );
    assert_eq!(stderr, expected);
}

#[test]
fn bare_cairn_without_a_terminal_says_so_and_logs_to_the_data_dir() {
    let (output, temp) = cairn(&[]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        text(&output.stderr),
        "error: cairn's terminal UI needs a terminal; in scripts use `cairn run \"...\"`\n"
    );
    assert!(
        !temp.path().join("data/cairn.db").exists(),
        "no session is created"
    );
    let log =
        std::fs::read_to_string(temp.path().join("data/log/cairn.log")).expect("log file written");
    assert!(log.contains("cairn starting"), "{log}");
}
