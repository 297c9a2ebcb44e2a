//! Acceptance cases of `test.md`.

/// How a case is verified; written in kebab-case.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    serde::Serialize,
    serde::Deserialize,
    strum::EnumString,
    strum::IntoStaticStr,
)]
#[serde(rename_all = "kebab-case")]
#[strum(serialize_all = "kebab-case")]
pub enum Method {
    /// Browser steps via Playwright.
    Playwright,
    /// A shell command.
    Command,
    /// A file containing a marker.
    #[strum(
        to_string = "file-check",
        serialize = "file_check",
        serialize = "filecheck"
    )]
    FileCheck,
}

impl Method {
    /// Parses a `Verify:` value.
    pub fn parse(s: &str) -> Option<Method> {
        s.trim().trim_matches('`').to_lowercase().parse().ok()
    }

    /// kebab-case name.
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// One acceptance case.
#[derive(Debug, Clone, PartialEq, Default)]
#[allow(missing_docs)]
pub struct Case {
    /// T-A01…
    pub id: String,
    /// Requirement ids in the heading.
    pub requirements: Vec<String>,
    pub title: String,
    /// The raw `Verify:` value.
    pub verify: Option<String>,
    /// Prose steps.
    pub steps: Option<String>,
    pub expected: Option<String>,
    pub command: Option<String>,
    /// Expected exit code (default 0).
    pub exit: Option<String>,
    /// Marker in output (command) or file (file-check).
    pub output_contains: Option<String>,
    pub file: Option<String>,
    /// Marker the file must contain.
    pub contains: Option<String>,
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
    let inside = t.strip_prefix('`').and_then(|r| r.strip_suffix('`'));
    inside.unwrap_or(t).to_string()
}

/// Whether `line` opens or closes a fenced code block (```` ``` ```` or `~~~`, indented or not).
pub fn is_fence(line: &str) -> bool {
    let t = line.trim_start();
    t.starts_with("```") || t.starts_with("~~~")
}

/// The Markdown of one case: its heading line and everything up to the next heading (a `#`
/// line inside a fenced block, a shell comment, is not a heading).
pub fn section_text(text: &str, case: &Case) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let start = case.line.saturating_sub(1);
    let mut out = Vec::new();
    let mut fenced = false;
    for (i, line) in lines.iter().enumerate().skip(start) {
        if is_fence(line) {
            fenced = !fenced;
        }
        if i > start && !fenced && !is_fence(line) && line.trim_start().starts_with('#') {
            break;
        }
        out.push(*line);
    }
    out.join("\n").trim_end().to_string()
}

/// A field whose value did not fit on its line: `- Steps:` followed by an indented list, or
/// `- Command:` followed by a fenced block. The lines are gathered until the block ends.
#[derive(Debug)]
struct Pending {
    /// The field's key (`steps`, `command`, …).
    key: String,
    /// Lines gathered so far.
    lines: Vec<String>,
    /// Inside a fenced block that belongs to the field.
    fenced: bool,
}

/// An indented or numbered list item's text (`  1. open the page` → `open the page`), or `None`.
fn list_item(line: &str) -> Option<&str> {
    let c = re!(r"^(?:\s+[-*+] |\s*[0-9]+[.)](?: |$))(.*)$").captures(line)?;
    Some(c.get(1)?.as_str().trim())
}

/// Stores the value of a field in its slot; unknown keys are prose.
fn set_field(case: &mut Case, key: &str, value: String) {
    let value = unquote(value);
    let slot = match key {
        "verify" => &mut case.verify,
        "steps" => &mut case.steps,
        "expected" => &mut case.expected,
        "command" => &mut case.command,
        "exit" | "exit code" | "expect exit" => &mut case.exit,
        "output contains" | "expect output" => &mut case.output_contains,
        "file" | "path" => &mut case.file,
        "contains" => &mut case.contains,
        "timeout" => &mut case.timeout,
        _ => return,
    };
    if !value.is_empty() {
        *slot = Some(value);
    }
}

