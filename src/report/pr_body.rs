//! The pull request body (what it contains and when it is ready: `docs/reports.md`).

use std::fmt::{Display, Write as _};
use std::path::Path;

use super::{ArbitrationColumns, Table, arbitration_table, cell, line, usage_table};
use crate::evidence::EvaluateResult;
use crate::review::dispute::excerpt;
use crate::state::State;
use crate::state::pr_review::{Answer, RoundStatus};
use crate::types::kinds::Gate;

/// Loads the last evaluate result of a feature directory, if any.
pub fn last_result(feature_dir: &Path, state: &State) -> Option<EvaluateResult> {
    let round = state.rounds.evaluate.last()?.round;
    let text = crate::util::read_to_string_max(
        &crate::types::evaluate_result_path(feature_dir, round),
        crate::fsx::Limit::Record,
    )
    .ok()?;
    serde_json::from_str(&text).ok()
}

/// Whether the PR may be ready (not draft): last evaluate gate passed, nothing unresolved, no
/// draft reason (blocked task, stall, budget).
pub fn is_ready(state: &State) -> bool {
    state
        .rounds
        .evaluate
        .last()
        .is_some_and(|r| r.gate == Gate::Pass)
        && state.draft_reasons.is_empty()
        && state.open_findings.is_empty()
        && state.stop.is_none()
}

/// How a stop kind reads in reports.
pub fn stop_kind(kind: crate::types::StopKind) -> &'static str {
    match kind {
        crate::types::StopKind::Budget => "budget",
        crate::types::StopKind::Quota => "spend cap / quota",
    }
}

/// The budget sentence and the history of stops, shared by the PR body and `status`.
pub fn budget_lines(state: &State) -> String {
    let mut s = String::new();
    if let Some(stop) = &state.stop {
        let _ = writeln!(
            s,
            "\n**Stopped ({}) at `{}`** with {:.4} USD spent{}.",
            stop_kind(stop.kind),
            stop.phase,
            stop.spent_usd,
            stop.budget_usd
                .map(|b| format!(" of a {b:.4} USD budget"))
                .unwrap_or_default()
        );
    }
    if !state.stops.is_empty() {
        let _ = writeln!(
            s,
            "\nResumed after {} stop(s): {}.",
            state.stops.len(),
            state
                .stops
                .iter()
                .map(|st| format!(
                    "{} at {} with {:.4} USD spent",
                    stop_kind(st.kind),
                    st.phase,
                    st.spent_usd
                ))
                .collect::<Vec<_>>()
                .join("; ")
        );
    }
    s
}

/// Renders the body, section by section in reading order; each section is a `write_*` below.
pub fn render(state: &State, result: Option<&EvaluateResult>) -> String {
    render_with(state, result, None)
}

/// [`render`], with an **Agent isolation** section after the sandbox violations when
/// `isolation` is given: how the run's agents were isolated, or why they could not be and which
/// protections were in force (`process::identity::describe`).
pub fn render_with(
    state: &State,
    result: Option<&EvaluateResult>,
    isolation: Option<&str>,
) -> String {
    render_full(state, result, isolation, None)
}

/// [`render_with`], with an **Imported spec** section after the inspection line when the run
/// started from an imported spec ([`imported_section`]).
pub fn render_full(
    state: &State,
    result: Option<&EvaluateResult>,
    isolation: Option<&str>,
    imported: Option<&str>,
) -> String {
    let ready = is_ready(state);
    let mut s = String::new();
    write_header(&mut s, state, ready);

    s.push_str("### Adversarial review history\n\n");
    write_spec_review_rounds(&mut s, state);
    if let Some(i) = &state.inspect {
        let _ = writeln!(
            s,
            "Inspection: {} run(s), last {} ({} critical, {} warning, {} info).\n",
            i.runs, i.gate, i.critical, i.warning, i.info
        );
    }
    if let Some(section) = imported {
        s.push_str(section);
    }
    write_evaluate_rounds(&mut s, state);
    write_disputes(&mut s, state);
    write_pr_review_rounds(&mut s, state);
    write_tasks(&mut s, state);
    s.push_str(&super::waves::history(state));
    write_arbitrations(&mut s, state);
    write_role_overrides(&mut s, state);
    write_violations(&mut s, state);
    if let Some(line) = isolation {
        let _ = write!(s, "#### Agent isolation\n\n{}\n\n", line);
    }

    s.push_str(&super::links::section(state, result));

    if !ready {
        write_unresolved(&mut s, state);
    }

    write_usage(&mut s, state);
    s.push_str("\n<sub>Rendered by spec-orchestrate from pipeline-state.json and the evaluate result files only.</sub>\n");
    super::fit::cap(s, super::fit::GITHUB_BODY_LIMIT, &see_report(state, result))
}

