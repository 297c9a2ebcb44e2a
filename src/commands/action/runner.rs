//! Talking back to the Actions runner: step outputs (`GITHUB_OUTPUT`), the job summary
//! (`GITHUB_STEP_SUMMARY`) and secret masks (`::add-mask::` on stdout, which the runner consumes
//! and never shows).

use std::io::Write;
use std::path::Path;

use crate::error::{Error, Result};

/// Appends `name=value` to the output file; a value with a newline uses the heredoc form with a
/// delimiter that cannot occur in it.
pub fn set_output(file: Option<&Path>, name: &str, value: &str) -> Result<()> {
    let Some(path) = file else {
        return Ok(());
    };
    let line = if value.contains('\n') {
        let mut delim = String::from("SPEC_ORCHESTRATE_EOF");
        while value.contains(&delim) {
            delim.push('_');
        }
        format!("{name}<<{delim}\n{value}\n{delim}\n")
    } else {
        format!("{name}={value}\n")
    };
    append(path, &line)
}

/// Appends Markdown to the job summary.
pub fn add_summary(file: Option<&Path>, markdown: &str) -> Result<()> {
    match file {
        Some(path) => append(path, &format!("{markdown}\n")),
        None => Ok(()),
    }
}

fn append(path: &Path, text: &str) -> Result<()> {
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|e| Error::io(path, e))?;
    f.write_all(text.as_bytes()).map_err(|e| Error::io(path, e))
}

/// Asks the runner to mask `value` in every later log line. Each line is masked on its own,
/// as the runner matches line by line.
pub fn mask(value: &str) {
    for line in value.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let _ = outln!("::add-mask::{line}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outputs_are_lines_or_heredocs() {
        let (_dir, f) = crate::fsx::tests::temp_path("out");
        set_output(Some(&f), "phase", "spec_review").unwrap();
        set_output(Some(&f), "note", "a\nSPEC_ORCHESTRATE_EOF\nb").unwrap();
        let text = std::fs::read_to_string(&f).unwrap();
        assert_eq!(
            text,
            "phase=spec_review\nnote<<SPEC_ORCHESTRATE_EOF_\na\nSPEC_ORCHESTRATE_EOF\nb\nSPEC_ORCHESTRATE_EOF_\n"
        );
        set_output(None, "x", "y").unwrap();
    }
}
