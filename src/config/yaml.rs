//! The YAML parser of the configuration, its budgets, and configuration errors built from its
//! typed errors.
//!
//! `serde-saphyr` (pure Rust, over `granit-parser`) reads the file; the choice and the
//! alternatives are recorded in docs/architecture.md ("Configuration and YAML"). Every error it
//! returns is an enum variant with a location (`SerdeUnknownField { field, expected, .. }`,
//! `DuplicateMappingKey { key, .. }`, `Budget { breach, .. }`, the parser's `ErrorKind`), so the
//! problem, the help, the line and the key are chosen by matching on the variant, and the words
//! people read are this module's: nothing here reads a message to decide anything.

use serde::de::DeserializeOwned;
use serde_saphyr::Error as YamlError;
use serde_saphyr::budget::BudgetBreach;
use serde_saphyr::granit_parser::ErrorKind as ScanKind;

use super::outline::{MAX_DEPTH, Node, Outline, Syntax};

/// Aliases (`*name`) one file may use, and anchors it may define: a configuration repeats a few
/// values at most. Past these the file is refused before its aliases are expanded.
pub const MAX_ALIASES: usize = 100;
/// Events the aliases of one file may replay in all: 100 aliases of a 100-node anchor.
pub const MAX_REPLAYED_EVENTS: usize = 10_000;
/// Parser events (keys, values, collection starts and ends) in one file: a real configuration
/// has a few hundred.
pub const MAX_EVENTS: usize = 200_000;

/// One configuration error before the file is attached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Located {
    /// The 1-based line, when the parser or the outline knows it.
    pub line: Option<usize>,
    /// The key path (`agents.claude.command`), empty for the whole file.
    pub key: String,
    pub problem: String,
    pub help: String,
}

impl Located {
    /// The error at `line` (if known) and `key`.
    pub fn at(
        line: Option<usize>,
        key: impl Into<String>,
        problem: impl Into<String>,
        help: impl Into<String>,
    ) -> Located {
        Located {
            line,
            key: key.into(),
            problem: problem.into(),
            help: help.into(),
        }
    }
}

/// Every persona, spelled as in the configuration (for error messages).
const PERSONAS: &str =
    "architect, paranoid, operator, simplifier, user_advocate, product_strategist";

/// The help of every syntax error.
const SYNTAX_HELP: &str = "this is not valid YAML: close every `[` and `{`, quote values that contain `: ` or ` #`, and indent nested keys consistently";

/// Deserializes `text` into `T` under the budgets, with the key path of a failure.
pub fn typed<T: DeserializeOwned>(text: &str) -> Result<T, Box<(String, YamlError)>> {
    let options = serde_saphyr::options! {
        with_snippet: false,
        // `yes`, `on` and friends are YAML 1.1 booleans; this file takes `true` and `false`.
        strict_booleans: true,
        duplicate_keys: serde_saphyr::DuplicateKeyPolicy::Error,
        budget: serde_saphyr::budget! {
            max_events: MAX_EVENTS,
            max_aliases: MAX_ALIASES,
            max_anchors: MAX_ALIASES,
            // Deeper than the outline's limit, which refuses deep nesting first and at its line.
            max_depth: 2 * MAX_DEPTH,
            flow_nesting_limit: 2 * MAX_DEPTH,
            max_documents: 1,
        },
        alias_limits: serde_saphyr::alias_limits! {
            max_total_replayed_events: MAX_REPLAYED_EVENTS,
            max_replay_stack_depth: 8,
            max_alias_expansions_per_anchor: MAX_ALIASES,
        },
    };
    let mut path = String::new();
    serde_saphyr::with_deserializer_from_str_with_options(text, options, |de| {
        serde_path_to_error::deserialize(de).map_err(|e| {
            path = e.path().to_string();
            e.into_inner()
        })
    })
    .map_err(|e| Box::new((if path == "." { String::new() } else { path }, e)))
}

