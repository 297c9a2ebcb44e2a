//! The demo shows its evidence report, and provisions its browser harness on first use.
//!
//! - The report of a real demo run is opened in the real Chromium through the driver
//!   (`driver/run.js`): every inline screenshot decoded (`naturalWidth > 0`), every case id on
//!   the page, and a screenshot of the report itself.
//! - A driver without its npm packages is installed with `npm ci --prefix <driver>` (a scripted
//!   `npm` stands in for the registry), with a progress line first; when no Chromium is found,
//!   Playwright's installer is tried (a scripted `node` refuses it, as an offline machine would)
//!   and the demo names the exact command before the browser case lands BLOCKED.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};

use crate::support::{self, bin, script};

const DEMO_LIMIT: Duration = Duration::from_secs(600);

fn driver_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("driver")
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Serves one file at every path until the test ends (a thread per connection is plenty).
fn serve(file: PathBuf) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut s) = stream else { continue };
            let mut buf = [0u8; 4096];
            let _ = s.read(&mut buf);
            let body = std::fs::read(&file).unwrap_or_default();
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            );
            let _ = s.write_all(head.as_bytes());
            let _ = s.write_all(&body);
        }
    });
    url
}

fn png_width(bytes: &[u8]) -> u32 {
    assert!(bytes.starts_with(b"\x89PNG\r\n\x1a\n"), "a PNG");
    u32::from_be_bytes(bytes[16..20].try_into().unwrap())
}

#[test]
fn the_demo_prints_its_report_and_chromium_shows_every_case_and_every_inline_screenshot() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("demo");
    let out = bin()
        .arg("demo")
        .arg("--dir")
        .arg(&root)
        .timeout(DEMO_LIMIT)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    let report = stdout
        .lines()
        .find_map(|l| l.strip_prefix("report:"))
        .map(|p| PathBuf::from(p.trim()))
        .unwrap_or_else(|| panic!("the demo prints the report's path:\n{stdout}"));
    assert!(
        report.ends_with("evidence/1/report.html"),
        "{}",
        report.display()
    );
    let feature = report.parent().unwrap().parent().unwrap().parent().unwrap();
    let result = read_json(&feature.join("evaluate-1.json"));
    let ids: Vec<String> = result["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(ids.len(), 5, "{ids:?}");
    let html = std::fs::read_to_string(&report).unwrap();
    assert_eq!(
        html.matches("<img ").count(),
        3,
        "the three screenshots inline"
    );

    // Open it in Chromium through the driver, as a reviewer's browser would.
    let base = serve(report.clone());
    let shots = tmp.path().join("shots");
    std::fs::create_dir_all(&shots).unwrap();
    let mut steps = vec![
        json!({"action": "goto", "url": "/"}),
        json!({"action": "expect_images"}),
    ];
    for id in &ids {
        steps.push(json!({"action": "expect_text", "text": id}));
        steps.push(json!({"action": "expect_visible", "selector": format!("#case-{id}")}));
    }
    steps.push(json!({"action": "screenshot", "name": "report", "full_page": true}));
    let browser = Path::new("/usr/bin/chromium")
        .is_file()
        .then_some("/usr/bin/chromium");
    let request = json!({
        "case_id": "REPORT",
        "base_url": base,
        "out_dir": shots,
        "browser": browser,
        "step_timeout_ms": 15000,
        "steps": steps,
    });
    let run = assert_cmd::Command::new("node")
        .arg(driver_dir().join("run.js"))
        .current_dir(driver_dir())
        .write_stdin(request.to_string())
        .timeout(Duration::from_secs(180))
        .output()
        .unwrap();
    let line = String::from_utf8_lossy(&run.stdout);
    let reply: Value = serde_json::from_str(line.trim())
        .unwrap_or_else(|e| panic!("{e}: {line}\n{}", String::from_utf8_lossy(&run.stderr)));
    assert_eq!(reply["ok"], true, "{reply:#}");
    assert_eq!(run.status.code(), Some(0));
    assert!(
        reply["console"].as_array().unwrap().is_empty(),
        "nothing was blocked or failed to load: {reply:#}"
    );
    let shot = shots.join(reply["screenshots"][0].as_str().unwrap());
    let bytes = std::fs::read(&shot).unwrap();
    assert!(
        png_width(&bytes) > 0 && bytes.len() > 10_000,
        "{}",
        bytes.len()
    );
}

