//! Resume tokens: how a page that lost its connection finds its conversation again.
//!
//! At the start of a session the page gets a token (`toolc.session`); when its connection
//! drops, the relay holds the session (its model connection, its calls) for the grace window,
//! and a page that connects with `?resume=TOKEN` within it takes the session over and gets a
//! new token. A token is `RELAYID.SECRET`: the relay that holds the session, so that a sticky
//! balancer can route on it, and 256 random bits. It is bound to the principal the relay
//! authenticated, and used once.
//!
//! A refused resume is answered with a websocket that closes at once, with a close code and a
//! reason that starts with a word the page can act on ([`ResumeRefusal`]).

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::mpsc;

/// Spent tokens remembered, so that a replayed or expired one is refused with its own reason.
const SPENT_REMEMBERED: usize = 8192;

/// A page that comes back: its new connection, and the token it gets for the next time.
#[derive(Debug)]
pub(crate) struct Comeback<B> {
    pub(crate) socket: B,
    pub(crate) token: String,
}

/// Why a resume was refused; each is a close code and a reason for the page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ResumeRefusal {
    /// The token was handed to another user (4403).
    Forbidden,
    /// This relay holds no session for the token: it is another relay's, or this relay
    /// restarted (4404).
    Unknown,
    /// The page did not come back within the grace window (4408).
    Expired,
    /// The token was used already (4409).
    Replayed,
    /// The conversation ended (the model closed it, the relay drained) (4410).
    Ended,
}

impl ResumeRefusal {
    pub(crate) fn code(self) -> u16 {
        match self {
            ResumeRefusal::Forbidden => 4403,
            ResumeRefusal::Unknown => 4404,
            ResumeRefusal::Expired => 4408,
            ResumeRefusal::Replayed => 4409,
            ResumeRefusal::Ended => 4410,
        }
    }

    /// The close reason (at most 123 bytes, as a close frame allows).
    pub(crate) fn reason(self, relay_id: &str, token: &str) -> String {
        let mut reason = match self {
            ResumeRefusal::Forbidden => {
                "resume_forbidden: the conversation belongs to another user".to_owned()
            }
            ResumeRefusal::Unknown => {
                let holder = token.split_once('.').map(|(r, _)| r).unwrap_or("");
                if !holder.is_empty() && holder != relay_id {
                    format!(
                        "resume_unknown: held by relay {holder}, not {relay_id}; start a new conversation"
                    )
                } else {
                    format!(
                        "resume_unknown: relay {relay_id} does not hold it; start a new conversation"
                    )
                }
            }
            ResumeRefusal::Expired => {
                "resume_expired: the grace window ended; start a new conversation".to_owned()
            }
            ResumeRefusal::Replayed => "resume_replayed: this token was used already".to_owned(),
            ResumeRefusal::Ended => {
                "resume_ended: the conversation is over; start a new conversation".to_owned()
            }
        };
        let mut end = reason.len().min(123);
        while !reason.is_char_boundary(end) {
            end -= 1;
        }
        reason.truncate(end);
        reason
    }
}

/// The relay's sessions that a page may resume, by token.
#[derive(Debug)]
pub(crate) struct Resumes<B> {
    relay_id: String,
    max_held: usize,
    state: Mutex<State<B>>,
}

#[derive(Debug)]
struct State<B> {
    next_key: u64,
    /// Tokens that resume a session now.
    live: HashMap<String, u64>,
    sessions: HashMap<u64, Held<B>>,
    spent: HashMap<String, Spent>,
    spent_order: VecDeque<String>,
    /// Sessions whose page is away now.
    away: usize,
}

#[derive(Debug)]
struct Held<B> {
    principal: Option<Arc<str>>,
    token: String,
    pages: mpsc::Sender<Comeback<B>>,
    away: bool,
}

#[derive(Debug)]
struct Spent {
    principal: Option<Arc<str>>,
    why: ResumeRefusal,
}

impl<B> Resumes<B> {
    pub(crate) fn new(relay_id: String, max_held: usize) -> Resumes<B> {
        Resumes {
            relay_id,
            max_held,
            state: Mutex::new(State {
                next_key: 0,
                live: HashMap::new(),
                sessions: HashMap::new(),
                spent: HashMap::new(),
                spent_order: VecDeque::new(),
                away: 0,
            }),
        }
    }

    pub(crate) fn relay_id(&self) -> &str {
        &self.relay_id
    }

    fn lock(&self) -> MutexGuard<'_, State<B>> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A new session of `principal`: its key and first token, and where its comebacks arrive.
    pub(crate) fn register(
        &self,
        principal: Option<Arc<str>>,
    ) -> (u64, String, mpsc::Receiver<Comeback<B>>) {
        let (tx, rx) = mpsc::channel(1);
        let token = new_token(&self.relay_id);
        let mut state = self.lock();
        state.next_key += 1;
        let key = state.next_key;
        state.live.insert(token.clone(), key);
        state.sessions.insert(
            key,
            Held {
                principal,
                token: token.clone(),
                pages: tx,
                away: false,
            },
        );
        (key, token, rx)
    }

