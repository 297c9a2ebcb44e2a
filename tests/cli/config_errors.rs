//! `.specs/pipeline.yml` errors (README, Configuration reference): every malformed file is refused
//! with the file, the line, the key path, the bad value and what is allowed. The table runs through
//! the library's parser; a few cases go through the real binary to prove the message reaches the
//! user, the exit code is 2 and nothing is written.

use std::path::Path;

use spec_orchestrate::config::Config;
use spec_orchestrate::error::ConfigError;

use crate::support::{self, Demo};

/// One malformed configuration and what its error must say.
struct Case {
    /// What the row is about (printed on failure).
    name: &'static str,
    /// The whole file.
    yaml: &'static str,
    /// 1-based line the error must point at.
    line: usize,
    /// Dotted key path the error must name.
    key: &'static str,
    /// Substrings of the problem (the bad value, the reason).
    problem: &'static [&'static str],
    /// Substrings of the help (what is allowed).
    help: &'static [&'static str],
}

/// Two agents so that the default roles resolve and only the row's defect is wrong.
macro_rules! with_agents {
    ($rest:literal) => {
        concat!(
            "# pipeline of the project\n",
            "agents:\n",
            "  claude: { kind: claude-cli }\n",
            "  codex: { kind: codex-cli }\n",
            $rest
        )
    };
}

