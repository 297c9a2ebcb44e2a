//! The crate's layers hold: a module imports only from its own layer or lower, and no modules
//! import each other (directly or through others).
//!
//! The table below is the one drawn in `docs/architecture.md`. The check reads every file under
//! `src/` (without its `#[cfg(test)] mod` tail and without comments, since tests and docs may
//! name anything), collects the `crate::<module>` paths it uses, and compares them with the
//! table. A new top-level module has to be given a layer here before the test passes.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Top-level module → layer, low to high. Keep in step with `docs/architecture.md`.
const LAYERS: &[(&str, u8)] = &[
    // L0 leaf: shared vocabulary, imports nothing from the crate.
    ("types", 0),
    ("events", 0),
    // L1 foundations.
    ("error", 1),
    ("util", 1),
    ("fsx", 1),
    ("secrets", 1),
    ("signals", 1),
    ("net", 1),
    ("pricing", 1),
    ("git", 1),
    ("process", 1),
    // L2 records.
    ("config", 2),
    ("state", 2),
    ("spec", 2),
    ("prompts", 2),
    // L3 services.
    ("agents", 3),
    ("proxy", 3),
    ("evidence", 3),
    ("review", 3),
    ("forge", 3),
    ("store", 3),
    ("retro", 3),
    ("report", 3),
    // L4 orchestration.
    ("machine", 4),
    ("phases", 4),
    // L5 edge.
    ("commands", 5),
    ("output", 5),
];

const LAYER_NAMES: [&str; 6] = [
    "leaf",
    "foundations",
    "records",
    "services",
    "orchestration",
    "edge",
];

fn layer_of(module: &str) -> Option<u8> {
    LAYERS.iter().find(|(m, _)| *m == module).map(|(_, l)| *l)
}

fn describe(module: &str) -> String {
    match layer_of(module) {
        Some(l) => format!("`{module}` is layer {l} ({})", LAYER_NAMES[l as usize]),
        None => format!("`{module}` has no layer"),
    }
}

/// The top-level module a file under `src/` belongs to (`None` for the crate roots).
fn top_module(rel: &str) -> Option<String> {
    let first = rel.split('/').next()?;
    let name = first.strip_suffix(".rs").unwrap_or(first);
    (!matches!(name, "lib" | "main")).then(|| name.to_string())
}

/// The text the layering applies to: no `#[cfg(test)] mod …` tail, no comment lines.
fn production_code(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let mut end = lines.len();
    for (i, line) in lines.iter().enumerate() {
        if line.trim() == "#[cfg(test)]"
            && lines[i + 1..]
                .iter()
                .find(|l| !l.trim().is_empty())
                .is_some_and(|l| l.trim_start().starts_with("mod "))
        {
            end = i;
            break;
        }
    }
    lines[..end]
        .iter()
        .map(|l| match l.find("//") {
            Some(i) if !l[..i].contains('"') => &l[..i],
            _ => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn ident_at(s: &str) -> &str {
    let end = s
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(s.len());
    &s[..end]
}

/// Every top-level module named after `crate::` in `code`, including the heads of grouped
/// imports (`crate::{config::Config, state}`).
fn crate_refs(code: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for (i, _) in code.match_indices("crate::") {
        let before = code[..i].chars().next_back();
        if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
            continue; // `spec_orchestrate::…` or `other_crate::…`
        }
        let rest = &code[i + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let mut depth = 0usize;
            let mut start = true;
            for (j, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        start = true;
                        continue;
                    }
                    _ => {}
                }
                if start && depth == 0 && (c.is_ascii_alphabetic() || c == '_') {
                    out.insert(ident_at(&group[j..]).to_string());
                    start = false;
                } else if !c.is_whitespace() {
                    start = false;
                }
            }
        } else {
            let name = ident_at(rest);
            if !name.is_empty() {
                out.insert(name.to_string());
            }
        }
    }
    out
}