/// The configuration error for the parser's refusal of the text.
pub fn syntax(s: &Syntax, text: &str) -> Located {
    let at = (s.error.marker().line(), s.error.marker().col() + 1);
    if *s.error.kind() == ScanKind::RecursionLimitExceeded {
        let what = if s.in_flow { "`[` and `{`" } else { "keys" };
        return Located::at(
            Some(at.0),
            s.outer_flow.clone().unwrap_or_else(|| s.opening.clone()),
            format!("{what} nest more than {MAX_DEPTH} levels deep here"),
            "a pipeline configuration nests a few levels: flatten this value",
        );
    }
    let stopped = format!("the parser stopped at line {} column {}", at.0, at.1);
    if *s.error.kind() == ScanKind::UnknownAnchor {
        return Located::at(
            Some(at.0),
            s.context.clone(),
            "this alias (`*name`) names no anchor (`&name`) defined above it",
            "define the anchor before the alias, or write the value out",
        );
    }
    if let Some(open) = s
        .open_flow
        .as_ref()
        .filter(|open| open.line < at.0 && runs_on(s.error.kind()))
    {
        // An unclosed `[` or `{` runs into the lines after it, so the parser gives up below the
        // bracket; the mistake is the bracket, reported at its line with both positions.
        let (close, what) = if open.bracket == '[' {
            (']', "flow sequence")
        } else {
            ('}', "flow mapping")
        };
        return Located::at(
            Some(open.line),
            open.path.clone(),
            format!(
                "did not find expected ',' or '{close}': the {what} at line {} column {} is not closed ({stopped})",
                open.line, open.column
            ),
            SYNTAX_HELP,
        );
    }
    let written = plain_key_at(text, at.0, at.1);
    let key = match written {
        Some(written) => super::outline::child(&s.context, written),
        None => s.context.clone(),
    };
    let problem = match (s.error.kind(), written) {
        (ScanKind::ExpectedBlockMappingKey | ScanKind::InvalidIndentation, Some(written))
            if !s.context.is_empty() =>
        {
            format!(
                "did not find expected key: `{written}` is indented less than the other keys of `{}` and more than `{}` itself ({stopped})",
                s.context, s.context
            )
        }
        (ScanKind::ExpectedBlockMappingKey | ScanKind::InvalidIndentation, _) => {
            format!(
                "did not find expected key: the indentation of this line matches no key above it ({stopped})"
            )
        }
        (kind, _) => format!("{kind} ({stopped})"),
    };
    Located::at(Some(at.0), key, problem, SYNTAX_HELP)
}

/// Whether the parser's error is one an unclosed `[` or `{` leads to, once the lines after it
/// are read as more of the collection (a bad escape in a quoted scalar inside a list is not).
fn runs_on(kind: &ScanKind) -> bool {
    matches!(
        kind,
        ScanKind::ExpectedFlowSequenceSeparator
            | ScanKind::ExpectedFlowMappingSeparator
            | ScanKind::UnclosedFlowCollection { .. }
            | ScanKind::UnexpectedEofFlowSequence
            | ScanKind::UnexpectedEofFlowMapping
            | ScanKind::UnexpectedEofImplicitFlowMapping
            | ScanKind::UnexpectedEof
            | ScanKind::InvalidColonPlacement
            | ScanKind::MismatchedFlowCollectionEnd { .. }
            | ScanKind::MisplacedFlowCollectionEnd
            | ScanKind::ExpectedNodeContent
            | ScanKind::SimpleKeyExpected
            | ScanKind::InvalidSimpleKey
            | ScanKind::MappingValueNotAllowed
            | ScanKind::BlockEntryInFlowCollection
            | ScanKind::InvalidFlowScalarIndent
    )
}

