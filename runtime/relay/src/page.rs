//! What goes to the page: one queue per session, bounded in bytes, shared by the drive loop
//! (which pushes and never waits) and the writer task of the page's current connection (which
//! pops and writes). The queue outlives a connection: while the page is away (held for a
//! resume) it keeps what the model and the session send, and a resumed page's writer picks up
//! where the last one stopped.
//!
//! Past the byte bound the oldest audio frames are dropped (and counted); nothing else ever is
//! (a call, a cancellation, an approval request, a transcript). When what is left is still over
//! the bound, the drive loop stops reading the model until the page catches up
//! ([`PageQueue::has_room`]), so a page that stops reading costs at most the bound plus one
//! batch of frames.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use futures_util::{FutureExt, Sink, SinkExt};
use tokio::sync::Notify;
use tokio_tungstenite::tungstenite::{Error as WsError, Message};

/// How many frames the writer takes at once before it flushes.
const BURST: usize = 64;

#[derive(Debug)]
pub(crate) struct PageQueue {
    frames: Mutex<Frames>,
    /// The writer waits on it for frames.
    wake_writer: Notify,
    /// The drive loop waits on it for room.
    space: Notify,
}

#[derive(Debug)]
struct Frames {
    /// Oldest first; `true` for audio, which may be dropped.
    queue: VecDeque<(Message, bool)>,
    bytes: usize,
    /// Of `bytes`, those of audio frames.
    audio_bytes: usize,
    limit: usize,
    /// Audio frames dropped since the last [`PageQueue::take_dropped`].
    dropped: u64,
    /// No more frames: the writer sends what is queued and closes the connection.
    closing: bool,
}

