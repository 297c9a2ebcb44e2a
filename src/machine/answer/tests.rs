use super::*;

/// A run at `phase` waiting as `kind` (an arbitration after S1 at its loop).
fn at(phase: Phase, kind: Option<WaitKind>) -> State {
    crate::state::tests::waiting_at(phase, kind)
}

/// The commands a person can give, in the order of each row's expectations.
const COMMANDS: [PersonCommand; 8] = [
    PersonCommand::Approve,
    PersonCommand::Arbitrate(Answer::Continue),
    PersonCommand::Arbitrate(Answer::Swap),
    PersonCommand::Arbitrate(Answer::Draft),
    PersonCommand::Arbitrate(Answer::Approve),
    PersonCommand::Continue,
    PersonCommand::Draft,
    PersonCommand::Stop,
];

/// Where the run stands (its phase and what it waits for) and what each of [`COMMANDS`] leaves:
/// `Ok(phase)` when the decision applies, the refusal otherwise.
type Row = (Phase, Option<WaitKind>, [Result<Phase, Refusal>; 8]);

/// `arbitrate <answer>` at `phase`, where no arbitration is waited for: refused.
fn na(answer: Answer) -> impl Fn(Phase) -> Result<Phase, Refusal> {
    move |phase| Err(Refusal::NoArbitration { answer, phase })
}

/// The rows of a run waiting for approval, for an arbitration, and stopped by a limit.
fn approval_arbitration_and_stop_rows() -> Vec<Row> {
    use Answer as A;
    use Phase as P;
    use WaitKind as W;
    vec![
        (
            P::Approval,
            Some(W::Approval),
            [
                Ok(P::Approval),
                na(A::Continue)(P::Approval),
                na(A::Swap)(P::Approval),
                na(A::Draft)(P::Approval),
                na(A::Approve)(P::Approval),
                Err(Refusal::AwaitsApproval),
                Ok(P::Pr),
                Ok(P::Approval),
            ],
        ),
        (
            P::SpecReview,
            Some(W::Arbitration),
            [
                Err(Refusal::NotAtApproval {
                    phase: P::SpecReview,
                }),
                Ok(P::SpecGenerate),
                // The default config's author and reviewer differ: the reviewer swaps.
                Ok(P::SpecReview),
                Ok(P::Pr),
                Ok(P::Approval),
                Ok(P::SpecGenerate),
                Ok(P::Pr),
                Ok(P::SpecReview),
            ],
        ),
        (
            P::Implement,
            Some(W::Stopped),
            [
                Err(Refusal::NotAtApproval {
                    phase: P::Implement,
                }),
                na(A::Continue)(P::Implement),
                na(A::Swap)(P::Implement),
                na(A::Draft)(P::Implement),
                na(A::Approve)(P::Implement),
                Ok(P::Implement),
                Ok(P::Pr),
                Ok(P::Implement),
            ],
        ),
    ]
}

/// The rows of a run waiting on a confirmed dispute, on the PR permission, and not waiting.
fn dispute_permission_and_running_rows() -> Vec<Row> {
    use Answer as A;
    use Phase as P;
    use WaitKind as W;
    vec![
        (
            P::Implement,
            Some(W::Dispute),
            [
                Ok(P::SpecGenerate),
                Ok(P::Evaluate),
                Err(Refusal::DisputeWaits),
                Ok(P::Pr),
                Ok(P::SpecGenerate),
                Ok(P::Evaluate),
                Ok(P::Pr),
                Ok(P::Implement),
            ],
        ),
        (
            P::Pr,
            Some(W::PrPermission),
            [
                Err(Refusal::NotAtApproval { phase: P::Pr }),
                na(A::Continue)(P::Pr),
                na(A::Swap)(P::Pr),
                na(A::Draft)(P::Pr),
                na(A::Approve)(P::Pr),
                Ok(P::Pr),
                Err(Refusal::PrUnderway { phase: P::Pr }),
                Ok(P::Pr),
            ],
        ),
        (
            P::Evaluate,
            None,
            [
                Err(Refusal::NotAtApproval { phase: P::Evaluate }),
                na(A::Continue)(P::Evaluate),
                na(A::Swap)(P::Evaluate),
                na(A::Draft)(P::Evaluate),
                na(A::Approve)(P::Evaluate),
                Ok(P::Evaluate),
                Ok(P::Pr),
                Ok(P::Evaluate),
            ],
        ),
    ]
}

/// Every wait kind (and none) against every command, at the phase each wait happens.
#[test]
fn every_wait_kind_against_every_command() {
    let config = Config::default();
    let rows = approval_arbitration_and_stop_rows()
        .into_iter()
        .chain(dispute_permission_and_running_rows());
    for (phase, kind, expected) in rows {
        let state = at(phase, kind);
        for (command, want) in COMMANDS.iter().zip(expected) {
            let got = answer(&state, &config, *command, "o").map(|a| a.state.phase());
            assert_eq!(got, want, "{phase} waiting {kind:?}, {command:?}");
        }
    }
}

