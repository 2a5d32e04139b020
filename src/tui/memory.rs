//! Gives memory the allocator has freed back to the system.
//!
//! Opening a long session decodes its history more than once (the TUI's
//! copy, the runtime measuring the next request); the transient copies are
//! freed, but glibc keeps their pages (25 MB of 90 with 5,000 messages). It
//! never frees anything itself and is a no-op off glibc.

/// Trims every glibc arena's free memory; a few ms, so run it off the UI thread.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
pub fn release_freed_memory() {
    // SAFETY: malloc_trim only walks the allocator's own free lists under its
    // locks; it has no preconditions on the caller's memory.
    unsafe {
        libc::malloc_trim(0);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub fn release_freed_memory() {}
