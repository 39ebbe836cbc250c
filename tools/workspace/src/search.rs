//! In-process glob and grep built on ripgrep's own crates (`ignore`, `globset`, `grep-*`).
//!
//! These functions reproduce what running the `rg` binary would show from `rg --files --glob=<p>
//! --sort=modified --no-ignore --hidden` (plus VCS exclusions) and `rg --json --regexp=<p>
//! [--glob=<include>] [-- <path>]`, without a child process.
//!
//! # Semantics
//!
//! **Globs** (the `glob` pattern and grep's `include`) are ripgrep `--glob` overrides, rooted at
//! `workdir` exactly as ripgrep roots them at its current directory:
//! - a glob without `/` matches the file name at any depth (`*.rs`, `Cargo.toml`);
//! - a glob with `/` is anchored and matched against the path **relative to `workdir`**, not to
//!   `search_root` (`src/*.rs` with `search_root = workdir/sub` matches nothing; write
//!   `sub/src/*.rs` or `**/src/*.rs`), `*` never crosses `/`, `**` does;
//! - a leading `!` negates, a trailing `/` restricts to directories (so it never lists files);
//! - a `search_root` outside `workdir` is matched as an absolute path, so anchored globs miss there
//!   while slash-free and `**/`-prefixed globs still work.
//!
//! **glob** lists regular files only (no directories, no symlinks: links are never followed),
//! includes hidden and ignored files, and skips `.git .svn .hg .bzr .jj .sl` (file or directory)
//! and the writes' own `.toolhost-tmp-*` temp files at any depth. The result is ordered by
//! modification time ascending (oldest first), ties and unreadable times broken by display path;
//! files whose time cannot be read sort last. This is ripgrep 14's global `--sort=modified`;
//! ripgrep 13 sorts siblings per directory instead.
//!
//! **grep** follows ripgrep's default filters: hidden entries are skipped; `.ignore` and
//! `.rgignore` always apply; `.gitignore`, `.git/info/exclude` and the global git excludes file
//! apply only inside a git repository (a `.git` at or above the directory), like ripgrep without
//! `--no-require-git`; ignore files in ancestors of `search_root` apply too. Matching is
//! case-sensitive, per line, and a match never spans a line break (a pattern that needs a literal
//! `\n` is rejected). Lines carry one trailing `\r?\n` stripped; a line that is not valid UTF-8
//! (after ripgrep's UTF-16 BOM transcoding) becomes `(line is not valid UTF-8)`. Binary files found
//! by the walk use ripgrep's `quit` detection: searching stops at the first read buffer (64 KiB)
//! holding a NUL byte, so a file with an early NUL yields nothing while matches from earlier
//! buffers of a large file are kept, as `rg --json` emits them. A `search_root` that is itself a
//! file is always searched, as text, whatever its name, hiddenness or `include` (ripgrep treats
//! explicit paths this way). Results are grouped by file, files in byte order of their display
//! path, lines ascending.
//!
//! **Display paths**: a path inside `workdir` is shown relative to it (`src/a.ts`, no `./`); any
//! other path is shown absolute. Non-UTF-8 path bytes are replaced lossily (U+FFFD).
//!
//! **Errors** differ from running `rg` where that only reflects `rg` plumbing: an unreadable entry
//! below the root is skipped (rg would exit 2, failing the whole search), while an unreadable
//! `search_root` is [`SearchError::Failed`].
//!
//! **Nothing blocks on a special file** (where `rg` would hang): only regular files are opened for
//! their content, non-blocking and type checked on the handle. A `search_root` that is a FIFO,
//! socket or device is [`SearchError::NotSearchable`]; one met while walking is skipped, like a
//! walked entry that turned into one (or into a symbolic link) after it was listed. An ignore file
//! that is such an entry cannot be read safely, and the walker opens ignore files itself: grep
//! skips a folder holding one, and fails with [`SearchError::Failed`] when the search root or one
//! of its ancestors does (glob reads no ignore files).
//!
//! **Bounds**: `cancelled` is polled for every walked entry and every 256 matches; the summed size
//! of results (path bytes + 1 per glob path, path + line bytes per grep match) is capped by
//! `max_output_bytes` so one search cannot exhaust memory. Compiling a pattern is bounded too: a
//! pattern, `include` or glob over [`MAX_PATTERN_BYTES`] is refused before it is parsed, and the
//! regex engine works under [`REGEX_SIZE_LIMIT`] and [`REGEX_DFA_SIZE_LIMIT`]
//! ([`SearchError::PatternTooLong`], [`SearchError::CompiledTooLarge`]).