#[test]
fn what_each_applied_decision_leaves() {
    let config = Config::default();
    let approved = answer(
        &at(Phase::Approval, Some(WaitKind::Approval)),
        &config,
        PersonCommand::Approve,
        "octocat",
    )
    .expect("applies");
    assert_eq!(
        approved.state.approval.as_ref().map(|a| a.by.as_str()),
        Some("octocat")
    );
    assert!(approved.state.waiting.is_none());
    assert_eq!(approved.then, Then::Run);

    let stopped = answer(
        &at(Phase::Implement, None),
        &config,
        PersonCommand::Stop,
        "o",
    )
    .expect("applies");
    assert_eq!(
        stopped.state.waiting.as_ref().map(|w| w.kind),
        Some(WaitKind::Stopped)
    );
    assert!(
        matches!(stopped.then, Then::Halt(ref m) if m.starts_with("stopped by @o at implement"))
    );

    // A stop during an arbitration keeps the question.
    let kept = answer(
        &at(Phase::SpecReview, Some(WaitKind::Arbitration)),
        &config,
        PersonCommand::Stop,
        "o",
    )
    .expect("applies");
    assert_eq!(
        kept.state.waiting.as_ref().map(|w| w.kind),
        Some(WaitKind::Arbitration)
    );

    let draft = answer(
        &at(Phase::Implement, None),
        &config,
        PersonCommand::Draft,
        "o",
    )
    .expect("applies");
    let a = draft.state.arbitrations.last().expect("recorded");
    assert_eq!((a.signal, a.decision), (Signal::Manual, Decision::Draft));
    assert!(draft.state.completed_phases.contains(&Phase::Implement));
    assert!(draft.state.draft_reasons[0].contains("@o"));

    let swapped = answer(
        &at(Phase::SpecReview, Some(WaitKind::Arbitration)),
        &config,
        PersonCommand::Arbitrate(Answer::Swap),
        "o",
    )
    .expect("applies");
    let a = swapped.state.arbitrations.last().expect("recorded");
    assert_eq!(a.decision, Decision::Swap);
    assert_eq!(swapped.state.role_overrides.len(), 1);
    assert!(swapped.note.is_some_and(|n| n.contains("o swapped")));
}

/// A person's answer to a confirmed dispute: `approve` hands the case to the spec author as
/// an open finding on test.md, `continue` keeps the fix loop; both are recorded on the
/// dispute with who decided; a stop keeps the question.
#[test]
fn a_waiting_dispute_is_answered_by_a_person() {
    use crate::state::DisputeRecord;
    use crate::types::kinds::Ruling;
    let mut state = at(Phase::Implement, Some(WaitKind::Dispute));
    state.disputes.push(DisputeRecord {
        case: "T-A02".into(),
        task: "FIX1".into(),
        after_round: 1,
        by: "alpha".into(),
        argument: "REQ-002 says Saved.".into(),
        evidence: String::new(),
        reviewer: "beta".into(),
        ruling: Ruling::Confirmed,
        answer: "agreed".into(),
        case_hash: "h".into(),
        end: DisputeEnd::Waiting,
        decided_by: None,
    });
    let config = Config::default();
    let sent = answer(&state, &config, PersonCommand::Approve, "ann").unwrap();
    assert_eq!(sent.state.phase(), Phase::SpecGenerate);
    assert_eq!(sent.state.disputes[0].end, DisputeEnd::Spec);
    assert_eq!(sent.state.disputes[0].decided_by.as_deref(), Some("ann"));
    assert_eq!(sent.state.open_findings.len(), 1);
    assert_eq!(sent.state.open_findings[0].section, "T-A02");
    assert!(sent.state.waiting.is_none());
    let kept = answer(&state, &config, PersonCommand::Continue, "ann").unwrap();
    assert_eq!(kept.state.disputes[0].end, DisputeEnd::FixLoop);
    assert!(kept.state.open_findings.is_empty());
    let stopped = answer(&state, &config, PersonCommand::Stop, "ann").unwrap();
    assert_eq!(
        stopped.state.waiting.map(|w| w.kind),
        Some(WaitKind::Dispute)
    );
    assert_eq!(
        from_comment(Answer::Approve, false, &state),
        PersonCommand::Arbitrate(Answer::Approve)
    );
}

#[test]
fn a_comment_word_answers_a_waiting_arbitration_and_is_itself_otherwise() {
    let arbitration = at(Phase::SpecReview, Some(WaitKind::Arbitration));
    let free = at(Phase::Implement, None);
    for w in Answer::ALL {
        assert_eq!(
            from_comment(w, false, &arbitration),
            PersonCommand::Arbitrate(w)
        );
    }
    assert_eq!(
        from_comment(Answer::Continue, true, &arbitration),
        PersonCommand::Stop
    );
    assert_eq!(
        from_comment(Answer::Approve, false, &free),
        PersonCommand::Approve
    );
    assert_eq!(
        from_comment(Answer::Swap, false, &free),
        PersonCommand::Arbitrate(Answer::Swap)
    );
    assert_eq!(
        Refusal::NoArbitration {
            answer: Answer::Swap,
            phase: Phase::Implement
        }
        .reply(),
        "`swap` answers a stalled loop; nothing is waiting for an arbitration"
    );
}

#[test]
fn a_refused_pull_request_waits_at_pr_for_continue() {
    let mut s = at(Phase::Retrospective, None);
    s.completed_phases = vec![Phase::Intake, Phase::Pr];
    wait_for_pr_permission(&mut s, "turn the setting on".into());
    assert_eq!(s.phase(), Phase::Pr);
    assert_eq!(s.completed_phases, [Phase::Intake]);
    let w = s.waiting.as_ref().expect("waits");
    assert_eq!(
        (w.kind, w.choices.as_slice()),
        (WaitKind::PrPermission, [Answer::Continue].as_slice())
    );
}