/// A scripted `npm` that "installs" by linking the repository's driver packages into --prefix.
const FAKE_NPM: &str = r#"#!/bin/sh
echo "$@" >> "$NPM_LOG"
prefix=""
while [ $# -gt 0 ]; do
  if [ "$1" = "--prefix" ]; then prefix="$2"; fi
  shift
done
ln -s "$REAL_NODE_MODULES" "$prefix/node_modules"
echo "added 1 package in 1s"
"#;

#[test]
fn a_fresh_demo_installs_the_driver_packages_then_tries_playwrights_chromium_and_names_the_command()
{
    // The scripted `node` logs here as the agents' identity (Playwright's installer runs as the
    // browser driver will), so the agents may write it.
    let tmp = support::tempdir();
    let driver = tmp.path().join("driver");
    std::fs::create_dir_all(&driver).unwrap();
    for f in ["run.js", "package.json", "package-lock.json"] {
        std::fs::copy(driver_dir().join(f), driver.join(f)).unwrap();
    }
    let bin_dir = tmp.path().join("bin");
    std::fs::create_dir_all(&bin_dir).unwrap();
    script(&bin_dir.join("npm"), FAKE_NPM);
    let fake_node = bin_dir.join("fake-node");
    script(&fake_node, crate::support::FAKE_NODE);
    let browsers = tmp.path().join("no-browsers");
    std::fs::create_dir_all(&browsers).unwrap();
    let (npm_log, node_log) = (tmp.path().join("npm.log"), tmp.path().join("node.log"));
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let root = tmp.path().join("demo");
    let out = bin()
        .arg("demo")
        .arg("--dir")
        .arg(&root)
        .env("PATH", path)
        .env("SPEC_ORCHESTRATE_DRIVER", &driver)
        .env("SPEC_ORCHESTRATE_NODE", &fake_node)
        .env("SPEC_ORCHESTRATE_BROWSER", "bundled")
        .env("PLAYWRIGHT_BROWSERS_PATH", &browsers)
        .env("NPM_LOG", &npm_log)
        .env("NODE_LOG", &node_log)
        .env("REAL_NODE_MODULES", driver_dir().join("node_modules"))
        .timeout(DEMO_LIMIT)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);

    // npm ci ran once, for this driver, announced before it started and before the pipeline.
    let npm = std::fs::read_to_string(&npm_log).unwrap_or_default();
    assert_eq!(npm.lines().count(), 1, "{npm}");
    assert!(
        npm.starts_with(&format!("ci --prefix {}", driver.display())),
        "{npm}"
    );
    let announce = format!(
        "demo: installing the browser driver's locked npm packages: npm ci --prefix {}",
        driver.display()
    );
    let at = stderr.find(&announce).unwrap_or_else(|| panic!("{stderr}"));
    let first_phase = stderr.find("intake").unwrap_or(usize::MAX);
    assert!(at < first_phase, "the progress line comes first:\n{stderr}");
    assert!(
        driver
            .join("node_modules/playwright-core/package.json")
            .is_file()
    );

    // Playwright's installer was tried, failed offline, and the exact command is named.
    let node = std::fs::read_to_string(&node_log).unwrap_or_default();
    assert!(node.contains("install chromium"), "{node}");
    let command = format!(
        "{} {} install chromium",
        fake_node.display(),
        driver.join("node_modules/playwright-core/cli.js").display()
    );
    assert!(
        stderr.contains("could not install Chromium")
            && stderr.contains(&format!("Run `{command}`")),
        "{stderr}"
    );

    // The browser case is BLOCKED (configuration, not the implementation); the demo says where
    // its report is all the same.
    let feature = root.join("repo/.specs/add-a-dark-mode-toggle");
    let result = read_json(&feature.join("evaluate-1.json"));
    let t_a05 = result["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == "T-A05")
        .unwrap();
    assert_eq!(t_a05["verdict"], "BLOCKED", "{t_a05}");
    assert!(stdout.contains("report:"), "{stdout}");
}
