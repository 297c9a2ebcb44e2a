//! The checks that need nothing but the machine and the checkout: git, the tree, the
//! configuration, the agents, Node, the browser driver, Chromium, the app and the budget.
//!
//! Each program is asked for its version with a short deadline (a CLI that hangs on
//! `--version` would hang a run too), and nothing is written anywhere.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::commands::demo::provision;
use crate::config::{AgentConfig, AgentKind, CONFIG_PATH, Config};
use crate::evidence::browser;
use crate::git::Git;
use crate::process;
use crate::types::Role;

use super::{Check, Level, Setting};

/// The oldest git the pipeline is known to work with (`git init --initial-branch`, `git
/// worktree`-safe `status -z` output, `-c` on every call).
pub const MIN_GIT: (u32, u32) = (2, 28);
/// The oldest Node.js playwright-core (pinned in `driver/package-lock.json`) supports.
pub const MIN_NODE: u32 = 20;
/// How long a `--version` may take.
const VERSION_TIMEOUT: Duration = Duration::from_secs(30);

/// Runs `program --version` (or `args`) and returns its first line of output.
fn version_of(program: &Path, args: &[&str], cwd: &Path) -> Result<String, String> {
    let env: BTreeMap<String, String> = std::env::vars().collect();
    let args: Vec<String> = args.iter().map(|s| (*s).to_string()).collect();
    match process::run(program, &args, cwd, &env, b"", VERSION_TIMEOUT) {
        Err(e) => Err(format!("{} could not be started: {e}", program.display())),
        Ok(out) if out.timed_out => Err(format!(
            "`{} {}` did not answer within {} s",
            program.display(),
            args.join(" "),
            VERSION_TIMEOUT.as_secs()
        )),
        Ok(out) if out.code() == Some(0) => {
            let text = if out.stdout.trim().is_empty() {
                out.stderr
            } else {
                out.stdout
            };
            Ok(text.lines().next().unwrap_or_default().trim().to_string())
        }
        Ok(out) => Err(format!(
            "`{} {}` {}: {}",
            program.display(),
            args.join(" "),
            out.ended(),
            crate::util::tail(&format!("{}{}", out.stdout, out.stderr), 300)
        )),
    }
}

/// The first `major.minor` in `text` (`git version 2.47.3` → (2, 47); `v20.19.2` → (20, 19)).
pub fn parse_version(text: &str) -> Option<(u32, u32)> {
    text.split(|c: char| !(c.is_ascii_digit() || c == '.'))
        .find_map(|word| {
            let mut parts = word.split('.');
            let major = parts.next()?.parse().ok()?;
            let minor = parts.next()?.parse().ok()?;
            Some((major, minor))
        })
}

/// Every local check, and the configuration when it loaded.
pub fn checks(
    dir: &Path,
    config: Option<&Path>,
    setting: &Setting,
) -> (Vec<Check>, Option<Config>) {
    let mut out = vec![git_check()];
    let top = match repository_check(dir) {
        Ok((check, top)) => {
            out.push(check);
            top
        }
        Err(check) => {
            out.push(check);
            dir.to_path_buf()
        }
    };
    let (check, loaded) = configuration_check(&top, config);
    out.push(check);
    let Some(cfg) = loaded else {
        return (out, None);
    };
    for (name, agent) in agents_in_use(&cfg) {
        out.push(agent_check(&name, agent, &top, setting));
    }
    out.extend(browser_checks(&cfg));
    out.push(app_check(&cfg));
    out.push(budget_check(&cfg));
    (out, Some(cfg))
}

fn git_check() -> Check {
    let Some(git) = process::find_executable("git", Path::new(".")) else {
        return Check::error(
            "git",
            "`git` is not on PATH",
            "install git (apt-get install git)",
        );
    };
    match version_of(&git, &["--version"], Path::new(".")) {
        Err(e) => Check::error("git", e, "reinstall git"),
        Ok(v) => match parse_version(&v) {
            Some(found) if found >= MIN_GIT => Check::ok("git", v),
            _ => Check::error(
                "git",
                format!("{v} is older than {}.{}", MIN_GIT.0, MIN_GIT.1),
                format!("install git {}.{} or later", MIN_GIT.0, MIN_GIT.1),
            ),
        },
    }
}

