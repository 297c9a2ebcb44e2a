//! Peak memory of a run whose reviewer prints 200 MiB: it must stay within 64 MiB of the same
//! run with a quiet reviewer (issue 11's acceptance figure; before output was bounded, 200 MiB
//! of output cost about 420 MB of RSS).
//!
//! Each run is the real binary driving a scripted pipeline (`tests/fixtures/agents/scenario.py`
//! plays every role; the spec_reviewer is a script printing N MiB of chatter before a clean
//! envelope). The peak RSS is the child's `ru_maxrss` from `wait4`, which covers the
//! orchestrator and every descendant it reaped (the agents). `cargo bench --bench
//! agent_output_rss` (release), or `cargo test --bench agent_output_rss` (debug build);
//! `RSS_BENCH_BIN=<binary>` measures another build instead.

// A test or benchmark program prints for the person running it; the library may not.
#![allow(clippy::disallowed_macros, clippy::disallowed_methods)]
// A panic is how a benchmark reports a broken fixture.
#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::process::{Command, Stdio};

/// What the loud reviewer prints.
const LOUD_MIB: u64 = 200;
/// The most the loud run may exceed the quiet one by.
const ALLOWED_MIB: u64 = 64;

const REVIEWER: &str = r#"import sys
sys.stdin.read()
mib = int(sys.argv[1])
block = (("chatter " * 127 + "chatter\n") * 64).encode()
out = sys.stdout.buffer
for _ in range(mib * 16):
    out.write(block)
out.write(b'Review:\n```json\n{"findings": [], "converged": true, "remaining_disputes": []}\n```\n')
"#;

fn main() {
    let quiet = peak_rss_kib(0);
    let loud = peak_rss_kib(LOUD_MIB);
    let over = loud.saturating_sub(quiet);
    println!(
        "peak RSS: quiet reviewer {} MiB, reviewer printing {LOUD_MIB} MiB {} MiB, difference {} MiB (allowed {ALLOWED_MIB} MiB)",
        quiet / 1024,
        loud / 1024,
        over / 1024
    );
    assert!(
        over < ALLOWED_MIB * 1024,
        "a reviewer printing {LOUD_MIB} MiB costs {over} KiB more than a quiet one"
    );
}

/// Runs the pipeline with a reviewer printing `mib` MiB; the peak RSS in KiB.
fn peak_rss_kib(mib: u64) -> u64 {
    let tmp = tempfile::tempdir().unwrap();
    let (repo, issue) = spec_orchestrate::commands::demo::lay_out(tmp.path()).unwrap();
    let dir = tmp.path().join("scenario");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("scenario.json"), "{}").unwrap();
    let reviewer = dir.join("loud.py");
    std::fs::write(&reviewer, REVIEWER).unwrap();
    let scenario = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/agents/scenario.py");
    let agent = |opposite: &str| {
        format!(
            "{{ kind: command, command: [\"python3\", \"{}\"], opposite: {opposite}, env: {{ SCENARIO: \"{}\" }} }}",
            scenario.display(),
            dir.join("scenario.json").display(),
        )
    };
    let config = format!(
        "agents:\n  alpha: {}\n  beta: {}\n  loud: {{ kind: command, command: [\"python3\", \"{}\", \"{mib}\"], opposite: beta }}\nroles:\n  spec_author: alpha\n  spec_reviewer: loud\n  impl_ui: alpha\n  impl_backend: alpha\n  impl_test: alpha\n  e2e_runner: alpha\n  judge: alpha\n",
        agent("beta"),
        agent("alpha"),
        reviewer.display()
    );
    std::fs::write(repo.join(".specs/pipeline.yml"), config).unwrap();
    // `RSS_BENCH_BIN` measures another build (an older one, for a before/after figure).
    let other = std::env::var_os("RSS_BENCH_BIN");
    let bin = other
        .clone()
        .unwrap_or_else(|| env!("CARGO_BIN_EXE_spec-orchestrate").into());
    // Reaped by `wait4` below, which is what reports its peak RSS.
    #[allow(clippy::zombie_processes)]
    let child = Command::new(bin)
        .arg("run")
        .arg("--issue")
        .arg(&issue)
        .arg("--repo")
        .arg(&repo)
        .env_remove("SPEC_ORCHESTRATE_LOG")
        .env_remove("SPEC_ORCHESTRATE_PROGRESS")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value of the plain C struct wait4 fills in.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `child` is our unreaped child; `status` and `usage` outlive the call.
    let pid = unsafe { libc::wait4(child.id() as i32, &mut status, 0, &mut usage) };
    assert_eq!(pid, child.id() as i32, "wait4 reaped the run");
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "the run with a {mib} MiB reviewer succeeds (wait status {status})"
    );
    let log = repo
        .join(".specs/add-a-dark-mode-toggle/agent-log/spec_review-spec_reviewer-r1-a1.stdout.log");
    if mib > 0 && other.is_none() {
        let size = std::fs::metadata(&log).map(|m| m.len()).unwrap_or(0);
        assert_eq!(
            size,
            mib * 1024 * 1024 + 82,
            "the whole output is in {}",
            log.display()
        );
    }
    usage.ru_maxrss as u64
}
