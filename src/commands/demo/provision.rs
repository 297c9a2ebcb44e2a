//! The demo provisions its browser harness on first use, so that the README's first command
//! shows the whole product wherever the tests can run. First the driver's locked npm packages
//! (`npm ci --prefix <driver>`) when they are missing and `npm` is there; then a Chromium, in the
//! order `.ci/run` finds one:
//!
//! 1. the one `SPEC_ORCHESTRATE_BROWSER` names (`bundled` = Playwright's own);
//! 2. a system Chromium (`chromium` or `chromium-browser` on PATH), or Playwright's own when it
//!    was downloaded before;
//! 3. as root with `apt-get` on PATH (or with passwordless `sudo`), the distribution's
//!    `chromium` package, because a closed network usually still reaches the package archive;
//! 4. Playwright's own installer, which needs its download host.
//!
//! Each step says what it does before it starts (they take a minute) and why the step before did
//! not serve. Only when every step fails does the demo print the exact commands; the browser case
//! then lands BLOCKED and the run as a draft, as it would without the demo.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::evidence::browser::{self, Harness};
use crate::process;
use crate::types::BUNDLED_BROWSER;

/// Longest a provisioning step may take (npm over a slow network, a 150 MB browser download).
const STEP_TIMEOUT: Duration = Duration::from_secs(15 * 60);

/// The names a system Chromium goes by on PATH (Debian's package, Ubuntu's).
pub const SYSTEM_NAMES: [&str; 2] = ["chromium", "chromium-browser"];

/// The command that installs the driver's locked packages.
pub fn npm_command(driver: &Path) -> String {
    format!("npm ci --prefix {}", driver.display())
}

/// The command that installs Playwright's own headless Chromium.
pub fn chromium_command(node: &Path, driver: &Path) -> String {
    format!(
        "{} {} install chromium",
        node.display(),
        driver.join("node_modules/playwright-core/cli.js").display()
    )
}

/// The commands that install the distribution's Chromium, as a person would type them.
pub const APT_COMMAND: &str = "apt-get update && apt-get install -y chromium";

/// Which Chromium the demo's run will use, as provisioning left it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Chromium {
    /// `SPEC_ORCHESTRATE_BROWSER` names it; the run reads the variable itself.
    Explicit,
    /// An executable found on PATH (or just installed there): the demo's configuration names it
    /// in `evaluate.browser`, since the run alone looks only at `/usr/bin/chromium`.
    System(PathBuf),
    /// Playwright's own, downloaded before or just now.
    Bundled,
    /// None could be provided: the browser case will be BLOCKED.
    Missing,
}

impl Chromium {
    /// The `evaluate.browser` value the demo's configuration should carry, if any.
    pub fn configured(&self) -> Option<String> {
        match self {
            Chromium::System(p) => Some(p.display().to_string()),
            Chromium::Bundled => Some(BUNDLED_BROWSER.to_string()),
            Chromium::Explicit | Chromium::Missing => None,
        }
    }
}

/// Who runs a provisioning step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum As {
    /// The orchestrator's own user: a step that writes what only it may write (the package
    /// archive as root, the driver directory of the person's checkout), as `.ci/run` would.
    Orchestrator,
    /// The agents' identity, when it is separate: Playwright's download, which lands where the
    /// confined browser driver looks for it (its own `HOME`'s cache, or
    /// `PLAYWRIGHT_BROWSERS_PATH`), and where root's cache under `/root` would be out of reach.
    Driver,
}

fn run_step(
    program: &Path,
    args: &[String],
    cwd: &Path,
    extra_env: &[(&str, &str)],
    who: As,
) -> Result<(), String> {
    let mut env = own_env();
    for (k, v) in extra_env {
        env.insert((*k).to_string(), (*v).to_string());
    }
    let call = process::Call {
        program,
        args,
        cwd,
        env: &env,
        stdin: b"",
    };
    let ran = match who {
        As::Orchestrator => call.run_unconfined(STEP_TIMEOUT),
        As::Driver => process::run(program, args, cwd, &env, b"", STEP_TIMEOUT),
    };
    match ran {
        Err(e) => Err(format!("could not start {}: {e}", program.display())),
        Ok(out) if out.timed_out => {
            Err(format!("stopped after {} min", STEP_TIMEOUT.as_secs() / 60))
        }
        Ok(out) if out.code() == Some(0) => Ok(()),
        Ok(out) => Err(format!(
            "{}: {}",
            out.ended(),
            crate::util::tail(&format!("{}{}", out.stdout, out.stderr), 600)
        )),
    }
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| (*s).to_string()).collect()
}

