//! Acceptance cases that cannot disturb each other (issue 30): a round runs in a disposable tree
//! of the commit under test, every case from the committed state by default (`app.isolation:
//! case`), one app per round with `round`, and `app.env` points the app and the commands at
//! fresh scratch directories.
//!
//! The shop below appends every item posted to a tracked file, `data/items.json`, as a real app
//! keeping its data in the repository would. Three browser cases each add "milk" and expect to
//! see it exactly once. Run in the checkout one after another (what the harness did before), the
//! second and third saw two and three: `round` mode shows the same today, inside the round's tree.
//!
//! Like `evidence.rs`, the browser tests need `/usr/bin/chromium` (or `SPEC_ORCHESTRATE_BROWSER`)
//! and the driver's npm packages.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::json;
use spec_orchestrate::evidence::CaseResult;
use spec_orchestrate::evidence::steps::Step;
use spec_orchestrate::evidence::steps::answer::Conversion;
use spec_orchestrate::spec::cases::Method;
use spec_orchestrate::types::kinds::Verdict;

/// The shop: `GET /` lists the items of the data file, `POST /add` appends one to it. The data
/// file is `$DATA_FILE` when set, else the tracked `data/items.json`. The page also says whether
/// `$APP_PORT` (from `app.env`'s `{port}`) is the port it serves on.
const SHOP: &str = r#"const http = require('http');
const fs = require('fs');
const file = process.env.DATA_FILE || 'data/items.json';
const items = () => { try { return JSON.parse(fs.readFileSync(file, 'utf8')); } catch (e) { return []; } };
http.createServer((req, res) => {
  if (req.method === 'POST' && req.url === '/add') {
    let body = '';
    req.on('data', (c) => { body += c; });
    req.on('end', () => {
      const name = new URLSearchParams(body).get('name') || '';
      fs.writeFileSync(file, JSON.stringify(items().concat([name])));
      res.writeHead(303, { location: '/' });
      res.end();
    });
    return;
  }
  const port = process.env.APP_PORT === process.env.PORT ? 'port-ok' : 'port-unknown';
  res.writeHead(200, { 'content-type': 'text/html' });
  res.end(`<!doctype html><html><body><h1>Shop</h1><p id="port">${port}</p><p id="note"></p>
<form method="post" action="/add"><label>Item <input name="name"></label><button>Add</button></form>
<ul>${items().map((i) => `<li>${i}</li>`).join('')}</ul></body></html>`);
}).listen(Number(process.env.PORT), '127.0.0.1', () => console.log(`ready on http://127.0.0.1:${process.env.PORT}/`));
"#;

const DATA: &str = "[\"bread\"]";

/// Three cases that each add "milk" and expect exactly one.
fn shop_md(order: &[&str]) -> String {
    order
        .iter()
        .map(|id| {
            format!(
                "## {id}: [REQ-001] Adding milk shows it once\n- Steps: open the shop, add milk\n- Expected: milk is listed once\n- Verify: playwright\n\n"
            )
        })
        .collect()
}

fn add_milk() -> Vec<Step> {
    serde_json::from_value(json!([
        {"action": "goto", "url": "/"},
        {"action": "expect_text", "selector": "#port", "text": "port-ok", "exact": true},
        {"action": "fill", "selector": "role=textbox[name=\"Item\"]", "value": "milk"},
        {"action": "click", "selector": "role=button[name=\"Add\"]"},
        {"action": "expect_count", "selector": "li:has-text(\"bread\")", "count": 1},
        {"action": "expect_count", "selector": "li:has-text(\"milk\")", "count": 1},
        // Shapes converters wrote, accepted by the validation and the driver alike: an empty
        // element, and nothing matching.
        {"action": "expect_text", "selector": "#note", "text": "", "exact": true},
        {"action": "expect_count", "selector": "li:has-text(\"cheese\")", "count": 0},
        {"action": "screenshot", "name": "added"}
    ]))
    .expect("steps parse")
}

struct Shop(crate::support::RoundLab);

impl Shop {
    /// A checkout whose one commit holds the shop and its data file.
    fn new() -> Shop {
        Shop(crate::support::RoundLab::new(
            "shop",
            &[
                ("server.js", SHOP),
                ("data/items.json", DATA),
                (".gitignore", ".specs/shop/evidence/\ncache.tmp\n"),
            ],
        ))
    }

    /// Runs `test_md` with `app_extra` added to the `app:` section, as round `round`.
    fn run(&self, test_md: &str, app_extra: &str, round: u32) -> BTreeMap<String, CaseResult> {
        let yaml = format!(
            "app:\n  start: \"node server.js\"\n  url: \"http://127.0.0.1:{{port}}/\"\n  ready_pattern: \"ready on http://\"\n  ready_timeout_s: 30\n  env:\n    APP_PORT: \"{{port}}\"\n{app_extra}evaluate:\n  step_timeout_s: 3\n"
        );
        self.0.run(test_md, &yaml, round, |c| {
            (c.method() == Some(Method::Playwright)).then(|| Conversion {
                steps: add_milk(),
                cannot_express: Vec::new(),
            })
        })
    }

    /// `git status --porcelain` of the checkout (the evidence directory is ignored).
    fn status(&self) -> String {
        crate::support::git(&self.0.repo, &["status", "--porcelain"])
    }

    fn data_file(&self) -> String {
        std::fs::read_to_string(self.0.repo.join("data/items.json")).unwrap()
    }
}

