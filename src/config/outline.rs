//! One pass over the parser's events before the typed pass: where every key of the file is, what
//! node each path holds, and, when the file is not YAML, the parser's typed error with the
//! collections still open where it stopped.
//!
//! The typed pass (serde through `serde_path_to_error`) names the key path of a schema error, and
//! `validate` names the key its check is about; neither knows the line. The outline maps a path,
//! spelled as `serde_path_to_error` spells it (`agents.claude.kind`, `review.panel[1]`), to the
//! line where the parser met it, so no error has to find a key by its indentation.

use std::collections::BTreeMap;

use serde_saphyr::granit_parser::{Event, Parser, ScanError, StructureStyle};

/// The deepest nesting of collections the walk accepts, flow (`[`, `{`) and block alike: real
/// configurations nest four or five levels.
pub const MAX_DEPTH: usize = super::bounds::MAX_FLOW_DEPTH;

/// What kind of node a path holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Node {
    /// `key: value` pairs.
    Mapping,
    /// A list.
    Sequence,
    /// A scalar; its text, and whether it was written plain (unquoted).
    Scalar {
        /// The scalar's text after YAML escapes.
        text: String,
        /// Written without quotes or block indicators.
        plain: bool,
    },
    /// `*name`, a reference to an anchored node.
    Alias,
}

impl Node {
    /// The node as a person calls it, for "found …" problems.
    pub fn describe(&self) -> String {
        match self {
            Node::Mapping => "a mapping".into(),
            Node::Sequence => "a sequence (a list)".into(),
            Node::Scalar { text, .. } => format!("the value \"{text}\""),
            Node::Alias => "an alias (`*name`)".into(),
        }
    }

    /// Whether the node is YAML's null written plain (`~`, `null`, nothing): the whole file
    /// being null (`---` alone) means no configuration, as an empty file does.
    pub fn is_null(&self) -> bool {
        matches!(self, Node::Scalar { text, plain: true } if matches!(text.as_str(), "" | "~" | "null" | "Null" | "NULL"))
    }
}

/// A flow collection (`[` or `{`) that was still open where the parser stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenFlow {
    /// `[` or `{`.
    pub bracket: char,
    pub path: String,
    /// 1-based line and column of the bracket.
    pub line: usize,
    /// 1-based column of the bracket.
    pub column: usize,
}

/// The parser's refusal, with the structure around it.
#[derive(Debug)]
pub struct Syntax {
    /// The parser's typed error (kind and position).
    pub error: ScanError,
    /// The innermost flow collection still open at the error, if any.
    pub open_flow: Option<OpenFlow>,
    /// The key path of the outermost flow collection open at the error: where a nesting of
    /// `[` and `{` began.
    pub outer_flow: Option<String>,
    /// The key path of the collection the error happened in: the innermost open one, or the
    /// block mapping the parser closed at the error's position (a key indented between two
    /// levels closes the deeper mapping before it is refused).
    pub context: String,
    /// Whether the innermost collection open at the error is a flow collection (for the nesting
    /// limit: which of `[`/`{` or keys nest too deep).
    pub in_flow: bool,
    /// The key path of the node the parser was reading at the error (for the nesting limit:
    /// the value that nests too deep).
    pub opening: String,
    /// The keys met before the error.
    pub before: Outline,
}

/// Where the keys of the file are.
#[derive(Debug, Default)]
pub struct Outline {
    /// Key path → the 1-based line of each occurrence of the key, in order (a duplicated key
    /// has two).
    keys: BTreeMap<String, Vec<usize>>,
    /// Path → the node there and its 1-based line.
    nodes: BTreeMap<String, (Node, usize)>,
}

impl Outline {
    /// Walks the events of `text`, up to its first document's end.
    pub fn of(text: &str) -> Result<Outline, Box<Syntax>> {
        let options = serde_saphyr::granit_parser::options! {
            flow_nesting_limit: MAX_DEPTH,
            block_nesting_limit: MAX_DEPTH,
        };
        let mut walk = Walk::default();
        let mut documents = 0;
        for item in Parser::new_from_str_with_options(text, options) {
            let (event, span) = match item {
                Ok(pair) => pair,
                Err(error) => return Err(Box::new(walk.refusal(error))),
            };
            let (line, column) = (span.start.line(), span.start.col() + 1);
            match event {
                Event::DocumentStart(..) => {
                    documents += 1;
                    if documents > 1 {
                        // The typed pass refuses a second document; its keys are not this
                        // file's configuration.
                        break;
                    }
                }
                Event::Scalar(text, style, ..) => {
                    let plain = style == serde_saphyr::granit_parser::ScalarStyle::Plain;
                    walk.scalar(text.into_owned(), plain, line);
                }
                Event::Alias(_) => walk.alias(line),
                Event::SequenceStart(style, ..) => {
                    walk.open(false, style == StructureStyle::Flow, line, column)
                }
                Event::MappingStart(style, ..) => {
                    walk.open(true, style == StructureStyle::Flow, line, column)
                }
                Event::SequenceEnd | Event::MappingEnd => walk.close(line, column),
                _ => {}
            }
        }
        Ok(walk.outline)
    }