/// This process's environment, which every provisioning step runs with.
fn own_env() -> BTreeMap<String, String> {
    std::env::vars().collect()
}

/// The driver directory the harness would use, whether or not its packages are installed.
fn driver_dir() -> Option<PathBuf> {
    match browser::locate(None) {
        Ok(h) => Some(h.driver_dir),
        Err(_) => browser::driver_dir(),
    }
}

/// Installs the driver's npm packages when they are missing and `npm` is on PATH.
fn ensure_packages(say: &mut impl FnMut(String)) {
    let Some(driver) = driver_dir() else {
        return;
    };
    if driver
        .join("node_modules/playwright-core/package.json")
        .is_file()
    {
        return;
    }
    let Some(npm) = process::find_executable("npm", Path::new(".")) else {
        say(format!(
            "the browser driver's packages are not installed and `npm` is not on PATH; install Node.js with npm, or run `{}`",
            npm_command(&driver)
        ));
        return;
    };
    say(format!(
        "installing the browser driver's locked npm packages: {} (first use only; about a minute)",
        npm_command(&driver)
    ));
    let prefix = driver.display().to_string();
    let args = strings(&["ci", "--prefix", &prefix, "--no-audit", "--no-fund"]);
    match run_step(&npm, &args, &driver, &[], As::Orchestrator) {
        Ok(()) => say("the browser driver's packages are installed".into()),
        Err(e) => say(format!(
            "`{}` failed ({e}); the browser case will be BLOCKED until it succeeds",
            npm_command(&driver)
        )),
    }
}

/// Whether Playwright's own Chromium is installed (asks playwright-core where it would be).
pub fn bundled_chromium_installed(h: &Harness) -> bool {
    let script = "process.stdout.write(require('playwright-core').chromium.executablePath())";
    let args = strings(&["-e", script]);
    let out = process::run(
        &h.node,
        &args,
        &h.driver_dir,
        &own_env(),
        b"",
        Duration::from_secs(60),
    );
    out.ok()
        .filter(|o| o.code() == Some(0))
        .is_some_and(|o| Path::new(o.stdout.trim()).is_file())
}

/// A system Chromium on PATH, under the names Debian and Ubuntu give it.
pub fn system_chromium() -> Option<PathBuf> {
    SYSTEM_NAMES
        .iter()
        .find_map(|n| process::find_executable(n, Path::new(".")))
}

/// Whether this process runs as root (the distribution's package manager needs it).
fn running_as_root() -> bool {
    // SAFETY: geteuid takes no arguments, cannot fail and touches no memory of ours.
    unsafe { libc::geteuid() == 0 }
}

/// How `apt-get` can be run here: directly as root, or through passwordless `sudo`; `Err` says
/// why neither serves.
fn apt_runner() -> Result<(PathBuf, Vec<String>), String> {
    let Some(apt) = process::find_executable("apt-get", Path::new(".")) else {
        return Err("`apt-get` is not on PATH (not a Debian-based system)".into());
    };
    if running_as_root() {
        return Ok((apt, Vec::new()));
    }
    let Some(sudo) = process::find_executable("sudo", Path::new(".")) else {
        return Err("not running as root, and `sudo` is not on PATH".into());
    };
    // As the orchestrator: it is the orchestrator's own `sudo` that would install.
    let call = process::Call {
        program: &sudo,
        args: &strings(&["-n", "true"]),
        cwd: Path::new("."),
        env: &own_env(),
        stdin: b"",
    };
    let passwordless = call
        .run_unconfined(Duration::from_secs(10))
        .ok()
        .is_some_and(|o| o.code() == Some(0));
    if !passwordless {
        return Err("not running as root, and `sudo` asks for a password".into());
    }
    Ok((sudo, vec!["-n".into(), apt.display().to_string()]))
}

/// Installs the distribution's `chromium` with apt-get and returns where it landed on PATH.
fn install_with_apt(say: &mut impl FnMut(String), why: &str) -> Result<PathBuf, String> {
    let (program, prefix) = apt_runner()?;
    let how = if prefix.is_empty() {
        "as root"
    } else {
        "with sudo"
    };
    say(format!(
        "{why}; installing the distribution's Chromium {how}: {APT_COMMAND} (first use only; about a minute)"
    ));
    let noninteractive = [("DEBIAN_FRONTEND", "noninteractive")];
    for step in [
        &["update", "-qq"][..],
        &["install", "-y", "-qq", "chromium"][..],
    ] {
        let args: Vec<String> = prefix.iter().cloned().chain(strings(step)).collect();
        run_step(
            &program,
            &args,
            Path::new("/"),
            &noninteractive,
            As::Orchestrator,
        )
        .map_err(|e| format!("`apt-get {}` failed ({e})", step.join(" ")))?;
    }
    system_chromium().ok_or_else(|| {
        format!(
            "apt-get installed `chromium`, but none of {} is on PATH",
            SYSTEM_NAMES.join(", ")
        )
    })
}