use std::fmt;
use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::SystemTime;

use grep_regex::RegexMatcher;
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkMatch};
use ignore::overrides::{Override, OverrideBuilder};
use ignore::{DirEntry, ParallelVisitor, ParallelVisitorBuilder, WalkBuilder, WalkState};

mod pattern;
mod special;

pub use pattern::{MAX_PATTERN_BYTES, PatternArg, REGEX_DFA_SIZE_LIMIT, REGEX_SIZE_LIMIT};

/// `rawOutputMaxBytes`: the default cap on accumulated result bytes.
pub const RAW_OUTPUT_MAX_BYTES: usize = 20_000_000;

/// Version-control metadata names that glob never lists (as `rg --glob=!**/<d>` would, and
/// `--glob=!**/<d>/**` for each).
pub const VCS_DIRS: [&str; 6] = [".git", ".svn", ".hg", ".bzr", ".jj", ".sl"];

/// Line text reported for a matching line that is not valid UTF-8 (the placeholder for
/// ripgrep's `lines.bytes`).
pub const NOT_UTF8_LINE: &str = "(line is not valid UTF-8)";

/// How many matches a single file may add before `cancelled` is polled again; per-entry polling
/// alone cannot interrupt one huge file.
const MATCHES_PER_CANCEL_POLL: usize = 256;

/// Which search produced an error; its `Display` is the tool name used in messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SearchTool {
    /// The `glob` tool.
    Glob,
    /// The `grep` tool.
    Grep,
}

impl SearchTool {
    /// The tool name as the model knows it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Glob => "glob",
            Self::Grep => "grep",
        }
    }

    /// The arguments a model can change to get a smaller result.
    fn narrow_hint(self) -> &'static str {
        match self {
            Self::Glob => "narrow pattern or path",
            Self::Grep => "narrow pattern, path, or include",
        }
    }
}

impl fmt::Display for SearchTool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A failed glob or grep; [`SearchError::code`] gives the documented error code.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SearchError {
    /// The glob (pattern or include) or the regex does not compile.
    #[error("{0} pattern rejected by ripgrep: {1}")]
    InvalidPattern(SearchTool, String),
    /// A pattern (or `include`) longer than [`MAX_PATTERN_BYTES`]: refused before it is parsed.
    #[error(
        "{tool} {arg} is {bytes} bytes, over the limit of {limit} bytes; use a shorter {arg}",
        arg = .arg.name()
    )]
    PatternTooLong { tool: SearchTool, arg: PatternArg, bytes: usize, limit: usize },
    /// A regex whose compiled program would pass [`REGEX_SIZE_LIMIT`] (the limit).
    #[error(
        "{tool} pattern compiles to more than the regex engine's limit of {limit} bytes; use a \
         simpler pattern (fewer or smaller repetitions and alternations)"
    )]
    CompiledTooLarge { tool: SearchTool, limit: usize },
    /// The search could not run, e.g. the search root is missing or unreadable.
    #[error("{0} search failed: {1}")]
    Failed(SearchTool, String),
    /// The search root is neither a directory nor a regular file: a FIFO, a socket or a device,
    /// whose opening could block or act (the path, then what it is).
    #[error("{0} cannot search \"{1}\": {2} is not a regular file or directory")]
    NotSearchable(SearchTool, String, &'static str),
    /// `cancelled` returned true before the search completed.
    #[error("{0} was aborted before completion (tool timeout or caller cancellation)")]
    Aborted(SearchTool),
    /// The accumulated results passed the byte cap (the cap is the second field).
    #[error(
        "{0} output exceeded {1} bytes before the search completed; {hint} to get a smaller result",
        hint = .0.narrow_hint()
    )]
    RawOutputOverflow(SearchTool, usize),
}