    /// The node at `path` (`""` is the whole file), when the file has one there.
    pub fn node(&self, path: &str) -> Option<&Node> {
        self.nodes.get(path).map(|(node, _)| node)
    }

    /// The line of `path`: its key's (first occurrence), else its node's (a list item), else the
    /// line of its closest parent that the file has (a key left at its default is reported where
    /// its section is).
    pub fn line_of(&self, path: &str) -> Option<usize> {
        let mut path = path;
        loop {
            if let Some(line) = self.keys.get(path).and_then(|lines| lines.first()) {
                return Some(*line);
            }
            if let Some((_, line)) = self.nodes.get(path)
                && !path.is_empty()
            {
                return Some(*line);
            }
            path = &path[..path.rfind(['.', '['])?];
        }
    }

    /// The first key the parser met on 1-based `line` (the outermost one when a line holds a
    /// flow mapping), for an error known only by its line.
    pub fn key_on_line(&self, line: usize) -> Option<String> {
        self.keys
            .iter()
            .filter(|(_, lines)| lines.contains(&line))
            .min_by_key(|(path, _)| path.matches(['.', '[']).count())
            .map(|(path, _)| path.clone())
    }
}

/// One open collection.
#[derive(Debug)]
struct Frame {
    path: String,
    /// A mapping (else a sequence).
    mapping: bool,
    /// Written in flow style.
    flow: bool,
    /// 1-based line and column where it starts.
    line: usize,
    column: usize,
    /// In a mapping, the key whose value comes next (`None`: a key comes next).
    key: Option<String>,
    /// In a sequence, the index of the next item.
    next: usize,
    /// The collection is itself a mapping key (`? [a, b]: c`): its contents have no path.
    is_key: bool,
}

/// The state of the walk: the open collections, and where the last one closed.
#[derive(Debug, Default)]
struct Walk {
    stack: Vec<Frame>,
    outline: Outline,
    /// Path and 1-based line/column of the last collection closed.
    last_closed: Option<(String, usize, usize)>,
}

/// The path of `key` inside the mapping at `parent`.
pub fn child(parent: &str, key: &str) -> String {
    if parent.is_empty() {
        key.to_string()
    } else {
        format!("{parent}.{key}")
    }
}

/// Where the next node goes.
enum Slot {
    /// It is the value at this path.
    Value(String),
    /// It is a key of the innermost mapping.
    Key,
}

impl Walk {
    /// Where the node starting now goes, advancing the innermost collection past it.
    fn slot(&mut self) -> Slot {
        let Some(top) = self.stack.last_mut() else {
            return Slot::Value(String::new());
        };
        if top.mapping {
            match top.key.take() {
                Some(key) => Slot::Value(child(&top.path, &key)),
                None => Slot::Key,
            }
        } else {
            let path = format!("{}[{}]", top.path, top.next);
            top.next += 1;
            Slot::Value(path)
        }
    }

    fn scalar(&mut self, text: String, plain: bool, line: usize) {
        match self.slot() {
            Slot::Value(path) => {
                self.outline
                    .nodes
                    .insert(path, (Node::Scalar { text, plain }, line));
            }
            Slot::Key => {
                if let Some(top) = self.stack.last_mut() {
                    let path = child(&top.path, &text);
                    if !top.is_key {
                        self.outline.keys.entry(path).or_default().push(line);
                    }
                    top.key = Some(text);
                }
            }
        }
    }

    fn alias(&mut self, line: usize) {
        match self.slot() {
            Slot::Value(path) => {
                self.outline.nodes.insert(path, (Node::Alias, line));
            }
            Slot::Key => {
                if let Some(top) = self.stack.last_mut() {
                    top.key = Some("?".into());
                }
            }
        }
    }

    fn open(&mut self, mapping: bool, flow: bool, line: usize, column: usize) {
        let (path, is_key) = match self.slot() {
            Slot::Value(path) => (path, false),
            Slot::Key => (String::new(), true),
        };
        let is_key = is_key || self.stack.last().is_some_and(|f| f.is_key);
        if !is_key {
            let node = if mapping {
                Node::Mapping
            } else {
                Node::Sequence
            };
            self.outline.nodes.insert(path.clone(), (node, line));
        }
        self.stack.push(Frame {
            path,
            mapping,
            flow,
            line,
            column,
            key: None,
            next: 0,
            is_key,
        });
    }

    fn close(&mut self, line: usize, column: usize) {
        if let Some(frame) = self.stack.pop() {
            if frame.is_key
                && let Some(top) = self.stack.last_mut()
                && top.mapping
                && top.key.is_none()
            {
                top.key = Some("?".into());
            }
            self.last_closed = Some((frame.path, line, column));
        }
    }