impl PageQueue {
    pub(crate) fn new(limit: usize) -> Arc<PageQueue> {
        Arc::new(PageQueue {
            frames: Mutex::new(Frames {
                queue: VecDeque::new(),
                bytes: 0,
                audio_bytes: 0,
                limit: limit.max(1),
                dropped: 0,
                closing: false,
            }),
            wake_writer: Notify::new(),
            space: Notify::new(),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Frames> {
        self.frames.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Queues a frame for the page; past the bound the oldest audio goes.
    pub(crate) fn push(&self, msg: Message, audio: bool) {
        {
            let mut frames = self.lock();
            if frames.closing {
                return;
            }
            frames.bytes += msg.len();
            if audio {
                frames.audio_bytes += msg.len();
            }
            frames.queue.push_back((msg, audio));
            frames.shed();
        }
        self.wake_writer.notify_one();
    }

    /// Puts `msgs` ahead of everything queued, in their order (what a resumed page gets first),
    /// and takes out of the queue the frames that say the same (a call queued before the page
    /// left, which `msgs` delivers again), so that the page gets each once.
    pub(crate) fn push_front(&self, msgs: Vec<Message>) {
        {
            let mut frames = self.lock();
            let again: std::collections::HashSet<&str> =
                msgs.iter().filter_map(|m| m.to_text().ok()).collect();
            let mut freed = 0;
            frames.queue.retain(|(msg, audio)| {
                let repeated = !*audio && msg.to_text().is_ok_and(|t| again.contains(t));
                if repeated {
                    freed += msg.len();
                }
                !repeated
            });
            frames.bytes -= freed;
            for msg in msgs.into_iter().rev() {
                frames.bytes += msg.len();
                frames.queue.push_front((msg, false));
            }
            frames.closing = false;
            frames.shed();
        }
        self.wake_writer.notify_one();
    }

    /// Whether what may not be dropped is within the bound: the model's frames are read only
    /// then (audio past the bound makes room by going).
    pub(crate) fn has_room(&self) -> bool {
        let frames = self.lock();
        frames.bytes - frames.audio_bytes < frames.limit
    }

    /// Resolves once the queue is within its bound again.
    pub(crate) async fn room(&self) {
        loop {
            let notified = self.space.notified();
            if self.has_room() {
                return;
            }
            notified.await;
        }
    }

    /// Forgets the control frames queued for a connection that is gone (pings, a close), so
    /// that the page's next connection does not get them.
    pub(crate) fn forget_control(&self) {
        let mut frames = self.lock();
        frames.closing = false;
        let mut freed = 0;
        frames.queue.retain(|(msg, _)| {
            let control = matches!(msg, Message::Ping(_) | Message::Pong(_) | Message::Close(_));
            if control {
                freed += msg.len();
            }
            !control
        });
        frames.bytes -= freed;
    }

    /// Bytes queued now.
    #[cfg(test)]
    pub(crate) fn bytes(&self) -> usize {
        self.lock().bytes
    }

    /// Lets the writer send what is queued, then close the connection; later frames are not
    /// queued.
    pub(crate) fn close(&self) {
        self.lock().closing = true;
        self.wake_writer.notify_one();
    }

    pub(crate) fn take_dropped(&self) -> Option<u64> {
        let mut frames = self.lock();
        (frames.dropped > 0).then(|| std::mem::take(&mut frames.dropped))
    }

    /// Up to a burst of frames for the writer; `None` when the queue is closing and empty.
    async fn next_burst(&self) -> Option<Vec<Message>> {
        loop {
            let notified = self.wake_writer.notified();
            {
                let mut frames = self.lock();
                if !frames.queue.is_empty() {
                    let n = frames.queue.len().min(BURST);
                    let mut burst = Vec::with_capacity(n);
                    for (msg, audio) in frames.queue.drain(..n).collect::<Vec<_>>() {
                        frames.bytes -= msg.len();
                        if audio {
                            frames.audio_bytes -= msg.len();
                        }
                        burst.push(msg);
                    }
                    drop(frames);
                    self.space.notify_one();
                    return Some(burst);
                }
                if frames.closing {
                    return None;
                }
            }
            notified.await;
        }
    }
}

impl Frames {
    fn shed(&mut self) {
        while self.bytes > self.limit {
            let Some(oldest) = self.queue.iter().position(|(_, audio)| *audio) else {
                break;
            };
            if let Some((msg, _)) = self.queue.remove(oldest) {
                self.bytes -= msg.len();
                self.audio_bytes -= msg.len();
                self.dropped += 1;
            }
        }
    }
}

/// Writes the queue to one connection of the page, flushing once per burst; ends when a write
/// takes longer than `write_timeout` or fails (the page stopped reading or left), after a
/// close frame, or when the queue is closed and empty.
pub(crate) async fn write_page<S>(mut sink: S, queue: Arc<PageQueue>, write_timeout: Duration)
where
    S: Sink<Message, Error = WsError> + Unpin,
{
    while let Some(burst) = queue.next_burst().await {
        let write = async {
            let mut closing = false;
            for msg in burst {
                closing = matches!(msg, Message::Close(_));
                sink.feed(msg).await?;
                if closing {
                    break;
                }
            }
            sink.flush().await.map(|()| closing)
        };
        // Most bursts complete at once (the socket is writable): only one that has to wait
        // arms the write deadline, which saves a timer registration per burst.
        let mut write = std::pin::pin!(write);
        let written = match (&mut write).now_or_never() {
            Some(done) => Ok(done),
            None => tokio::time::timeout(write_timeout, write).await,
        };
        match written {
            Ok(Ok(false)) => {}
            Ok(Ok(true)) | Ok(Err(_)) | Err(_) => return,
        }
    }
    let _ = tokio::time::timeout(write_timeout, sink.close()).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn past_the_bound_the_oldest_audio_goes_and_nothing_else() {
        let queue = PageQueue::new(100);
        queue.push(Message::text("c".repeat(40)), false);
        queue.push(Message::text("a".repeat(40)), true);
        queue.push(Message::text("b".repeat(40)), true);
        // 120 bytes: the oldest audio frame goes.
        assert_eq!(queue.bytes(), 80);
        assert_eq!(queue.take_dropped(), Some(1));
        queue.push(Message::text("d".repeat(90)), false);
        // Over the bound with calls only left: nothing more goes, and the model waits.
        assert_eq!(queue.bytes(), 130);
        assert!(!queue.has_room());
        assert_eq!(queue.take_dropped(), Some(1));
    }
}