impl SearchError {
    /// The documented code (docs/tools.md) for this error.
    pub fn code(&self) -> &'static str {
        match self {
            Self::InvalidPattern(..) => "SEARCH_INVALID_PATTERN",
            Self::PatternTooLong { .. } | Self::CompiledTooLarge { .. } => {
                "SEARCH_PATTERN_TOO_LARGE"
            }
            Self::Failed(..) => "SEARCH_FAILED",
            Self::NotSearchable(..) => "SEARCH_NOT_REGULAR_FILE",
            Self::Aborted(..) => "SEARCH_ABORTED",
            Self::RawOutputOverflow(..) => "SEARCH_RAW_OUTPUT_OVERFLOW",
        }
    }

    /// The tool that failed.
    pub fn tool(&self) -> SearchTool {
        match self {
            Self::InvalidPattern(tool, _)
            | Self::Failed(tool, _)
            | Self::NotSearchable(tool, ..)
            | Self::Aborted(tool)
            | Self::RawOutputOverflow(tool, _)
            | Self::PatternTooLong { tool, .. }
            | Self::CompiledTooLarge { tool, .. } => *tool,
        }
    }
}

/// Arguments of [`glob`].
#[derive(Clone, Copy)]
pub struct GlobOptions<'a> {
    /// Absolute workspace root: display paths are relative to it and anchored globs match
    /// against paths relative to it.
    pub workdir: &'a Path,
    /// Absolute directory to walk (`workdir` or a directory below it).
    pub search_root: &'a Path,
    /// A ripgrep `--glob` (see the module docs).
    pub pattern: &'a str,
    /// Polled during the walk; `true` aborts with [`SearchError::Aborted`].
    /// `Sync` because the walk runs on several threads.
    pub cancelled: &'a (dyn Fn() -> bool + Sync),
    /// Cap on the summed result size, [`RAW_OUTPUT_MAX_BYTES`] by default.
    pub max_output_bytes: usize,
}

impl<'a> GlobOptions<'a> {
    /// Options with the default byte cap.
    pub fn new(
        workdir: &'a Path,
        search_root: &'a Path,
        pattern: &'a str,
        cancelled: &'a (dyn Fn() -> bool + Sync),
    ) -> Self {
        Self { workdir, search_root, pattern, cancelled, max_output_bytes: RAW_OUTPUT_MAX_BYTES }
    }
}

/// Arguments of [`grep`].
#[derive(Clone, Copy)]
pub struct GrepOptions<'a> {
    /// Absolute workspace root: display paths are relative to it and anchored `include` globs
    /// match against paths relative to it.
    pub workdir: &'a Path,
    /// Absolute directory to walk, or a single file to search.
    pub search_root: &'a Path,
    /// A Rust-regex pattern, as ripgrep's default engine reads it.
    pub pattern: &'a str,
    /// Optional ripgrep `--glob` restricting which walked files are searched.
    pub include: Option<&'a str>,
    /// Polled during the walk; `true` aborts with [`SearchError::Aborted`].
    /// `Sync` because the walk runs on several threads.
    pub cancelled: &'a (dyn Fn() -> bool + Sync),
    /// Cap on the summed result size, [`RAW_OUTPUT_MAX_BYTES`] by default.
    pub max_output_bytes: usize,
}

impl<'a> GrepOptions<'a> {
    /// Options with the default byte cap.
    pub fn new(
        workdir: &'a Path,
        search_root: &'a Path,
        pattern: &'a str,
        include: Option<&'a str>,
        cancelled: &'a (dyn Fn() -> bool + Sync),
    ) -> Self {
        Self {
            workdir,
            search_root,
            pattern,
            include,
            cancelled,
            max_output_bytes: RAW_OUTPUT_MAX_BYTES,
        }
    }
}

