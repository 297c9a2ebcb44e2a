//! `doctor` through the binary: every check against a machine that passes it and one that fails
//! it, the exit code (0 unless a check is an error), the `--json` document in a snapshot, and
//! `--github` against the simulated GitHub, which sees only GET requests.
//!
//! The machine is scripted: `git` reports a fixed version (and is the real git otherwise),
//! the agent CLIs and `node` are small scripts, the driver and Chromium are files where the
//! harness looks (the checks look, they do not launch a browser).

use std::path::PathBuf;

use serde_json::Value;

use crate::fake_github::{FakeGithub, OWNER, REPO};
use crate::support::{assert_contains_all, bin, git, script};

const TOKEN: &str = "ghs_doctor_token";

struct Machine {
    tmp: tempfile::TempDir,
    repo: PathBuf,
    bin_dir: PathBuf,
}

fn fake_git(version: &str) -> String {
    let real = std::process::Command::new("sh")
        .args(["-c", "command -v git"])
        .output()
        .unwrap();
    let real = String::from_utf8_lossy(&real.stdout).trim().to_string();
    format!(
        "#!/bin/sh\nif [ \"$1\" = \"--version\" ]; then echo 'git version {version}'; exit 0; fi\nexec {real} \"$@\"\n"
    )
}

impl Machine {
    /// A good machine whose temp dir the agents' uid may enter (mode 0755); `None` (said on
    /// stderr) when the tests do not run as root, without which there is no separate identity.
    fn entered_by_the_agents() -> Option<Machine> {
        if !crate::sandbox::is_root() {
            eprintln!("skipped: the agents' identity is separated only when the tests run as root");
            return None;
        }
        let m = Machine::new(true);
        crate::support::set_mode(m.tmp.path(), 0o755);
        Some(m)
    }

    /// A machine where every check passes: `good` false makes each one fail instead.
    fn new(good: bool) -> Machine {
        let tmp = tempfile::tempdir().unwrap();
        let bin_dir = tmp.path().join("bin");
        script(
            &bin_dir.join("git"),
            &fake_git(if good { "2.47.3" } else { "2.20.1" }),
        );
        script(
            &bin_dir.join("claude"),
            "#!/bin/sh\necho '2.1.332 (Claude Code)'\n",
        );
        script(
            &bin_dir.join("codex"),
            if good {
                "#!/bin/sh\necho 'codex-cli 0.171.0'\n"
            } else {
                "#!/bin/sh\necho 'error: cannot load the native binary' >&2\nexit 1\n"
            },
        );
        script(
            &bin_dir.join("node"),
            if good {
                "#!/bin/sh\necho v20.19.2\n"
            } else {
                "#!/bin/sh\necho v18.19.0\n"
            },
        );
        script(&bin_dir.join("review-bot"), "#!/bin/sh\nexit 0\n");
        let driver = tmp.path().join("driver");
        std::fs::create_dir_all(driver.join("node_modules/playwright-core")).unwrap();
        std::fs::write(driver.join("run.js"), "").unwrap();
        if good {
            std::fs::write(
                driver.join("node_modules/playwright-core/package.json"),
                "{}",
            )
            .unwrap();
            std::fs::write(tmp.path().join("chromium"), "").unwrap();
        }
        let repo = tmp.path().join("repo");
        std::fs::create_dir_all(repo.join(".specs")).unwrap();
        git(&repo, &["init", "--quiet", "--initial-branch=main"]);
        std::fs::write(repo.join("README.md"), "# app\n").unwrap();
        let config = if good {
            format!(
                "agents:\n  claude: {{ kind: claude-cli, binary: \"{bin}/claude\" }}\n  codex: {{ kind: codex-cli, binary: \"{bin}/codex\" }}\n  api: {{ kind: anthropic, model: claude-sonnet-4-5 }}\n  bot: {{ kind: command, command: [\"review-bot\"] }}\nroles: {{ spec_author: claude, spec_reviewer: codex, judge: api, e2e_runner: bot }}\napp:\n  start: \"node server.js\"\n  url: \"http://127.0.0.1:{{port}}/\"\nlimits:\n  budget_usd: 5\n",
                bin = bin_dir.display()
            )
        } else {
            format!(
                "agents:\n  claude: {{ kind: claude-cli, binary: \"{bin}/no-claude\" }}\n  codex: {{ kind: codex-cli, binary: \"{bin}/codex\" }}\n  api: {{ kind: anthropic, model: claude-sonnet-4-5 }}\n  bot: {{ kind: command, command: [\"no-such-bot\"] }}\nroles: {{ spec_author: claude, spec_reviewer: codex, judge: api, e2e_runner: bot }}\napp:\n  start: \"node server.js\"\n  url: \"http://\"\n",
                bin = bin_dir.display()
            )
        };
        std::fs::write(repo.join(".specs/pipeline.yml"), config).unwrap();
        git(&repo, &["add", "-A"]);
        git(&repo, &["commit", "--quiet", "-m", "init"]);
        if !good {
            std::fs::write(repo.join("notes.txt"), "uncommitted\n").unwrap();
        }
        Machine { tmp, repo, bin_dir }
    }