/// The checkout and its tree: a repository with a commit and nothing uncommitted outside
/// `.specs/` (what `run` refuses). `Ok` carries the top of the work tree.
fn repository_check(dir: &Path) -> Result<(Check, PathBuf), Check> {
    const NAME: &str = "working tree";
    let git = Git::new(dir);
    if !dir.is_dir() || !git.is_repo() {
        return Err(Check::error(
            NAME,
            format!("{} is not inside a git repository", dir.display()),
            "run it in your repository's checkout, or pass --repo DIR; a new one needs `git init` and a first commit",
        ));
    }
    let top = git
        .toplevel()
        .map_err(|e| Check::error(NAME, e.to_string(), "check that git can read the checkout"))?;
    let git = Git::new(&top);
    if git.head().is_none() {
        return Err(Check::error(
            NAME,
            format!("{} has no commit yet", top.display()),
            "make a first commit; the work branch starts from it",
        ));
    }
    let dirty: Vec<String> = match git.changed_paths() {
        Ok(paths) => paths
            .into_iter()
            .filter(|p| !p.starts_with(".specs/"))
            .collect(),
        Err(e) => {
            return Err(Check::error(
                NAME,
                e.to_string(),
                "check that git can read the checkout",
            ));
        }
    };
    if dirty.is_empty() {
        return Ok((Check::ok(NAME, format!("{} is clean", top.display())), top));
    }
    let shown = dirty.iter().take(5).cloned().collect::<Vec<_>>().join(", ");
    let more = dirty.len().saturating_sub(5);
    let more = if more > 0 {
        format!(" and {more} more")
    } else {
        String::new()
    };
    Err(Check::error(
        NAME,
        format!("uncommitted changes: {shown}{more}; `run` refuses a dirty tree"),
        "commit or stash them, so that the work branch holds only the pipeline's changes",
    ))
}

fn configuration_check(top: &Path, explicit: Option<&Path>) -> (Check, Option<Config>) {
    const NAME: &str = "configuration";
    let shown = explicit
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from(CONFIG_PATH));
    match Config::load(top, explicit) {
        Ok(cfg) if explicit.is_none() && !top.join(CONFIG_PATH).exists() => (
            Check::warning(
                NAME,
                format!(
                    "no {CONFIG_PATH}: the defaults apply (the claude and codex CLIs, no budget)"
                ),
                "`spec-orchestrate init` writes one with every default spelled out and a budget",
            ),
            Some(cfg),
        ),
        Ok(cfg) => (
            Check::ok(NAME, format!("{} is valid", shown.display())),
            Some(cfg),
        ),
        Err(e) => {
            let at = match e.line {
                Some(line) => format!("{}:{line}", e.file.display()),
                None => e.file.display().to_string(),
            };
            let key = if e.key.is_empty() {
                String::new()
            } else {
                format!(" {}:", e.key)
            };
            (
                Check::error(NAME, format!("{at}:{key} {}", e.problem), e.help.clone()),
                None,
            )
        }
    }
}

/// The agents some role uses, each once, in the order of the roles.
fn agents_in_use(cfg: &Config) -> Vec<(String, &AgentConfig)> {
    let mut seen: Vec<(String, &AgentConfig)> = Vec::new();
    for role in Role::ALL {
        let name = cfg.roles.get(role);
        if seen.iter().any(|(n, _)| n == name) {
            continue;
        }
        if let Some(agent) = cfg.agents.get(name) {
            seen.push((name.to_string(), agent));
        }
    }
    seen
}

