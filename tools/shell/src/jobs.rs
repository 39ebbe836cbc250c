//! Background jobs: commands started with `run_in_background`, owned by the session that started
//! them, read as consuming deltas (`job_output`), listed and stopped. A job's end is announced to
//! its session (`HostEvents::notice`: the clients and the session log). Jobs are process groups of
//! `toolhost-process`, so they die with the server and are always reaped.

use crate::config::ShellConfig;
use crate::exec::{self, Sink};
use crate::render;
use crate::world_exec::Started;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use toolhost_contract::{EventsHandle, Notice, ToolContext, ToolError};

/// Where a job is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum JobStatus {
    Running,
    Stopping,
    Completed,
    Killed,
    Failed,
}

impl JobStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            JobStatus::Running => "running",
            JobStatus::Stopping => "stopping",
            JobStatus::Completed => "completed",
            JobStatus::Killed => "killed",
            JobStatus::Failed => "failed",
        }
    }

    pub fn is_active(self) -> bool {
        matches!(self, JobStatus::Running | JobStatus::Stopping)
    }
}

/// What the job tools show of a job.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct JobSnapshot {
    /// `<kind>-<n>`, e.g. `bash-1`.
    pub id: String,
    pub kind: String,
    /// The command.
    pub label: String,
    pub status: JobStatus,
    /// How it ended: `exit code: N`, `signal: SIGTERM`, `killed before exit`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// Milliseconds since the Unix epoch.
    pub started_at: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<u64>,
}

fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}

/// One stream of a job: its last `cap` bytes, how many it wrote, and how far `job_output` has
/// read it.
#[derive(Default)]
struct StreamTail {
    tail: VecDeque<u8>,
    total: u64,
    read: u64,
}

impl StreamTail {
    fn push(&mut self, chunk: &[u8], cap: usize) {
        self.total += chunk.len() as u64;
        if chunk.len() >= cap {
            self.tail.clear();
            self.tail.extend(&chunk[chunk.len() - cap..]);
        } else {
            let overflow = (self.tail.len() + chunk.len()).saturating_sub(cap);
            self.tail.drain(..overflow);
            self.tail.extend(chunk);
        }
    }

    /// The bytes written since the last read, consumed, and whether some of them were already
    /// gone from memory (then the whole retained tail is returned).
    fn take(&mut self) -> (Vec<u8>, bool) {
        let tail_start = self.total - self.tail.len() as u64;
        let dropped = self.read < tail_start;
        let skip = self.read.saturating_sub(tail_start) as usize;
        self.read = self.total;
        (self.tail.iter().skip(skip).copied().collect(), dropped)
    }
}

/// What a job wrote: stdout and stderr of a process, or the one text a task ends with.
#[derive(Default)]
struct Output {
    streams: [StreamTail; 2],
    task: Option<String>,
}

struct Job {
    owner: String,
    snapshot: Mutex<JobSnapshot>,
    output: Mutex<Output>,
    /// A task (not a process): its output is its final text, shown on every read once finished.
    is_task: bool,
    stop: CancellationToken,
    kill_requested: AtomicBool,
    finished: watch::Sender<bool>,
    cap: usize,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The marker after a read whose output was partly gone from memory.
const DROPPED: &str = "[some output was dropped from memory; full output: (unavailable)]";

impl Job {
    fn snapshot(&self) -> JobSnapshot {
        lock(&self.snapshot).clone()
    }