/// One matching line.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct GrepMatch {
    /// Display path of the file (see the module docs).
    pub path: String,
    /// 1-based line number.
    pub line_number: u64,
    /// The line without its terminator, or [`NOT_UTF8_LINE`].
    pub line: String,
}

/// Lists the files under `search_root` matching `pattern`, oldest modification first.
///
/// # Errors
/// [`SearchError::PatternTooLong`] for a glob over [`MAX_PATTERN_BYTES`],
/// [`SearchError::InvalidPattern`] for a glob that does not parse, [`SearchError::Failed`] for an
/// unreadable `search_root`, [`SearchError::Aborted`] when `cancelled` fires and
/// [`SearchError::RawOutputOverflow`] when the paths exceed `max_output_bytes`.
pub fn glob(opts: &GlobOptions<'_>) -> Result<Vec<String>, SearchError> {
    let tool = SearchTool::Glob;
    let shared = Shared::new(tool, opts.workdir, opts.cancelled, opts.max_output_bytes);
    if shared.should_stop() {
        return Err(SearchError::Aborted(tool));
    }
    let overrides = glob_overrides(opts.workdir, opts.pattern)?;
    check_root(tool, opts.workdir, opts.search_root)?;

    let mut walk = WalkBuilder::new(opts.search_root);
    walk.standard_filters(false).overrides(overrides).threads(0);
    let found: Mutex<Vec<Vec<GlobHit>>> = Mutex::new(Vec::new());
    walk.build_parallel().visit(&mut GlobVisitorBuilder { shared: &shared, found: &found });
    shared.outcome()?;

    let mut hits: Vec<GlobHit> =
        found.into_inner().unwrap_or_else(PoisonError::into_inner).into_iter().flatten().collect();
    // `is_none()` first so that files without a readable time sort after every dated file.
    hits.sort_unstable_by(|a, b| {
        (a.mtime.is_none(), a.mtime, &a.path).cmp(&(b.mtime.is_none(), b.mtime, &b.path))
    });
    Ok(hits.into_iter().map(|hit| hit.path).collect())
}

/// Searches the files under `search_root` (or the single file it names) for `pattern`.
///
/// # Errors
/// [`SearchError::PatternTooLong`] for a regex or include over [`MAX_PATTERN_BYTES`],
/// [`SearchError::CompiledTooLarge`] for a regex that compiles past [`REGEX_SIZE_LIMIT`],
/// [`SearchError::InvalidPattern`] for a regex or include glob that does not compile,
/// [`SearchError::Failed`] for an unreadable `search_root`, [`SearchError::Aborted`] when
/// `cancelled` fires and [`SearchError::RawOutputOverflow`] when the matches exceed
/// `max_output_bytes`.
pub fn grep(opts: &GrepOptions<'_>) -> Result<Vec<GrepMatch>, SearchError> {
    let tool = SearchTool::Grep;
    let shared = Shared::new(tool, opts.workdir, opts.cancelled, opts.max_output_bytes);
    if shared.should_stop() {
        return Err(SearchError::Aborted(tool));
    }
    let matcher = pattern::regex_matcher(opts.pattern)?;
    let overrides = match opts.include {
        Some(include) => include_overrides(opts.workdir, include)?,
        None => Override::empty(),
    };
    let root_is_dir = check_root(tool, opts.workdir, opts.search_root)?;
    if root_is_dir {
        check_ancestor_ignore_files(opts.search_root)?;
    }

    let mut walk = WalkBuilder::new(opts.search_root);
    walk.add_custom_ignore_filename(".rgignore").overrides(overrides).threads(0);
    // The walker reads a folder's ignore files before it lists the folder, opening them by name
    // and blocking: a folder with one that is a FIFO or device is left out instead.
    walk.filter_entry(|entry| {
        !entry.file_type().is_some_and(|t| t.is_dir())
            || special::blocking_ignore_file(entry.path()).is_none()
    });
    let found: Mutex<Vec<Vec<FileMatches>>> = Mutex::new(Vec::new());
    walk.build_parallel().visit(&mut GrepVisitorBuilder {
        shared: &shared,
        matcher: &matcher,
        found: &found,
    });
    shared.outcome()?;

    let mut files: Vec<FileMatches> =
        found.into_inner().unwrap_or_else(PoisonError::into_inner).into_iter().flatten().collect();
    files.sort_unstable_by(|a, b| a.path.cmp(&b.path));
    let total = files.iter().map(|file| file.lines.len()).sum();
    let mut matches = Vec::with_capacity(total);
    for file in files {
        for (line_number, line) in file.lines {
            matches.push(GrepMatch { path: file.path.clone(), line_number, line });
        }
    }
    Ok(matches)
}

