//! `demo`: the README's first command. Copies the demo repository (compiled into the binary, so
//! it works from any directory) to a fresh directory, initialises git, and runs the whole
//! pipeline offline with the scripted agents of `examples/demo/agents/`.

use std::path::{Path, PathBuf};

use include_dir::{Dir, DirEntry, include_dir};

use crate::error::{Error, Result};
use crate::git::Git;
use crate::state::Mode;
use crate::types::kinds::Decision;
use crate::util;

pub mod provision;

use super::Exit;
use super::run::{RunRequest, run};

/// The demo's files are compiled into the binary; when one is missing the build is broken.
const INCOMPLETE_BUILD: &str =
    "this build of spec-orchestrate is incomplete; reinstall it (`cargo install --path .`)";

static DEMO: Dir<'_> = include_dir!("$CARGO_MANIFEST_DIR/examples/demo");

/// The bundled example issues.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Example {
    /// "Add a dark mode toggle": one review send-back, then a ready PR (`issue.md`).
    #[default]
    DarkMode,
    /// "Follow the system theme": the reviewer keeps repeating one finding, so the run shows
    /// stall signal S1, the reviewer swapped to its opposite agent, S1 again and the draft that
    /// lands (`issue-stall.md`, `pipeline-stall.yml`).
    Stall,
}

impl Example {
    /// The issue file and the configuration file of the example, inside `examples/demo/`.
    fn files(self) -> (&'static str, &'static str) {
        match self {
            Example::DarkMode => ("issue.md", "pipeline.yml"),
            Example::Stall => ("issue-stall.md", "pipeline-stall.yml"),
        }
    }
}

/// Arguments of `demo`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct DemoRequest {
    /// Lay the demo out here (must not exist or be empty) instead of a new temp directory.
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Which example: `dark-mode` (a review send-back, then a ready PR) or `stall` (the
    /// reviewer repeats one finding: S1, a role swap, S1 again, a draft PR).
    #[arg(long, value_enum, default_value = "dark-mode")]
    pub example: Example,
}

fn write_tree(dir: &Dir, strip: &Path, dest: &Path) -> Result<()> {
    for entry in dir.entries() {
        match entry {
            DirEntry::Dir(d) => {
                if d.path().file_name().is_some_and(|n| n == "__pycache__") {
                    continue;
                }
                write_tree(d, strip, dest)?;
            }
            DirEntry::File(f) => {
                let rel = f.path().strip_prefix(strip).unwrap_or(f.path());
                let target = dest.join(rel);
                if let Some(parent) = target.parent() {
                    std::fs::create_dir_all(parent).map_err(|e| Error::io(parent, e))?;
                }
                std::fs::write(&target, f.contents()).map_err(|e| Error::io(&target, e))?;
            }
        }
    }
    Ok(())
}

/// Lays out the default demo under `root` and returns (repo, issue file).
pub fn lay_out(root: &Path) -> Result<(PathBuf, PathBuf)> {
    lay_out_with(root, Example::DarkMode, None)
}

/// The refusal for a part of the demo this build lacks.
fn missing(what: &str) -> Error {
    Error::usage(format!("the demo's {what} is missing from this build"))
        .with_help(INCOMPLETE_BUILD)
}

/// The embedded demo file `name`, as text.
fn demo_text(name: &str) -> Result<&'static str> {
    DEMO.get_file(name)
        .and_then(|f| f.contents_utf8())
        .ok_or_else(|| missing(name))
}

/// Lays out `example` under `root` with `evaluate.browser` set to `browser` (the Chromium the
/// demo provisioned, which the run would not find by itself) and returns (repo, issue file).
pub fn lay_out_with(
    root: &Path,
    example: Example,
    browser: Option<&str>,
) -> Result<(PathBuf, PathBuf)> {
    let (issue_name, config_name) = example.files();
    let repo = root.join("repo");
    let agents = root.join("agents");
    let app = DEMO.get_dir("app").ok_or_else(|| missing("app/"))?;
    write_tree(app, Path::new("app"), &repo)?;
    let agents_dir = DEMO.get_dir("agents").ok_or_else(|| missing("agents/"))?;
    write_tree(agents_dir, Path::new("agents"), &agents)?;
    let issue = root.join("issue.md");
    util::write_text(&issue, demo_text(issue_name)?)?;
    let config = demo_text(config_name)?;
    let agents_str = agents.display().to_string();
    if agents_str.contains(['"', '\\']) {
        return Err(Error::usage(format!(
            "the demo directory {} contains a quote or backslash; choose another with --dir",
            root.display()
        )));
    }
    let mut config = config.replace("@AGENTS@", &agents_str);
    if let Some(b) = browser {
        // A JSON string is a YAML double-quoted scalar: any path stays one value.
        config.push_str(&format!(
            "evaluate:\n  browser: {}    # provisioned by the demo\n",
            serde_json::Value::from(b)
        ));
    }
    util::write_text(&repo.join(".specs/pipeline.yml"), &config)?;
    let git = Git::new(&repo);
    git.run(&["init", "--quiet", "--initial-branch=main"])?;
    git.commit_all("Initial commit: the demo notes app")?;
    Ok((repo, issue))
}

