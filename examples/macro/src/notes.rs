//! A note-taking assistant defined in Rust alone: the fns are the schema. `src/bin/emit_notes.rs`
//! turns [`registry`]'s definitions into the same JSON Schemas, provider declarations and
//! TypeScript that a manifest would produce.

use std::collections::BTreeMap;
use std::sync::Mutex;

use serde::{Deserialize, Serialize};
use toolc_runtime::{tool, tools, Registry, RegistryError, ToolError};

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Note {
    pub id: u64,
    pub title: String,
    pub body: String,
    pub tags: Vec<String>,
}

static NOTES: Mutex<BTreeMap<u64, Note>> = Mutex::new(BTreeMap::new());

fn with_notes<T>(f: impl FnOnce(&mut BTreeMap<u64, Note>) -> T) -> T {
    // A poisoned lock only means another call panicked mid-update; the map is still usable.
    let mut notes = NOTES.lock().unwrap_or_else(|p| p.into_inner());
    f(&mut notes)
}

/// Save a note for the user and return it with its id.
///
/// # Arguments
///
/// * `title` - A short title.
/// * `body` - The text of the note.
/// * `tags` - Words to find it by later.
#[tool(timeout = "2s")]
pub async fn add_note(
    title: String,
    body: String,
    tags: Option<Vec<String>>,
) -> Result<Note, ToolError> {
    if title.trim().is_empty() {
        return Err(ToolError::new("a note needs a title").with_code("empty_title"));
    }
    Ok(with_notes(|notes| {
        let id = notes.keys().next_back().map_or(1, |last| last + 1);
        let note = Note {
            id,
            title,
            body,
            tags: tags.unwrap_or_default(),
        };
        notes.insert(id, note.clone());
        note
    }))
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct FindNotes {
    /// Words in the title, body or tags.
    pub query: String,
    /// Only notes with this tag.
    pub tag: Option<String>,
}

/// Find saved notes, newest first.
#[tool]
pub fn find_notes(#[args] find: FindNotes) -> Vec<Note> {
    let query = find.query.to_lowercase();
    with_notes(|notes| {
        notes
            .values()
            .rev()
            .filter(|n| find.tag.as_ref().is_none_or(|t| n.tags.contains(t)))
            .filter(|n| {
                n.title.to_lowercase().contains(&query)
                    || n.body.to_lowercase().contains(&query)
                    || n.tags.iter().any(|t| t.to_lowercase().contains(&query))
            })
            .cloned()
            .collect()
    })
}

/// Open a note in the editor the user is looking at.
#[tool(client, timeout = "5s")]
pub fn open_note(id: u64);

/// The note tools, defined from the fns above.
pub fn registry() -> Result<Registry, RegistryError> {
    tools![add_note, find_notes, open_note].build()
}
