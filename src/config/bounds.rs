//! Bounds on the configuration file before the YAML parser sees it.
//!
//! The file comes from the repository, so from whoever can open a pull request: `--config
//! /dev/zero` (or a FIFO) would be read forever, and a file of megabytes is a mistake. Both are
//! refused here, cheaply, with the usual configuration error. Nesting is the parser's budget
//! (`outline::MAX_DEPTH`); `too_deep` only names nesting the parser never reached because it
//! stopped at an earlier mistake on the same line (`x: a0: {a1: {…`).

use std::io::Read;
use std::path::Path;

/// The largest configuration file read: real ones are a few KB.
pub const MAX_CONFIG_BYTES: u64 = 1024 * 1024;

/// The deepest nesting of flow collections (`[…]`, `{…}`) accepted: real ones nest two or three.
pub const MAX_FLOW_DEPTH: usize = 32;

/// Why the file was not read, in the words of a configuration error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// What is wrong with the file.
    pub problem: String,
    /// How to fix it.
    pub help: String,
}

/// Reads the configuration file at `path`, refusing a non-regular file (a device, a FIFO) without
/// blocking on it and a file over `MAX_CONFIG_BYTES` after reading at most one byte more.
pub fn read_bounded(path: &Path) -> Result<String, Refusal> {
    use std::os::unix::fs::OpenOptionsExt;
    let not_regular = || Refusal {
        problem: "is not a regular file (a device, FIFO or directory)".to_string(),
        help: "pass a configuration file to --config".to_string(),
    };
    let cannot_read = |e: std::io::Error| Refusal {
        problem: format!("cannot be read: {e}"),
        help: "check the file's permissions and that it is UTF-8 text".to_string(),
    };
    // `stat` first, so that a FIFO is never opened; the open is non-blocking and checked again,
    // in case the path was swapped in between.
    if !std::fs::metadata(path).map_err(cannot_read)?.is_file() {
        return Err(not_regular());
    }
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(cannot_read)?;
    if !file.metadata().map_err(cannot_read)?.is_file() {
        return Err(not_regular());
    }
    let mut bytes = Vec::new();
    file.take(MAX_CONFIG_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(cannot_read)?;
    if bytes.len() as u64 > MAX_CONFIG_BYTES {
        return Err(too_large());
    }
    String::from_utf8(bytes).map_err(|e| cannot_read(std::io::Error::other(e)))
}

/// The refusal of a file over `MAX_CONFIG_BYTES`.
pub fn too_large() -> Refusal {
    Refusal {
        problem: format!("is larger than {MAX_CONFIG_BYTES} bytes"),
        help: "a pipeline configuration is a few KB: check that --config names the right file"
            .into(),
    }
}

/// The 1-based line where flow collections first nest deeper than `max`, by a single scan that
/// skips comments, quoted scalars and block scalars, and counts a `[` or `{` outside flow context
/// only where a value starts (in `pattern: a[b` it is text).
pub fn too_deep(text: &str, max: usize) -> Option<usize> {
    let mut scan = Scan::default();
    let mut block_scalar: Option<usize> = None;
    for (n, line) in text.lines().enumerate() {
        let indent = line.len() - line.trim_start_matches(' ').len();
        if let Some(base) = block_scalar {
            if line.trim().is_empty() || indent > base {
                continue;
            }
            block_scalar = None;
        }
        let code = scan.line(line, max).map_err(|()| n + 1).err();
        if code.is_some() {
            return code;
        }
        if scan.depth == 0 && scan.quote.is_none() && opens_block_scalar(&scan.last_code) {
            block_scalar = Some(indent);
        }
    }
    None
}

/// The state carried from line to line.
#[derive(Default)]
struct Scan {
    /// Open flow collections.
    depth: usize,
    /// The quote of a quoted scalar that spans lines.
    quote: Option<char>,
    /// The last line without its comment.
    last_code: String,
}

impl Scan {
    /// Scans one line; `Err` when the depth goes over `max`.
    fn line(&mut self, line: &str, max: usize) -> Result<(), ()> {
        let mut chars = line.char_indices().peekable();
        // A line start is where a block value (or a key) starts.
        let mut at_start = true;
        let mut prev = ' ';
        let mut code_end = line.len();
        while let Some((i, c)) = chars.next() {
            if let Some(q) = self.quote {
                match c {
                    '\\' if q == '"' => {
                        chars.next();
                    }
                    '\'' if q == '\'' && chars.peek().is_some_and(|&(_, n)| n == '\'') => {
                        chars.next();
                    }
                    _ if c == q => {
                        self.quote = None;
                        at_start = false;
                    }
                    _ => {}
                }
                prev = c;
                continue;
            }
            let next_blank = chars.peek().is_none_or(|&(_, n)| n == ' ' || n == '\t');
            match c {
                '#' if prev == ' ' || prev == '\t' => {
                    code_end = i;
                    break;
                }
                '"' | '\'' if at_start => self.quote = Some(c),
                '[' | '{' if at_start || self.depth > 0 => {
                    self.depth += 1;
                    if self.depth > max {
                        return Err(());
                    }
                    at_start = true;
                }
                ']' | '}' if self.depth > 0 => {
                    self.depth -= 1;
                    at_start = false;
                }
                ',' if self.depth > 0 => at_start = true,
                ':' if next_blank => at_start = true,
                '-' | '?' if at_start && next_blank => {}
                ' ' | '\t' => {}
                _ => at_start = false,
            }
            prev = c;
        }
        self.last_code = line[..code_end].to_string();
        Ok(())
    }
}

/// Whether a line ends with a block scalar indicator (`key: |`, `- >-`, `|2`): the lines below
/// it that are more indented are text, not YAML.
fn opens_block_scalar(code: &str) -> bool {
    let code = code.trim_end();
    let (before, last) = code.rsplit_once([' ', '\t']).unwrap_or(("", code));
    let mut rest = last.chars();
    let indicator = matches!(rest.next(), Some('|' | '>'))
        && rest.all(|c| c == '-' || c == '+' || c.is_ascii_digit());
    let before = before.trim_end();
    indicator && (before.is_empty() || before.ends_with(':') || before.ends_with('-'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn real_configurations_are_shallow() {
        let text = "agents:\n  a: { kind: command, command: [\"python3\", \"x.py\"], env: { K: \"[{\" } }\nroles:\n  spec_author: a # [ not counted\nreview:\n  panel: [architect, paranoid]\n";
        assert_eq!(too_deep(text, 2), None);
        assert_eq!(too_deep(text, 1), Some(2));
    }

    #[test]
    fn deep_flow_nesting_is_found_at_its_line() {
        let flow = format!("review:\n  panel: {}{}\n", "[".repeat(100), "]".repeat(100));
        assert_eq!(too_deep(&flow, MAX_FLOW_DEPTH), Some(2));
        let maps: String = (0..100).map(|i| format!("a{i}: {{")).collect();
        assert_eq!(
            too_deep(&format!("x:\n  {maps}\n"), MAX_FLOW_DEPTH),
            Some(2)
        );
        let lines = format!("x: [\n{}\n", "  [\n".repeat(40));
        assert_eq!(too_deep(&lines, MAX_FLOW_DEPTH), Some(33));
    }

    #[test]
    fn text_is_not_nesting() {
        let plain = "evaluate:\n  pattern: a[b{c[d{e\n  other: don't [ count\n".repeat(40);
        assert_eq!(too_deep(&plain, 1), None);
        let quoted = format!("k: \"{}\"\nj: '{}''[['\n", "[".repeat(50), "{".repeat(50));
        assert_eq!(too_deep(&quoted, 1), None);
        let block = format!("prompt: |\n  {}\n  more [[[\nnext: [a]\n", "[".repeat(50));
        assert_eq!(too_deep(&block, 1), None);
        let folded = format!("items:\n  - >-\n    {}\n  - [b]\n", "{".repeat(50));
        assert_eq!(too_deep(&folded, 1), None);
    }

    #[test]
    fn fifo_and_devices_are_refused_without_blocking() {
        let problem = read_bounded(Path::new("/dev/zero")).unwrap_err().problem;
        assert!(problem.contains("not a regular file"), "{problem}");
        let dir = tempfile::tempdir().unwrap();
        let big = dir.path().join("big.yml");
        std::fs::write(&big, vec![b'#'; MAX_CONFIG_BYTES as usize + 1]).unwrap();
        assert_eq!(read_bounded(&big).unwrap_err(), too_large());
        let ok = dir.path().join("ok.yml");
        std::fs::write(&ok, vec![b'#'; MAX_CONFIG_BYTES as usize]).unwrap();
        assert_eq!(read_bounded(&ok).unwrap().len(), MAX_CONFIG_BYTES as usize);
    }
}
