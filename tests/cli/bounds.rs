//! Untrusted output within bounds: envelopes whose strings hold code samples, agent output,
//! findings and configuration files of hostile size or shape (issue #11 points 6 and 7).

use std::time::Duration;

use serde_json::json;

use crate::support::{Demo, JSON_PROGRESS, Scenario, events_of, failures_in};
use spec_orchestrate::events::Event;
use spec_orchestrate::types::kinds::{BlockerCategory, Gate};

/// A whole scripted run's ceiling: far above a normal run, far below a hang.
const RUN_LIMIT: Duration = Duration::from_secs(240);

/// A suggestion the way reviewers write them: a fenced code sample with braces and quotes.
const CODE_SAMPLE: &str = "Guard it:\n```rust\nfn toggle(s: &str) -> &str { if s == \"}\" { \"{\" } else { s } }\n```\nthen test.";

#[test]
fn a_reviewer_envelope_whose_suggestion_holds_a_fenced_code_sample_is_accepted() {
    let s = Scenario::new(
        json!({"review": {"1": [{
            "severity": "minor",
            "gist": "the toggle has no guard",
            "suggestion": CODE_SAMPLE,
        }]}}),
        "",
    );
    s.run_cmd().timeout(RUN_LIMIT).assert().success();
    let state = s.state();
    let first = &state.rounds.spec_review[0];
    assert_eq!(first.gate, Gate::Pass, "{first:?}");
    assert!(first.failure.is_none(), "{first:?}");
    assert_eq!(first.minor, 1, "{first:?}");
    assert_eq!(
        s.requests_of("spec_reviewer").len(),
        1,
        "accepted at once: no retry asking for JSON only"
    );
    assert!(
        state.arbitrations.is_empty(),
        "no role swap: {:?}",
        state.arbitrations
    );
    assert!(
        state.agent_failures.is_empty(),
        "{:?}",
        state.agent_failures
    );
    let review: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(s.demo.feature_dir().join("reviews/spec-review-1.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(
        review["findings"][0]["suggestion"], CODE_SAMPLE,
        "the code sample is kept whole"
    );
    assert!(!crate::support::pr_draft(&state));
}

/// Runs with `--config <path>`; (exit code, stderr, seconds taken).
fn run_with_config(demo: &Demo, path: &std::path::Path) -> (Option<i32>, String, f64) {
    let started = std::time::Instant::now();
    let out = demo
        .run_cmd()
        .arg("--config")
        .arg(path)
        .timeout(Duration::from_secs(60))
        .output()
        .expect("binary runs");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        started.elapsed().as_secs_f64(),
    )
}

#[test]
fn dev_zero_a_fifo_and_a_huge_file_as_config_are_refused_at_once() {
    let demo = Demo::new();
    let fifo = demo.tmp.path().join("pipe.yml");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let huge = demo.tmp.path().join("huge.yml");
    std::fs::write(&huge, "# padding\n".repeat(110_000)).unwrap();
    let cases = [
        (std::path::PathBuf::from("/dev/zero"), "not a regular file"),
        (fifo, "not a regular file"),
        (huge, "larger than 1048576 bytes"),
    ];
    for (path, problem) in cases {
        let (code, stderr, secs) = run_with_config(&demo, &path);
        assert_eq!(
            code,
            Some(3),
            "{}: a config error\n{stderr}",
            path.display()
        );
        assert!(stderr.contains(problem), "{}: {stderr}", path.display());
        assert!(
            stderr.contains(&path.display().to_string()),
            "names the file: {stderr}"
        );
        assert!(
            secs < 10.0,
            "{}: refused at once, took {secs}s",
            path.display()
        );
    }
    assert!(!demo.feature_dir().exists(), "nothing written");
}

#[test]
fn a_deeply_nested_config_is_refused_fast_at_its_line() {
    let demo = Demo::new();
    let shapes = [
        format!(
            "review:\n  panel: {}{}\n",
            "[".repeat(100_000),
            "]".repeat(100_000)
        ),
        format!(
            "limits:\n  x: {}{}\n",
            (0..20_000).map(|i| format!("a{i}: {{")).collect::<String>(),
            "}".repeat(20_000)
        ),
    ];
    for (n, text) in shapes.iter().enumerate() {
        let path = demo.tmp.path().join(format!("deep{n}.yml"));
        std::fs::write(&path, text).unwrap();
        let (code, stderr, secs) = run_with_config(&demo, &path);
        assert_eq!(code, Some(3), "a config error\n{stderr}");
        assert!(
            stderr.contains(&format!("{}:2:", path.display())),
            "names the line: {stderr}"
        );
        assert!(stderr.contains("more than 32 levels deep"), "{stderr}");
        assert!(secs < 10.0, "refused at once, took {secs}s");
    }
}

/// A reviewer that prints `mib` MiB of chatter before a clean envelope (no findings).
const LOUD_REVIEWER: &str = r#"import sys
sys.stdin.read()
mib = int(sys.argv[1])
line = ("chatter " * 127 + "\n").encode()
out = sys.stdout.buffer
for _ in range(mib * 1024):
    out.write(line)
