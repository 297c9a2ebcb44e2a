//! Small helpers shared by several modules: clock, atomic file writes and path reading.

use std::path::Path;
use std::sync::{Mutex, MutexGuard, PoisonError};

use crate::error::{Error, Result};

/// The time every record is stamped with: now, in UTC, to the second (see [`crate::types::time`]
/// for how records write it).
pub fn now() -> chrono::DateTime<chrono::Utc> {
    crate::types::time::now()
}

/// Reads a UTF-8 file, naming the path in the error. Only a regular file is read (a FIFO or a
/// device named here is refused, never waited on; see [`crate::fsx::read_following`]).
pub fn read_to_string(path: &Path) -> Result<String> {
    utf8(path, crate::fsx::read_following(path)?)
}

/// [`read_to_string`] of a file agents or test commands may have written, at most `limit`'s size
/// (a larger one is [`Error::TooLarge`], refused before it is read; see [`crate::fsx::Limit`]).
pub fn read_to_string_max(path: &Path, limit: crate::fsx::Limit) -> Result<String> {
    utf8(path, crate::fsx::read_following_max(path, limit)?)
}

fn utf8(path: &Path, bytes: Vec<u8>) -> Result<String> {
    String::from_utf8(bytes).map_err(|_| {
        let e = std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "stream did not contain valid UTF-8",
        );
        Error::io(path, e)
    })
}

/// A lock whose holder may have panicked: every mutex of the crate guards plain data that a
/// panic cannot leave half-changed, so the poison is ignored.
pub fn locked<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Writes a text file atomically, creating parent directories.
pub fn write_text(path: &Path, text: &str) -> Result<()> {
    crate::fsx::write_atomic(path, text.as_bytes())
}

/// `name` with every character but ASCII letters, digits, `-` and `_` replaced by `_`: safe as
/// one path component (a case id or an agent's name in a file name).
pub fn file_safe(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Kebab-case slug of an issue title: tags like `[Feature]`, emoji and punctuation go, words are
/// joined by `-`. Used for the feature directory and the branch name, so it must be stable.
pub fn kebab(title: &str) -> String {
    let mut without_tags = String::new();
    let mut depth = 0usize;
    for c in title.chars() {
        match c {
            '[' => depth += 1,
            ']' if depth > 0 => depth -= 1,
            _ if depth == 0 => without_tags.push(c),
            _ => {}
        }
    }
    let mut out = String::new();
    for c in without_tags.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if c.is_alphanumeric() && !c.is_ascii() {
            // Non-ASCII letters are kept lower-cased; emoji are not alphanumeric and are dropped.
            out.extend(c.to_lowercase());
        } else if !out.ends_with('-') && !out.is_empty() {
            out.push('-');
        }
    }
    let trimmed = out.trim_matches('-');
    let mut slug: String = trimmed.chars().take(60).collect();
    while slug.ends_with('-') {
        slug.pop();
    }
    slug
}

/// The longest prefix of `text` of at most `max` bytes that ends at a character boundary
/// (`str::floor_char_boundary` is newer than the crate's minimum Rust).
pub fn clip(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// Keeps the last `max` characters of `text` (error messages quote the tail of output).
pub fn tail(text: &str, max: usize) -> String {
    let t = text.trim();
    let count = t.chars().count();
    if count <= max {
        return t.to_string();
    }
    let skip = count - max;
    format!("…{}", t.chars().skip(skip).collect::<String>())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kebab_strips_tags_emoji_and_punctuation() {
        assert_eq!(kebab("[Feature] Dark mode toggle!"), "dark-mode-toggle");
        assert_eq!(kebab("🚀 Add  CSV export..."), "add-csv-export");
        assert_eq!(kebab("[Bug][UI] Fix: login—page"), "fix-login-page");
        assert_eq!(kebab("!!!"), "");
        assert_eq!(kebab("Ünïcode Títle"), "ünïcode-títle");
    }
}