    /// Redeems `token` for `principal`: the session's key, the page's next token, and where to
    /// hand the page's connection. The token is spent either way except when it is another
    /// user's (a stolen token does not lock its owner out).
    pub(crate) fn redeem(
        &self,
        token: &str,
        principal: Option<&str>,
    ) -> Result<(u64, String, mpsc::Sender<Comeback<B>>), ResumeRefusal> {
        let mut state = self.lock();
        let owner_is = |owner: &Option<Arc<str>>| owner.as_deref() == principal;
        let Some(&key) = state.live.get(token) else {
            return Err(match state.spent.get(token) {
                Some(spent) if !owner_is(&spent.principal) => ResumeRefusal::Forbidden,
                Some(spent) => spent.why,
                None => ResumeRefusal::Unknown,
            });
        };
        let held = state
            .sessions
            .get(&key)
            .expect("a live token names a session");
        if !owner_is(&held.principal) {
            return Err(ResumeRefusal::Forbidden);
        }
        let principal = held.principal.clone();
        let pages = held.pages.clone();
        let next = new_token(&self.relay_id);
        state.live.remove(token);
        state.live.insert(next.clone(), key);
        if let Some(held) = state.sessions.get_mut(&key) {
            held.token = next.clone();
        }
        state.spend(token.to_owned(), principal, ResumeRefusal::Replayed);
        Ok((key, next, pages))
    }

    /// The page of session `key` left: whether the session may wait for it (the relay holds at
    /// most `max_held` sessions without a page).
    pub(crate) fn hold(&self, key: u64) -> bool {
        let mut state = self.lock();
        let full = state.away >= self.max_held;
        let Some(held) = state.sessions.get_mut(&key) else {
            return false;
        };
        if held.away {
            return true;
        }
        if full {
            return false;
        }
        held.away = true;
        state.away += 1;
        true
    }

    /// The page of session `key` is back.
    pub(crate) fn back(&self, key: u64) {
        let mut state = self.lock();
        if let Some(held) = state.sessions.get_mut(&key) {
            if std::mem::take(&mut held.away) {
                state.away -= 1;
            }
        }
    }

    /// RealtimeSession `key` ended: its token now says why (`expired`: its page did not come back
    /// within the grace window).
    pub(crate) fn ended(&self, key: u64, expired: bool) {
        let mut state = self.lock();
        let Some(held) = state.sessions.remove(&key) else {
            return;
        };
        if held.away {
            state.away -= 1;
        }
        state.live.remove(&held.token);
        let why = if expired {
            ResumeRefusal::Expired
        } else {
            ResumeRefusal::Ended
        };
        state.spend(held.token, held.principal, why);
    }

    /// Sessions whose page is away now.
    pub(crate) fn away(&self) -> usize {
        self.lock().away
    }
}

impl<B> State<B> {
    fn spend(&mut self, token: String, principal: Option<Arc<str>>, why: ResumeRefusal) {
        if self
            .spent
            .insert(token.clone(), Spent { principal, why })
            .is_none()
        {
            self.spent_order.push_back(token);
        }
        while self.spent_order.len() > SPENT_REMEMBERED {
            if let Some(old) = self.spent_order.pop_front() {
                self.spent.remove(&old);
            }
        }
    }
}

/// `RELAYID.SECRET`, the secret 256 bits from the operating system's generator, in hex.
fn new_token(relay_id: &str) -> String {
    format!("{relay_id}.{}", hex(&random_bytes::<32>()))
}

/// A relay id for a relay that was given none: 48 random bits in hex.
pub(crate) fn random_relay_id() -> String {
    hex(&random_bytes::<6>())
}

/// The relay id as tokens carry it: letters, digits, `-` and `_`, at most 32 of them (anything
/// else is left out; an id with nothing left is a random one).
pub(crate) fn clean_relay_id(id: &str) -> String {
    let clean: String = id
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
        .take(32)
        .collect();
    if clean.is_empty() {
        random_relay_id()
    } else {
        clean
    }
}

fn random_bytes<const N: usize>() -> [u8; N] {
    let mut bytes = [0u8; N];
    // The operating system's generator failing is not something a relay can go on without.
    getrandom::fill(&mut bytes).expect("the operating system's random number generator failed");
    bytes
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    let mut text = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(text, "{b:02x}");
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_resumes_once_for_its_owner_and_then_says_why_not() {
        let resumes: Resumes<()> = Resumes::new("r1".into(), 2);
        let (key, token, _rx) = resumes.register(Some(Arc::from("alice")));
        assert!(token.starts_with("r1.") && token.len() == 3 + 64);
        assert_eq!(
            resumes.redeem(&token, Some("bob")).err(),
            Some(ResumeRefusal::Forbidden)
        );
        let (again, next, _) = resumes.redeem(&token, Some("alice")).unwrap();
        assert_eq!(again, key);
        assert_ne!(next, token);
        assert_eq!(
            resumes.redeem(&token, Some("alice")).err(),
            Some(ResumeRefusal::Replayed)
        );
        assert!(resumes.hold(key));
        assert_eq!(resumes.away(), 1);
        resumes.ended(key, true);
        assert_eq!(resumes.away(), 0);
        assert_eq!(
            resumes.redeem(&next, Some("alice")).err(),
            Some(ResumeRefusal::Expired)
        );
        assert_eq!(
            resumes.redeem("r2.00", Some("alice")).err(),
            Some(ResumeRefusal::Unknown)
        );
        assert!(ResumeRefusal::Unknown
            .reason("r1", "r2.00")
            .contains("held by relay r2"));
    }

    #[test]
    fn the_relay_holds_at_most_its_cap_of_pageless_sessions() {
        let resumes: Resumes<()> = Resumes::new("r".into(), 1);
        let (a, _, _ra) = resumes.register(None);
        let (b, _, _rb) = resumes.register(None);
        assert!(resumes.hold(a));
        assert!(!resumes.hold(b));
        resumes.back(a);
        assert!(resumes.hold(b));
    }
}
