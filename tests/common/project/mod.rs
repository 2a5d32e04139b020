//! The temp project every test of the real binary runs in: a git repository
//! with a `cairn.toml` pointing at a scripted server, and a private home
//! (config and data directories) so nothing of the machine's leaks in.

use std::path::PathBuf;
use std::process::Output;
use std::time::Duration;

use crate::support::ScriptedServer;

pub struct Project {
    pub root: tempfile::TempDir,
    pub home: tempfile::TempDir,
}

impl Project {
    /// An empty git repository (`git init`, so git-aware code sees a real one).
    pub fn new() -> Self {
        let root = tempfile::tempdir().expect("project dir");
        let init = std::process::Command::new("git")
            .args(["init", "-q"])
            .current_dir(root.path())
            .output()
            .expect("run git init");
        assert!(init.status.success(), "git init: {init:?}");
        Self {
            root,
            home: tempfile::tempdir().expect("home dir"),
        }
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.root.path().join(name)
    }

    pub fn data_dir(&self) -> PathBuf {
        self.home.path().join("data")
    }

    /// A `cairn.toml` using the scripted server as `scripted/test-model`, with
    /// every ask allowed (`yolo`); the project is trusted (`cairn trust`), as
    /// its user would trust their own repository.
    pub fn use_scripted(&self, server: &ScriptedServer) {
        self.use_scripted_with(server, "yolo = true\n", "");
    }

    /// A `cairn.toml` using the scripted server as `scripted/test-model`, with
    /// `top` lines before the tables and `tables` after them.
    pub fn use_scripted_with(&self, server: &ScriptedServer, top: &str, tables: &str) {
        self.use_server_at(&server.url(), top, tables);
    }

    /// The same `cairn.toml` for a server at `base_url` (one that may not be
    /// listening: a closed port).
    pub fn use_server_at(&self, base_url: &str, top: &str, tables: &str) {
        let config = format!(
            "model = \"scripted/test-model\"\n{top}\n\
             [provider.scripted]\nwire = \"openai\"\nbase_url = \"{base_url}/v1\"\n\n\
             [provider.scripted.models.\"test-model\"]\ncontext = 200000\noutput = 32000\n\n\
             {tables}"
        );
        std::fs::write(self.path("cairn.toml"), config).expect("write cairn.toml");
        self.trust();
    }

    /// `cairn trust` in the project: its risky settings (`yolo`, allow
    /// rules, servers) apply from now on. Call again after changing them.
    pub fn trust(&self) {
        crate::support::trust_project(self.std_command());
    }

    /// [`Project::command`] as a blocking command.
    pub fn std_command(&self) -> std::process::Command {
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_cairn"));
        command
            .current_dir(self.root.path())
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", self.home.path())
            .env("XDG_CONFIG_HOME", self.home.path().join("config"))
            .env("CAIRN_DATA_DIR", self.data_dir())
            .env("CAIRN_LOCAL_SERVERS", "");
        command
    }

    /// Runs `git` in the project; fails the test when git fails.
    pub fn git(&self, args: &[&str]) {
        let out = std::process::Command::new("git")
            .args(args)
            .current_dir(self.root.path())
            .output()
            .expect("run git");
        assert!(out.status.success(), "git {args:?}: {out:?}");
    }

    /// Runs the binary, requires success, returns its stdout.
    pub async fn ok(&self, args: &[&str]) -> String {
        let output = self.cairn(args).await;
        assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
        text_of(&output.stdout)
    }

    /// A file of the project, `None` when it does not exist.
    pub fn read(&self, name: &str) -> Option<String> {
        std::fs::read_to_string(self.path(name)).ok()
    }

    /// The binary in the project with only the environment a test gives it
    /// (no keys, no config, no data dir of the machine); stdin is empty.
    pub fn command(&self, args: &[&str]) -> tokio::process::Command {
        let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_cairn"));
        command
            .args(args)
            .current_dir(self.root.path())
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", self.home.path())
            .env("XDG_CONFIG_HOME", self.home.path().join("config"))
            .env("CAIRN_DATA_DIR", self.data_dir())
            // Nor the machine's local model servers: a test names its own.
            .env("CAIRN_LOCAL_SERVERS", "")
            .stdin(std::process::Stdio::null())
            .kill_on_drop(true);
        command
    }

    /// Runs the binary to its end (at most a minute: no test may hang).
    pub async fn cairn(&self, args: &[&str]) -> Output {
        tokio::time::timeout(Duration::from_secs(60), self.command(args).output())
            .await
            .expect("cairn finishes within 60 s")
            .expect("run cairn")
    }
}

pub fn text_of(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Exit code, stdout and stderr, for assertion messages.
pub fn describe(output: &Output) -> String {
    format!(
        "exit {:?}\n--- stdout\n{}\n--- stderr\n{}",
        output.status.code(),
        text_of(&output.stdout),
        text_of(&output.stderr)
    )
}