out.write(b'Review:\n```json\n{"findings": [], "converged": true, "remaining_disputes": []}\n```\n')
"#;

#[test]
fn a_reviewer_printing_50_mib_is_parsed_from_its_tail_and_only_a_bounded_part_is_kept() {
    let s = Scenario::new(json!({}), "");
    let script = s.dir.join("loud.py");
    std::fs::write(&script, LOUD_REVIEWER).unwrap();
    let config = crate::support::with_agent(
        &s.demo.config(),
        "loud",
        &format!(
            "{{ kind: command, command: [\"python3\", \"{}\", \"50\"], opposite: alpha }}",
            script.display()
        ),
    )
    .replace("spec_reviewer: beta", "spec_reviewer: loud");
    s.demo.write_config(&config);
    let out = s
        .run_cmd()
        .env(JSON_PROGRESS.0, JSON_PROGRESS.1)
        .timeout(RUN_LIMIT)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let state = s.state();
    let round = &state.rounds.spec_review[0];
    assert_eq!(round.gate, Gate::Pass, "{round:?}");
    assert!(round.failure.is_none(), "{round:?}");

    // The whole output is in the feature's agent-log, and the progress says it was cut.
    let log = s
        .demo
        .feature_dir()
        .join("agent-log/spec_review-spec_reviewer-r1-a1.stdout.log");
    let size = std::fs::metadata(&log).map(|m| m.len()).unwrap_or(0);
    assert!(
        size > 50_000_000,
        "whole output in {}: {size}",
        log.display()
    );
    let log_path = log.display().to_string();
    assert!(
        events_of(&stderr).iter().any(|e| matches!(
            e,
            Event::AgentOutputCut { agent, stream, note }
                if agent == "loud" && stream == "stdout"
                    && note.contains("bytes cut of") && note.contains(&log_path)
        )),
        "{stderr}"
    );
    // Nothing the run keeps or commits grows with the output.
    for entry in walkdir::WalkDir::new(s.demo.feature_dir())
        .into_iter()
        .filter_entry(|e| e.file_name() != "agent-log")
    {
        let entry = entry.unwrap();
        let len = entry.metadata().unwrap().len();
        assert!(
            len < 1024 * 1024,
            "{} is {len} bytes",
            entry.path().display()
        );
    }
    let committed =
        crate::support::git(&s.demo.repo, &["log", "--all", "--name-only", "--format="]);
    assert!(!committed.contains("agent-log"), "{committed}");
}

#[test]
fn a_1_mib_finding_is_cut_before_reviews_state_prompts_and_the_pr_body() {
    let gist = "G".repeat(1024 * 1024);
    let argument = "A".repeat(512 * 1024);
    let s = Scenario::new(
        json!({"review": {"1": [{"severity": "critical", "gist": gist, "argument": argument}]}}),
        "",
    );
    s.run_cmd().timeout(RUN_LIMIT).assert().success();
    let state = s.state();
    let first = &state.rounds.spec_review[0];
    assert_eq!(first.critical, 1, "the finding counted: {first:?}");
    let dir = s.demo.feature_dir();
    let review = std::fs::read_to_string(dir.join("reviews/spec-review-1.json")).unwrap();
    assert!(
        review.len() < 64 * 1024,
        "review file is {} bytes",
        review.len()
    );
    let parsed: serde_json::Value = serde_json::from_str(&review).unwrap();
    let kept = parsed["findings"][0]["gist"].as_str().unwrap();
    assert!(
        kept.starts_with("GGGG")
            && kept.ends_with(&format!("[… {} characters cut]", 1024 * 1024 - 500)),
        "{}",
        &kept[kept.len().saturating_sub(80)..]
    );
    let state_len = std::fs::metadata(dir.join("pipeline-state.json"))
        .unwrap()
        .len();
    assert!(state_len < 256 * 1024, "state is {state_len} bytes");
    let body = std::fs::read_to_string(dir.join("pr-body.md")).unwrap();
    assert!(
        body.chars().count() < 65_536,
        "PR body is {} chars",
        body.chars().count()
    );
    for r in s.requests_of("spec_author") {
        let prompt = r["prompt"].as_str().unwrap();
        assert!(
            prompt.len() < 64 * 1024,
            "a prompt of {} bytes",
            prompt.len()
        );
    }
}

#[test]
fn a_reviewer_answering_5000_findings_keeps_200_with_a_note() {
    let findings: Vec<_> = (0..5000)
        .map(|i| json!({"severity": "minor", "gist": format!("nit number {i}")}))
        .collect();
    let s = Scenario::new(json!({"review": {"1": findings}}), "");
    let out = s.run_cmd().timeout(RUN_LIMIT).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let state = s.state();
    let round = &state.rounds.spec_review[0];
    assert_eq!(round.minor, 200, "{round:?}");
    let review: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(s.demo.feature_dir().join("reviews/spec-review-1.json")).unwrap(),
    )
    .unwrap();
    let kept = review["findings"].as_array().unwrap();
    assert_eq!(kept.len(), 200);
    assert_eq!(
        kept[199]["gist"], "nit number 199",
        "the reviewer's order is kept"
    );
    assert!(
        stderr.contains("answered 5000 findings") && stderr.contains("4800 dropped"),
        "{stderr}"
    );
}

