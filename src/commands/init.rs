//! `init`: write a starting configuration and the GitHub workflow, never overwriting.

use std::path::Path;

use super::{Exit, repo_root};
use crate::config::{Config, GithubConfig};
use crate::error::{ConfigError, Error, Result};
use crate::util;

/// The configuration written by `init`: every default spelled out, so that it documents itself,
/// and a budget ([`INIT_BUDGET_USD`]).
pub const CONFIG_TEMPLATE: &str = include_str!("../../examples/pipeline.yml");
/// The workflow written by `init` for the default `github.*` settings; [`workflow`] renders it
/// for others.
pub const WORKFLOW_TEMPLATE: &str = include_str!("../../examples/workflow.yml");
/// The `limits.budget_usd` that `init` writes. The schema's default is no budget (a
/// configuration written by hand stays as it was), but a new user's first unattended run should
/// not be unbounded: 20 USD covers a typical issue with two frontier models several times over,
/// and a run that reaches it stops as a draft that `resume` continues once it is raised.
pub const INIT_BUDGET_USD: f64 = 20.0;
/// Where `init` writes the workflow.
pub const WORKFLOW_PATH: &str = ".github/workflows/spec-orchestrate.yml";

/// The comment filter of the template's `if:`: only people the repository knows start a job, so
/// a stranger's `/spec-orchestrate` comment does not pull the image with the API keys in its
/// environment just to be refused by the binary's own permission check.
const ASSOCIATION_FILTER: &str = "contains(fromJSON('[\"OWNER\", \"MEMBER\", \"COLLABORATOR\"]'), github.event.comment.author_association)";

/// Writes the files that are absent and reports each. The workflow's `if:` names the labels of
/// the repository's configuration (read after the configuration is written, so a fresh
/// repository gets the defaults).
/// With `sweep`, the workflow also runs on a schedule to find stalled chains
/// (`commands/action/sweep.rs`).
pub fn init(repo: Option<&Path>, sweep: bool) -> Result<Exit> {
    let repo = repo_root(repo)?;
    write_once(&repo, crate::config::CONFIG_PATH, || {
        Ok(CONFIG_TEMPLATE.into())
    })?;
    write_once(&repo, WORKFLOW_PATH, || {
        let config = Config::load(&repo, None)?;
        let text = workflow(&config.github, &repo.join(crate::config::CONFIG_PATH))?;
        Ok(if sweep { with_sweep(&text) } else { text })
    })?;
    Ok(Exit::Ok)
}

/// The workflow `text` with the scheduled sweep: a `schedule:` trigger (hourly, at a minute off
/// the hour, when GitHub's scheduler is least loaded), let through the `if:`, in a concurrency
/// group of its own (the sweep belongs to no issue).
pub fn with_sweep(text: &str) -> String {
    let text = replace_once(
        text,
        "# Each job says what its token may do",
        "  # `init --sweep`: find chains whose next run was cancelled or failed without a re-run;
  # resume them or say why on the issue.
  schedule:
    - cron: \"41 * * * *\"
# Each job says what its token may do",
    );
    let text = replace_once(
        &text,
        "      github.event_name == 'workflow_dispatch' ||\n",
        "      github.event_name == 'schedule' || github.event_name == 'workflow_dispatch' ||\n",
    );
    replace_once(
        &text,
        "|| github.event.issue.number || inputs.issue }}",
        "|| github.event.issue.number || inputs.issue || 'sweep' }}",
    )
}

/// Writes `rel` with `text()` unless it exists; `text` is only computed when it is written.
fn write_once(repo: &Path, rel: &str, text: impl FnOnce() -> Result<String>) -> Result<()> {
    let path = repo.join(rel);
    if path.exists() {
        super::note(format!("kept     {rel} (exists; init never overwrites)"));
        return Ok(());
    }
    util::write_text(&path, &text()?)?;
    super::note(format!("wrote    {rel}"));
    Ok(())
}