/// Runs Playwright's installer; `Ok` when its Chromium is then where Playwright looks.
fn install_with_playwright(
    h: &Harness,
    say: &mut impl FnMut(String),
    why: &str,
) -> Result<(), String> {
    let command = chromium_command(&h.node, &h.driver_dir);
    say(format!(
        "{why}; installing Playwright's headless Chromium: {command}"
    ));
    let cli = h.driver_dir.join("node_modules/playwright-core/cli.js");
    let args = strings(&[&cli.display().to_string(), "install", "chromium"]);
    run_step(&h.node, &args, &h.driver_dir, &[], As::Driver)?;
    if bundled_chromium_installed(h) {
        Ok(())
    } else {
        Err("the installer finished but no Chromium is where Playwright looks".into())
    }
}

/// The Chromium `SPEC_ORCHESTRATE_BROWSER` asks for, when it is set: `Some(answer)` ends the
/// search, `None` goes on to Playwright's installer (it asked for Playwright's own, absent).
fn explicit(h: &Harness, value: &str, say: &mut impl FnMut(String)) -> Option<Chromium> {
    if value == BUNDLED_BROWSER {
        if bundled_chromium_installed(h) {
            say("using Playwright's own Chromium (SPEC_ORCHESTRATE_BROWSER=bundled)".into());
            return Some(Chromium::Explicit);
        }
        return None;
    }
    if Path::new(value).is_file() {
        say(format!(
            "using the Chromium SPEC_ORCHESTRATE_BROWSER names: {value}"
        ));
    } else {
        say(format!(
            "SPEC_ORCHESTRATE_BROWSER names {value}, which is not a file; the browser case will be BLOCKED until it names a Chromium executable (or is unset)"
        ));
    }
    Some(Chromium::Explicit)
}

/// Makes the browser harness usable if it can; says what it does and what is left to do, and
/// returns the Chromium the demo's run should use.
pub fn provision(say: &mut impl FnMut(String)) -> Chromium {
    ensure_packages(say);
    let h = match browser::locate(None) {
        Ok(h) => h,
        Err(e) => {
            say(format!(
                "{e}\nthe browser case T-A05 will be BLOCKED and the run will end as a draft"
            ));
            return Chromium::Missing;
        }
    };
    let chosen = std::env::var("SPEC_ORCHESTRATE_BROWSER")
        .ok()
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty());
    let apt_error = match chosen.as_deref() {
        Some(value) => {
            if let Some(answer) = explicit(&h, value, say) {
                return answer;
            }
            "SPEC_ORCHESTRATE_BROWSER=bundled asks for Playwright's own Chromium, which is not downloaded".to_string()
        }
        None => {
            if let Some(found) = system_chromium() {
                say(format!("using the system Chromium at {}", found.display()));
                return Chromium::System(found);
            }
            if bundled_chromium_installed(&h) {
                return Chromium::Bundled;
            }
            let why = format!(
                "no Chromium found (SPEC_ORCHESTRATE_BROWSER is not set, none of {} is on PATH, and Playwright's own is not downloaded)",
                SYSTEM_NAMES.join(", ")
            );
            match install_with_apt(say, &why) {
                Ok(found) => {
                    say(format!(
                        "the distribution's Chromium is installed: {}",
                        found.display()
                    ));
                    return Chromium::System(found);
                }
                Err(e) => format!("the distribution's Chromium was not installed: {e}"),
            }
        }
    };
    let command = chromium_command(&h.node, &h.driver_dir);
    match install_with_playwright(&h, say, &apt_error) {
        Ok(()) => {
            say("Chromium is installed".into());
            Chromium::Bundled
        }
        Err(e) => {
            say(format!(
                "could not install Chromium ({e}); the browser case will be BLOCKED and the run will land as a draft. Run `{command}`, or as root `{APT_COMMAND}`, or set SPEC_ORCHESTRATE_BROWSER to a Chromium executable, and run the demo again"
            ));
            Chromium::Missing
        }
    }
}