/// The override set of `rg --glob=<pattern>` followed by the VCS exclusions; order
/// matters because the last matching glob wins, so the exclusions beat the pattern.
fn glob_overrides(workdir: &Path, pattern: &str) -> Result<Override, SearchError> {
    let tool = SearchTool::Glob;
    let invalid = |err: ignore::Error| SearchError::InvalidPattern(tool, err.to_string());
    pattern::check_length(tool, PatternArg::Pattern, pattern)?;
    let mut builder = OverrideBuilder::new(workdir);
    builder.add(pattern).map_err(invalid)?;
    for dir in VCS_DIRS {
        builder.add(&format!("!**/{dir}")).map_err(invalid)?;
        builder.add(&format!("!**/{dir}/**")).map_err(invalid)?;
    }
    // A write's temp file (crash debris, or one in flight) is never a workspace file.
    builder.add(&format!("!**/{}*", crate::TEMP_PREFIX)).map_err(invalid)?;
    builder.build().map_err(invalid)
}

/// The override set of `rg --glob=<include>`.
fn include_overrides(workdir: &Path, include: &str) -> Result<Override, SearchError> {
    let invalid =
        |err: ignore::Error| SearchError::InvalidPattern(SearchTool::Grep, err.to_string());
    pattern::check_length(SearchTool::Grep, PatternArg::Include, include)?;
    let mut builder = OverrideBuilder::new(workdir);
    builder.add(include).map_err(invalid)?;
    builder.build().map_err(invalid)
}

/// Fails early on a missing root (otherwise the walker would report it as just another skipped
/// entry and the search would look empty) and on one that is neither a directory nor a regular
/// file. `Ok(true)` for a directory.
fn check_root(tool: SearchTool, workdir: &Path, root: &Path) -> Result<bool, SearchError> {
    let metadata = std::fs::metadata(root).map_err(|err| {
        SearchError::Failed(tool, format!("cannot access {}: {err}", root.display()))
    })?;
    let file_type = metadata.file_type();
    if file_type.is_dir() {
        return Ok(true);
    }
    if !file_type.is_file() {
        let kind = special::kind_name(file_type);
        return Err(SearchError::NotSearchable(tool, display_path(workdir, root), kind));
    }
    Ok(false)
}

/// The walker reads the ignore files of the root folder and of every folder above it before
/// anything else; one of them that would block fails the search with a reason rather than
/// hanging it.
fn check_ancestor_ignore_files(root: &Path) -> Result<(), SearchError> {
    for dir in root.ancestors() {
        if let Some((path, kind)) = special::blocking_ignore_file(dir) {
            let detail = format!(
                "the ignore file {} is {kind}, not a regular file; its rules cannot be read",
                path.display()
            );
            return Err(SearchError::Failed(SearchTool::Grep, detail));
        }
    }
    Ok(())
}

/// The path shown to the model: workdir-relative inside `workdir`, absolute elsewhere.
fn display_path(workdir: &Path, path: &Path) -> String {
    match path.strip_prefix(workdir) {
        Ok(rel) if !rel.as_os_str().is_empty() => rel.to_string_lossy().into_owned(),
        _ => path.to_string_lossy().into_owned(),
    }
}

