//! The demo provisions its browser harness on first use, so that the README's first command
//! gives the full demo on a machine with Node and a network: the driver's locked npm packages
//! (`npm ci --prefix <driver>`) when they are missing and `npm` is there, then, when no Chromium
//! is found, Playwright's own installer for a headless Chromium. Each step says what it does
//! before it starts (they take a minute); when one cannot be done, the demo says which command
//! to run, and the browser case lands BLOCKED as it would without the demo.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::evidence::browser::{self, Harness};
use crate::process;

/// Longest a provisioning step may take (npm over a slow network, a 150 MB browser download).
const STEP_TIMEOUT: Duration = Duration::from_secs(15 * 60);

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

fn run_step(program: &Path, args: &[String], cwd: &Path) -> Result<(), String> {
    let env: BTreeMap<String, String> = std::env::vars().collect();
    match process::run(program, args, cwd, &env, b"", STEP_TIMEOUT) {
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
    let args = vec![
        "ci".to_string(),
        "--prefix".to_string(),
        driver.display().to_string(),
        "--no-audit".to_string(),
        "--no-fund".to_string(),
    ];
    match run_step(&npm, &args, &driver) {
        Ok(()) => say("the browser driver's packages are installed".into()),
        Err(e) => say(format!(
            "`{}` failed ({e}); the browser case will be BLOCKED until it succeeds",
            npm_command(&driver)
        )),
    }
}

/// Whether Playwright's own Chromium is installed (asks playwright-core where it would be).
fn bundled_chromium_installed(h: &Harness) -> bool {
    let env: BTreeMap<String, String> = std::env::vars().collect();
    let script = "process.stdout.write(require('playwright-core').chromium.executablePath())";
    let out = process::run(
        &h.node,
        &["-e".to_string(), script.to_string()],
        &h.driver_dir,
        &env,
        b"",
        Duration::from_secs(60),
    );
    out.ok()
        .filter(|o| o.code() == Some(0))
        .is_some_and(|o| Path::new(o.stdout.trim()).is_file())
}

/// Makes the browser harness usable if it can; says what it does and what is left to do.
pub fn provision(say: &mut impl FnMut(String)) {
    ensure_packages(say);
    let h = match browser::locate(None) {
        Ok(h) => h,
        Err(e) => {
            say(format!(
                "{e}\nthe browser case T-A05 will be BLOCKED and the run will end as a draft"
            ));
            return;
        }
    };
    if h.browser.is_some() || bundled_chromium_installed(&h) {
        return;
    }
    let command = chromium_command(&h.node, &h.driver_dir);
    say(format!(
        "no Chromium found ({} is absent and SPEC_ORCHESTRATE_BROWSER is not set); installing Playwright's headless Chromium: {command}",
        browser::DEFAULT_BROWSER
    ));
    let args = vec![
        h.driver_dir
            .join("node_modules/playwright-core/cli.js")
            .display()
            .to_string(),
        "install".to_string(),
        "chromium".to_string(),
    ];
    match run_step(&h.node, &args, &h.driver_dir) {
        Ok(()) if bundled_chromium_installed(&h) => say("Chromium is installed".into()),
        Ok(()) => say(format!(
            "the installer finished but no Chromium is where Playwright looks; the browser case will be BLOCKED. Run `{command}` (or `apt-get install chromium`) and run the demo again"
        )),
        Err(e) => say(format!(
            "could not install Chromium ({e}); the browser case will be BLOCKED. Run `{command}` (or `apt-get install chromium`, or set SPEC_ORCHESTRATE_BROWSER to a Chromium executable) and run the demo again"
        )),
    }
}
