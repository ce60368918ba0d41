//! MCP Tasks (the `io.modelcontextprotocol/tasks` extension) for `mode: async` tools: a client
//! that declares the extension gets a task for each call of such a tool at once, polls
//! `tasks/get` for its state and result, and may cancel it cooperatively with `tasks/cancel`
//! (the executor's cancellation signal fires). A client without the extension gets a plain
//! call that answers when the work is done.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rmcp::model::{
    CallToolResult, DetailedTask, GetTaskResult, JsonObject, Task, TaskPayload, TaskStatus,
};
use rmcp::ErrorData;
use tokio_util::sync::CancellationToken;

/// How long a task's state is kept after it was created (`ttlMs`).
pub(super) const TASK_TTL: Duration = Duration::from_secs(3600);
/// How often a client should poll (`pollIntervalMs`).
const POLL_INTERVAL: Duration = Duration::from_millis(500);
/// At most this many tasks are kept per session; the oldest finished ones go first.
const MAX_TASKS: usize = 1024;

/// One MCP session's tasks.
#[derive(Debug, Default)]
pub(super) struct Tasks {
    entries: Mutex<HashMap<String, Entry>>,
    next: AtomicU64,
}

#[derive(Debug)]
struct Entry {
    created: SystemTime,
    updated: SystemTime,
    state: State,
    cancel: CancellationToken,
}

#[derive(Debug)]
enum State {
    Working,
    Completed(JsonObject),
    Cancelled,
}

impl Tasks {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Entry>> {
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A new working task; its id, the token that cancels it, and its seed state. A session
    /// with [`MAX_TASKS`] tasks still working gets no more: each runs an executor, and a client
    /// must not be able to start them without bound.
    pub(super) fn start(&self) -> Result<(String, CancellationToken, Task), ErrorData> {
        let now = SystemTime::now();
        let mut entries = self.lock();
        forget_old(&mut entries, now);
        if entries.len() >= MAX_TASKS {
            return Err(ErrorData::invalid_request(
                format!("this session has {MAX_TASKS} tasks still working; wait for one to end or cancel one"),
                None,
            ));
        }
        let id = format!("task-{}", self.next.fetch_add(1, Ordering::Relaxed) + 1);
        let cancel = CancellationToken::new();
        entries.insert(
            id.clone(),
            Entry {
                created: now,
                updated: now,
                state: State::Working,
                cancel: cancel.clone(),
            },
        );
        let task = task(&id, TaskStatus::Working, now, now);
        Ok((id, cancel, task))
    }

    /// The call behind task `id` ended with `result` (unless it was cancelled first).
    pub(super) fn complete(&self, id: &str, result: &CallToolResult) {
        let mut entries = self.lock();
        if let Some(entry) = entries.get_mut(id) {
            if matches!(entry.state, State::Working) {
                let object = match serde_json::to_value(result) {
                    Ok(serde_json::Value::Object(object)) => object,
                    _ => JsonObject::new(),
                };
                entry.state = State::Completed(object);
                entry.updated = SystemTime::now();
            }
        }
    }

    /// `tasks/get`.
    pub(super) fn get(&self, id: &str) -> Result<GetTaskResult, ErrorData> {
        let entries = self.lock();
        let entry = entries.get(id).ok_or_else(|| unknown(id))?;
        let (status, payload) = match &entry.state {
            State::Working => (TaskStatus::Working, TaskPayload::Working),
            State::Completed(result) => (
                TaskStatus::Completed,
                TaskPayload::Completed {
                    result: result.clone(),
                },
            ),
            State::Cancelled => (TaskStatus::Cancelled, TaskPayload::Cancelled),
        };
        let task = task(id, status, entry.created, entry.updated);
        Ok(GetTaskResult::new(DetailedTask::new(task, payload)))
    }

    /// `tasks/cancel`: the executor's signal fires; a task that already ended stays as it
    /// ended.
    pub(super) fn cancel(&self, id: &str) -> Result<(), ErrorData> {
        let mut entries = self.lock();
        let entry = entries.get_mut(id).ok_or_else(|| unknown(id))?;
        if matches!(entry.state, State::Working) {
            entry.cancel.cancel();
            entry.state = State::Cancelled;
            entry.updated = SystemTime::now();
        }
        Ok(())
    }
}

fn unknown(id: &str) -> ErrorData {
    ErrorData::invalid_params(format!("no task `{id}` in this session"), None)
}

/// Drops tasks past their TTL, and past [`MAX_TASKS`] the oldest that have ended.
fn forget_old(entries: &mut HashMap<String, Entry>, now: SystemTime) {
    entries.retain(|_, e| now.duration_since(e.created).unwrap_or_default() < TASK_TTL);
    while entries.len() >= MAX_TASKS {
        let oldest = entries
            .iter()
            .filter(|(_, e)| !matches!(e.state, State::Working))
            .min_by_key(|(_, e)| e.created)
            .map(|(id, _)| id.clone());
        match oldest {
            Some(id) => {
                entries.remove(&id);
            }
            None => break,
        }
    }
}

fn task(id: &str, status: TaskStatus, created: SystemTime, updated: SystemTime) -> Task {
    Task::new(id, status, iso8601(created), iso8601(updated))
        .with_ttl_ms(TASK_TTL.as_millis() as u64)
        .with_poll_interval_ms(POLL_INTERVAL.as_millis() as u64)
}

/// `2026-12-04T01:02:03.456Z`.
fn iso8601(t: SystemTime) -> String {
    let since = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = since.as_secs();
    let (days, rest) = (secs / 86_400, secs % 86_400);
    let (year, month, day) = civil_from_days(days as i64);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60,
        since.subsec_millis()
    )
}

/// The proleptic Gregorian date of a day count since 1970-01-01 (Howard Hinnant's algorithm).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_cannot_start_tasks_without_bound() {
        let tasks = Tasks::default();
        for _ in 0..MAX_TASKS {
            tasks.start().expect("room for it");
        }
        assert!(tasks.start().is_err(), "no more while all are working");
        tasks.cancel("task-1").unwrap();
        assert!(tasks.start().is_ok(), "an ended task makes room");
    }

    #[test]
    fn timestamps_are_iso_8601_utc() {
        assert_eq!(iso8601(UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
        let t = UNIX_EPOCH + Duration::from_millis(1_796_346_123_456);
        assert_eq!(iso8601(t), "2026-12-04T01:02:03.456Z");
        // A leap day.
        let t = UNIX_EPOCH + Duration::from_secs(951_782_400);
        assert_eq!(iso8601(t), "2000-02-29T00:00:00.000Z");
    }
}