/// Whether the walk yielded something ripgrep would list or search: a regular file, or any
/// non-directory given explicitly as the root (ripgrep always searches explicit paths).
fn is_candidate(entry: &DirEntry) -> bool {
    let Some(file_type) = entry.file_type() else { return false };
    if entry.depth() == 0 { !file_type.is_dir() } else { file_type.is_file() }
}

/// State shared by all walker threads of one search.
struct Shared<'a> {
    tool: SearchTool,
    workdir: &'a Path,
    cancelled: &'a (dyn Fn() -> bool + Sync),
    aborted: AtomicBool,
    overflowed: AtomicBool,
    /// The search root, found not to be a regular file when it was opened: its path and kind.
    refused: Mutex<Option<(String, &'static str)>>,
    bytes: AtomicUsize,
    max_bytes: usize,
}

impl<'a> Shared<'a> {
    fn new(
        tool: SearchTool,
        workdir: &'a Path,
        cancelled: &'a (dyn Fn() -> bool + Sync),
        max_bytes: usize,
    ) -> Self {
        Self {
            tool,
            workdir,
            cancelled,
            aborted: AtomicBool::new(false),
            overflowed: AtomicBool::new(false),
            refused: Mutex::new(None),
            bytes: AtomicUsize::new(0),
            max_bytes,
        }
    }

    /// Polls the caller's cancellation and the overflow flag; sticky once true.
    fn should_stop(&self) -> bool {
        if self.aborted.load(Ordering::Relaxed) || self.overflowed.load(Ordering::Relaxed) {
            return true;
        }
        if (self.cancelled)() {
            self.aborted.store(true, Ordering::Relaxed);
            return true;
        }
        false
    }

    /// Accounts `n` result bytes; `false` once the total passes the cap.
    fn charge(&self, n: usize) -> bool {
        let before = self.bytes.fetch_add(n, Ordering::Relaxed);
        if before.saturating_add(n) > self.max_bytes {
            self.overflowed.store(true, Ordering::Relaxed);
            return false;
        }
        true
    }

    /// Records that the search root cannot be searched (see [`SearchError::NotSearchable`]).
    fn refuse(&self, path: String, kind: &'static str) {
        *self.refused.lock().unwrap_or_else(PoisonError::into_inner) = Some((path, kind));
    }

    /// The error that stopped the walk, if any; cancellation wins over overflow because a
    /// cancelled caller no longer wants advice about narrowing.
    fn outcome(&self) -> Result<(), SearchError> {
        let refused = self.refused.lock().unwrap_or_else(PoisonError::into_inner).take();
        if let Some((path, kind)) = refused {
            return Err(SearchError::NotSearchable(self.tool, path, kind));
        }
        if self.aborted.load(Ordering::Relaxed) {
            Err(SearchError::Aborted(self.tool))
        } else if self.overflowed.load(Ordering::Relaxed) {
            Err(SearchError::RawOutputOverflow(self.tool, self.max_bytes))
        } else {
            Ok(())
        }
    }
}

/// A listed file with the time it sorts by.
struct GlobHit {
    mtime: Option<SystemTime>,
    path: String,
}

struct GlobVisitorBuilder<'s> {
    shared: &'s Shared<'s>,
    found: &'s Mutex<Vec<Vec<GlobHit>>>,
}

impl<'s> ParallelVisitorBuilder<'s> for GlobVisitorBuilder<'s> {
    fn build(&mut self) -> Box<dyn ParallelVisitor + 's> {
        Box::new(GlobVisitor { shared: self.shared, found: self.found, hits: Vec::new() })
    }
}

/// Collects one thread's hits without locking and hands them over when the thread finishes.
struct GlobVisitor<'s> {
    shared: &'s Shared<'s>,
    found: &'s Mutex<Vec<Vec<GlobHit>>>,
    hits: Vec<GlobHit>,
}

