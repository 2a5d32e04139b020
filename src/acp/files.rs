//! The fs bridge: cairn's `read`, `edit` and `write` tools through the
//! editor's `fs/read_text_file` and `fs/write_text_file`, when the client
//! advertised them at `initialize`.
//!
//! So the model reads unsaved buffers, and its edits land in the editor's
//! buffers (the editor saves them). What the editor does not serve falls
//! back to the disk: `read_text` errors and the tool reads the file itself;
//! a client that can read but not write gets writes on disk. `bash` runs
//! in cairn's own sandbox, never in the editor's terminals (`terminal/*`):
//! the sandbox and the permission rules are cairn's, and an editor's
//! terminal would run outside both.

use std::path::Path;
use std::sync::{Arc, OnceLock};

use agent_client_protocol::Client;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    FileSystemCapabilities, ReadTextFileRequest, WriteTextFileRequest,
};

use crate::tool::EditorFiles;

/// One session's view of the editor's files.
#[derive(Debug)]
pub struct ClientFiles {
    cx: ConnectionTo<Client>,
    /// Set once the session exists (its id is the ACP session id).
    session_id: Arc<OnceLock<String>>,
    can_read: bool,
    can_write: bool,
}

impl ClientFiles {
    /// `None` when the client serves neither reads nor writes.
    pub fn new(
        cx: &ConnectionTo<Client>,
        fs: &FileSystemCapabilities,
        session_id: Arc<OnceLock<String>>,
    ) -> Option<Self> {
        (fs.read_text_file || fs.write_text_file).then(|| Self {
            cx: cx.clone(),
            session_id,
            can_read: fs.read_text_file,
            can_write: fs.write_text_file,
        })
    }

    fn session(&self) -> std::io::Result<String> {
        self.session_id
            .get()
            .cloned()
            .ok_or_else(|| std::io::Error::other("the ACP session is not open yet"))
    }
}

#[async_trait::async_trait]
impl EditorFiles for ClientFiles {
    async fn read_text(&self, path: &Path) -> std::io::Result<String> {
        if !self.can_read {
            return Err(std::io::Error::from(std::io::ErrorKind::Unsupported));
        }
        let request = ReadTextFileRequest::new(self.session()?, path);
        let response = self
            .cx
            .send_request(request)
            .block_task()
            .await
            .map_err(|e| std::io::Error::other(format!("the editor could not read it: {e}")))?;
        Ok(response.content)
    }

    async fn write_text(&self, path: &Path, content: &str) -> std::io::Result<()> {
        if !self.can_write {
            return std::fs::write(path, content);
        }
        let request = WriteTextFileRequest::new(self.session()?, path, content);
        self.cx
            .send_request(request)
            .block_task()
            .await
            .map(drop)
            .map_err(|e| std::io::Error::other(format!("the editor could not write it: {e}")))
    }
}
