//! `cairn run` with `HOME` unset or naming no directory (issue #31): cairn
//! says so in one line and writes only in the XDG directories it was given,
//! never in the account's home from the password database (where
//! `directories` would look next) nor by creating the missing `HOME`.

use crate::project::{Project, describe, text_of};
use crate::scenario::text;
use crate::support::ScriptedServer;

use std::path::{Path, PathBuf};

/// The XDG variables a test gives, each a directory under one temp root.
const XDG: [(&str, &str); 4] = [
    ("XDG_CONFIG_HOME", "config"),
    ("XDG_DATA_HOME", "data"),
    ("XDG_CACHE_HOME", "cache"),
    ("XDG_STATE_HOME", "state"),
];

/// Every file and directory under `dir`, relative to it, sorted.
fn listing(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut queue = vec![dir.to_owned()];
    while let Some(next) = queue.pop() {
        let Ok(entries) = std::fs::read_dir(&next) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            found.push(path.strip_prefix(dir).unwrap().to_owned());
            if entry.file_type().is_ok_and(|kind| kind.is_dir()) {
                queue.push(path);
            }
        }
    }
    found.sort();
    found
}

/// Where cairn's own folders would be in the account's home (the one the
/// password database names), and whether each exists now.
fn account_home_folders() -> Vec<(PathBuf, bool)> {
    let home = directories::BaseDirs::new()
        .map(|dirs| dirs.home_dir().to_owned())
        .unwrap_or_default();
    [
        ".local/share/cairn",
        ".config/cairn",
        ".cache/cairn",
        ".local/state/cairn",
    ]
    .iter()
    .map(|folder| home.join(folder))
    .map(|path| {
        let exists = path.exists();
        (path, exists)
    })
    .collect()
}

/// `cairn run` answered by a scripted server, with `home` as `HOME` (or
/// none), the XDG variables of [`XDG`] under `xdg` (`with_xdg`), and
/// `TMPDIR` under `xdg` too.
async fn run_without_home(home: Option<&Path>, xdg: &Path, with_xdg: bool) -> std::process::Output {
    let project = Project::new();
    let server = ScriptedServer::start([text("Answered.", 500)]).await;
    project.use_server_at(&server.url(), "", "");
    let before = listing(project.root.path());
    let mut command = project.command(&["run", "hello?"]);
    command.env_remove("HOME").env_remove("CAIRN_DATA_DIR");
    command.env_remove("XDG_CONFIG_HOME");
    if let Some(home) = home {
        command.env("HOME", home);
    }
    let tmp = xdg.join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    command.env("TMPDIR", &tmp);
    if with_xdg {
        for (variable, folder) in XDG {
            command.env(variable, xdg.join(folder));
        }
    }
    let output = command.output().await.unwrap();
    assert_eq!(
        listing(project.root.path()),
        before,
        "the project is left as it was: {}",
        describe(&output)
    );
    output
}

/// The lines of stderr that speak of `HOME`.
fn home_lines(output: &std::process::Output) -> Vec<String> {
    text_of(&output.stderr)
        .lines()
        .filter(|line| line.contains("HOME"))
        .map(str::to_owned)
        .collect()
}

/// Everything under `xdg` is in one of the given XDG folders (or TMPDIR's).
fn assert_only_in_xdg(xdg: &Path, output: &std::process::Output) {
    for path in listing(xdg) {
        let top = path.components().next().unwrap().as_os_str().to_owned();
        assert!(
            XDG.iter().any(|(_, folder)| top == *folder) || top == "tmp",
            "{} written outside the XDG folders: {}",
            path.display(),
            describe(output)
        );
    }
    assert!(
        xdg.join("data/cairn/cairn.db").exists(),
        "the session is kept in XDG_DATA_HOME: {:?}",
        listing(xdg)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_without_home_says_so_and_writes_only_in_its_xdg_folders() {
    let xdg = tempfile::tempdir().unwrap();
    let account = account_home_folders();
    let output = run_without_home(None, xdg.path(), true).await;
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
    assert_eq!(text_of(&output.stdout), "Answered.\n");
    let said = home_lines(&output);
    assert_eq!(said.len(), 1, "one line says HOME is unset: {said:?}");
    assert!(said[0].contains("HOME is not set"), "{said:?}");
    assert_only_in_xdg(xdg.path(), &output);
    assert_eq!(
        account_home_folders(),
        account,
        "nothing in the account's home"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_with_home_naming_nothing_says_so_and_does_not_create_it() {
    let xdg = tempfile::tempdir().unwrap();
    let nowhere = xdg.path().join("nowhere");
    let output = run_without_home(Some(&nowhere), xdg.path(), true).await;
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
    assert_eq!(text_of(&output.stdout), "Answered.\n");
    let said = home_lines(&output);
    assert_eq!(said.len(), 1, "one line says HOME names nothing: {said:?}");
    assert!(said[0].contains("is not a directory"), "{said:?}");
    assert!(!nowhere.exists(), "HOME is not created");
    assert_only_in_xdg(xdg.path(), &output);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_without_home_or_xdg_data_home_stops_and_writes_nothing() {
    let xdg = tempfile::tempdir().unwrap();
    let account = account_home_folders();
    let output = run_without_home(None, xdg.path(), false).await;
    assert_eq!(output.status.code(), Some(1), "{}", describe(&output));
    let said = home_lines(&output);
    assert_eq!(said.len(), 1, "one line says what to set: {said:?}");
    assert!(said[0].contains("XDG_DATA_HOME"), "{said:?}");
    assert_eq!(listing(xdg.path()), vec![PathBuf::from("tmp")]);
    assert_eq!(
        account_home_folders(),
        account,
        "nothing in the account's home"
    );
}