impl ParallelVisitor for GlobVisitor<'_> {
    fn visit(&mut self, entry: Result<DirEntry, ignore::Error>) -> WalkState {
        if self.shared.should_stop() {
            return WalkState::Quit;
        }
        let Ok(entry) = entry else { return WalkState::Continue };
        if !is_candidate(&entry) {
            return WalkState::Continue;
        }
        // ripgrep reads the time through symlinks; only an explicit root can be one here.
        let mtime = std::fs::metadata(entry.path()).and_then(|md| md.modified()).ok();
        let path = display_path(self.shared.workdir, entry.path());
        if !self.shared.charge(path.len() + 1) {
            return WalkState::Quit;
        }
        self.hits.push(GlobHit { mtime, path });
        WalkState::Continue
    }
}

/// Hands one walker thread's results over to the shared list (once, when the thread is done).
fn hand_over<T>(found: &Mutex<Vec<Vec<T>>>, items: &mut Vec<T>) {
    let items = std::mem::take(items);
    if !items.is_empty() {
        found.lock().unwrap_or_else(PoisonError::into_inner).push(items);
    }
}

impl Drop for GlobVisitor<'_> {
    fn drop(&mut self) {
        hand_over(self.found, &mut self.hits);
    }
}

/// All matching lines of one file, ascending.
struct FileMatches {
    path: String,
    lines: Vec<(u64, String)>,
}

struct GrepVisitorBuilder<'s> {
    shared: &'s Shared<'s>,
    matcher: &'s RegexMatcher,
    found: &'s Mutex<Vec<Vec<FileMatches>>>,
}

impl<'s> ParallelVisitorBuilder<'s> for GrepVisitorBuilder<'s> {
    fn build(&mut self) -> Box<dyn ParallelVisitor + 's> {
        Box::new(GrepVisitor {
            shared: self.shared,
            found: self.found,
            matcher: self.matcher.clone(),
            walked: SearcherBuilder::new()
                .line_number(true)
                .binary_detection(BinaryDetection::quit(b'\0'))
                .build(),
            // Explicit files are searched as text: this is what `rg --json` 13 reports for them
            // (it memory-maps explicit files, where NUL bytes are neither fatal nor converted).
            explicit: SearcherBuilder::new()
                .line_number(true)
                .binary_detection(BinaryDetection::none())
                .build(),
            files: Vec::new(),
        })
    }
}

/// Searches files on one walker thread, reusing its searcher buffers across files.
struct GrepVisitor<'s> {
    shared: &'s Shared<'s>,
    found: &'s Mutex<Vec<Vec<FileMatches>>>,
    matcher: RegexMatcher,
    walked: Searcher,
    explicit: Searcher,
    files: Vec<FileMatches>,
}

impl ParallelVisitor for GrepVisitor<'_> {
    fn visit(&mut self, entry: Result<DirEntry, ignore::Error>) -> WalkState {
        if self.shared.should_stop() {
            return WalkState::Quit;
        }
        let Ok(entry) = entry else { return WalkState::Continue };
        if !is_candidate(&entry) {
            return WalkState::Continue;
        }
        let path = entry.path();
        let path_len = match path.strip_prefix(self.shared.workdir) {
            Ok(rel) => rel.as_os_str().len(),
            Err(_) => path.as_os_str().len(),
        };
        let explicit = entry.depth() == 0;
        // An unreadable file is skipped like ripgrep skips it (it only warns on stderr), and so
        // is a walked entry that is no longer a regular file; the search root turned into one
        // since it was checked fails the search.
        let file = match special::open_regular(path, !explicit) {
            Ok(Ok(file)) => file,
            Ok(Err(kind)) if explicit => {
                self.shared.refuse(display_path(self.shared.workdir, path), kind);
                return WalkState::Quit;
            }
            Ok(Err(_)) | Err(_) => return WalkState::Continue,
        };
        let mut sink = CollectSink { shared: self.shared, path_len, lines: Vec::new() };
        let searcher = if explicit { &mut self.explicit } else { &mut self.walked };
        // The lines collected before a read error are kept, as rg has printed them by then.
        let _ = searcher.search_file(&self.matcher, &file, &mut sink);
        if !sink.lines.is_empty() {
            let lines = sink.lines;
            self.files.push(FileMatches { path: display_path(self.shared.workdir, path), lines });
        }
        if self.shared.should_stop() { WalkState::Quit } else { WalkState::Continue }
    }
}