/// The variables a CLI kind can take its key from, and the package that installs it.
fn cli_facts(kind: AgentKind) -> Option<(&'static str, &'static [&'static str], &'static str)> {
    match kind {
        AgentKind::ClaudeCli => Some((
            "claude",
            &["ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN"],
            "npm install -g @anthropic-ai/claude-code",
        )),
        AgentKind::CodexCli => Some((
            "codex",
            &["OPENAI_API_KEY", "CODEX_API_KEY"],
            "npm install -g @openai/codex",
        )),
        _ => None,
    }
}

/// Whether the agent would see variable `name`: its own `env:`, the process, or what the
/// Action sets for the phase from its inputs.
fn has_var(agent: &AgentConfig, name: &str, setting: &Setting) -> bool {
    if let Setting::Action { provided } = setting
        && provided.iter().any(|p| p == name)
    {
        return true;
    }
    agent
        .env
        .get(name)
        .cloned()
        .or_else(|| std::env::var(name).ok())
        .is_some_and(|v| !v.trim().is_empty())
}

/// A program found on PATH (or as a file) that the agents' identity cannot execute.
struct Unreached {
    path: PathBuf,
    uid: u32,
}

impl Unreached {
    fn check(&self, label: String) -> Check {
        Check::error(
            label,
            format!(
                "{} is out of reach of uid {}, the agents' identity a run starts it as, and no other on PATH is within it",
                self.path.display(),
                self.uid
            ),
            format!(
                "install it where uid {} may execute it (outside /root and other private directories), or set `sandbox.identity: off` (or SPEC_ORCHESTRATE_AGENT_USER=off) to run agents as this user",
                self.uid
            ),
        )
    }
}

/// `program` as a run finds it ([`process::find_confined_executable`]: as the agents'
/// identity, when it is separate, a candidate it cannot execute is passed over, so a `python3`
/// under `/root` gives way to the system's). `Err(Some)` when the only candidates are out of
/// that identity's reach, `Err(None)` when there is none at all.
fn agent_program(program: &str, top: &Path) -> Result<PathBuf, Option<Unreached>> {
    if let Some(path) = process::find_confined_executable(program, top) {
        return Ok(path);
    }
    let found = process::find_executable(program, top);
    match (found, process::identity::current()) {
        (Some(path), process::identity::Separation::Separate(id)) => {
            Err(Some(Unreached { path, uid: id.uid }))
        }
        _ => Err(None),
    }
}

fn agent_check(name: &str, agent: &AgentConfig, top: &Path, setting: &Setting) -> Check {
    let label = format!("agent {name}");
    if let Some((default, keys, install)) = cli_facts(agent.kind) {
        let program = agent.binary.as_deref().unwrap_or(default);
        let path = match agent_program(program, top) {
            Ok(path) => Some(path),
            Err(Some(unreached)) => return unreached.check(label),
            Err(None) => None,
        };
        let Some(path) = path else {
            let missing = if program.contains('/') {
                "is not an executable file"
            } else {
                "is not on PATH"
            };
            return Check::error(
                label,
                format!("`{program}` {missing}"),
                format!("{install}, or set agents.{name}.binary to its path"),
            );
        };
        let version = match version_of(&path, &["--version"], top) {
            Ok(v) => v,
            Err(e) => return Check::error(label, e, format!("reinstall it: {install}")),
        };
        if keys.iter().any(|k| has_var(agent, k, setting)) {
            return Check::ok(label, format!("{} ({version})", path.display()));
        }
        let detail = format!(
            "{} ({version}), but none of {} is set",
            path.display(),
            keys.join(", ")
        );
        let fix = format!(
            "set {} (in Actions: a repository secret passed to the job's env)",
            keys[0]
        );
        return match setting {
            Setting::Local => Check::warning(
                label,
                format!("{detail}: the CLI's own login is used, if it has one"),
                fix,
            ),
            Setting::Action { .. } => Check::error(label, detail, fix),
        };
    }
    match agent.kind {
        AgentKind::Anthropic | AgentKind::Openai => {
            let key = agent.key_env().unwrap_or_default();
            if has_var(agent, &key, setting) {
                Check::ok(label, format!("{key} is set"))
            } else {
                Check::error(
                    label,
                    format!("{key} is not set; every call of this HTTP agent would fail"),
                    format!("set {key} (in Actions: a repository secret passed to the job's env)"),
                )
            }
        }
        _ => command_check(label, agent, top),
    }
}

fn command_check(label: String, agent: &AgentConfig, top: &Path) -> Check {
    let Some(program) = agent.command.as_ref().and_then(|c| c.first()) else {
        return Check::error(
            label,
            "no `command` is set",
            "set `command: [program, args…]`",
        );
    };
    match agent_program(program, top) {
        Ok(p) => Check::ok(label, format!("runs {}", p.display())),
        Err(Some(unreached)) => unreached.check(label),
        Err(None) => Check::error(
            label,
            format!("`{program}` is not on PATH (nor a file in the repository)"),
            "install it, or name it by its path in `command`",
        ),
    }
}

/// Node, the driver and Chromium: errors when `app` is configured (browser cases need all
/// three), warnings otherwise (no browser case can run without an app anyway).
fn browser_checks(cfg: &Config) -> Vec<Check> {
    let needed = cfg.app.is_some();
    let mut out = vec![node_check(), driver_check(), chromium_check(cfg)];
    if !needed {
        for c in &mut out {
            if c.status == Level::Error {
                c.status = Level::Warning;
                c.detail
                    .push_str(" (needed only by playwright cases, which need `app` too)");
            }
        }
    }
    out
}

fn node_check() -> Check {
    let name = std::env::var("SPEC_ORCHESTRATE_NODE").unwrap_or_else(|_| "node".into());
    let Some(node) = process::find_executable(&name, Path::new(".")) else {
        return Check::error(
            "node",
            format!("`{name}` is not on PATH; the browser driver runs on it"),
            format!("install Node.js {MIN_NODE} or later (apt-get install nodejs)"),
        );
    };
    match version_of(&node, &["--version"], Path::new(".")) {
        Err(e) => Check::error("node", e, "reinstall Node.js"),
        Ok(v) => match parse_version(&v) {
            Some((major, _)) if major >= MIN_NODE => {
                Check::ok("node", format!("{} {v}", node.display()))
            }
            _ => Check::error(
                "node",
                format!(
                    "{} is {v}; playwright-core needs {MIN_NODE} or later",
                    node.display()
                ),
                format!("install Node.js {MIN_NODE} or later"),
            ),
        },
    }
}

fn driver_check() -> Check {
    const NAME: &str = "browser driver";
    let Some(dir) = browser::driver_dir() else {
        return Check::error(
            NAME,
            "the browser driver (run.js) was not found",
            "set SPEC_ORCHESTRATE_DRIVER to the driver/ directory of spec-orchestrate",
        );
    };
    if dir
        .join("node_modules/playwright-core/package.json")
        .is_file()
    {
        Check::ok(NAME, format!("{} with playwright-core", dir.display()))
    } else {
        Check::error(
            NAME,
            format!("playwright-core is not installed in {}", dir.display()),
            provision::npm_command(&dir),
        )
    }
}

fn chromium_check(cfg: &Config) -> Check {
    const NAME: &str = "chromium";
    let fix = format!(
        "as root `{}`, or set SPEC_ORCHESTRATE_BROWSER (or evaluate.browser) to a Chromium executable",
        provision::APT_COMMAND
    );
    match browser::locate(cfg.evaluate.browser.as_deref()) {
        Err(e) => Check::error(NAME, e.0, fix),
        Ok(h) => match &h.browser {
            Some(p) => Check::ok(NAME, p.display().to_string()),
            None if provision::bundled_chromium_installed(&h) => {
                Check::ok(NAME, "Playwright's own (downloaded)")
            }
            None => Check::error(
                NAME,
                format!(
                    "no Chromium: {} is absent and Playwright's own is not downloaded",
                    browser::DEFAULT_BROWSER
                ),
                format!(
                    "{fix}, or run `{}`",
                    provision::chromium_command(&h.node, &h.driver_dir)
                ),
            ),
        },
    }
}

/// `app.start` and `app.url`: present together, the URL an http(s) URL with a host once
/// `{port}` is filled in.
fn app_check(cfg: &Config) -> Check {
    const NAME: &str = "app";
    let Some(app) = &cfg.app else {
        return Check::ok(NAME, "no `app` configured (playwright cases need one)");
    };
    let start = app.start.as_deref().map(str::trim).unwrap_or_default();
    let url = app.url.as_deref().map(str::trim).unwrap_or_default();
    if start.is_empty() || url.is_empty() {
        let missing = if start.is_empty() {
            "app.start"
        } else {
            "app.url"
        };
        return Check::error(
            NAME,
            format!("{missing} is not set; the app cannot be started and tested"),
            "set both, e.g. `start: \"npm run dev -- --port {port}\"` and `url: \"http://127.0.0.1:{port}/\"`",
        );
    }
    let filled = url.replace("{port}", "3000");
    match reqwest::Url::parse(&filled) {
        Ok(u) if matches!(u.scheme(), "http" | "https") && u.host_str().is_some() => {
            Check::ok(NAME, format!("`{start}` answering at {url}"))
        }
        Ok(u) => Check::error(
            NAME,
            format!(
                "app.url {url} is a {} URL without a host the browser can open",
                u.scheme()
            ),
            "use an http(s) URL, e.g. `http://127.0.0.1:{port}/`",
        ),
        Err(e) => Check::error(
            NAME,
            format!("app.url {url} is not a URL: {e}"),
            "use an http(s) URL, e.g. `http://127.0.0.1:{port}/`",
        ),
    }
}

fn budget_check(cfg: &Config) -> Check {
    const NAME: &str = "budget";
    match cfg.limits.budget_usd {
        Some(b) => Check::ok(
            NAME,
            format!("limits.budget_usd is {b} USD: a run stops as a draft before it would pass it"),
        ),
        None => Check::warning(
            NAME,
            "limits.budget_usd is not set: a run's spend is unbounded",
            format!(
                "set `limits: {{ budget_usd: {} }}` in {CONFIG_PATH} (what `init` writes)",
                crate::commands::init::INIT_BUDGET_USD
            ),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_are_read_from_what_the_programs_print() {
        assert_eq!(parse_version("git version 2.47.3"), Some((2, 47)));
        assert_eq!(parse_version("v20.19.2"), Some((20, 19)));
        assert_eq!(parse_version("2.1.332 (Claude Code)"), Some((2, 1)));
        assert_eq!(parse_version("no digits"), None);
    }
}