    /// The output written since the last read, consumed: new stdout, then `[stderr]` and new
    /// stderr (each stream decoded on its own, so they never interleave within a read).
    fn take_unread(&self) -> String {
        let mut output = lock(&self.output);
        if self.is_task {
            return output.task.clone().unwrap_or_default();
        }
        let (out, out_dropped) = output.streams[0].take();
        let (err, err_dropped) = output.streams[1].take();
        compose(&out, &err, out_dropped || err_dropped)
    }
}

/// One read's text: stdout, then `[stderr]` and stderr on a line of their own, then the marker
/// for output gone from memory. Each stream is decoded on its own.
fn compose(out: &[u8], err: &[u8], dropped: bool) -> String {
    let mut text = String::from_utf8_lossy(out).into_owned();
    let err = String::from_utf8_lossy(err);
    if !err.is_empty() {
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str("[stderr]\n");
        text.push_str(&err);
    }
    if dropped {
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(DROPPED);
    }
    text
}

/// One stream of a job feeding its retained tail.
struct JobSink {
    job: Arc<Job>,
    index: usize,
}

impl Sink for JobSink {
    fn push(&mut self, chunk: &[u8]) {
        lock(&self.job.output).streams[self.index].push(chunk, self.job.cap);
    }
}

/// Why a job request failed.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum JobError {
    #[error("unknown job {0}")]
    Unknown(String),
    #[error("job {0} belongs to another session")]
    NotOwner(String),
    #[error("wait aborted")]
    WaitAborted,
}

impl From<JobError> for ToolError {
    fn from(err: JobError) -> Self {
        ToolError::plain(err.to_string())
    }
}

/// Every job of this server, in start order.
pub struct JobRegistry {
    config: Arc<ShellConfig>,
    jobs: Mutex<Vec<Arc<Job>>>,
    counters: Mutex<HashMap<String, u64>>,
}

/// How a bash job ended, as `job_list` and `job_output` say it.
fn job_end(job: &Job, end: &exec::RunEnd) -> (JobStatus, String) {
    let killed = job.kill_requested.load(Ordering::SeqCst);
    match (&end.signal, end.exit_code) {
        (Some(signal), _) => (JobStatus::Killed, format!("signal: {signal}")),
        (None, _) if killed => (JobStatus::Killed, "killed before exit".to_owned()),
        (None, Some(code)) => (JobStatus::Completed, format!("exit code: {code}")),
        (None, None) => (JobStatus::Failed, "exit status unknown".to_owned()),
    }
}

/// The session a call belongs to (jobs are owned per session).
pub(crate) fn owner_of(cx: &ToolContext) -> String {
    cx.session_id().unwrap_or("").to_owned()
}

impl JobRegistry {
    pub fn new(config: Arc<ShellConfig>) -> Self {
        JobRegistry { config, jobs: Mutex::default(), counters: Mutex::default() }
    }

    fn next_id(&self, kind: &str) -> String {
        let mut counters = lock(&self.counters);
        let n = counters.entry(kind.to_owned()).or_insert(0);
        *n += 1;
        format!("{kind}-{n}")
    }

    /// Starts `command` in `cwd` as a job of the calling session; its id.
    pub fn start_bash(
        &self,
        command: &str,
        cwd: PathBuf,
        confine: crate::bash::Confinement,
        cx: &ToolContext,
    ) -> Result<String, ToolError> {
        let (id, job) = self.admit("bash", command, false, cx)?;
        let env = crate::env::command_env(std::env::vars_os(), &self.config);
        let confined = confine.as_ref().map(|(l, w)| (l.as_path(), w.as_slice()));
        let group = match exec::spawn(&self.config, command, &cwd, env, confined) {
            Ok(group) => group,
            Err(err) => {
                let message = format!("cannot start {}: {err}", self.config.shell);
                finish(&job, JobStatus::Failed, message.clone(), None, None);
                return Err(ToolError::plain(message));
            }
        };
        self.run_bash(job, Started::Here(group), cx);
        Ok(id)
    }

    /// As [`JobRegistry::start_bash`], for `command` already started (in the execution world).
    pub(crate) fn start_bash_in_world(
        &self,
        command: &str,
        started: Started,
        cx: &ToolContext,
    ) -> Result<String, ToolError> {
        let (id, job) = self.admit("bash", command, false, cx)?;
        self.run_bash(job, started, cx);
        Ok(id)
    }