fn explain(r: &CaseResult) -> String {
    format!("{} {}: {:?}", r.verdict, r.detail, r.notes)
}

/// The default: each case starts from the committed data file with an app of its own, so all
/// three pass, in either order, and nothing reaches the checkout.
#[test]
fn three_cases_that_add_the_same_item_all_pass_in_any_order_and_the_checkout_stays_clean() {
    let shop = Shop::new();
    let head = crate::support::git(&shop.0.repo, &["rev-parse", "HEAD"]);
    for (round, order) in [
        (1, ["T-A01", "T-A02", "T-A03"]),
        (2, ["T-A03", "T-A01", "T-A02"]),
    ] {
        let by = shop.run(&shop_md(&order), "", round);
        for id in order {
            assert_eq!(by[id].verdict, Verdict::Pass, "{id}: {}", explain(&by[id]));
        }
        // Evidence still lands in the checkout's evidence directory.
        assert!(
            shop.0
                .feature
                .join(format!("evidence/{round}/{}.steps.log", order[2]))
                .is_file()
        );
    }
    assert_eq!(
        shop.status(),
        "",
        "nothing a case wrote reaches the checkout"
    );
    assert_eq!(
        shop.data_file(),
        DATA,
        "the work branch's data file is unchanged"
    );
    assert_eq!(
        crate::support::git(&shop.0.repo, &["rev-parse", "HEAD"]),
        head
    );
    assert_eq!(
        crate::support::git(&shop.0.repo, &["show", "HEAD:data/items.json"]),
        DATA
    );
}

/// `round` keeps one app and one tree for the round: the cases see each other's milk, as they
/// did when the harness ran them in the checkout. The checkout still stays clean.
#[test]
fn round_isolation_keeps_one_app_for_the_round_so_later_cases_see_earlier_writes() {
    let shop = Shop::new();
    let by = shop.run(
        &shop_md(&["T-A01", "T-A02", "T-A03"]),
        "  isolation: round\n",
        1,
    );
    assert_eq!(
        by["T-A01"].verdict,
        Verdict::Pass,
        "{}",
        explain(&by["T-A01"])
    );
    for id in ["T-A02", "T-A03"] {
        assert_eq!(by[id].verdict, Verdict::Fail, "{id}: {}", explain(&by[id]));
        assert!(
            by[id].detail.contains("expect_count li:has-text(\"milk\")"),
            "{id}: {}",
            explain(&by[id])
        );
    }
    // One app served the round: one start in its log.
    let log = std::fs::read_to_string(shop.0.feature.join("evidence/1/app-startup.log")).unwrap();
    assert_eq!(log.matches("ready on http://").count(), 1, "{log}");
    assert_eq!(shop.status(), "");
    assert_eq!(shop.data_file(), DATA);
}

/// `app.env`: `{case_dir}` is a fresh empty directory per case, `{round_dir}` one per round; the
/// app keeps its data where `DATA_FILE` says; a case never sees the files, tracked or ignored,
/// an earlier case wrote.
#[test]
fn app_env_places_scratch_dirs_per_case_and_round_and_each_case_starts_from_the_commit() {
    let shop = Shop::new();
    let md = "\
## T-A01: [REQ-001] A case writes everywhere\n- Verify: command\n- Command: `test -z \"$(ls -A \"$SCRATCH\")\" && echo one > \"$SCRATCH/mark\" && echo r > \"$SHARED/from-T-A01\" && echo x > cache.tmp && echo '[]' > data/items.json && echo \"case=$SCRATCH\"`\n- Output contains: case=\n\n\
## T-A02: [REQ-001] The next case starts clean\n- Verify: command\n- Command: `test -z \"$(ls -A \"$SCRATCH\")\" && test -f \"$SHARED/from-T-A01\" && test ! -e cache.tmp && grep -q bread data/items.json && echo \"case=$SCRATCH\"`\n- Output contains: case=\n\n\
## T-A03: [REQ-001] The app keeps its data in the case's directory\n- Steps: add milk\n- Expected: milk once\n- Verify: playwright\n";
    let by = shop.run(
        md,
        "    SCRATCH: \"{case_dir}\"\n    SHARED: \"{round_dir}\"\n    DATA_FILE: \"{case_dir}/items.json\"\n",
        1,
    );
    for id in ["T-A01", "T-A02"] {
        assert_eq!(by[id].verdict, Verdict::Pass, "{id}: {}", explain(&by[id]));
    }
    let dir_of = |id: &str| {
        let log =
            std::fs::read_to_string(shop.0.feature.join(format!("evidence/1/{id}.log"))).unwrap();
        log.lines()
            .find_map(|l| l.strip_prefix("case="))
            .map(str::to_string)
            .unwrap_or_else(|| panic!("{log}"))
    };
    let (one, two) = (dir_of("T-A01"), dir_of("T-A02"));
    assert_ne!(one, two, "each case has its own directory");
    assert!(!Path::new(&one).starts_with(&shop.0.repo), "{one}");
    // The app's data file starts absent (the list is empty, so "bread" is not there).
    let app = &by["T-A03"];
    assert_eq!(app.verdict, Verdict::Fail, "{}", explain(app));
    assert!(
        app.detail.contains("li:has-text(\"bread\")"),
        "the app read its data from {{case_dir}}: {}",
        explain(app)
    );
    assert_eq!(shop.status(), "");
    assert_eq!(shop.data_file(), DATA);
    // The round's scratch goes with its tree (removed in the background).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while Path::new(&one).exists() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(!Path::new(&one).exists(), "{one}");
}