const CASES: &[Case] = &[
    Case {
        name: "unknown top-level key lists the allowed keys",
        yaml: with_agents!("reviews:\n  strategy: single\n"),
        line: 5,
        key: "reviews",
        problem: &["unknown field `reviews`"],
        help: &[
            "`agents`",
            "`roles`",
            "`review`",
            "`app`",
            "`limits`",
            "`evaluate`",
            "`github`",
            "`improve`",
            "`sandbox`",
        ],
    },
    Case {
        name: "unknown role under roles",
        yaml: "roles:\n  spec_author: claude\n  spec_writer: claude\n",
        line: 3,
        key: "roles.spec_writer",
        problem: &["`spec_writer`"],
        help: &["`spec_author`", "`spec_reviewer`", "`judge`"],
    },
    Case {
        name: "role naming an undefined agent",
        yaml: with_agents!("roles:\n  spec_author: claude\n  spec_reviewer: gpt\n"),
        line: 7,
        key: "roles.spec_reviewer",
        problem: &["\"gpt\"", "no agent"],
        help: &["claude, codex", "agents.gpt"],
    },
    Case {
        name: "unknown agent kind",
        yaml: with_agents!("  gemini: { kind: gemini-cli }\n"),
        line: 5,
        key: "agents.gemini.kind",
        problem: &["`gemini-cli`"],
        help: &[
            "`claude-cli`",
            "`codex-cli`",
            "`anthropic`",
            "`openai`",
            "`command`",
        ],
    },
    Case {
        name: "unknown github.jobs mode",
        yaml: with_agents!("github:\n  jobs: per_job\n"),
        line: 6,
        key: "github.jobs",
        problem: &["`per_job`"],
        help: &["`per_agent_phase`", "`per_phase`"],
    },
    Case {
        name: "unknown limits.task_trees mode",
        yaml: with_agents!("limits:\n  task_trees: sparse\n"),
        line: 6,
        key: "limits.task_trees",
        problem: &["`sparse`"],
        help: &["`auto`", "`full`"],
    },
    Case {
        name: "unknown key inside an agent (typo)",
        yaml: "agents:\n  claude:\n    kind: claude-cli\n    modle: opus\n  codex: { kind: codex-cli }\n",
        line: 4,
        key: "agents.claude.modle",
        problem: &["`modle`"],
        help: &["`model`", "`binary`", "`opposite`"],
    },
    Case {
        name: "bad regex in app.ready_pattern",
        yaml: "app:\n  start: npm run dev\n  url: http://localhost:3000\n  ready_pattern: \"ready (in\"\n",
        line: 4,
        key: "app.ready_pattern",
        problem: &["\"ready (in\"", "not a valid regex", "unclosed group"],
        help: &["escape"],
    },
    Case {
        name: "string where limits.task_attempts takes a number",
        yaml: "limits:\n  role_swap_max: 1\n  task_attempts: three\n",
        line: 3,
        key: "limits.task_attempts",
        problem: &["\"three\""],
        help: &["limits.task_attempts", "whole number"],
    },
    Case {
        name: "negative limits.role_swap_max",
        yaml: "limits:\n  role_swap_max: -1\n",
        line: 2,
        key: "limits.role_swap_max",
        problem: &["-1"],
        help: &["whole number of 0 or more"],
    },
    Case {
        name: "zero limits.agent_timeout_s",
        yaml: "limits:\n  task_attempts: 3\n  agent_timeout_s: 0\n",
        line: 3,
        key: "limits.agent_timeout_s",
        problem: &["0 is not a usable timeout"],
        help: &["positive number of seconds"],
    },
    Case {
        name: "limits.parallel_tasks out of range",
        yaml: "limits:\n  task_attempts: 3\n  parallel_tasks: 0\n",
        line: 3,
        key: "limits.parallel_tasks",
        problem: &["0 tasks at once is outside 1..=16"],
        help: &["use 1 (one task after the other) up to 16"],
    },
    Case {
        name: "zero timeout of one agent",
        yaml: "agents:\n  claude: { kind: claude-cli }\n  codex:\n    kind: codex-cli\n    timeout_s: 0\n",
        line: 5,
        key: "agents.codex.timeout_s",
        problem: &["0 is not a usable timeout"],
        help: &["positive number of seconds"],
    },
    Case {
        name: "u64::MAX limits.agent_timeout_s (overflowed the deadline arithmetic)",
        yaml: "limits:\n  agent_timeout_s: 18446744073709551615\n",
        line: 2,
        key: "limits.agent_timeout_s",
        problem: &["18446744073709551615 s", "longer than 7 days"],
        help: &["at most 604800"],
    },
    Case {
        name: "i64::MAX timeout of one agent",
        yaml: "agents:\n  claude: { kind: claude-cli }\n  codex:\n    kind: codex-cli\n    timeout_s: 9223372036854775807\n",
        line: 5,
        key: "agents.codex.timeout_s",
        problem: &["9223372036854775807 s", "longer than 7 days"],
        help: &["at most 604800"],
    },
    Case {
        name: "one second over 7 days of app.ready_timeout_s",
        yaml: "app:\n  start: npm start\n  ready_timeout_s: 604801\n",
        line: 3,
        key: "app.ready_timeout_s",
        problem: &["604801 s", "longer than 7 days"],
        help: &["at most 604800"],
    },
    Case {
        name: "huge evaluate.step_timeout_s",
        yaml: "evaluate:\n  step_timeout_s: 18446744073709551615\n",
        line: 2,
        key: "evaluate.step_timeout_s",
        problem: &["longer than 7 days"],
        help: &["at most 604800"],
    },
    Case {
        name: "huge retry_base_ms of an agent",
        yaml: "agents:\n  claude: { kind: claude-cli }\n  codex: { kind: codex-cli }\n  api:\n    kind: anthropic\n    retry_base_ms: 18446744073709551615\n",
        line: 6,
        key: "agents.api.retry_base_ms",
        problem: &["18446744073709551615 ms", "longer than 7 days"],
        help: &["at most 604800000"],
    },
    Case {
        name: "zero app.ready_timeout_s",
        yaml: "app:\n  start: npm start\n  ready_timeout_s: 0\n",
        line: 3,
        key: "app.ready_timeout_s",
        problem: &["0 is not a usable timeout"],
        help: &["positive number of seconds"],
    },
    Case {
        name: "negative budget",
        yaml: "limits:\n  budget_usd: -5.5\n",
        line: 2,
        key: "limits.budget_usd",
        problem: &["-5.5", "not a budget"],
        help: &["positive amount in USD", "null"],
    },
    Case {
        name: "command agent without command",
        yaml: with_agents!("  script: { kind: command }\n"),
        line: 5,
        key: "agents.script.command",
        problem: &["kind `command` needs a `command`"],
        help: &["command: ["],
    },
    Case {
        name: "command on a non-command kind",
        yaml: "agents:\n  claude: { kind: claude-cli }\n  codex: { kind: codex-cli, command: [\"my-codex\"] }\n",
        line: 3,
        key: "agents.codex.command",
        problem: &["only for kind `command`", "`codex-cli`"],
        help: &["remove `command`", "`binary`"],
    },
    Case {
        name: "opposite naming the agent itself",
        yaml: "agents:\n  claude: { kind: claude-cli, opposite: claude }\n  codex: { kind: codex-cli }\n",
        line: 2,
        key: "agents.claude.opposite",
        problem: &["\"claude\"", "the agent itself"],
        help: &["different agent"],
    },
    Case {
        name: "opposite naming an undefined agent",
        yaml: "agents:\n  claude: { kind: claude-cli }\n  codex:\n    kind: codex-cli\n    opposite: gemini\n",
        line: 5,
        key: "agents.codex.opposite",
        problem: &["\"gemini\"", "no agent"],
        help: &["claude, codex"],
    },
    Case {
        name: "base_url that is not http(s)",
        yaml: with_agents!("  api: { kind: anthropic, base_url: \"localhost:8080\" }\n"),
        line: 5,
        key: "agents.api.base_url",
        problem: &["\"localhost:8080\"", "not an http(s) URL"],
        help: &["http://127.0.0.1"],
    },
    Case {
        name: "invalid panel persona",
        yaml: "review:\n  strategy: panel\n  panel: [architect, hacker]\n",
        line: 3,
        key: "review.panel[1]",
        problem: &["`hacker`"],
        help: &[
            "`architect`",
            "`paranoid`",
            "`user_advocate`",
            "`product_strategist`",
        ],
    },
    Case {
        name: "panel that is neither auto nor a list",
        yaml: "review:\n  panel: everyone\n",
        line: 2,
        key: "review.panel",
        problem: &["\"everyone\""],
        help: &["`auto`", "architect"],
    },
    Case {
        name: "rubric pass out of range",
        yaml: "evaluate:\n  rubric:\n    criteria: { design: 3, craft: 2 }\n    pass: 12.5\n",
        line: 4,
        key: "evaluate.rubric.pass",
        problem: &["12.5", "outside 0–10"],
        help: &["0–10"],
    },
    Case {
        name: "rubric scored by an agent that cannot see images",
        yaml: with_agents!(
            "  api: { kind: anthropic, base_url: \"http://127.0.0.1:9\", opposite: claude }\nroles:\n  e2e_runner: api\nevaluate:\n  rubric:\n    criteria: { design: 3 }\n    pass: 7\n"
        ),
        line: 9,
        key: "evaluate.rubric",
        problem: &["\"api\"", "`anthropic`", "cannot see the screenshots"],
        help: &["roles.e2e_runner", "claude-cli", "remove `evaluate.rubric`"],
    },
    Case {
        name: "rubric criterion with no definition",
        yaml: "evaluate:\n  rubric:\n    criteria:\n      polish: 2\n    pass: 7\n",
        line: 4,
        key: "evaluate.rubric.criteria.polish",
        problem: &["`polish`", "no definition"],
        help: &["definition:", "design, originality, craft, functionality"],
    },
    Case {
        name: "rubric criterion threshold out of range",
        yaml: "evaluate:\n  rubric:\n    criteria:\n      craft: { weight: 1, pass: 11 }\n    pass: 7\n",
        line: 4,
        key: "evaluate.rubric.criteria.craft.pass",
        problem: &["11", "outside 0–10"],
        help: &["0–10"],
    },
    Case {
        name: "branch_prefix with a space",
        yaml: "github:\n  trigger_label: spec-orchestrate\n  branch_prefix: \"my prefix/\"\n",
        line: 3,
        key: "github.branch_prefix",
        problem: &["\"my prefix/\"", "git branch name"],
        help: &["letters, digits"],
    },
    Case {
        name: "evidence_retention_days beyond GitHub's maximum",
        yaml: "github:\n  trigger_label: spec-orchestrate\n  evidence_retention_days: 500\n",
        line: 3,
        key: "github.evidence_retention_days",
        problem: &["500 days", "outside 1–400"],
        help: &["1 to 90 days", "repository's default"],
    },
    Case {
        name: "YAML syntax error: unclosed bracket points at the bracket",
        yaml: "review:\n  strategy: panel\n  panel: [architect, paranoid\nlimits:\n  task_attempts: 3\n",
        line: 3,
        key: "review.panel",
        problem: &[
            "did not find expected ',' or ']'",
            "flow sequence at line 3",
        ],
        help: &["not valid YAML", "close every `[`"],
    },
    Case {
        name: "YAML syntax error: bad indentation",
        yaml: "limits:\n  task_attempts: 3\n agent_timeout_s: 5\n",
        line: 3,
        key: "limits.agent_timeout_s",
        problem: &["did not find expected key"],
        help: &["indent nested keys consistently"],
    },
    Case {
        name: "improve.min_occurrences 0",
        yaml: "improve:\n  auto_apply: true\n  min_occurrences: 0\n",
        line: 3,
        key: "improve.min_occurrences",
        problem: &["0 occurrences"],
        help: &["1 or more"],
    },
    Case {
        name: "duplicate key",
        yaml: "limits:\n  task_attempts: 3\n  task_attempts: 4\n",
        line: 3,
        key: "limits.task_attempts",
        problem: &["duplicate", "`task_attempts`"],
        help: &["keep one"],
    },
    Case {
        name: "the model API proxy cannot front a command agent",
        yaml: with_agents!(
            "  script: { kind: command, command: [\"python3\", \"x.py\"], proxy: true }\n"
        ),
        line: 5,
        key: "agents.script.proxy",
        problem: &["fronts the claude-cli, codex-cli, anthropic and openai kinds"],
        help: &["remove `proxy`"],
    },
    Case {
        name: "sandbox.agent_user must be an unprivileged uid",
        yaml: "sandbox:\n  identity: auto\n  agent_user: \"agent\"\n",
        line: 3,
        key: "sandbox.agent_user",
        problem: &["`agent` is not a uid or `uid:gid`"],
        help: &["agent_user: 65532", "identity: off"],
    },
    Case {
        name: "sandbox.agent_user may not be root",
        yaml: "sandbox:\n  agent_user: 0\n",
        line: 2,
        key: "sandbox.agent_user",
        problem: &["`0`", "root's (0)"],
        help: &["unprivileged uid"],
    },
    Case {
        name: "sandbox.identity is auto or off",
        yaml: "sandbox:\n  identity: always\n",
        line: 2,
        key: "sandbox.identity",
        problem: &["`always`"],
        help: &["`auto`", "`off`"],
    },
    Case {
        name: "the file is a list, not a mapping",
        yaml: "- agents\n- roles\n",
        line: 1,
        key: "",
        problem: &["sequence"],
        help: &["mapping"],
    },
];

