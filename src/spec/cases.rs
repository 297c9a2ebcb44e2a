//! Acceptance cases of `test.md`.

/// How a case is verified.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Method {
    /// Browser steps via Playwright.
    Playwright,
    /// A shell command.
    Command,
    /// A file containing a marker.
    FileCheck,
}

impl Method {
    /// Parses a `Verify:` value.
    pub fn parse(s: &str) -> Option<Method> {
        match s.trim().trim_matches('`').to_lowercase().as_str() {
            "playwright" => Some(Method::Playwright),
            "command" => Some(Method::Command),
            "file-check" | "file_check" | "filecheck" => Some(Method::FileCheck),
            _ => None,
        }
    }

    /// kebab-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Playwright => "playwright",
            Method::Command => "command",
            Method::FileCheck => "file-check",
        }
    }
}

/// One acceptance case.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Case {
    /// T-A01…
    pub id: String,
    /// Requirement ids in the heading.
    pub requirements: Vec<String>,
    /// Title.
    pub title: String,
    /// The raw `Verify:` value.
    pub verify: Option<String>,
    /// Prose steps.
    pub steps: Option<String>,
    /// Expected result.
    pub expected: Option<String>,
    /// Shell command (command cases).
    pub command: Option<String>,
    /// Expected exit code (default 0).
    pub exit: Option<String>,
    /// Marker in output (command) or file (file-check).
    pub output_contains: Option<String>,
    /// File to check.
    pub file: Option<String>,
    /// Marker the file must contain.
    pub contains: Option<String>,
    /// Timeout in seconds.
    pub timeout: Option<String>,
    /// 1-based line of the heading.
    pub line: usize,
}

impl Case {
    /// The verification method, when valid.
    pub fn method(&self) -> Option<Method> {
        self.verify.as_deref().and_then(Method::parse)
    }

    /// The first requirement id, for tables.
    pub fn requirement(&self) -> String {
        self.requirements.first().cloned().unwrap_or_default()
    }

    /// Fields the method needs that are missing.
    pub fn missing_fields(&self) -> Vec<&'static str> {
        let mut m = Vec::new();
        match self.method() {
            Some(Method::Command) if self.command.is_none() => m.push("Command"),
            Some(Method::FileCheck) => {
                if self.file.is_none() {
                    m.push("File");
                }
                if self.contains.is_none() {
                    m.push("Contains");
                }
            }
            Some(Method::Playwright) if self.steps.is_none() => m.push("Steps"),
            _ => {}
        }
        m
    }
}

/// Recognises `## T-A01: [REQ-001] title` (returns id, requirement ids, title).
pub fn case_heading(line: &str) -> Option<(String, Vec<String>, String)> {
    let t = line.trim_start();
    if !t.starts_with('#') {
        return None;
    }
    let rest = t.trim_start_matches('#').trim_start();
    let rest = rest.strip_prefix("T-A")?;
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    if digits.is_empty() {
        return None;
    }
    let id = format!("T-A{digits}");
    let after = rest[digits.len()..].trim_start_matches([':', ' ']).trim();
    let reqs = super::ids::requirement_refs(after);
    let title = match after.find(']') {
        Some(i) if after.starts_with('[') => after[i + 1..].trim().to_string(),
        _ => after.to_string(),
    };
    Some((id, reqs, title))
}

fn unquote(v: String) -> String {
    let t = v.trim();
    if t.len() >= 2 && t.starts_with('`') && t.ends_with('`') {
        t[1..t.len() - 1].to_string()
    } else {
        t.to_string()
    }
}

/// The Markdown of one case: its heading line and everything up to the next heading.
pub fn section_text(text: &str, case: &Case) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let start = case.line.saturating_sub(1);
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate().skip(start) {
        if i > start && line.trim_start().starts_with('#') {
            break;
        }
        out.push(*line);
    }
    out.join("\n").trim_end().to_string()
}

/// Parses every case.
pub fn parse(text: &str) -> Vec<Case> {
    let mut out: Vec<Case> = Vec::new();
    let mut current: Option<Case> = None;
    for (i, line) in text.lines().enumerate() {
        if let Some((id, requirements, title)) = case_heading(line) {
            if let Some(c) = current.take() {
                out.push(c);
            }
            current = Some(Case {
                id,
                requirements,
                title,
                line: i + 1,
                ..Case::default()
            });
            continue;
        }
        if line.trim_start().starts_with('#') {
            if let Some(c) = current.take() {
                out.push(c);
            }
            continue;
        }
        let Some(case) = current.as_mut() else {
            continue;
        };
        if let Some((key, value)) = super::field_line(line) {
            let value = unquote(value);
            let slot = match key.as_str() {
                "verify" => &mut case.verify,
                "steps" => &mut case.steps,
                "expected" => &mut case.expected,
                "command" => &mut case.command,
                "exit" | "exit code" | "expect exit" => &mut case.exit,
                "output contains" | "expect output" => &mut case.output_contains,
                "file" | "path" => &mut case.file,
                "contains" => &mut case.contains,
                "timeout" => &mut case.timeout,
                _ => continue,
            };
            if !value.is_empty() {
                *slot = Some(value);
            }
        }
    }
    if let Some(c) = current {
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_cases() {
        let text = "# Tests\n## T-A01: [REQ-001] Toggle\n- Steps: open\n- Verify: file-check\n- File: index.html\n- Contains: id=\"t\"\n\n## T-A02: [REQ-002] Script\n- **Verify**: command\n- Command: `node check.js`\n- Output contains: OK\n## T-A03: [REQ-003] Bad\n- Verify: magic\n";
        let cases = parse(text);
        assert_eq!(cases.len(), 3);
        assert_eq!(cases[0].method(), Some(Method::FileCheck));
        assert_eq!(cases[0].contains.as_deref(), Some("id=\"t\""));
        assert_eq!(cases[1].command.as_deref(), Some("node check.js"));
        assert_eq!(cases[1].requirement(), "REQ-002");
        assert_eq!(cases[2].method(), None);
        assert!(cases[0].missing_fields().is_empty());
    }
}