/// Feeds one line to a pending multi-line field. `true` when the line belonged to it; `false`
/// when the field has ended (and was stored) and the line is to be read on its own.
fn continue_field(case: &mut Case, pending: &mut Option<Pending>, line: &str) -> bool {
    let Some(p) = pending.as_mut() else {
        return false;
    };
    if p.fenced {
        if is_fence(line) {
            p.fenced = false;
            let done = pending.take().map(|p| (p.key, dedent(&p.lines)));
            if let Some((key, value)) = done {
                set_field(case, &key, value);
            }
        } else {
            p.lines.push(line.trim_end().to_string());
        }
        return true;
    }
    if p.lines.is_empty() && is_fence(line) {
        p.fenced = true;
        return true;
    }
    if line.trim().is_empty() && p.lines.is_empty() {
        return true;
    }
    // A numbered item (`1. …`) belongs to the field above it even when it is not indented.
    let numbered = line.trim_start().starts_with(|c: char| c.is_ascii_digit());
    if let Some(item) = list_item(line)
        && (line.starts_with([' ', '\t']) || numbered)
    {
        p.lines.push(item.to_string());
        return true;
    }
    let done = pending.take().map(|p| (p.key, p.lines.join("\n")));
    if let Some((key, value)) = done {
        set_field(case, &key, value);
    }
    false
}

/// The lines of a fenced block without the indentation they share (the fence is usually
/// indented under its list item), joined.
fn dedent(lines: &[String]) -> String {
    let indent = lines
        .iter()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.len() - l.trim_start().len())
        .min()
        .unwrap_or(0);
    lines
        .iter()
        .map(|l| l.get(indent..).unwrap_or(l.trim_start()))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Parses every case. A field is `- Key: value` on one line; `- Steps:` (or `Expected`) may
/// instead be followed by an indented or numbered list, and `- Command:` by a fenced block,
/// which become the field's value (one item, or one command line, per line). A `#` line inside
/// a fenced block is not a heading.
pub fn parse(text: &str) -> Vec<Case> {
    let mut out: Vec<Case> = Vec::new();
    let mut current: Option<Case> = None;
    let mut pending: Option<Pending> = None;
    let mut fenced = false;
    for (i, line) in text.lines().enumerate() {
        if let Some(case) = current.as_mut()
            && continue_field(case, &mut pending, line)
        {
            continue;
        }
        if is_fence(line) {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        if let Some((id, requirements, title)) = case_heading(line) {
            out.extend(current.replace(Case {
                line: i + 1,
                id,
                requirements,
                title,
                ..Case::default()
            }));
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
            if value.is_empty() {
                pending = Some(Pending {
                    key,
                    lines: Vec::new(),
                    fenced: false,
                });
            } else {
                set_field(case, &key, value);
            }
        }
    }
    if let (Some(case), Some(p)) = (current.as_mut(), pending.take()) {
        set_field(case, &p.key, p.lines.join("\n"));
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

    /// `- Steps:` followed by an indented numbered list is the case's steps.
    #[test]
    fn steps_as_an_indented_numbered_list() {
        let text = "## T-A01: [REQ-001] Delete a row\n- Steps:\n  1. Open `/entries`\n  2. Click: the Delete button of the first row\n  3. Accept the confirmation\n- Expected: the row is gone\n- Verify: playwright\n";
        let cases = parse(text);
        assert_eq!(
            cases[0].steps.as_deref(),
            Some(
                "Open `/entries`\nClick: the Delete button of the first row\nAccept the confirmation"
            )
        );
        assert_eq!(cases[0].expected.as_deref(), Some("the row is gone"));
        assert_eq!(cases[0].method(), Some(Method::Playwright));
        assert!(cases[0].missing_fields().is_empty());
    }

    /// `- Command:` followed by a fenced block is the command; a `#` comment inside the fence
    /// does not end the case.
    #[test]
    fn command_as_a_fenced_block() {
        let text = "## T-A02: [REQ-002] The CLI lists entries\n- Verify: command\n- Command:\n  ```sh\n  # seed one entry first\n  TODO_FILE=/tmp/t.json node cli.js add milk && node cli.js list\n  ```\n- Exit: 0\n- Output contains: milk\n- Timeout: 30\n";
        let cases = parse(text);
        assert_eq!(cases.len(), 1);
        let c = &cases[0];
        assert_eq!(
            c.command.as_deref(),
            Some(
                "# seed one entry first\nTODO_FILE=/tmp/t.json node cli.js add milk && node cli.js list"
            )
        );
        assert_eq!(c.exit.as_deref(), Some("0"));
        assert_eq!(c.output_contains.as_deref(), Some("milk"));
        assert_eq!(c.timeout.as_deref(), Some("30"));
        assert!(c.missing_fields().is_empty());
        assert!(section_text(text, c).contains("- Timeout: 30"));
    }
}