/// Checks `files` (path relative to `src/`, text) against the layer table; one message per
/// offending import or cycle, empty when the layering holds.
fn violations(files: &[(String, String)]) -> Vec<String> {
    let modules: BTreeSet<String> = files.iter().filter_map(|(p, _)| top_module(p)).collect();
    let mut problems = Vec::new();
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for m in &modules {
        if layer_of(m).is_none() {
            let path = files
                .iter()
                .map(|(p, _)| p)
                .find(|p| top_module(p).as_ref() == Some(m))
                .map_or(String::new(), |p| format!("src/{p}: "));
            problems.push(format!(
                "{path}the top-level module `{m}` has no layer; add it to LAYERS in tests/cli/layers.rs and to docs/architecture.md"
            ));
        }
    }
    for (path, text) in files {
        let Some(from) = top_module(path) else {
            continue;
        };
        for to in crate_refs(&production_code(text)) {
            if to == from || !modules.contains(&to) {
                continue; // a path into lib.rs itself, which defines no items
            }
            edges.entry(from.clone()).or_default().insert(to.clone());
            if let (Some(lf), Some(lt)) = (layer_of(&from), layer_of(&to))
                && lt > lf
            {
                problems.push(format!(
                    "src/{path} imports `crate::{to}`: {} and {}; a module may import only from its own layer or lower (move the shared item down, e.g. into `types`, or pass it in)",
                    describe(&from),
                    describe(&to)
                ));
            }
        }
    }
    // A cycle across layers contains an upward import, reported above; one can still form
    // inside a layer.
    for (from, tos) in &edges {
        for to in tos {
            if from < to && layer_of(from) == layer_of(to) && reaches(&edges, to, from) {
                problems.push(format!(
                    "`{from}` and `{to}` import each other (directly or through other modules): {} and {}; no cycle is allowed (move the shared item down, e.g. into `types`, or pass it in)",
                    describe(from),
                    describe(to)
                ));
            }
        }
    }
    problems
}

fn reaches(edges: &BTreeMap<String, BTreeSet<String>>, from: &str, to: &str) -> bool {
    let mut seen = BTreeSet::new();
    let mut stack = vec![from.to_string()];
    while let Some(m) = stack.pop() {
        if m == to {
            return true;
        }
        if seen.insert(m.clone()) {
            stack.extend(edges.get(&m).into_iter().flatten().cloned());
        }
    }
    false
}

fn read_sources(dir: &Path, root: &Path, out: &mut Vec<(String, String)>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .expect("src/ is readable")
        .map(|e| e.expect("directory entry").path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            read_sources(&p, root, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            let rel = p.strip_prefix(root).expect("under src/");
            let text = std::fs::read_to_string(&p).expect("source is UTF-8");
            out.push((rel.to_string_lossy().replace('\\', "/"), text));
        }
    }
}

#[test]
fn no_module_imports_a_higher_layer_and_no_modules_form_a_cycle() {
    let files = src_files();
    assert!(files.len() > 20, "read {} files from src/", files.len());
    let problems = violations(&files);
    assert!(
        problems.is_empty(),
        "the layering of docs/architecture.md is broken:\n  {}",
        problems.join("\n  ")
    );
}

/// The `pub use` lines of `files`' production code, as `path: line`. A re-export keeps a second
/// path to an item alive, and second paths are what made the old cycles (`phases` importing
/// `types::Phase` through `machine`): every import names the item's one path.
fn re_exports(files: &[(String, String)]) -> Vec<String> {
    matching_lines(
        files,
        |_| true,
        |l| {
            let l = l.trim_start();
            l.starts_with("pub use ") || l.starts_with("pub(crate) use ")
        },
    )
}

/// The lines of production code in the `files` whose path `in_file` keeps that `hit` selects,
/// as `path: line`.
fn matching_lines(
    files: &[(String, String)],
    in_file: impl Fn(&str) -> bool,
    hit: impl Fn(&str) -> bool,
) -> Vec<String> {
    files
        .iter()
        .filter(|(path, _)| in_file(path))
        .flat_map(|(path, text)| {
            production_code(text)
                .lines()
                .filter(|l| hit(l))
                .map(|l| format!("{path}: {}", l.trim()))
                .collect::<Vec<_>>()
        })
        .collect()
}

/// Every source file under `src/`, by its path there.
fn src_files() -> Vec<(String, String)> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    read_sources(&src, &src, &mut files);
    files
}

#[test]
fn no_module_re_exports_an_item_under_a_second_path() {
    let found = re_exports(&src_files());
    assert!(
        found.is_empty(),
        "import the item from the module that defines it instead of re-exporting it:\n  {}",
        found.join("\n  ")
    );
    // The check finds one, indented or not, and ignores tests and comments.
    let sample = [file(
        "state.rs",
        "mod store;\npub use store::StateStore;\n// pub use x::Y;\n#[cfg(test)]\nmod tests {\n    pub use super::*;\n}\n",
    )];
    assert_eq!(
        re_exports(&sample),
        ["state.rs: pub use store::StateStore;"]
    );
}