/// The key written plainly at 1-based `line` and `column` (`name:`), if any: where the parser
/// refused a line, this is the key it did not accept.
fn plain_key_at(text: &str, line: usize, column: usize) -> Option<&str> {
    let rest = text
        .lines()
        .nth(line.checked_sub(1)?)?
        .get(column.checked_sub(1)?..)?;
    let end = rest.find(':')?;
    let key = &rest[..end];
    (!key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'))
    .then_some(key)
}

/// `` `a`, `b`, `c` ``: the allowed words of a schema error.
fn listed(words: &[&str]) -> String {
    words
        .iter()
        .map(|w| format!("`{w}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// What a scalar of the Rust type `ty` (as serde-saphyr names it) takes, in a help line.
fn takes(ty: &str) -> &'static str {
    match ty {
        "u8" | "u16" | "u32" | "u64" | "u128" | "usize" => "a whole number of 0 or more",
        "i8" | "i16" | "i32" | "i64" | "i128" | "isize" => "a whole number",
        "f32" | "f64" | "floating point" => "a number",
        "bool" | "boolean" | "a boolean" => "true or false",
        _ => "a value of another type",
    }
}

/// The configuration error for the typed pass's refusal; `path` is the key path
/// `serde_path_to_error` recorded.
pub fn schema(path: &str, error: &YamlError, outline: &Outline) -> Located {
    let line = error.location().map(|l| l.line() as usize);
    let key = path.to_string();
    let (key, problem, help) = match error.without_snippet() {
        YamlError::AliasError { error, .. } => return schema(path, error, outline),
        YamlError::SerdeUnknownField {
            field, expected, ..
        } => unknown_field(key, field, expected),
        YamlError::SerdeUnknownVariant {
            variant, expected, ..
        } => (
            key,
            format!(
                "unknown variant `{variant}`, expected one of {}",
                listed(expected)
            ),
            format!("use one of: {}", listed(expected)),
        ),
        YamlError::DuplicateMappingKey { key: name, .. } => {
            let name = name.clone().unwrap_or_else(|| "?".into());
            let parent = key.strip_suffix('?').unwrap_or(&key);
            let parent = parent.strip_suffix('.').unwrap_or(parent);
            (
                super::outline::child(parent, &name),
                format!("duplicate key `{name}`: this mapping gives it a second time"),
                "the key is given twice; keep one".into(),
            )
        }
        YamlError::InvalidScalar { ty, .. } => (
            key.clone(),
            format!(
                "invalid value {}, expected {}",
                shown(outline, &key),
                takes(ty)
            ),
            format!("`{key}` takes {}", takes(ty)),
        ),
        YamlError::InvalidBooleanStrict { .. } => (
            key.clone(),
            format!(
                "invalid value {}, expected true or false",
                shown(outline, &key)
            ),
            format!("`{key}` takes true or false"),
        ),
        YamlError::SerdeInvalidType {
            unexpected,
            expected,
            ..
        }
        | YamlError::SerdeInvalidValue {
            unexpected,
            expected,
            ..
        } => (
            key.clone(),
            format!("invalid value: {unexpected}, expected {expected}"),
            help_for_shape(&key, expected),
        ),
        YamlError::Unexpected { expected, .. } => unexpected(key, expected, outline),
        YamlError::SerdeMissingField { field, .. } => (
            key,
            format!("missing field `{field}`"),
            format!("add `{field}`: it has no default"),
        ),
        other => resource(key, other),
    };
    Located::at(line, key, problem, help)
}

/// The key, problem and help of a key the schema does not have: the key named in full, and
/// what is allowed beside it.
fn unknown_field(key: String, field: &str, expected: &[&str]) -> (String, String, String) {
    let key = if key == *field || key.ends_with(&format!(".{field}")) {
        key
    } else {
        super::outline::child(&key, field)
    };
    let help = if expected.is_empty() {
        "remove the key: nothing is configured here".to_string()
    } else {
        format!(
            "remove or rename the key; allowed here: {}",
            listed(expected)
        )
    };
    (
        key,
        format!(
            "unknown field `{field}`, expected one of {}",
            listed(expected)
        ),
        help,
    )
}

/// The key, problem and help of a value of the wrong shape (a list where a mapping belongs, …),
/// said in the words of the file rather than the parser's.
fn unexpected(key: String, expected: &str, outline: &Outline) -> (String, String, String) {
    let found = outline
        .node(&key)
        .map(Node::describe)
        .unwrap_or_else(|| "something else".into());
    let wanted = if expected.contains("mapping") {
        "a mapping of `key: value` lines"
    } else if expected.contains("sequence") {
        "a list"
    } else {
        expected
    };
    let help = help_for_shape(&key, expected);
    (key, format!("found {found}, expected {wanted}"), help)
}

/// The key, problem and help of the typed pass's refusals that are about the file's size and
/// shape rather than a key's value: a second document, a breached budget, an alias.
fn resource(key: String, error: &YamlError) -> (String, String, String) {
    match error {
        YamlError::MultipleDocuments { .. } => (
            String::new(),
            "the file holds more than one YAML document (a second `---`)".into(),
            "keep one document: a pipeline configuration is one mapping".into(),
        ),
        YamlError::Budget { breach, .. } => {
            let (problem, help) = budget(breach);
            (key, problem, help)
        }
        YamlError::AliasReplayLimitExceeded { .. }
        | YamlError::AliasExpansionLimitExceeded { .. }
        | YamlError::AliasReplayStackDepthExceeded { .. }
        | YamlError::AliasReplayCounterOverflow { .. } => (
            key,
            format!(
                "the aliases (`*name`) expand to more than {MAX_REPLAYED_EVENTS} values, or one anchor is used more than {MAX_ALIASES} times"
            ),
            ALIAS_HELP.into(),
        ),
        YamlError::UnknownAnchor { .. } => (
            key,
            "the alias (`*name`) names no anchor (`&name`) defined above it".into(),
            "define the anchor before the alias, or write the value out".into(),
        ),
        other => (
            key,
            other.to_string(),
            "see the configuration reference in README.md".into(),
        ),
    }
}

/// The help of every alias budget.
const ALIAS_HELP: &str = "write the values out instead of repeating them through aliases; a pipeline configuration needs few anchors";

/// The problem and help of a breached parser budget.
fn budget(breach: &BudgetBreach) -> (String, String) {
    match breach {
        BudgetBreach::Aliases { .. } | BudgetBreach::AliasAnchorRatio { .. } => (
            format!("the file uses more than {MAX_ALIASES} aliases (`*name`)"),
            ALIAS_HELP.into(),
        ),
        BudgetBreach::Anchors { .. } => (
            format!("the file defines more than {MAX_ALIASES} anchors (`&name`)"),
            ALIAS_HELP.into(),
        ),
        BudgetBreach::RecordedAnchorEvents { .. } | BudgetBreach::RecordedAnchorBytes { .. } => (
            "the anchors (`&name`) hold more than a configuration needs".into(),
            ALIAS_HELP.into(),
        ),
        BudgetBreach::Depth { .. } => (
            format!("values nest more than {MAX_DEPTH} levels deep here"),
            "a pipeline configuration nests a few levels: flatten this value".into(),
        ),
        BudgetBreach::Documents { .. } => (
            "the file holds more than one YAML document (a second `---`)".into(),
            "keep one document: a pipeline configuration is one mapping".into(),
        ),
        _ => (
            format!(
                "the file has more than {MAX_EVENTS} keys and values, or more than a configuration needs"
            ),
            "a pipeline configuration is a few KB: check that the file is the right one".into(),
        ),
    }
}

/// `"three"`: the scalar the file holds at `path`, quoted, for a problem line.
fn shown(outline: &Outline, path: &str) -> String {
    match outline.node(path) {
        Some(Node::Scalar { text, .. }) => format!("\"{text}\""),
        Some(node) => node.describe(),
        None => "here".into(),
    }
}

/// The help when the value at `key` has the wrong shape; `expected` is what serde's visitor
/// says it expects (`u32`, `struct Config`, `` `auto` or a list of personas ``).
fn help_for_shape(key: &str, expected: &str) -> String {
    let takes = takes(expected);
    if takes != "a value of another type" {
        return format!("`{key}` takes {takes}");
    }
    if key.starts_with("review.panel") {
        return format!("use `auto` or a list of personas: {PERSONAS}");
    }
    if expected.starts_with("struct") || expected.contains("map") {
        let what = if key.is_empty() { "the file" } else { key };
        return format!("{what} must be a mapping of `key: value` lines");
    }
    if expected.contains("sequence") {
        return format!("`{key}` takes a list, e.g. `[a, b]`");
    }
    if expected.contains("string") {
        return format!("`{key}` takes text; quote it if it looks like a number or `null`");
    }
    "see the configuration reference in README.md".into()
}

/// Reads `T` from the configuration `text`: the outline first (syntax, nesting, key lines), then
/// the typed pass. `Ok(None)` when the file holds no configuration (empty, comments, `---`).
pub fn read<T: DeserializeOwned>(text: &str) -> Result<Option<(T, Outline)>, Located> {
    let outline = Outline::of(text).map_err(|s| {
        // The parser refuses a file at its first mistake. Where that is not the nesting limit,
        // the pre-scan still finds nesting deeper than the limit further on (`x: a0: {a1: {…`
        // is refused at `a0:` by the parser), and the nesting is what a person has to undo.
        match super::bounds::too_deep(text, MAX_DEPTH) {
            Some(line) if *s.error.kind() != ScanKind::RecursionLimitExceeded => Located::at(
                Some(line),
                s.before.key_on_line(line).unwrap_or_default(),
                format!("`[` and `{{` nest more than {MAX_DEPTH} levels deep here"),
                "a pipeline configuration nests a few levels: flatten this value",
            ),
            _ => syntax(&s, text),
        }
    })?;
    match outline.node("") {
        None => return Ok(None),
        Some(root) if root.is_null() => return Ok(None),
        Some(_) => {}
    }
    match typed::<T>(text) {
        Ok(value) => Ok(Some((value, outline))),
        Err(failed) => Err(schema(&failed.0, &failed.1, &outline)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plain_key_is_read_at_the_parser_position_only() {
        let text = "limits:\n  task_attempts: 3\n agent_timeout_s: 5\n";
        assert_eq!(plain_key_at(text, 3, 2), Some("agent_timeout_s"));
        assert_eq!(plain_key_at(text, 3, 1), None, "a space is no key");
        assert_eq!(plain_key_at(text, 9, 1), None);
        assert_eq!(plain_key_at("a b: c\n", 1, 1), None);
    }

    #[test]
    fn every_scalar_type_of_the_schema_has_words() {
        for ty in ["u32", "u64", "f64", "floating point", "boolean"] {
            assert_ne!(takes(ty), "a value of another type", "{ty}");
        }
    }
}
