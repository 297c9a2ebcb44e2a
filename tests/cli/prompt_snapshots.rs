//! The rendered prompt of each role, as the agents received it, one snapshot per role: the
//! demo's issue run end to end (author, spec reviewer, contract reviewer, browser-step
//! converter, implementer, task reviewer, rubric scorer) and a stand-alone debate (debaters,
//! judge). What changes between runs is normalised here, in the test: the per-call markers'
//! random codes and the temp directory. The prompts themselves are what production renders.
//!
//! The demo run needs `/usr/bin/chromium` (or `SPEC_ORCHESTRATE_BROWSER`) and the driver's npm
//! packages, as `evidence` does.

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};

use crate::support::{Demo, SCENARIO_ROLES, bin, scenario_agent_entry, tempdir};

/// The prompt with the run's random parts replaced: the codes of the `<<<NAME-code` /
/// `NAME-code>>>` markers (numbered in order of appearance, so that two blocks sharing a code
/// still read alike) and the temp directory.
pub(crate) fn normalised(prompt: &str, tmp: &Path) -> String {
    let text = prompt.replace(&tmp.display().to_string(), "<TMP>");
    let marker = regex::Regex::new(r"(<<<[A-Z][A-Z_]*|[A-Z][A-Z_]*)-([0-9a-f]{12})").unwrap();
    let mut codes: Vec<String> = Vec::new();
    marker
        .replace_all(&text, |c: &regex::Captures| {
            let code = c[2].to_string();
            let n = codes.iter().position(|k| *k == code).unwrap_or_else(|| {
                codes.push(code);
                codes.len() - 1
            });
            format!("{}-<code{n}>", &c[1])
        })
        .into_owned()
}

fn requests(log: &Path) -> Vec<Value> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The first request matching `pick`, its prompt normalised.
fn first(requests: &[Value], what: &str, tmp: &Path, pick: impl Fn(&Value) -> bool) -> String {
    let r = requests
        .iter()
        .find(|r| pick(r))
        .unwrap_or_else(|| panic!("no {what} request among {}", requests.len()));
    normalised(r["prompt"].as_str().unwrap(), tmp)
}

#[test]
fn the_prompt_of_every_role_of_the_demo_run() {
    let demo = Demo::new();
    // The wrapped agents log their requests here, as the agents' identity when the
    // orchestrator is root (the demo's own temp dir is private).
    let logs = tempdir();
    let log = logs.path().join("requests.jsonl");
    let wrapper = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/agents/log_then.py");
    let agents = demo.agents();
    let mut config = demo.config();
    for name in ["author", "reviewer", "implementer"] {
        let script = format!("\"python3\", \"{}/{name}.py\"", agents.display());
        let logged = format!(
            "\"python3\", \"{}\", \"{}\", \"{}/{name}.py\"",
            wrapper.display(),
            log.display(),
            agents.display()
        );
        assert!(config.contains(&script), "{config}");
        config = config.replace(&script, &logged);
    }
    let config = config.replacen(
        "limits:",
        "evaluate:\n  rubric:\n    criteria: { design: 3, craft: { weight: 1, pass: 6 }, polish: { weight: 1, definition: \"every state looks intended\" } }\n    pass: 7.0\nlimits:",
        1,
    );
    demo.write_config(&config);
    let out = demo
        .run_cmd()
        .timeout(Duration::from_secs(300))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let all = requests(&log);
    let tmp = demo.tmp.path();
    let is = |r: &Value, role: &str, phase: &str| r["role"] == role && r["phase"] == phase;
    let shots = [
        (
            "prompt_spec_author",
            first(&all, "spec_author", tmp, |r| r["role"] == "spec_author"),
        ),
        (
            "prompt_spec_reviewer",
            first(&all, "spec_reviewer", tmp, |r| r["role"] == "spec_reviewer"),
        ),
        (
            "prompt_contract_reviewer",
            first(&all, "contract", tmp, |r| {
                is(r, "e2e_runner", "spec_review")
            }),
        ),
        (
            "prompt_step_converter",
            first(&all, "converter", tmp, |r| {
                is(r, "e2e_runner", "spec_generate")
            }),
        ),
        (
            "prompt_implementer",
            first(&all, "implementer", tmp, |r| {
                r["role"].as_str().unwrap().starts_with("impl_")
            }),
        ),
        (
            "prompt_task_reviewer",
            first(&all, "task_reviewer", tmp, |r| r["role"] == "task_reviewer"),
        ),
        (
            "prompt_rubric_scorer",
            first(&all, "scorer", tmp, |r| is(r, "e2e_runner", "evaluate")),
        ),
    ];
    for (name, prompt) in shots {
        assert!(!prompt.contains(&tmp.display().to_string()));
        insta::assert_snapshot!(name, prompt);
    }
}