/// What the review changed against an imported original (docs/import.md): each requirement,
/// its original label and place, and whether its text is as imported, changed or gone; the
/// requirements the review added.
pub fn imported_section(docs: &crate::spec::SpecDocs) -> Option<String> {
    let map = docs.import.as_ref()?;
    let now = crate::spec::export::requirements(docs);
    let mut t = Table::new("Id | Original | Since the import");
    for (id, o) in map.ids.iter().filter(|(_, o)| !o.text.is_empty()) {
        let status = match now.iter().find(|(_, r)| &r.id == id) {
            None => "removed by the review",
            Some((_, r)) if r.text == o.text => "unchanged",
            Some(_) => "changed by the review",
        };
        t.row(&[id, &cell(&format!("{} (`{}`)", o.label, o.at)), &status]);
    }
    for (_, r) in now.iter().filter(|(_, r)| !map.ids.contains_key(&r.id)) {
        t.row(&[&r.id, &"—", &"added by the review"]);
    }
    Some(t.section(
        &format!(
            "#### Imported spec\n\nStarted from the {} spec `{}`; its files are unchanged, the review edited the four documents.\n\n",
            map.format, map.source
        ),
        "No requirements.\n\n",
    ))
}

/// One row per review round after the pull request: where its comments came from and what
/// they got.
fn write_pr_review_rounds(s: &mut String, state: &State) {
    let mut t = Table::new("Round | From | Comments | Fixed | Disputed | Open | Fix task | Status");
    for r in &state.rounds.pr_review {
        let count = |f: fn(&Answer) -> bool| r.answers.iter().filter(|(_, a)| f(a)).count();
        let status = match (r.status, r.signal) {
            (RoundStatus::Running, _) => "in flight".to_string(),
            (RoundStatus::Finished, Some(sig)) if r.swapped => {
                format!("answered ({sig}: fix by the other agent)")
            }
            (RoundStatus::Finished, _) => "answered".to_string(),
            (RoundStatus::Stopped, Some(sig)) => format!("stopped ({sig})"),
            (RoundStatus::Stopped, None) => "stopped".to_string(),
        };
        t.row(&[
            &r.round,
            &line(&r.from),
            &r.items.len(),
            &count(|a| matches!(a, Answer::Fixed { .. })),
            &count(|a| matches!(a, Answer::Disputed { .. })),
            &count(|a| matches!(a, Answer::Open { .. })),
            &r.task.as_deref().unwrap_or("—"),
            &status,
        ]);
    }
    s.push_str(&t.titled("#### Pull request review rounds\n\n"));
}

/// Where the rows a cut leaves out can be read: the report of the last round.
fn see_report(state: &State, result: Option<&EvaluateResult>) -> String {
    match result {
        Some(r) => super::links::report_line(
            r.round,
            crate::state::job::EvidenceLinks::of(state, r.round).as_ref(),
        ),
        None => "`spec-orchestrate status`".into(),
    }
}

/// The title, the issue it closes, the status line and, for a draft, why.
fn write_header(s: &mut String, state: &State, ready: bool) {
    let _ = writeln!(s, "## {}\n", line(&state.issue.title));
    if let Some(n) = state.issue.number {
        let _ = writeln!(s, "Closes #{n}\n");
    }
    let done = state
        .tasks
        .iter()
        .filter(|t| t.status == crate::state::TaskStatus::Done)
        .count();
    let _ = writeln!(
        s,
        "**Status: {}.** Feature `{}`, run `{}`, mode {:?}. {} of {} tasks committed on `{}`.\n",
        if ready {
            "ready for review"
        } else {
            "draft — not verified as mergeable"
        },
        state.feature,
        state.run_id,
        state.mode,
        done,
        state.tasks.len(),
        state
            .branch
            .as_ref()
            .map(|b| b.name.as_str())
            .unwrap_or("-"),
    );
    if !ready && (!state.draft_reasons.is_empty() || state.stop.is_some()) {
        s.push_str("Why this is a draft:\n");
        if let Some(stop) = &state.stop {
            let _ = writeln!(
                s,
                "- **Run stopped at `{}`** ({}): {}",
                stop.phase,
                stop_kind(stop.kind),
                line(&stop.message)
            );
        }
        for r in &state.draft_reasons {
            let _ = writeln!(s, "- {}", line(r));
        }
        s.push('\n');
    }
}