    /// Runs a started bash job to its end, its output kept, its end told.
    fn run_bash(&self, job: Arc<Job>, started: Started, cx: &ToolContext) {
        let events = cx.capability::<EventsHandle>();
        let session = cx.session_id().map(str::to_owned);
        let grace = self.config.kill_grace;
        tokio::spawn(async move {
            let mut out = JobSink { job: Arc::clone(&job), index: 0 };
            let mut err = JobSink { job: Arc::clone(&job), index: 1 };
            let ran = started.run(&mut out, &mut err, None, &job.stop, grace).await;
            let (status, detail) = match ran {
                Ok(end) => job_end(&job, &end),
                Err(lost) => (JobStatus::Failed, lost),
            };
            finish(&job, status, detail, events, session.as_deref());
        });
    }

    /// Starts a job that is not a process of its own (e.g. waiting on a terminal): `work` gets
    /// the job's stop signal and returns how it ended and its output.
    pub fn start_task<F>(
        &self,
        kind: &str,
        label: &str,
        cx: &ToolContext,
        work: impl FnOnce(CancellationToken) -> F,
    ) -> Result<String, ToolError>
    where
        F: std::future::Future<Output = (JobStatus, String, String)> + Send + 'static,
    {
        self.start_reporting_task(kind, label, cx, |stop, _| work(stop))
    }

    /// Starts a task that reports its output so far: `work` also gets a setter for the text
    /// `job_output` shows while it runs (a program's logs so far); its final output replaces it.
    pub fn start_reporting_task<F>(
        &self,
        kind: &str,
        label: &str,
        cx: &ToolContext,
        work: impl FnOnce(CancellationToken, Arc<dyn Fn(String) + Send + Sync>) -> F,
    ) -> Result<String, ToolError>
    where
        F: std::future::Future<Output = (JobStatus, String, String)> + Send + 'static,
    {
        let (id, job) = self.admit(kind, label, true, cx)?;
        let events = cx.capability::<EventsHandle>();
        let session = cx.session_id().map(str::to_owned);
        let progress: Arc<dyn Fn(String) + Send + Sync> = {
            let job = Arc::downgrade(&job);
            Arc::new(move |text| {
                if let Some(job) = job.upgrade() {
                    lock(&job.output).task = Some(text);
                }
            })
        };
        let running = work(job.stop.clone(), progress);
        tokio::spawn(async move {
            let (status, detail, output) = running.await;
            lock(&job.output).task = Some(output);
            let status = if job.kill_requested.load(Ordering::SeqCst) && status.is_active() {
                JobStatus::Killed
            } else {
                status
            };
            finish(&job, status, detail, events, session.as_deref());
        });
        Ok(id)
    }

    /// Checks the per-session limit and records a new running job.
    fn admit(
        &self,
        kind: &str,
        label: &str,
        is_task: bool,
        cx: &ToolContext,
    ) -> Result<(String, Arc<Job>), ToolError> {
        let owner = owner_of(cx);
        let active = lock(&self.jobs)
            .iter()
            .filter(|j| j.owner == owner && j.snapshot().status.is_active())
            .count();
        if active >= self.config.max_jobs_per_owner {
            return Err(ToolError::plain(format!(
                "background job limit reached for this owner (limit: {}); use job_kill to stop \
                 an unneeded job, wait for it to finish, then retry",
                self.config.max_jobs_per_owner
            )));
        }
        let id = self.next_id(kind);
        let (finished, _) = watch::channel(false);
        let job = Arc::new(Job {
            owner,
            snapshot: Mutex::new(JobSnapshot {
                id: id.clone(),
                kind: kind.to_owned(),
                label: label.to_owned(),
                status: JobStatus::Running,
                detail: None,
                started_at: now_ms(),
                finished_at: None,
            }),
            output: Mutex::default(),
            is_task,
            stop: CancellationToken::new(),
            kill_requested: AtomicBool::new(false),
            finished,
            cap: self.config.max_output_bytes,
        });
        lock(&self.jobs).push(Arc::clone(&job));
        Ok((id, job))
    }

