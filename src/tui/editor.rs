//! The external editor for the draft (Ctrl+X): `$VISUAL`, else `$EDITOR`,
//! else `vi`, run on a private temporary file holding the draft; what it
//! saves is the new draft. The caller hands the terminal over first.

use std::io::Write;
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum EditorError {
    #[error("cannot write the draft for the editor to {path}: {source}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot start the editor `{editor}` ($VISUAL / $EDITOR): {source}")]
    Start {
        editor: String,
        #[source]
        source: std::io::Error,
    },
    #[error("the editor `{editor}` failed ({status}); the draft is unchanged")]
    Failed { editor: String, status: String },
    #[error("cannot read back the edited draft from {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// The editor command line the user chose.
pub fn editor_command() -> String {
    ["VISUAL", "EDITOR"]
        .iter()
        .filter_map(|name| std::env::var(name).ok())
        .find(|value| !value.trim().is_empty())
        .unwrap_or_else(|| "vi".to_string())
}

/// Runs the editor on `draft`; the edited text, or why not.
pub fn edit(draft: &str) -> Result<String, EditorError> {
    let path = std::env::temp_dir().join(format!(
        "cairn-draft-{}-{}.md",
        std::process::id(),
        crate::clock::now_millis()
    ));
    let result = write_draft(&path, draft).and_then(|()| run(&editor_command(), &path));
    let _ = std::fs::remove_file(&path);
    result
}

fn write_draft(path: &Path, draft: &str) -> Result<(), EditorError> {
    use std::os::unix::fs::OpenOptionsExt;
    let wrap = |source| EditorError::Write {
        path: path.to_path_buf(),
        source,
    };
    // A fresh file only this user reads: the draft may hold anything.
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map_err(wrap)?;
    file.write_all(draft.as_bytes()).map_err(wrap)
}

fn run(editor: &str, path: &Path) -> Result<String, EditorError> {
    // Through the shell, as git and others run it: `code --wait` and
    // `emacsclient -t` are common values with arguments.
    let status = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("{editor} \"$1\""))
        .arg("sh")
        .arg(path)
        .status()
        .map_err(|source| EditorError::Start {
            editor: editor.to_string(),
            source,
        })?;
    if !status.success() {
        return Err(EditorError::Failed {
            editor: editor.to_string(),
            status: status.to_string(),
        });
    }
    std::fs::read_to_string(path).map_err(|source| EditorError::Read {
        path: path.to_path_buf(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failing_editor_leaves_the_draft_and_says_so() {
        let path = std::env::temp_dir().join(format!("cairn-editor-test-{}", std::process::id()));
        write_draft(&path, "keep me").expect("draft written");
        let error = run("false", &path).expect_err("false fails");
        assert!(
            error.to_string().contains("the draft is unchanged"),
            "{error}"
        );
        let _ = std::fs::remove_file(&path);
    }
}