/// The spec review rounds, with each round's reviewers and gate.
fn write_spec_review_rounds(s: &mut String, state: &State) {
    let mut t =
        Table::new("Round | Reviewer | Critical | Improvement | Minor | Fix required | Gate");
    for r in &state.rounds.spec_review {
        let gate = match &r.failure {
            Some(f) => format!("{} (failed: {})", r.gate, cell(f)),
            None => r.gate.to_string(),
        };
        let mut reviewer = format!("{} ({})", r.reviewer, r.strategy);
        if !r.members.is_empty() {
            reviewer.push_str(&format!(": {}", r.members.join(", ")));
        }
        if !r.skipped.is_empty() {
            reviewer.push_str(&format!("; skipped {}", r.skipped.join("; ")));
        }
        t.row(&[
            &r.round,
            &cell(&reviewer),
            &r.critical,
            &r.improvement,
            &r.minor,
            &r.fix_required,
            &gate,
        ]);
    }
    s.push_str(&t.section("#### spec_review\n\n", "No rounds.\n\n"));
}

/// The evaluate rounds; a rubric column only when some round was scored.
fn write_evaluate_rounds(s: &mut String, state: &State) {
    let scored = state
        .rounds
        .evaluate
        .iter()
        .any(|r| r.rubric_score.is_some());
    let mut t = Table::new(if scored {
        "Round | Pass | Fail | Blocked | Rubric | Gate"
    } else {
        "Round | Pass | Fail | Blocked | Gate"
    });
    for r in &state.rounds.evaluate {
        let score = r
            .rubric_score
            .map_or_else(|| "—".into(), |v| format!("{v:.2}"));
        let mut row: Vec<&dyn Display> = vec![&r.round, &r.pass, &r.fail, &r.blocked, &r.gate];
        if scored {
            row.insert(4, &score);
        }
        t.row(&row);
    }
    s.push_str(&t.section("#### evaluate\n\n", "No rounds.\n\n"));
}

/// Longest quote of an argument in a table cell, in characters: enough to read the point.
const QUOTE_CHARS: usize = 280;

/// Every dispute of a failed acceptance case: who disputed it and why, who ruled and why, and
/// how it ended (nothing when no case was disputed).
fn write_disputes(s: &mut String, state: &State) {
    let mut t = Table::new(
        "Case | After round | Disputed by | Argument | Ruled by | Ruling | Ruling's argument | Ended",
    );
    for d in &state.disputes {
        let ended = match &d.decided_by {
            Some(by) => format!("{} (decided by {by})", d.end.describe()),
            None => d.end.describe().to_string(),
        };
        t.row(&[
            &cell(&d.case),
            &d.after_round,
            &format!("{} ({})", d.by, cell(&d.task)),
            &cell(&excerpt(&d.argument, QUOTE_CHARS)),
            &d.reviewer,
            &d.ruling,
            &cell(&excerpt(&d.answer, QUOTE_CHARS)),
            &cell(&ended),
        ]);
    }
    s.push_str(&t.titled("#### Disputed acceptance cases\n\n"));
}

/// The last argument for an open finding and the last one against it, quoted: a case whose
/// dispute was rejected stands on the reviewer's argument against the implementer's; a
/// confirmed dispute argues against the case's failure; otherwise the finding's own argument
/// and none against.
fn for_and_against(state: &State, f: &crate::types::Finding) -> (String, String) {
    let dispute = crate::review::dispute::last_of(state, f);
    let (pro, contra) = match dispute {
        Some(d) if d.ruling == crate::types::kinds::Ruling::Rejected => (
            format!("{} (task reviewer): {}", d.reviewer, d.answer),
            format!("{} (implementer): {}", d.by, d.argument),
        ),
        // The finding is the confirmed dispute itself, sent to the spec author.
        Some(d)
            if crate::review::dispute::finding(d, &f.requirement_id).fingerprint
                == f.fingerprint =>
        {
            (
                format!(
                    "{} (implementer, confirmed by {}): {}",
                    d.by, d.reviewer, d.argument
                ),
                "—".to_string(),
            )
        }
        Some(d) => (
            f.argument.clone(),
            format!(
                "{} (implementer, confirmed by {}): {}",
                d.by, d.reviewer, d.argument
            ),
        ),
        None => (f.argument.clone(), "—".to_string()),
    };
    (excerpt(&pro, QUOTE_CHARS), excerpt(&contra, QUOTE_CHARS))
}

/// Every task with its agents, attempts, status and commit.
fn write_tasks(s: &mut String, state: &State) {
    s.push_str("#### Tasks\n\n");
    let mut t = Table::new("Task | Kind | Implementer | Reviewer | Attempts | Status | Commit");
    for task in &state.tasks {
        let status = match &task.blocker {
            Some(b) => format!("{:?} ({b})", task.status).to_lowercase(),
            None => format!("{:?}", task.status).to_lowercase(),
        };
        t.row(&[
            &task.id,
            &task.kind,
            &task.implementer,
            &task.reviewer,
            &task.attempts,
            &status,
            &super::commit_cell(task.commit.as_deref()),
        ]);
    }
    let _ = writeln!(s, "{t}");
}