    fn doctor(&self, args: &[&str]) -> assert_cmd::Command {
        let mut cmd = bin();
        let path = format!(
            "{}:{}",
            self.bin_dir.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        cmd.arg("doctor")
            .args(args)
            .arg("--repo")
            .arg(&self.repo)
            .env("PATH", path)
            .env("SPEC_ORCHESTRATE_DRIVER", self.tmp.path().join("driver"))
            .env("SPEC_ORCHESTRATE_NODE", self.bin_dir.join("node"))
            .env("SPEC_ORCHESTRATE_BROWSER", self.tmp.path().join("chromium"))
            .env_remove("GITHUB_TOKEN")
            .env_remove("GH_TOKEN")
            .env_remove("INPUT_GITHUB_TOKEN")
            .env_remove("GITHUB_REPOSITORY")
            .env_remove("CLAUDE_CODE_OAUTH_TOKEN")
            .env_remove("CODEX_API_KEY");
        cmd
    }

    /// `doctor --json` with the keys of a machine that has them (or not).
    fn json(&self, keys: bool) -> (Option<i32>, Value) {
        let mut cmd = self.doctor(&["--json"]);
        if keys {
            cmd.env("ANTHROPIC_API_KEY", "sk-ant-doctor")
                .env("OPENAI_API_KEY", "sk-doctor");
        } else {
            cmd.env_remove("ANTHROPIC_API_KEY")
                .env_remove("OPENAI_API_KEY");
        }
        let out = cmd.output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout)
            .replace(self.tmp.path().to_str().unwrap(), "[TMP]");
        let doc: Value = serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("{e}: {text}\n{}", String::from_utf8_lossy(&out.stderr)));
        (out.status.code(), doc)
    }
}

fn check<'a>(doc: &'a Value, name: &str) -> &'a Value {
    doc["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no check {name}: {doc:#}"))
}

const LOCAL: [&str; 11] = [
    "git",
    "working tree",
    "configuration",
    "agent claude",
    "agent codex",
    "agent api",
    "agent bot",
    "node",
    "browser driver",
    "chromium",
    "app",
];

#[test]
fn on_a_ready_machine_every_local_check_is_ok_and_doctor_exits_0() {
    let m = Machine::new(true);
    let (code, doc) = m.json(true);
    for name in LOCAL.iter().chain(&["budget"]) {
        assert_eq!(check(&doc, name)["status"], "ok", "{name}: {doc:#}");
        assert!(check(&doc, name).get("fix").is_none(), "{doc:#}");
    }
    assert_eq!(doc["ok"], true);
    assert_eq!(code, Some(0));
    assert!(
        check(&doc, "agent claude")["detail"]
            .as_str()
            .unwrap()
            .contains("2.1.332 (Claude Code)")
    );

    // Without key variables the CLIs may still use their own login: a warning by hand; the
    // HTTP agent cannot, which would stop a run.
    let (code, doc) = m.json(false);
    assert_eq!(check(&doc, "agent claude")["status"], "warning", "{doc:#}");
    assert_eq!(check(&doc, "agent codex")["status"], "warning", "{doc:#}");
    assert_eq!(check(&doc, "agent api")["status"], "error", "{doc:#}");
    assert_eq!(code, Some(1));
}

