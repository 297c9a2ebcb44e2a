//! `fingerprint`: print each finding's fingerprint and class key, for debugging stall detection
//! and for tools that track findings across runs.

use std::io::Read;
use std::path::Path;

use super::Exit;
use crate::error::{Error, Result};
use crate::review::envelope;

/// Reads an envelope (or bare array) from `input` (`-` = stdin) and prints one JSON line per
/// finding.
pub fn fingerprint(input: Option<&Path>) -> Result<Exit> {
    let (text, name) = match input {
        Some(p) if p != Path::new("-") => (crate::util::read_to_string(p)?, p.to_path_buf()),
        _ => {
            let mut s = String::new();
            std::io::stdin()
                .read_to_string(&mut s)
                .map_err(|e| Error::io("<stdin>", e))?;
            (s, "<stdin>".into())
        }
    };
    let text = text.trim();
    // A bare array is the envelope's findings.
    let parsed = if text.starts_with('[') {
        serde_json::from_str::<Vec<crate::types::Finding>>(text).map(|findings| {
            let envelope = envelope::Envelope::default();
            envelope::Envelope {
                findings,
                ..envelope
            }
        })
    } else {
        serde_json::from_str::<envelope::Envelope>(text)
    };
    let env = parsed.map_err(|e| Error::Input {
        path: name,
        problem: format!("is not a findings envelope `{{\"findings\": [...]}}` or array: {e}"),
    })?;
    for f in env.with_fingerprints().findings {
        let line = serde_json::json!({
            "id": f.id,
            "fingerprint": f.fingerprint,
            "class_key": f.class_key,
        });
        outln!("{line}")?;
    }
    Ok(Exit::Ok)
}
