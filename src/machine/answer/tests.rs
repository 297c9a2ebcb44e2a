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

/// The rows of a run waiting for approval, for an arbitration, stopped by a limit, on a
/// confirmed dispute, on the PR permission, and not waiting.
fn rows() -> Vec<Row> {
    use Answer as A;
    use Phase as P;
    use WaitKind as W;
    let not_at = |phase| Err(Refusal::NotAtApproval { phase });
    let no_arbitration = |p| {
        [
            na(A::Continue)(p),
            na(A::Swap)(p),
            na(A::Draft)(p),
            na(A::Approve)(p),
        ]
    };
    let [ac, asw, ad, aa] = no_arbitration(P::Approval);
    let [ic, isw, id, ia] = no_arbitration(P::Implement);
    let [pc, psw, pd, pa] = no_arbitration(P::Pr);
    let [ec, esw, ed, ea] = no_arbitration(P::Evaluate);
    let (awaits, underway) = (
        Err(Refusal::AwaitsApproval),
        Err(Refusal::PrUnderway { phase: P::Pr }),
    );
    // At a spec review arbitration the default config's author and reviewer differ: the reviewer swaps.
    #[rustfmt::skip]
    let rows = vec![
        //                                    Approve                arbitrate: continue   swap                        draft      approve              Continue             Draft      Stop
        (P::Approval, Some(W::Approval),      [Ok(P::Approval),      ac,                   asw,                        ad,        aa,                  awaits,              Ok(P::Pr), Ok(P::Approval)]),
        (P::SpecReview, Some(W::Arbitration), [not_at(P::SpecReview), Ok(P::SpecGenerate), Ok(P::SpecReview),          Ok(P::Pr), Ok(P::Approval),     Ok(P::SpecGenerate), Ok(P::Pr), Ok(P::SpecReview)]),
        (P::Implement, Some(W::Stopped),      [not_at(P::Implement), ic,                   isw,                        id,        ia,                  Ok(P::Implement),    Ok(P::Pr), Ok(P::Implement)]),
        (P::Implement, Some(W::Dispute),      [Ok(P::SpecGenerate),  Ok(P::Evaluate),      Err(Refusal::DisputeWaits), Ok(P::Pr), Ok(P::SpecGenerate), Ok(P::Evaluate),     Ok(P::Pr), Ok(P::Implement)]),
        (P::Pr, Some(W::PrPermission),        [not_at(P::Pr),        pc,                   psw,                        pd,        pa,                  Ok(P::Pr),           underway,  Ok(P::Pr)]),
        (P::Evaluate, None,                   [not_at(P::Evaluate),  ec,                   esw,                        ed,        ea,                  Ok(P::Evaluate),     Ok(P::Pr), Ok(P::Evaluate)]),
    ];
    rows
}

/// Every wait kind (and none) against every command, at the phase each wait happens.
#[test]
fn every_wait_kind_against_every_command() {
    let config = Config::default();
    for (phase, kind, expected) in rows() {
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
    let apply =
        |phase, kind, command, by| answer(&at(phase, kind), &config, command, by).expect("applies");
    let approved = apply(
        Phase::Approval,
        Some(WaitKind::Approval),
        PersonCommand::Approve,
        "octocat",
    );
    assert_eq!(
        approved.state.approval.as_ref().map(|a| a.by.as_str()),
        Some("octocat")
    );
    assert!(approved.state.waiting.is_none());
    assert_eq!(approved.then, Then::Run);

    let stopped = apply(Phase::Implement, None, PersonCommand::Stop, "o");
    assert_eq!(
        stopped.state.waiting.as_ref().map(|w| w.kind),
        Some(WaitKind::Stopped)
    );
    assert!(
        matches!(stopped.then, Then::Halt(ref m) if m.starts_with("stopped by @o at implement"))
    );

    // A stop during an arbitration keeps the question.
    let arbitration = Some(WaitKind::Arbitration);
    let kept = apply(Phase::SpecReview, arbitration, PersonCommand::Stop, "o");
    assert_eq!(
        kept.state.waiting.as_ref().map(|w| w.kind),
        Some(WaitKind::Arbitration)
    );

    let draft = apply(Phase::Implement, None, PersonCommand::Draft, "o");
    let a = draft.state.arbitrations.last().expect("recorded");
    assert_eq!((a.signal, a.decision), (Signal::Manual, Decision::Draft));
    assert!(draft.state.completed_phases.contains(&Phase::Implement));
    assert!(draft.state.draft_reasons[0].contains("@o"));

    let swap = PersonCommand::Arbitrate(Answer::Swap);
    let swapped = apply(Phase::SpecReview, arbitration, swap, "o");
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