/// The workflow for `github`: its trigger and approve labels in the `if:` and the header, and
/// its `allowed_bots` let through the comment filter (the binary still checks each of them).
/// `config_file` is named in errors.
pub fn workflow(github: &GithubConfig, config_file: &Path) -> Result<String> {
    let defaults = GithubConfig::default();
    let trigger = label(&github.trigger_label, "github.trigger_label", config_file)?;
    let approve = label(&github.approve_label, "github.approve_label", config_file)?;
    let mut text = WORKFLOW_TEMPLATE.to_string();
    // `{}` in `pattern` once as the default, once as the configured value.
    let swap = |text: &str, pattern: &str, default: &str, configured: &str| {
        replace_once(
            text,
            &pattern.replace("{}", default),
            &pattern.replace("{}", configured),
        )
    };
    let label_expr = "github.event.label.name == '{}'";
    for (default, configured, prose) in [
        (&defaults.trigger_label, trigger, "add the `{}` label"),
        (&defaults.approve_label, approve, "the `{}` label approves"),
    ] {
        let (d, c) = (expression_string(default), expression_string(configured));
        text = swap(&text, label_expr, &d, &c);
        text = swap(&text, prose, default, configured);
    }
    // The review trigger's head branch filter follows `github.branch_prefix`.
    let (d, c) = (
        expression_string(&defaults.branch_prefix),
        expression_string(&github.branch_prefix),
    );
    text = swap(&text, "github.event.pull_request.head.ref, '{}'", &d, &c);
    if !github.allowed_bots.is_empty() {
        // Bots have no association with the repository; the binary checks them against the
        // same list before anything else.
        let bots = serde_json::Value::from(github.allowed_bots.clone()).to_string();
        text = replace_once(
            &text,
            &format!("       {ASSOCIATION_FILTER})\n"),
            &format!(
                "       ({ASSOCIATION_FILTER} ||\n        contains(fromJSON('{}'), github.event.comment.user.login)))\n",
                expression_string(&bots)
            ),
        );
    }
    Ok(text)
}

/// A label name that can stand in the workflow: in a YAML comment and in a quoted expression
/// string, neither of which may span lines.
fn label<'a>(name: &'a str, key: &str, config_file: &Path) -> Result<&'a str> {
    if name.trim().is_empty() || name.chars().any(char::is_control) || name.contains("${{") {
        return Err(Error::Config(Box::new(ConfigError {
            file: config_file.to_path_buf(),
            line: None,
            key: key.into(),
            problem: format!("{name:?} cannot be written into the workflow's `if:`"),
            help: "use a label name on one line, without control characters or `${{`".into(),
        })));
    }
    Ok(name)
}

/// `s` inside a single-quoted Actions expression string, where a quote is written twice.
fn expression_string(s: &str) -> String {
    s.replace('\'', "''")
}