    /// The parser's error, with the structure the walk had when it came.
    fn refusal(self, error: ScanError) -> Syntax {
        let open_flow = self.stack.iter().rev().find(|f| f.flow).map(|f| OpenFlow {
            bracket: if f.mapping { '{' } else { '[' },
            path: f.path.clone(),
            line: f.line,
            column: f.column,
        });
        let outer_flow = self.stack.iter().find(|f| f.flow).map(|f| f.path.clone());
        let opening = match self.stack.last() {
            Some(f) if f.mapping => match &f.key {
                Some(key) => child(&f.path, key),
                None => f.path.clone(),
            },
            Some(f) => format!("{}[{}]", f.path, f.next),
            None => String::new(),
        };
        let at = (error.marker().line(), error.marker().col() + 1);
        let context = match &self.last_closed {
            Some((path, line, column)) if (*line, *column) == at => path.clone(),
            _ => self
                .stack
                .last()
                .map(|f| f.path.clone())
                .unwrap_or_default(),
        };
        Syntax {
            in_flow: self.stack.last().is_some_and(|f| f.flow),
            error,
            open_flow,
            outer_flow,
            context,
            opening,
            before: self.outline,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_and_items_are_found_at_their_lines_in_block_and_flow_style() {
        let text = "# head\nagents:\n  a: { kind: command, command: [x, \"y\"] }\nroles:\n  spec_author: a\n  spec_reviewer: b\nreview:\n  panel:\n    - architect\n    - operator\n";
        let o = Outline::of(text).expect("valid YAML");
        assert_eq!(o.line_of("roles.spec_reviewer"), Some(6));
        assert_eq!(o.line_of("agents.a"), Some(3));
        assert_eq!(o.line_of("agents.a.kind"), Some(3));
        assert_eq!(o.line_of("agents.a.command[1]"), Some(3));
        assert_eq!(o.line_of("review.panel[1]"), Some(10));
        // A key the file leaves at its default is reported at its section.
        assert_eq!(o.line_of("roles.judge"), Some(4));
        assert_eq!(o.line_of("limits.task_attempts"), None);
        assert_eq!(o.key_on_line(3), Some("agents.a".into()));
        assert_eq!(o.node("review.panel"), Some(&Node::Sequence));
        assert_eq!(
            o.node("agents.a.command[1]"),
            Some(&Node::Scalar {
                text: "y".into(),
                plain: false
            })
        );
    }

    #[test]
    fn a_duplicated_key_keeps_both_lines() {
        let o = Outline::of("limits:\n  task_attempts: 3\n  task_attempts: 4\n").expect("YAML");
        assert_eq!(o.keys.get("limits.task_attempts"), Some(&vec![2, 3]));
    }

    #[test]
    fn complex_keys_and_aliases_do_not_shift_the_paths_after_them() {
        let text = "x: &a 1\n? [p, q]\n: 2\ny: *a\nz: 3\n";
        let o = Outline::of(text).expect("YAML");
        assert_eq!(o.line_of("z"), Some(5));
        assert_eq!(o.node("y"), Some(&Node::Alias));
        assert_eq!(o.line_of("p"), None, "a key's contents are no path");
    }

    #[test]
    fn an_unclosed_bracket_is_reported_with_the_open_collection() {
        let text = "review:\n  strategy: panel\n  panel: [architect, paranoid\nlimits:\n  task_attempts: 3\n";
        let s = Outline::of(text).expect_err("not YAML");
        let open = s.open_flow.expect("the bracket is open");
        assert_eq!(
            (open.bracket, open.path.as_str(), open.line, open.column),
            ('[', "review.panel", 3, 10)
        );
    }

    #[test]
    fn a_key_indented_between_two_levels_belongs_to_the_mapping_it_closed() {
        let s = Outline::of("limits:\n  task_attempts: 3\n agent_timeout_s: 5\n").expect_err("bad");
        assert_eq!(s.context, "limits");
        assert_eq!(s.error.marker().line(), 3);
    }

    #[test]
    fn nesting_deeper_than_the_limit_is_refused_by_the_parser() {
        let flow = format!("a: {}{}\n", "[".repeat(40), "]".repeat(40));
        let s = Outline::of(&flow).expect_err("too deep");
        assert!(s.in_flow);
        assert_eq!(
            s.outer_flow.as_deref(),
            Some("a"),
            "where the nesting began"
        );
        let block: String = (0..40)
            .map(|i| format!("{}k{i}:\n", "  ".repeat(i)))
            .collect();
        let s = Outline::of(&block).expect_err("too deep");
        assert!(!s.in_flow);
        assert_eq!(
            *s.error.kind(),
            serde_saphyr::granit_parser::ErrorKind::RecursionLimitExceeded
        );
        let ok: String = (0..MAX_DEPTH - 1)
            .map(|i| format!("{}k{i}:\n", "  ".repeat(i)))
            .collect();
        assert!(Outline::of(&ok).is_ok());
    }
}
