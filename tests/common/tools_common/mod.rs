//! Shared by the tools_* tests: a temp project and a ToolScope over it.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use cairn::bus::Bus;
use cairn::permission::{Mode, Permissions, Rule, ruleset};
use cairn::tool::{OutputLimits, ToolProgress, ToolScope};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

pub struct Project {
    pub dir: tempfile::TempDir,
    pub spill: tempfile::TempDir,
}

impl Project {
    pub fn new() -> Self {
        Self {
            dir: tempfile::tempdir().expect("temp project"),
            spill: tempfile::tempdir().expect("temp spill dir"),
        }
    }

    pub fn root(&self) -> PathBuf {
        std::fs::canonicalize(self.dir.path()).expect("temp dir exists")
    }

    pub fn write(&self, relative: &str, content: impl AsRef<[u8]>) -> PathBuf {
        let path = self.dir.path().join(relative);
        std::fs::create_dir_all(path.parent().expect("has a parent")).expect("create parent");
        std::fs::write(&path, content).expect("write fixture");
        path
    }

    /// A context that allows everything not denied (like `--yolo`).
    pub fn context(&self) -> ToolScope {
        self.context_with(ruleset(&Default::default(), true), Mode::Headless)
    }

    pub fn context_with(&self, rules: Vec<Rule>, mode: Mode) -> ToolScope {
        ToolScope {
            session_id: "ses_test".into(),
            message_id: "msg_test".into(),
            call_id: "call_test".into(),
            cwd: self.root(),
            root: self.root(),
            tool_output_dir: self.spill.path().join("tool-output"),
            cancel: CancellationToken::new(),
            permissions: Arc::new(Permissions::new(rules, Bus::new(), mode)),
            progress: None,
            limits: OutputLimits::default(),
            can_delegate: false,
            sandbox: Arc::new(cairn::sandbox::Policy::new(
                &Default::default(),
                &self.root(),
                &[],
            )),
            editor: None,
        }
    }
}

/// Attaches a progress channel to `ctx`.
pub fn with_progress(ctx: &mut ToolScope) -> mpsc::UnboundedReceiver<ToolProgress> {
    let (sender, receiver) = mpsc::unbounded_channel();
    ctx.progress = Some(sender);
    receiver
}

pub fn spill_files(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .map(|entries| entries.flatten().map(|e| e.path()).collect())
        .unwrap_or_default()
}
