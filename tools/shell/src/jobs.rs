//! Background jobs: commands started with `run_in_background`, owned by the session that started
//! them, read as consuming deltas (`job_output`), listed and stopped. A job's end is announced to
//! its session (`HostEvents::notice`: the clients and the session log). Jobs are process groups of
//! `toolhost-process`, so they die with the server and are always reaped.

use crate::config::ShellConfig;
use crate::exec::{self, Sink};
use crate::live::decode_into;
use crate::render;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
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

/// Output not yet read by `job_output`: decoded text, bounded (the oldest is dropped first).
#[derive(Default)]
struct Unread {
    text: String,
    carry: [Vec<u8>; 2],
    dropped: u64,
}

struct Job {
    owner: String,
    snapshot: Mutex<JobSnapshot>,
    unread: Mutex<Unread>,
    stop: CancellationToken,
    kill_requested: AtomicBool,
    finished: watch::Sender<bool>,
    cap: usize,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Job {
    fn snapshot(&self) -> JobSnapshot {
        lock(&self.snapshot).clone()
    }

    /// The unread output, consumed.
    fn take_unread(&self) -> String {
        let mut unread = lock(&self.unread);
        let mut text = String::new();
        if unread.dropped > 0 {
            text = format!("[… {} bytes of earlier output dropped …]\n", unread.dropped);
            unread.dropped = 0;
        }
        text.push_str(&std::mem::take(&mut unread.text));
        text
    }
}

/// One stream of a job feeding its unread buffer.
struct JobSink {
    job: Arc<Job>,
    index: usize,
}

impl Sink for JobSink {
    fn push(&mut self, chunk: &[u8]) {
        let mut unread = lock(&self.job.unread);
        let unread = &mut *unread;
        decode_into(&mut unread.text, &mut unread.carry[self.index], chunk);
        if unread.text.len() > self.job.cap {
            let mut cut = unread.text.len() - self.job.cap;
            while !unread.text.is_char_boundary(cut) {
                cut += 1;
            }
            unread.text.drain(..cut);
            unread.dropped += cut as u64;
        }
    }
}

/// Why a job request failed.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum JobError {
    #[error("unknown job {0}")]
    Unknown(String),
    #[error("job {0} belongs to another session")]
    NotOwner(String),
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
        let (id, job) = self.admit("bash", command, cx)?;
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
        let events = cx.capability::<EventsHandle>();
        let session = cx.session_id().map(str::to_owned);
        let grace = self.config.kill_grace;
        tokio::spawn(async move {
            let mut out = JobSink { job: Arc::clone(&job), index: 0 };
            let mut err = JobSink { job: Arc::clone(&job), index: 1 };
            let end = exec::run(group, &mut out, &mut err, None, &job.stop, grace).await;
            let killed = job.kill_requested.load(Ordering::SeqCst);
            let (status, detail) = match (&end.signal, end.exit_code) {
                (Some(signal), _) => (JobStatus::Killed, format!("signal: {signal}")),
                (None, _) if killed => (JobStatus::Killed, "killed before exit".to_owned()),
                (None, Some(code)) => (JobStatus::Completed, format!("exit code: {code}")),
                (None, None) => (JobStatus::Failed, "exit status unknown".to_owned()),
            };
            finish(&job, status, detail, events, session.as_deref());
        });
        Ok(id)
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
        let (id, job) = self.admit(kind, label, cx)?;
        let events = cx.capability::<EventsHandle>();
        let session = cx.session_id().map(str::to_owned);
        let running = work(job.stop.clone());
        tokio::spawn(async move {
            let (status, detail, output) = running.await;
            JobSink { job: Arc::clone(&job), index: 0 }.push(output.as_bytes());
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
        cx: &ToolContext,
    ) -> Result<(String, Arc<Job>), ToolError> {
        let owner = owner_of(cx);
        let active = lock(&self.jobs)
            .iter()
            .filter(|j| j.owner == owner && j.snapshot().status.is_active())
            .count();
        if active >= self.config.max_jobs_per_owner {
            return Err(ToolError::plain(format!(
                "too many background jobs: {active} are running (at most {}); wait for one to \
                 finish (job_output with wait) or stop one with job_kill",
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
            unread: Mutex::default(),
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
                () = signal.cancelled() => {}
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