#[test]
fn every_malformed_config_names_file_line_key_value_and_fix() {
    assert!(
        CASES.len() >= 14,
        "the table must cover at least 14 defects"
    );
    let file = Path::new("/checkout/.specs/pipeline.yml");
    let mut failures = Vec::new();
    for case in CASES {
        let err: Box<ConfigError> = match Config::parse(case.yaml, file) {
            Ok(_) => {
                failures.push(format!("[{}] was accepted", case.name));
                continue;
            }
            Err(e) => e,
        };
        let mut wrong = Vec::new();
        if err.file != file {
            wrong.push(format!("file {}", err.file.display()));
        }
        if err.line != Some(case.line) {
            wrong.push(format!("line {:?}, expected {}", err.line, case.line));
        }
        if err.key != case.key {
            wrong.push(format!("key `{}`, expected `{}`", err.key, case.key));
        }
        for want in case.problem {
            if !err.problem.contains(want) {
                wrong.push(format!("problem lacks {want:?}"));
            }
        }
        for want in case.help {
            if !err.help.contains(want) {
                wrong.push(format!("help lacks {want:?}"));
            }
        }
        // The line the error points at must really hold the offending key (independent of the
        // expected number in the table, which could itself be wrong).
        let last = case.key.rsplit('.').next().unwrap_or("");
        let last = last.split('[').next().unwrap_or(last);
        let pointed = case.yaml.lines().nth(case.line - 1).unwrap_or("");
        if !last.is_empty() && !pointed.contains(last) {
            wrong.push(format!(
                "table line {} ({pointed:?}) does not hold `{last}`",
                case.line
            ));
        }
        let shown = err.to_string();
        let key_shown = if case.key.is_empty() {
            "(top level)"
        } else {
            case.key
        };
        let head = format!("{}:{}: {key_shown}: ", file.display(), case.line);
        if !shown.starts_with(&head) {
            wrong.push(format!("display does not start with {head:?}"));
        }
        if !shown.contains(&err.problem) || !shown.contains(&format!("help: {}", err.help)) {
            wrong.push("display lacks the problem or the help".into());
        }
        if !wrong.is_empty() {
            failures.push(format!(
                "[{}]\n    {}\n    got: {shown}",
                case.name,
                wrong.join("\n    ")
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn the_table_differs_from_a_valid_file_only_in_its_defect() {
    // The shared header of the table is valid on its own, so each row fails for its own line.
    let file = Path::new("pipeline.yml");
    let header = with_agents!("");
    let config = Config::parse(header, file).expect("the header alone is valid");
    assert_eq!(config, Config::default());
    // And the same key with a good value is accepted, so the rows are not failing on syntax.
    for good in [
        "limits:\n  role_swap_max: 0\n  task_attempts: 1\n  budget_usd: 0.5\n",
        "review:\n  strategy: panel\n  panel: [architect, user_advocate]\n",
        "review:\n  panel: auto\n",
        "app:\n  start: npm run dev\n  ready_pattern: \"ready in \\\\d+ms\"\n",
        "evaluate:\n  rubric:\n    criteria: { design: 3, craft: 2 }\n    pass: 10\n",
        "evaluate:\n  rubric:\n    criteria:\n      polish: { weight: 2, definition: \"no rough edges\", pass: 6 }\n      design: 1\n    pass: 7\n",
        with_agents!(
            "  api: { kind: anthropic, base_url: \"http://127.0.0.1:9\", opposite: claude }\nroles:\n  spec_reviewer: api\nevaluate:\n  rubric:\n    criteria: { design: 3 }\n    pass: 7\n"
        ),
        "improve:\n  min_occurrences: 1\n",
        "limits:\n  agent_timeout_s: 604800\n",
        "github:\n  branch_prefix: my-prefix/\n",
        "github:\n  evidence_retention_days: 30\n",
        with_agents!(
            "  api: { kind: anthropic, base_url: \"http://127.0.0.1:9\", opposite: claude }\n"
        ),
        with_agents!("  script: { kind: command, command: [\"python3\", \"x.py\"] }\n"),
    ] {
        if let Err(e) = Config::parse(good, file) {
            panic!("valid config refused:\n{good}\n{e}");
        }
    }
    let panel = Config::parse("review:\n  panel: [operator]\n", file).expect("valid panel");
    assert_eq!(
        panel.review.panel,
        spec_orchestrate::config::PanelSelection::List(vec![
            spec_orchestrate::types::kinds::Persona::Operator
        ])
    );
}

#[test]
fn empty_commented_or_missing_file_gives_the_defaults() {
    let file = Path::new("pipeline.yml");
    for text in ["", "\n\n", "# nothing configured yet\n", "---\n"] {
        let config = Config::parse(text, file).unwrap_or_else(|e| panic!("{text:?}: {e}"));
        assert_eq!(config, Config::default(), "{text:?}");
    }
    // Through `load`, with a real empty file and with no file at all.
    let repo = tempfile::tempdir().expect("tempdir");
    assert_eq!(
        Config::load(repo.path(), None).expect("no file: defaults"),
        Config::default()
    );
    std::fs::create_dir_all(repo.path().join(".specs")).expect("mkdir");
    std::fs::write(repo.path().join(".specs/pipeline.yml"), "").expect("write");
    assert_eq!(
        Config::load(repo.path(), None).expect("empty file: defaults"),
        Config::default()
    );
    // A non-default file in the same place is read, so the two asserts above are not vacuous.
    std::fs::write(
        repo.path().join(".specs/pipeline.yml"),
        "limits:\n  task_attempts: 7\n",
    )
    .expect("write");
    let loaded = Config::load(repo.path(), None).expect("valid file");
    assert_eq!(loaded.limits.task_attempts, 7);
}

#[test]
fn missing_explicit_config_file_is_an_error_not_the_defaults() {
    let repo = tempfile::tempdir().expect("tempdir");
    let missing = repo.path().join("nope.yml");
    let err = Config::load(repo.path(), Some(&missing)).expect_err("must be refused");
    assert_eq!(err.file, missing);
    assert!(err.problem.contains("does not exist"), "{err}");
    assert!(err.help.contains("--config"), "{err}");
}

#[test]
fn binary_refuses_a_missing_config_with_the_config_exit_code_3() {
    let demo = Demo::new();
    let out = demo
        .run_cmd()
        .arg("--config")
        .arg("missing.yml")
        .current_dir(&demo.repo)
        .output()
        .expect("binary runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "config error: stderr: {stderr}");
    let expected_path = demo.repo.join("missing.yml");
    assert!(
        stderr.contains(&expected_path.display().to_string()),
        "names the absolute path: {stderr}"
    );
    assert!(stderr.contains("does not exist"), "{stderr}");
    assert!(stderr.contains("--config"), "says how to fix it: {stderr}");
    assert!(
        !demo.feature_dir().exists(),
        "nothing written for a refused run"
    );
}

#[test]
fn binary_refuses_a_timeout_over_7_days_before_any_state_or_branch() {
    // It used to pass validation and panic ("overflow when adding duration to instant") at the
    // first agent call, after the state and the work branch had been created.
    let demo = Demo::new();
    let good = demo.config();
    let huge = good.replace(
        "agent_timeout_s: 120",
        "agent_timeout_s: 18446744073709551615",
    );
    let huge = if huge == good {
        format!("{good}limits:\n  agent_timeout_s: 18446744073709551615\n")
    } else {
        huge
    };
    demo.write_config(&huge);
    let branches_before = support::git(&demo.repo, &["branch", "--list"]);
    let out = demo.run_cmd().output().expect("binary runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "config error: stderr: {stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(
        stderr.contains("limits.agent_timeout_s") && stderr.contains("longer than 7 days"),
        "{stderr}"
    );
    assert!(!demo.feature_dir().exists(), "no feature directory");
    assert_eq!(
        support::git(&demo.repo, &["branch", "--list"]),
        branches_before,
        "no work branch"
    );
}

#[test]
fn binary_refuses_a_malformed_config_with_file_line_key_and_writes_no_state() {
    let demo = Demo::new();
    let good = demo.config();
    // Break one line of the real demo configuration: a typo in a role name.
    let mut lines: Vec<String> = good.lines().map(str::to_string).collect();
    let idx = lines
        .iter()
        .position(|l| l.trim_start().starts_with("spec_reviewer:"))
        .expect("demo config has a spec_reviewer line");
    lines[idx] = lines[idx].replace("spec_reviewer:", "spec_reveiwer:");
    demo.write_config(&(lines.join("\n") + "\n"));

    let out = demo.run_cmd().output().expect("binary runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "config error: stderr: {stderr}");
    let location = format!("{}:{}:", demo.config_path().display(), idx + 1);
    assert!(stderr.contains(&location), "names {location}: {stderr}");
    assert!(
        stderr.contains("roles.spec_reveiwer"),
        "names the key: {stderr}"
    );
    assert!(
        stderr.contains("`spec_reviewer`"),
        "lists the allowed keys: {stderr}"
    );
    assert!(
        !demo.feature_dir().exists(),
        "no feature directory for a refused run"
    );
    assert!(
        !demo.feature_dir().join("pipeline-state.json").exists(),
        "no state file for a refused run"
    );

    // A semantic (validation) error too: a role that names no agent.
    let broken = good.replace("spec_author: author", "spec_author: writer");
    assert_ne!(broken, good, "demo config has `spec_author: author`");
    demo.write_config(&broken);
    let out = demo.run_cmd().output().expect("binary runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "config error: stderr: {stderr}");
    let line = broken
        .lines()
        .position(|l| l.contains("spec_author: writer"))
        .expect("line present")
        + 1;
    let location = format!(
        "{}:{line}: roles.spec_author:",
        demo.config_path().display()
    );
    assert!(stderr.contains(&location), "names {location}: {stderr}");
    assert!(
        stderr.contains("\"writer\""),
        "names the bad value: {stderr}"
    );
    assert!(
        !demo.feature_dir().exists(),
        "no feature directory for a refused run"
    );

    // Control: with the original configuration the same command does start a run, so the
    // refusals above came from the configuration and nothing else.
    demo.write_config(&good);
    let out = demo
        .run_cmd()
        .arg("--until")
        .arg("intake")
        .output()
        .expect("binary runs");
    assert_eq!(
        out.status.code(),
        Some(0),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(demo.feature_dir().join("pipeline-state.json").is_file());
}

#[test]
fn binary_reports_a_yaml_syntax_error_at_the_unclosed_bracket() {
    let demo = Demo::new();
    demo.write_config(
        "# broken\nreview:\n  strategy: panel\n  panel: [architect, paranoid\nlimits:\n  task_attempts: 3\n",
    );
    let out = demo.run_cmd().output().expect("binary runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "config error: stderr: {stderr}");
    let location = format!("{}:4: review.panel:", demo.config_path().display());
    assert!(stderr.contains(&location), "names {location}: {stderr}");
    assert!(stderr.contains("not valid YAML"), "{stderr}");
    assert!(!demo.feature_dir().exists());
}

/// A row of a table built at run time: name, file, line, key, problem and help substrings.
type Row<'a> = (
    &'a str,
    &'a str,
    usize,
    &'a str,
    &'a [&'a str],
    &'a [&'a str],
);

/// The shapes the parser's budgets refuse (issue #19): each names the file, the line, the key and
/// the fix, and none takes longer than a moment however large the file is.
#[test]
fn budgets_of_the_parser_refuse_alias_floods_deep_nesting_and_second_documents_at_their_line() {
    let file = Path::new("/checkout/.specs/pipeline.yml");
    let flood = format!(
        "github:\n  trigger_label: go\n  allowed_bots: [&bot renovate, {}]\n",
        vec!["*bot"; 150].join(", ")
    );
    let block_deep: String = std::iter::once("agents:\n".to_string())
        .chain((1..40).map(|i| format!("{}k{i}:\n", "  ".repeat(i))))
        .collect();
    let cases: [Row; 4] = [
        (
            "150 aliases of one anchor",
            &flood,
            3,
            "github.allowed_bots",
            &["more than 100 aliases"],
            &["write the values out"],
        ),
        (
            "keys nested 40 levels deep",
            &block_deep,
            33,
            "agents.k1.k2.k3.k4.k5.k6.k7.k8.k9.k10.k11.k12.k13.k14.k15.k16.k17.k18.k19.k20.k21.k22.k23.k24.k25.k26.k27.k28.k29.k30.k31",
            &["keys nest more than 32 levels deep"],
            &["flatten this value"],
        ),
        (
            "a second YAML document",
            "limits:\n  task_attempts: 3\n---\nlimits:\n  task_attempts: 4\n",
            3,
            "",
            &["more than one YAML document"],
            &["keep one document"],
        ),
        (
            "an alias naming no anchor",
            "github:\n  allowed_bots: [*nobody]\n",
            2,
            "github.allowed_bots",
            &["names no anchor"],
            &["define the anchor"],
        ),
    ];
    let mut failures = Vec::new();
    for (name, yaml, line, key, problem, help) in cases {
        let started = std::time::Instant::now();
        let err = match Config::parse(yaml, file) {
            Ok(_) => {
                failures.push(format!("[{name}] was accepted"));
                continue;
            }
            Err(e) => e,
        };
        let secs = started.elapsed().as_secs_f64();
        let shown = err.to_string();
        let mut wrong = Vec::new();
        if err.line != Some(line) {
            wrong.push(format!("line {:?}, expected {line}", err.line));
        }
        if err.key != key {
            wrong.push(format!("key `{}`, expected `{key}`", err.key));
        }
        for want in problem {
            if !err.problem.contains(want) {
                wrong.push(format!("problem lacks {want:?}"));
            }
        }
        for want in help {
            if !err.help.contains(want) {
                wrong.push(format!("help lacks {want:?}"));
            }
        }
        if !shown.starts_with(&format!("{}:{line}: ", file.display())) {
            wrong.push("display does not start with file:line".into());
        }
        if secs > 2.0 {
            wrong.push(format!("took {secs:.1}s"));
        }
        if !wrong.is_empty() {
            failures.push(format!(
                "[{name}]\n    {}\n    got: {shown}",
                wrong.join("\n    ")
            ));
        }
    }
    // Control: a few aliases, as people use them, are accepted.
    let few = "github:\n  allowed_bots: [&bot renovate, *bot]\n";
    let config = Config::parse(few, file).expect("two aliases are fine");
    assert_eq!(config.github.allowed_bots, ["renovate", "renovate"]);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Every wrong-type row of the table says what it found and reads the same in the terminal: a
/// snapshot of the messages people read for the most common mistakes.
#[test]
fn schema_errors_read_as_sentences_from_the_parser_types() {
    let file = Path::new("/checkout/.specs/pipeline.yml");
    let shown: Vec<String> = [
        "limits:\n  task_attempts: three\n",
        "limits:\n  role_swap_max: -1\n",
        "improve:\n  auto_apply: yes\n",
        "review:\n  panel: everyone\n",
        "- agents\n- roles\n",
        "limits:\n  task_attempts: 3\n  task_attempts: 4\n",
        "agents:\n  claude: { kind: gemini-cli }\n",
        "review:\n  strategy: panel\n  panel: [architect, paranoid\nlimits:\n  task_attempts: 3\n",
        "limits:\n  task_attempts: 3\n agent_timeout_s: 5\n",
    ]
    .iter()
    .map(|yaml| match Config::parse(yaml, file) {
        Ok(_) => format!("accepted: {yaml:?}"),
        Err(e) => e.to_string(),
    })
    .collect();
    insta::assert_snapshot!(shown.join("\n\n"));
}

#[test]
fn binary_refuses_an_alias_flood_with_file_line_key_and_the_fix_and_writes_no_state() {
    let demo = Demo::new();
    let flood = format!(
        "{}github:\n  allowed_bots: [&bot renovate, {}]\n",
        demo.config(),
        vec!["*bot"; 500].join(", ")
    );
    demo.write_config(&flood);
    let line = flood
        .lines()
        .position(|l| l.contains("allowed_bots"))
        .expect("the flood's line")
        + 1;
    let out = demo.run_cmd().output().expect("binary runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "config error: stderr: {stderr}");
    let location = format!(
        "{}:{line}: github.allowed_bots:",
        demo.config_path().display()
    );
    assert!(stderr.contains(&location), "names {location}: {stderr}");
    assert!(stderr.contains("more than 100 aliases"), "{stderr}");
    assert!(stderr.contains("write the values out"), "the fix: {stderr}");
    assert!(!demo.feature_dir().exists(), "nothing written");
}