#[test]
fn an_author_writing_a_1_gib_spec_document_is_refused_at_its_size_and_asked_again() {
    const GIB: u64 = 1024 * 1024 * 1024;
    let s = Scenario::new(
        json!({"huge": {"files": {"requirement.md": GIB, "test.steps.json": GIB}, "times": 1}}),
        "",
    );
    let started = std::time::Instant::now();
    let out = s
        .run_cmd()
        .args(["--until", "inspect"])
        .timeout(RUN_LIMIT)
        .output()
        .unwrap();
    let took = started.elapsed();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    // Refused at its size, not read: no gigabyte in memory, no minute spent.
    let peak_mib = crate::support::children_peak_rss_kib() / 1024;
    assert!(peak_mib < 512, "peak RSS of a child: {peak_mib} MiB");
    assert!(took < Duration::from_secs(60), "took {took:?}");
    // The steps file is said to be too large and converted again; the document fails inspect
    // with its size and cap, and the author's fix passes.
    assert!(
        stderr.contains("test.steps.json: is 1024 MiB, more than the 4 MiB a steps file may have"),
        "{stderr}"
    );
    let inspect = s.state().inspect.expect("inspected");
    assert_eq!(inspect.runs, 2, "{inspect:?}");
    assert_eq!(inspect.gate, Gate::Pass, "{inspect:?}");
    let author = s.requests_of("spec_author");
    let fix = author[1]["prompt"].as_str().unwrap();
    assert!(
        fix.contains("is 1024 MiB, more than the 4 MiB a spec document may have"),
        "the author is told why: {fix}"
    );
    // Nothing of that size was committed.
    let sizes = crate::support::git(
        &s.demo.repo,
        &[
            "rev-list",
            "--objects",
            "--all",
            "--filter=blob:limit=4m",
            "--filter-print-omitted",
        ],
    );
    assert!(
        !sizes.lines().any(|l| l.starts_with('~')),
        "a blob over 4 MiB was committed: {sizes}"
    );
}

#[test]
fn a_reviewer_growing_a_spec_document_to_1_gib_is_undone_without_reading_it() {
    const GIB: u64 = 1024 * 1024 * 1024;
    let s = Scenario::new(
        json!({"huge": {"role": "spec_reviewer", "files": {"design.md": GIB}, "times": 1}}),
        "",
    );
    let started = std::time::Instant::now();
    let out = s
        .run_cmd()
        .args(["--until", "spec_review"])
        .timeout(RUN_LIMIT)
        .output()
        .unwrap();
    let took = started.elapsed();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.code().is_some(), "{stderr}");
    let peak_mib = crate::support::children_peak_rss_kib() / 1024;
    assert!(peak_mib < 512, "peak RSS of a child: {peak_mib} MiB");
    assert!(took < Duration::from_secs(60), "took {took:?}");
    // The guard saw the change by size, put the document back and recorded the violation.
    let design = s.demo.feature_dir().join("design.md");
    let len = std::fs::metadata(&design).unwrap().len();
    assert!(len < 64 * 1024, "design.md is {len} bytes");
    assert!(
        std::fs::read_to_string(&design)
            .unwrap()
            .contains("Traceability Matrix")
    );
    let state = s.state();
    let violations = failures_in(&state, BlockerCategory::SandboxViolation);
    assert!(!violations.is_empty(), "{state:?}");
}

#[test]
fn a_1_gib_prompt_override_ends_the_run_at_once_naming_the_file_and_the_cap() {
    let demo = Demo::new();
    let prompts = demo.repo.join(".specs/prompts");
    std::fs::create_dir_all(&prompts).unwrap();
    let huge = prompts.join("spec_author.md");
    // Sparse: a gigabyte on paper, nothing on disk, so only reading it would cost memory.
    std::fs::File::create(&huge)
        .unwrap()
        .set_len(1024 * 1024 * 1024)
        .unwrap();
    let started = std::time::Instant::now();
    let out = demo
        .run_cmd()
        .timeout(Duration::from_secs(60))
        .output()
        .expect("binary runs");
    let took = started.elapsed();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("spec_author.md"),
        "names the file: {stderr}"
    );
    assert!(
        stderr.contains("is 1024 MiB, more than the 1 MiB a prompt override may have"),
        "{stderr}"
    );
    let peak_mib = crate::support::children_peak_rss_kib() / 1024;
    assert!(peak_mib < 512, "peak RSS of a child: {peak_mib} MiB");
    assert!(took < Duration::from_secs(10), "took {took:?}");
}