/// The lines of `files`' production code outside the machine (and the state, which defines it)
/// that move the run to another phase (`State::move_to`), as `path: line`. `State.phase` is
/// private, but Rust cannot make its setter visible to one sibling module only, so this check
/// is what keeps "only the machine writes the phase" true (docs/architecture.md). Test modules,
/// `tests.rs` files included, may set up a state at any phase.
fn phase_writers(files: &[(String, String)]) -> Vec<String> {
    let in_file = |path: &str| {
        !(path == "machine.rs"
            || path.starts_with("machine/")
            || path == "state.rs"
            || path.ends_with("/tests.rs"))
    };
    matching_lines(files, in_file, |l| l.contains(".move_to("))
}

#[test]
fn only_the_machine_moves_the_run_to_another_phase() {
    let found = phase_writers(&src_files());
    assert!(
        found.is_empty(),
        "only `machine` moves the run (`State::move_to`); return the phase to it instead:\n  {}",
        found.join("\n  ")
    );
    // The check finds a phase's own move, and leaves the machine, comments and tests alone.
    let sample = [
        file(
            "phases/revise.rs",
            "fn take(ctx: &mut Ctx) {\n    ctx.state.move_to(Phase::Implement);\n}\n// state.move_to(p)\n#[cfg(test)]\nmod tests {\n    fn t(s: &mut State) { s.move_to(Phase::Done); }\n}\n",
        ),
        file(
            "machine/answer.rs",
            "fn a(s: &mut State) { s.move_to(Phase::Pr); }\n",
        ),
        file(
            "commands/action/plan/tests.rs",
            "fn t(s: &mut State) { s.move_to(Phase::Done); }\n",
        ),
    ];
    assert_eq!(
        phase_writers(&sample),
        ["phases/revise.rs: ctx.state.move_to(Phase::Implement);"]
    );
}

fn file(path: &str, text: &str) -> (String, String) {
    (path.to_string(), text.to_string())
}

/// The checker itself can fail: an upward import, a grouped one, a same-layer cycle and an
/// unknown module are each reported with the file, the import and the layers.
#[test]
fn the_layer_check_reports_upward_imports_cycles_and_unknown_modules() {
    let files = [
        file("machine.rs", "use crate::state::State;\n"),
        file("phases.rs", "use crate::machine::Phase;\n"),
        file(
            "state.rs",
            "use crate::machine::Phase;\n// crate::commands in a comment is fine\n",
        ),
        file("util.rs", "use crate::{error::Error, config};\n"),
        file("error.rs", ""),
        file("config.rs", ""),
        file("agents.rs", "use crate::evidence::paths;\n"),
        file(
            "evidence/app.rs",
            "fn f() { crate::agents::tail(\"\", 1); }\n",
        ),
        file("gadget.rs", ""),
        file(
            "types.rs",
            "pub struct T;\n\n#[cfg(test)]\nmod tests {\n    use crate::commands;\n}\n",
        ),
        file("commands.rs", ""),
    ];
    let problems = violations(&files);
    let has = |needle: &str| problems.iter().any(|p| p.contains(needle));
    assert!(
        has(
            "src/state.rs imports `crate::machine`: `state` is layer 2 (records) and `machine` is layer 4 (orchestration)"
        ),
        "{problems:#?}"
    );
    assert!(
        has("src/util.rs imports `crate::config`: `util` is layer 1"),
        "{problems:#?}"
    );
    assert!(
        has("`agents` and `evidence` import each other"),
        "{problems:#?}"
    );
    assert!(
        has("src/gadget.rs: the top-level module `gadget` has no layer"),
        "{problems:#?}"
    );
    assert!(
        !has("commands"),
        "test tails and comments are exempt: {problems:#?}"
    );
    assert!(!has("`machine` and `phases`"), "{problems:#?}");
    assert_eq!(problems.len(), 4, "{problems:#?}");
}

/// No cycle is exempt any more: `machine` <-> `phases`, the one the table used to allow, is
/// reported like any other (phases now take `Phase` and `Outcome` from `types`).
#[test]
fn the_layer_check_refuses_the_machine_phases_cycle_it_used_to_allow() {
    let files = [
        file("machine.rs", "use crate::phases::Ctx;\n"),
        file("phases.rs", "use crate::machine::Phase;\n"),
    ];
    let problems = violations(&files);
    assert_eq!(problems.len(), 1, "{problems:#?}");
    assert!(
        problems[0].contains("`machine` and `phases` import each other"),
        "{problems:#?}"
    );
}