#[test]
fn the_prompts_of_the_debaters_and_the_judge() {
    // The scripted debaters log their requests here, as the agents' identity when root runs.
    let tmp = tempdir();
    let dir = tmp.path();
    let spec = dir.join("spec.md");
    std::fs::write(
        &spec,
        "# Ledger: delete an entry\n\nA Delete button per row asks for confirmation; only the owner may delete.\n",
    )
    .unwrap();
    let finding = |id: &str, gist: &str| json!({"id": id, "gist": gist, "section": "Delete", "file": "spec.md"});
    let a = json!({"findings": [finding("F1", "the confirmation text is not given")], "remaining_disputes": ["B.F1"]});
    let b = json!({"findings": [finding("F1", "nothing says who the owner of an entry is")], "remaining_disputes": ["A.F1"]});
    let scenario = json!({
        "debate": {
            "A": {"1": {"findings": [finding("F1", "the confirmation text is not given")]}, "2": a, "3": a},
            "B": {"1": {"findings": [finding("F1", "nothing says who the owner of an entry is")]}, "2": b, "3": b}
        },
        "judge": {"decisions": [
            {"id": "A.F1", "decision": "rejected", "reason": "the wording is the implementer's choice"},
            {"id": "B.F1", "decision": "adopted", "reason": "ownership decides the check"}
        ], "spec": "# Ledger: delete an entry\n\nA Delete button per row asks for confirmation; only the entry's creator may delete it.\n"}
    });
    std::fs::write(dir.join("scenario.json"), scenario.to_string()).unwrap();
    let config = dir.join("pipeline.yml");
    std::fs::write(
        &config,
        format!(
            "agents:\n  alpha: {}\n  beta: {}\n{SCENARIO_ROLES}",
            scenario_agent_entry(dir, "beta", ""),
            scenario_agent_entry(dir, "alpha", "")
        ),
    )
    .unwrap();
    bin()
        .arg("debate")
        .arg(&spec)
        .arg("--config")
        .arg(&config)
        .timeout(Duration::from_secs(120))
        .assert()
        .success();
    let all = requests(&dir.join("requests.jsonl"));
    let debater = |round: u64| {
        first(&all, "debater", dir, |r| {
            r["role"] == "debater" && r["label"] == "A" && r["round"] == round
        })
    };
    // No configured agent name reaches a debater or the judge (the temp dir is not a prompt).
    for r in all
        .iter()
        .filter(|r| r["role"] == "debater" || r["role"] == "judge")
    {
        let prompt = normalised(r["prompt"].as_str().unwrap(), dir).to_lowercase();
        assert!(
            !prompt.contains("alpha") && !prompt.contains("beta"),
            "{prompt}"
        );
    }
    insta::assert_snapshot!("prompt_debater_round_1", debater(1));
    insta::assert_snapshot!("prompt_debater_round_2", debater(2));
    insta::assert_snapshot!(
        "prompt_judge",
        first(&all, "judge", dir, |r| r["role"] == "judge")
    );
}