#[test]
fn on_a_machine_missing_everything_each_check_fails_with_its_fix_in_one_line_each() {
    let m = Machine::new(false);
    let (code, doc) = m.json(false);
    // (A configuration that fails is the next test: the checks that read it are left out.)
    for name in LOCAL.iter().filter(|n| **n != "configuration") {
        assert_eq!(check(&doc, name)["status"], "error", "{name}: {doc:#}");
        assert!(check(&doc, name)["fix"].is_string(), "{name}: {doc:#}");
    }
    assert_eq!(check(&doc, "budget")["status"], "warning");
    assert_eq!(doc["ok"], false);
    assert_eq!(code, Some(1));
    insta::assert_json_snapshot!("doctor_failing_machine", doc);

    // The terminal form: one line per check and a summary, nothing else.
    let out = m.doctor(&[]).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(
        lines.len(),
        doc["checks"].as_array().unwrap().len() + 1,
        "{stdout}"
    );
    assert!(
        lines[0].starts_with("error    git: git version 2.20.1 is older than 2.28 — fix: "),
        "{stdout}"
    );
    assert!(
        lines.last().unwrap().contains("a run would stop"),
        "{stdout}"
    );
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn an_invalid_configuration_is_the_error_validation_gives_and_the_checks_that_need_it_are_left_out()
{
    let m = Machine::new(true);
    std::fs::write(
        m.repo.join(".specs/pipeline.yml"),
        "limits:\n  budget_usd: -3\n",
    )
    .unwrap();
    let (code, doc) = m.json(true);
    let c = check(&doc, "configuration");
    assert_eq!(c["status"], "error");
    let detail = c["detail"].as_str().unwrap();
    assert!(
        detail.contains("pipeline.yml:2") && detail.contains("limits.budget_usd"),
        "{detail}"
    );
    assert!(c["fix"].as_str().unwrap().contains("positive amount"));
    assert!(
        doc["checks"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c["name"] != "budget")
    );
    assert_eq!(code, Some(1));
}

/// As root with the agents' identity named (here explicitly, as the Docker image does), a CLI
/// whose `#!` interpreter lies in a directory only root may enter cannot start as that uid: the
/// check says the uid, the interpreter out of reach, the directory that closes it, and both
/// ways out. (Root only: without root there is no separate identity.)
#[test]
fn an_agent_cli_the_agents_uid_cannot_start_says_which_uid_which_path_and_how_to_fix_it() {
    let Some(m) = Machine::entered_by_the_agents() else {
        return;
    };
    let private = m.tmp.path().join("private");
    std::fs::create_dir(&private).unwrap();
    crate::support::set_mode(&private, 0o700);
    std::fs::copy("/bin/sh", private.join("sh")).unwrap();
    script(
        &m.bin_dir.join("claude"),
        &format!(
            "#!{}\necho '2.1.332 (Claude Code)'\n",
            private.join("sh").display()
        ),
    );
    let out = m
        .doctor(&["--json"])
        .env("SPEC_ORCHESTRATE_AGENT_USER", "65532")
        .env("ANTHROPIC_API_KEY", "sk-ant-doctor")
        .env("OPENAI_API_KEY", "sk-doctor")
        .output()
        .unwrap();
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let c = check(&doc, "agent claude");
    assert_eq!(c["status"], "error", "{doc:#}");
    let detail = c["detail"].as_str().unwrap();
    let wanted = [
        format!(
            "{} could not be started",
            m.bin_dir.join("claude").display()
        ),
        "it runs as uid 65532 (the agents' identity)".to_string(),
        format!(
            "the interpreter its `#!` line names, {} is out of its reach (uid 65532 cannot enter {})",
            private.join("sh").display(),
            private.display()
        ),
        format!("`setfacl -m u:65532:x {}`", private.display()),
        "`sandbox.identity: off` in .specs/pipeline.yml, or SPEC_ORCHESTRATE_AGENT_USER=off"
            .to_string(),
    ];
    for w in &wanted {
        assert!(detail.contains(w.as_str()), "`{w}` in: {detail}");
    }
    // The codex CLI next to it starts as that uid: only what is out of reach is an error.
    assert_eq!(check(&doc, "agent codex")["status"], "ok", "{doc:#}");
}

/// As root with the agents' identity named, a command agent is looked up on PATH as a run
/// looks it up: a `review-bot` first on PATH in a directory only root may enter is passed over
/// for the next one (as the agents' own `execvp` would), and when it is the only one the check
/// says it is out of the uid's reach and how to fix it. (Root only, as above.)
#[test]
fn a_command_agent_is_found_on_path_as_the_agents_uid_finds_it() {
    let Some(m) = Machine::entered_by_the_agents() else {
        return;
    };
    let private = m.tmp.path().join("private");
    script(&private.join("bin/review-bot"), "#!/bin/sh\nexit 0\n");
    crate::support::set_mode(&private, 0o700);
    let rest = std::env::var("PATH").unwrap_or_default();
    let bot = |path: String| {
        let out = m
            .doctor(&["--json"])
            .env("PATH", path)
            .env("SPEC_ORCHESTRATE_AGENT_USER", "65532")
            .output()
            .unwrap();
        let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
        check(&doc, "agent bot").clone()
    };
    let shadowed = bot(format!(
        "{}:{}:{rest}",
        private.join("bin").display(),
        m.bin_dir.display()
    ));
    assert_eq!(shadowed["status"], "ok", "{shadowed:#}");
    assert_eq!(
        shadowed["detail"],
        format!("runs {}", m.bin_dir.join("review-bot").display())
    );
    std::fs::remove_file(m.bin_dir.join("review-bot")).unwrap();
    let alone = bot(format!("{}:{rest}", private.join("bin").display()));
    assert_eq!(alone["status"], "error", "{alone:#}");
    assert_eq!(
        alone["detail"],
        format!(
            "{} is out of reach of uid 65532, the agents' identity a run starts it as, and no other on PATH is within it",
            private.join("bin/review-bot").display()
        )
    );
    let fix = alone["fix"].as_str().unwrap();
    assert!(
        fix.contains("where uid 65532 may execute it") && fix.contains("`sandbox.identity: off`"),
        "{fix}"
    );
}

fn github_doctor(m: &Machine, fake: &FakeGithub) -> (Option<i32>, Value) {
    let out = m
        .doctor(&["--json", "--github"])
        .env("ANTHROPIC_API_KEY", "sk-ant-doctor")
        .env("OPENAI_API_KEY", "sk-doctor")
        .env("GITHUB_TOKEN", TOKEN)
        .env("GITHUB_API_URL", fake.api_uri())
        .env("GITHUB_REPOSITORY", format!("{OWNER}/{REPO}"))
        .output()
        .unwrap();
    let doc: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    fake.with(|w| {
        assert!(w.violations.is_empty(), "{:?}", w.violations);
        assert!(
            w.requests.iter().all(|r| r.method == "GET"),
            "doctor only reads: {:?}",
            w.requests
                .iter()
                .map(|r| (&r.method, &r.url))
                .collect::<Vec<_>>()
        );
    });
    (out.status.code(), doc)
}

const GITHUB: [&str; 7] = [
    "github repository",
    "token permissions",
    "workflow file",
    "label spec-orchestrate",
    "label spec-approved",
    "actions may open pull requests",
    "action image",
];

#[test]
fn github_checks_pass_on_a_repository_set_up_as_the_readme_says() {
    let m = Machine::new(true);
    let fake = FakeGithub::start(TOKEN, "t", "b");
    let (code, doc) = github_doctor(&m, &fake);
    for name in GITHUB.iter().chain(&["default workflow permissions"]) {
        assert_eq!(check(&doc, name)["status"], "ok", "{name}: {doc:#}");
    }
    assert_eq!(code, Some(0), "{doc:#}");

    // A classic token with the `repo` scope says so.
    fake.with(|w| w.doctor.scopes = Some("repo, workflow".into()));
    let (_, doc) = github_doctor(&m, &fake);
    assert!(
        check(&doc, "token permissions")["detail"]
            .as_str()
            .unwrap()
            .contains("scopes: repo, workflow")
    );
}

#[test]
fn github_checks_fail_on_a_repository_that_is_not_set_up_and_say_how_to_fix_each() {
    let m = Machine::new(true);
    let fake = FakeGithub::start(TOKEN, "t", "b");
    fake.with(|w| {
        w.doctor.scopes = Some("read:org".into());
        w.doctor.files.clear();
        w.doctor.labels = vec!["spec-orchestrate".into()];
        w.actions_may_open_prs = false;
        w.doctor.image_visibility = Some("private".into());
    });
    let (code, doc) = github_doctor(&m, &fake);
    for name in [
        "token permissions",
        "workflow file",
        "label spec-approved",
        "actions may open pull requests",
        "action image",
    ] {
        assert_eq!(check(&doc, name)["status"], "error", "{name}: {doc:#}");
        assert!(check(&doc, name)["fix"].is_string());
    }
    assert_eq!(check(&doc, "label spec-orchestrate")["status"], "ok");
    assert!(
        check(&doc, "actions may open pull requests")["fix"]
            .as_str()
            .unwrap()
            .contains("Settings → Actions → General")
    );
    assert_eq!(code, Some(1));

    // Without admin access the Actions settings cannot be read: a warning that says who can.
    fake.with(|w| w.doctor.admin = false);
    let (_, doc) = github_doctor(&m, &fake);
    for name in [
        "actions may open pull requests",
        "default workflow permissions",
    ] {
        let c = check(&doc, name);
        assert_eq!(c["status"], "warning", "{doc:#}");
        assert!(c["detail"].as_str().unwrap().contains("HTTP 403"), "{c}");
    }

    // A repository the token cannot see (or that does not exist): one error, nothing else read.
    let out = m
        .doctor(&["--json", "--github", "--repository", "octocat/Spoon-Knife"])
        .env("GITHUB_TOKEN", TOKEN)
        .env("GITHUB_API_URL", fake.api_uri())
        .output()
        .unwrap();
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let c = check(&doc, "github repository");
    assert_eq!(c["status"], "error", "{doc:#}");
    assert!(c["detail"].as_str().unwrap().contains("HTTP 404"), "{c}");
    assert!(
        c["fix"].as_str().unwrap().contains("octocat/Spoon-Knife"),
        "{c}"
    );
    assert!(
        doc["checks"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c["name"] != "workflow file")
    );

    // No token: one error naming the variables.
    let out = m
        .doctor(&["--github"])
        .env("ANTHROPIC_API_KEY", "k")
        .env("OPENAI_API_KEY", "k")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("error    github token: neither GITHUB_TOKEN nor GH_TOKEN is set"),
        "{stdout}"
    );
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn doctor_is_in_the_help_and_teaches_with_examples() {
    let out = bin().arg("doctor").arg("--help").output().unwrap();
    let help = String::from_utf8_lossy(&out.stdout);
    assert_contains_all(
        &help,
        &[
            "spec-orchestrate doctor --github",
            "--json",
            "GITHUB_TOKEN or GH_TOKEN",
            "Exit: 0 nothing would stop a run",
        ],
    );
    let top = bin().arg("--help").output().unwrap();
    assert!(String::from_utf8_lossy(&top.stdout).contains("spec-orchestrate doctor"));
}

#[test]
fn the_first_job_of_a_chain_reports_a_missing_key_on_the_status_comment_before_any_agent_runs() {
    use crate::actions_sim::{ISSUE, Sim};
    let mut sim = Sim::new(|c, _| {
        c.replacen(
            "agents:\n",
            "agents:\n  api: { kind: anthropic, model: claude-sonnet-4-5, api_key_env: DOCTOR_MISSING_KEY }\n",
            1,
        )
        .replace("  judge: author", "  judge: api")
    });
    let first = sim.labeled("octocat", false);
    let run = sim.run(1001, 1, "issues", &first);
    assert_eq!(run.code, 3, "a configuration error: {}", run.stderr);
    let status = sim.fake.with(|w| {
        assert!(w.violations.is_empty(), "{:?}", w.violations);
        assert!(w.dispatches.is_empty(), "nothing is dispatched");
        w.status_comments(ISSUE)[0]["body"]
            .as_str()
            .unwrap()
            .to_string()
    });
    for needle in [
        "found what would stop this run before any agent ran",
        "error    agent api: DOCTOR_MISSING_KEY is not set",
        "fix: set DOCTOR_MISSING_KEY",
    ] {
        assert!(status.contains(needle), "{needle}:\n{status}");
    }
    assert!(
        run.summary.contains("DOCTOR_MISSING_KEY"),
        "{}",
        run.summary
    );
    assert!(
        !sim.root.join("spy").exists(),
        "no agent was called before the check"
    );

    // The keys the job's inputs provide count as set: the same chain with the key starts.
    let mut ok = Sim::new(|c, _| c.to_string());
    let first = ok.labeled("octocat", false);
    let run = ok.run(1001, 1, "issues", &first);
    assert_eq!(run.code, 0, "{}", run.stderr);
}