impl Drop for GrepVisitor<'_> {
    fn drop(&mut self) {
        hand_over(self.found, &mut self.files);
    }
}

/// Receives one file's matching lines from the searcher.
struct CollectSink<'s> {
    shared: &'s Shared<'s>,
    path_len: usize,
    lines: Vec<(u64, String)>,
}

impl Sink for CollectSink<'_> {
    type Error = io::Error;

    fn matched(&mut self, _searcher: &Searcher, mat: &SinkMatch<'_>) -> Result<bool, io::Error> {
        let line = line_text(mat.bytes());
        if !self.shared.charge(self.path_len + line.len()) {
            return Ok(false);
        }
        self.lines.push((mat.line_number().unwrap_or(0), line));
        if self.lines.len().is_multiple_of(MATCHES_PER_CANCEL_POLL) && self.shared.should_stop() {
            return Ok(false);
        }
        Ok(true)
    }
}

/// The view of ripgrep's `lines` the tools render: one trailing `\r?\n` removed, placeholder for
/// non-UTF-8.
fn line_text(bytes: &[u8]) -> String {
    let mut line = bytes;
    if let Some(rest) = line.strip_suffix(b"\n") {
        line = rest.strip_suffix(b"\r").unwrap_or(rest);
    }
    match std::str::from_utf8(line) {
        Ok(text) => text.to_owned(),
        Err(_) => NOT_UTF8_LINE.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_text_strips_one_terminator() {
        assert_eq!(line_text(b"a\r\n"), "a");
        assert_eq!(line_text(b"a\n"), "a");
        assert_eq!(line_text(b"a\r"), "a\r");
        assert_eq!(line_text(b"a\r\r\n"), "a\r");
        assert_eq!(line_text(b"a"), "a");
        assert_eq!(line_text(b"\xff\n"), NOT_UTF8_LINE);
    }

    #[test]
    fn display_path_relative_inside_absolute_outside() {
        let work = Path::new("/w/proj");
        assert_eq!(display_path(work, Path::new("/w/proj/src/a.ts")), "src/a.ts");
        assert_eq!(display_path(work, Path::new("/w/project/a.ts")), "/w/project/a.ts");
        assert_eq!(display_path(work, Path::new("/w/proj")), "/w/proj");
    }

    #[test]
    fn error_codes_and_messages() {
        let err = SearchError::Aborted(SearchTool::Grep);
        assert_eq!(err.code(), "SEARCH_ABORTED");
        assert_eq!(
            err.to_string(),
            "grep was aborted before completion (tool timeout or caller cancellation)"
        );
        let err = SearchError::RawOutputOverflow(SearchTool::Glob, 10);
        assert_eq!(err.code(), "SEARCH_RAW_OUTPUT_OVERFLOW");
        assert!(err.to_string().contains("narrow pattern or path"), "{err}");
        assert_eq!(
            SearchError::InvalidPattern(SearchTool::Glob, "x".into()).code(),
            "SEARCH_INVALID_PATTERN"
        );
        assert_eq!(SearchError::Failed(SearchTool::Glob, "x".into()).code(), "SEARCH_FAILED");
        let err = SearchError::NotSearchable(SearchTool::Grep, "pipe".into(), "a FIFO");
        assert_eq!(err.code(), "SEARCH_NOT_REGULAR_FILE");
        assert_eq!(
            err.to_string(),
            "grep cannot search \"pipe\": a FIFO is not a regular file or directory"
        );
    }
}
