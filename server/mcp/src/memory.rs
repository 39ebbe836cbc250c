//! Giving memory back to the system once large requests are done.
//!
//! glibc's allocator keeps what a program frees for its next allocations: a 30 MB request line
//! parsed, recorded and answered left its pages resident long after (six of them: 576 MB held
//! with nothing left to do). Two settings make the `toolhost mcp` process give them back:
//!
//! - allocations of [`LARGE_ALLOCATION`] or more are mapped on their own and unmapped when freed
//!   (glibc otherwise raises this threshold to 32 MiB after the first such free, and every later
//!   large buffer comes from — and stays in — the heap);
//! - once a large request is done, [`give_back`] returns the free pages of every heap (the many
//!   small allocations of a parsed JSON value are not large ones).
//!
//! Elsewhere (another C library, another system) both are no-ops.

/// Allocations at least this large are mapped on their own and returned when freed.
pub const LARGE_ALLOCATION: usize = 1024 * 1024;

#[cfg(all(target_os = "linux", target_env = "gnu"))]
mod glibc {
    use std::ffi::c_int;

    /// `M_MMAP_THRESHOLD` of glibc's `<malloc.h>`.
    const M_MMAP_THRESHOLD: c_int = -3;

    // SAFETY: both are plain glibc functions taking integers; they touch no memory of ours and
    // are thread-safe (they take the allocator's own locks).
    #[allow(unsafe_code)]
    unsafe extern "C" {
        safe fn mallopt(param: c_int, value: c_int) -> c_int;
        safe fn malloc_trim(pad: usize) -> c_int;
    }

    pub fn map_large(bytes: usize) {
        let bytes = c_int::try_from(bytes).unwrap_or(c_int::MAX);
        mallopt(M_MMAP_THRESHOLD, bytes);
    }

    pub fn trim() {
        malloc_trim(0);
    }
}

/// Makes allocations of [`LARGE_ALLOCATION`] or more return to the system when freed (for the
/// whole process: call it once, at the start of `toolhost mcp`).
pub fn return_large_allocations() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    glibc::map_large(LARGE_ALLOCATION);
}

/// Returns the allocator's free pages to the system, on a blocking thread of the current Tokio
/// runtime when there is one (it walks every heap: milliseconds after a large request).
pub fn give_back() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    match tokio::runtime::Handle::try_current() {
        Ok(runtime) => {
            runtime.spawn_blocking(glibc::trim);
        }
        Err(_) => glibc::trim(),
    }
}