/// Every arbitration taken, with who decided what.
fn write_arbitrations(s: &mut String, state: &State) {
    let t = arbitration_table(state, ArbitrationColumns::Full);
    s.push_str(&t.section("#### Arbitrations\n\n", "None.\n\n"));
}

/// Roles that ran on another agent than configured: reduced cross-model assurance.
fn write_role_overrides(s: &mut String, state: &State) {
    let mut t = Table::new("Role | Configured | Used | Reason");
    for o in &state.role_overrides {
        t.row(&[&o.role, &o.from, &o.to, &cell(&o.reason)]);
    }
    let heading = if t.is_empty() {
        "#### Role overrides\n\n"
    } else {
        "#### Role overrides\n\n⚠️ Reduced cross-model assurance: some roles ran on another agent than configured.\n\n"
    };
    s.push_str(&t.section(heading, "None: every role ran on its configured agent.\n\n"));
}

/// The kinds of line an agent can cross: a sandbox violation is recorded by three guards, and
/// each is undone differently, so people reading the PR are told which. Each row: the words by
/// which its guard's sentence is known (their sentences in `phases.rs`; none for the change of
/// files, which is everything else), the sub-heading, what was done about it, and the last
/// column's name.
const CROSSED: [(Option<&str>, &str, &str, &str); 3] = [
    // A path outside the writer's room, or any path of a read-only role: undone.
    (
        None,
        "Files outside their room",
        "Every change listed was undone and none is in a commit.",
        "Undone",
    ),
    // The runner's file commands (`process::guard`): put back.
    (
        Some("the runner's file commands"),
        "The runner's file commands",
        "Agents, or programs they started, changed the runner's file commands, which the runner applies to the job's later steps (`GITHUB_ENV`, `GITHUB_PATH`, outputs, state, summary); each file was put back before the step ended.",
        "Put back",
    ),
    // A non-model endpoint asked of the model API proxy: refused, never forwarded.
    (
        Some("asked the model API proxy"),
        "Non-model API requests",
        "Agents asked the model API proxy for endpoints that are not model calls; each request was refused (403) without being forwarded, so the key behind it was never used for it.",
        "Refused",
    ),
];

/// Every line an agent crossed (all undone or refused), when there was any, one table per kind:
/// people reading the PR learn that an agent of this run tried to reach where it may not.
fn write_violations(s: &mut String, state: &State) {
    let found: Vec<_> = state
        .agent_failures
        .iter()
        .filter(|f| f.category == crate::types::kinds::BlockerCategory::SandboxViolation)
        .collect();
    if found.is_empty() {
        return;
    }
    s.push_str("#### Sandbox violations\n\n⚠️ Agents of this run reached outside what they may; each attempt below was undone or refused.\n\n");
    let kind_of = |detail: &str| {
        (CROSSED.iter())
            .position(|(words, ..)| words.is_some_and(|w| detail.contains(w)))
            .unwrap_or(0)
    };
    for (kind, (words, heading, done, column)) in CROSSED.iter().enumerate() {
        let mut t = Table::new(&format!("Phase | Role | Agent | {column}"));
        for f in found.iter().filter(|f| kind_of(&f.detail) == kind) {
            let what = if f.paths.is_empty() {
                // The guard's sentence names the role and agent, already in their columns; what
                // it lists follows its first `: `.
                let listed = words.and_then(|_| f.detail.split_once(": "));
                cell(listed.map_or(f.detail.as_str(), |(_, list)| list))
            } else {
                f.paths
                    .iter()
                    .map(|p| format!("`{}`", cell(p)))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            t.row(&[&f.phase, &f.role, &f.agent, &what]);
        }
        s.push_str(&t.titled(&format!("##### {heading}\n\n{done}\n\n")));
    }
}

/// The findings left open, for a draft.
fn write_unresolved(s: &mut String, state: &State) {
    let mut t = Table::new(
        "Fingerprint | Severity | Requirement | Where | Gist | Last argument for | Last argument against",
    );
    for f in &state.open_findings {
        let (pro, contra) = for_and_against(state, f);
        t.row(&[
            &format!("`{}`", f.fingerprint.as_deref().unwrap_or("")),
            &f.severity.as_str(),
            &cell(&f.requirement_id),
            &cell(&format!("{} § {}", f.file, f.section)),
            &cell(&f.gist),
            &cell(&pro),
            &cell(&contra),
        ]);
    }
    s.push_str(&t.section(
        "### Unresolved\n\n",
        "No open findings were recorded; see the draft reasons above.\n\n",
    ));
}

/// Usage per agent, the total and the budget sentence.
fn write_usage(s: &mut String, state: &State) {
    s.push_str("### Usage\n\n");
    s.push_str(&usage_table(state));
    s.push_str(&budget_lines(state));
}
