//! The threads that own SQLite connections. rusqlite is blocking and its
//! `Connection` is not `Sync`, so each connection lives on one dedicated OS
//! thread that runs jobs sent over a channel and answers on tokio oneshots.
//!
//! Nothing here knows SQL; it must never run on, or block, the tokio runtime.

use std::panic::AssertUnwindSafe;
use std::path::Path;
use std::sync::mpsc;

use rusqlite::Connection;
use tokio::sync::oneshot;

use super::error::Error;

type Job = Box<dyn FnOnce(&mut Connection) + Send>;

/// The sending end of one connection thread. The thread ends, closing its
/// connection, when the last clone of this is dropped.
#[derive(Clone)]
pub(crate) struct ConnectionThread {
    jobs: mpsc::Sender<Job>,
}

impl ConnectionThread {
    /// Moves `connection` onto a new thread named `name`.
    pub(crate) fn spawn(name: &str, path: &Path, connection: Connection) -> Result<Self, Error> {
        let (jobs, inbox) = mpsc::channel::<Job>();
        std::thread::Builder::new()
            .name(name.to_string())
            .spawn(move || run(connection, inbox))
            .map_err(|source| Error::Thread {
                path: path.to_path_buf(),
                source,
            })?;
        Ok(Self { jobs })
    }

    /// Runs `job` on the thread and waits for its answer without blocking the
    /// runtime.
    ///
    /// A job that has been sent runs to completion even if the caller stops
    /// waiting: a write is either fully committed or not started, never cut
    /// off half way by a dropped future.
    pub(crate) async fn run<R, F>(&self, operation: &'static str, job: F) -> Result<R, Error>
    where
        R: Send + 'static,
        F: FnOnce(&mut Connection) -> Result<R, Error> + Send + 'static,
    {
        let (reply, answer) = oneshot::channel();
        let boxed: Job = Box::new(move |connection| {
            // The caller may have gone away; the work is done either way.
            let _ = reply.send(job(connection));
        });
        self.jobs
            .send(boxed)
            .map_err(|_| Error::Closed { operation })?;
        // The reply is dropped unsent only if the job panicked.
        answer.await.map_err(|_| Error::Panicked { operation })?
    }
}

fn run(mut connection: Connection, inbox: mpsc::Receiver<Job>) {
    while let Ok(job) = inbox.recv() {
        // A panicking job must not take the store down for every other caller:
        // its caller sees `Error::Panicked`, the next job runs as usual. An open
        // transaction is rolled back by rusqlite's `Transaction` drop guard
        // during unwinding.
        let _ = std::panic::catch_unwind(AssertUnwindSafe(|| job(&mut connection)));
    }
}