/// Runs the demo.
pub fn demo(req: &DemoRequest) -> Result<Exit> {
    let root = demo_root(req.dir.as_deref())?;
    super::note(format!(
        "demo: laying out the example repository in {}",
        root.display()
    ));
    // The browser case needs the driver's npm packages and a Chromium: provide them on first
    // use, saying so up front rather than after a minute of pipeline output.
    let browser = if req.example == Example::DarkMode {
        provision::provision(&mut |line| super::note(format!("demo: {line}"))).configured()
    } else {
        None
    };
    let (repo, issue) = lay_out_with(&root, req.example, browser.as_deref())?;
    let exit = run(&RunRequest {
        issue: issue.display().to_string(),
        mode: Mode::Auto,
        config: None,
        repo: Some(repo.clone()),
        until: None,
    })?;
    let state = print_results(&repo)?;
    if req.example == Example::Stall {
        // This example is meant to land as a draft: show the mechanism that fired, and exit 0
        // when it did exactly that (1 otherwise, as `run` would).
        let Some(st) = state else {
            return Ok(Exit::Failed);
        };
        crate::output::print_line("\nStall handling:")?;
        for a in &st.arbitrations {
            outln!("  {}", crate::report::arbitration_line(a))?;
        }
        for f in &st.open_findings {
            outln!(
                "  unresolved {} [{}] {}",
                f.fingerprint.as_deref().unwrap_or(""),
                f.severity.as_str(),
                f.gist
            )?;
        }
        let landed_as_draft = st.pr.as_ref().is_some_and(|p| p.draft)
            && st.arbitrations.iter().any(|a| a.decision == Decision::Swap)
            && st
                .arbitrations
                .iter()
                .any(|a| a.decision == Decision::Draft);
        return Ok(if landed_as_draft {
            Exit::Ok
        } else {
            Exit::Failed
        });
    }
    Ok(exit)
}

/// The directory the demo lays out its repository in: `--dir` if given (new or empty), else a
/// temporary one that is kept, so the person can look at what the run left.
fn demo_root(dir: Option<&Path>) -> Result<PathBuf> {
    Ok(match dir {
        Some(d) => {
            if d.exists()
                && std::fs::read_dir(d)
                    .map(|mut r| r.next().is_some())
                    .unwrap_or(true)
            {
                return Err(Error::usage(format!(
                "--dir {}: the directory exists and is not empty",
                d.display()
            ))
            .with_help("pass a new or empty directory to --dir, or leave --dir out to use a temporary one"));
            }
            std::fs::create_dir_all(d).map_err(|e| Error::io(d, e))?;
            d.canonicalize().map_err(|e| Error::io(d, e))?
        }
        None => tempfile::Builder::new()
            .prefix("spec-orchestrate-demo-")
            .tempdir()
            .map_err(|e| Error::io(std::env::temp_dir(), e))?
            .keep(),
    })
}

/// Prints where the run's results are (PR body, report, state, branch) and the evidence
/// manifest; the run's record, if it can be read.
fn print_results(repo: &Path) -> Result<Option<crate::state::State>> {
    let feature_dir = crate::state::store::features(repo)
        .into_iter()
        .next()
        .map(|(_, d)| d)
        .unwrap_or_else(|| repo.join(".specs"));
    let body = feature_dir.join("pr-body.md");
    outln!("pr-body.md: {}", body.display())?;
    if let Some(round) = crate::state::store::load_file(&feature_dir.join(crate::state::STATE_FILE))
        .ok()
        .and_then(|st| st.rounds.evaluate.last().map(|r| r.round))
    {
        let report = feature_dir.join(crate::report::links::report_path(round));
        if report.is_file() {
            outln!("report:     {}", report.display())?;
        }
    }
    outln!(
        "state:      {}",
        feature_dir.join(crate::state::STATE_FILE).display()
    )?;
    outln!(
        "branch:     {}",
        Git::new(repo).current_branch().unwrap_or_default()
    )?;
    let state = crate::state::store::load_file(&feature_dir.join(crate::state::STATE_FILE)).ok();
    if let Some(st) = &state
        && let Some(result) = crate::report::pr_body::last_result(&feature_dir, st)
    {
        outln!(
            "\nEvidence manifest:\n{}",
            crate::report::manifest_table(&result.manifest)
        )?;
    }
    Ok(state)
}