/// Replaces the one occurrence of `from` the template has; the unit tests hold the template to
/// having exactly one, so a template edit cannot silently stop the rendering.
fn replace_once(text: &str, from: &str, to: &str) -> String {
    debug_assert_eq!(
        text.matches(from).count(),
        1,
        "template holds `{from}` once"
    );
    text.replacen(from, to, 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render(github: &GithubConfig) -> String {
        workflow(github, Path::new(".specs/pipeline.yml")).unwrap()
    }

    fn condition(text: &str) -> String {
        let w: serde_json::Value = serde_saphyr::from_str(text).unwrap();
        w["jobs"]["phase"]["if"].as_str().unwrap().to_string()
    }

    #[test]
    fn the_written_configuration_sets_the_documented_budget_and_otherwise_the_defaults() {
        let parsed = Config::parse(CONFIG_TEMPLATE, Path::new(".specs/pipeline.yml")).unwrap();
        assert_eq!(parsed.limits.budget_usd, Some(INIT_BUDGET_USD));
        let mut rest = parsed.clone();
        rest.limits.budget_usd = None;
        assert_eq!(rest, Config::default());
        assert!(CONFIG_TEMPLATE.contains("spec-orchestrate resume"));
    }

    #[test]
    fn the_defaults_render_the_template_itself() {
        assert_eq!(render(&GithubConfig::default()), WORKFLOW_TEMPLATE);
    }

    #[test]
    fn configured_labels_replace_the_defaults_in_the_condition_and_the_header() {
        let github = GithubConfig {
            trigger_label: "ai: build it".into(),
            approve_label: "Spec O'K".into(),
            ..GithubConfig::default()
        };
        let text = render(&github);
        let cond = condition(&text);
        assert!(
            cond.contains("github.event.label.name == 'ai: build it'"),
            "{cond}"
        );
        assert!(
            cond.contains("github.event.label.name == 'Spec O''K'"),
            "{cond}"
        );
        assert!(!cond.contains("'spec-approved'"), "{cond}");
        assert!(!cond.contains("== 'spec-orchestrate'"), "{cond}");
        assert!(cond.contains("startsWith(github.event.comment.body, '/spec-orchestrate')"));
        assert!(text.contains("add the `ai: build it` label"));
        assert!(text.contains("the `Spec O'K` label approves"));
    }

    #[test]
    fn allowed_bots_pass_the_comment_filter_by_login() {
        let github = GithubConfig {
            allowed_bots: vec!["renovate[bot]".into()],
            ..GithubConfig::default()
        };
        let cond = condition(&render(&github));
        assert!(
            cond.contains(
                "(contains(fromJSON('[\"OWNER\", \"MEMBER\", \"COLLABORATOR\"]'), github.event.comment.author_association) ||\n  contains(fromJSON('[\"renovate[bot]\"]'), github.event.comment.user.login)))"
            ),
            "{cond}"
        );
        assert_eq!(
            cond.matches('(').count(),
            cond.matches(')').count(),
            "{cond}"
        );
    }

    #[test]
    fn the_sweep_adds_a_schedule_the_condition_lets_through_in_a_group_of_its_own() {
        let plain = render(&GithubConfig::default());
        let w: serde_json::Value = serde_saphyr::from_str(&plain).unwrap();
        assert!(w["on"]["schedule"].is_null(), "off unless asked for");
        let text = with_sweep(&plain);
        let w: serde_json::Value = serde_saphyr::from_str(&text).unwrap();
        assert_eq!(w["on"]["schedule"][0]["cron"], "41 * * * *");
        assert!(condition(&text).starts_with("github.event_name == 'schedule' ||"));
        assert!(
            w["jobs"]["phase"]["concurrency"]["group"]
                .as_str()
                .unwrap()
                .ends_with("|| 'sweep' }}")
        );
        assert_eq!(
            w["permissions"],
            serde_saphyr::from_str::<serde_json::Value>(&plain).unwrap()["permissions"]
        );
    }

    #[test]
    fn the_review_trigger_follows_the_configured_branch_prefix() {
        let text = render(&GithubConfig {
            branch_prefix: "bots/so-".into(),
            ..GithubConfig::default()
        });
        let cond = condition(&text);
        assert!(
            cond.contains("startsWith(github.event.pull_request.head.ref, 'bots/so-')"),
            "{cond}"
        );
        assert!(!cond.contains("'spec-orchestrate/'"), "{cond}");
    }

    #[test]
    fn the_run_name_titles_a_run_as_the_action_looks_it_up() {
        let w: serde_json::Value = serde_saphyr::from_str(WORKFLOW_TEMPLATE).unwrap();
        let name = w["run-name"].as_str().unwrap();
        let evaluated = name.replace("${{ github.event.issue.number || inputs.issue }}", "1347");
        assert_eq!(
            evaluated,
            crate::commands::action::plan::run_title(1347.into())
        );
    }

    #[test]
    fn a_label_that_cannot_be_written_is_a_config_error() {
        for bad in ["", "two\nlines", "${{ secrets.X }}"] {
            let github = GithubConfig {
                trigger_label: bad.into(),
                ..GithubConfig::default()
            };
            let err = workflow(&github, Path::new(".specs/pipeline.yml")).unwrap_err();
            assert!(err.to_string().contains("github.trigger_label"), "{err}");
        }
    }
}