    fn find(&self, id: &str, owner: &str) -> Result<Arc<Job>, JobError> {
        let jobs = lock(&self.jobs);
        let job = jobs
            .iter()
            .find(|j| lock(&j.snapshot).id == id)
            .ok_or_else(|| JobError::Unknown(id.to_owned()))?;
        if job.owner != owner {
            return Err(JobError::NotOwner(id.to_owned()));
        }
        Ok(Arc::clone(job))
    }

    /// The unread output of a job (waiting up to `wait` for it to finish first) and its state.
    pub async fn output(
        &self,
        id: &str,
        owner: &str,
        wait: Option<Duration>,
        signal: &CancellationToken,
    ) -> Result<(String, JobSnapshot), JobError> {
        let job = self.find(id, owner)?;
        if let Some(wait) = wait {
            let mut finished = job.finished.subscribe();
            tokio::select! {
                _ = tokio::time::timeout(wait, finished.wait_for(|done| *done)) => {}
                () = signal.cancelled() => return Err(JobError::WaitAborted),
            }
        }
        Ok((job.take_unread(), job.snapshot()))
    }

    /// Every job of `owner`, in start order.
    pub fn list(&self, owner: &str) -> Vec<JobSnapshot> {
        lock(&self.jobs).iter().filter(|j| j.owner == owner).map(|j| j.snapshot()).collect()
    }

    /// Asks a job to stop; `true` when it was still running.
    pub fn kill(&self, id: &str, owner: &str) -> Result<(bool, JobSnapshot), JobError> {
        let job = self.find(id, owner)?;
        let snapshot = {
            let mut snapshot = lock(&job.snapshot);
            if !snapshot.status.is_active() {
                return Ok((false, snapshot.clone()));
            }
            snapshot.status = JobStatus::Stopping;
            snapshot.clone()
        };
        job.kill_requested.store(true, Ordering::SeqCst);
        job.stop.cancel();
        Ok((true, snapshot))
    }

    /// Stops every job (the server is going away); their groups are terminated and reaped.
    pub fn stop_all(&self) {
        for job in lock(&self.jobs).iter() {
            job.stop.cancel();
        }
    }
}

/// Records how a job ended, wakes its waiters and announces it to its session.
fn finish(
    job: &Job,
    status: JobStatus,
    detail: String,
    events: Option<EventsHandle>,
    session: Option<&str>,
) {
    let snapshot = {
        let mut snapshot = lock(&job.snapshot);
        snapshot.status = status;
        snapshot.detail = Some(detail);
        snapshot.finished_at = Some(now_ms());
        snapshot.clone()
    };
    job.finished.send_replace(true);
    if let Some(events) = events {
        let data = serde_json::to_value(&snapshot).unwrap_or_default();
        let text = render::completion_notice(&snapshot);
        events.notice(session, Notice { source: "job".to_owned(), text, data });
    }
}

impl Drop for JobRegistry {
    fn drop(&mut self) {
        self.stop_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_read_is_stdout_then_the_stderr_marker_then_stderr() {
        assert_eq!(compose(b"out", b"err\n", false), "out\n[stderr]\nerr\n");
        assert_eq!(compose(b"out\n", b"err", false), "out\n[stderr]\nerr");
        assert_eq!(compose(b"", b"err", false), "[stderr]\nerr");
        assert_eq!(compose(b"out", b"", false), "out");
        assert_eq!(compose(b"", b"", false), "");
        assert_eq!(
            compose(b"a\xff", b"", true),
            "a\u{fffd}\n[some output was dropped from memory; full output: (unavailable)]"
        );
    }

    #[test]
    fn each_stream_is_read_from_where_the_last_read_stopped() {
        let mut tail = StreamTail::default();
        tail.push(b"abc", 4);
        assert_eq!(tail.take(), (b"abc".to_vec(), false));
        tail.push(b"de", 4);
        assert_eq!(tail.take(), (b"de".to_vec(), false));
        assert_eq!(tail.take(), (Vec::new(), false));
        // More than the tail holds arrived since the last read: the whole tail, marked.
        tail.push(b"fghij", 4);
        assert_eq!(tail.take(), (b"ghij".to_vec(), true));
    }
}
