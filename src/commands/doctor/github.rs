//! `doctor --github`: what GitHub must allow before a chain can run, read through the REST API
//! and never changed.
//!
//! - the repository, and whether the token may write to it (`GET /repos/{o}/{r}`: its
//!   `permissions` object says what the token's user may do; a classic token's scopes come in
//!   the `X-OAuth-Scopes` header, which fine-grained and installation tokens do not send);
//! - the workflow file on the default branch (`GET /repos/{o}/{r}/contents/{path}?ref=…`);
//! - the trigger and approve labels (`GET /repos/{o}/{r}/labels/{name}`);
//! - "Allow GitHub Actions to create and approve pull requests" and the default workflow
//!   permissions (`GET /repos/{o}/{r}/actions/permissions/workflow`:
//!   `can_approve_pull_request_reviews`, `default_workflow_permissions`), readable only with
//!   admin access, so a refusal is a warning that says where to look instead;
//! - whether the Action's image package is public (`GET /orgs/{org}/packages/container/{name}`,
//!   else `/users/{user}/…`: `visibility`), since workflows of other repositories can pull only
//!   a public one.

use std::path::Path;

use crate::config::Config;
use crate::error::Error;
use crate::forge::github::settings::RepositoryAccess;
use crate::forge::github::{GithubForge, GithubTarget, token_from_env};

use super::Check;

/// The Action's published image: `ghcr.io/<owner>/<package>`.
pub const IMAGE_OWNER: &str = "spec-orchestrate";
/// The package name of the image.
pub const IMAGE_PACKAGE: &str = "spec-orchestrate";
/// Where the Settings page that holds both Actions settings is.
const SETTINGS_PAGE: &str = "Settings → Actions → General → Workflow permissions";

/// The status of a refused call (0 when there was no answer) and GitHub's message.
fn status_of(e: &Error) -> (u16, String) {
    let failure = e.forge_failure();
    let status = failure.and_then(|f| f.status).unwrap_or(0);
    let message = failure
        .and_then(|f| f.message.clone())
        .unwrap_or_else(|| e.to_string());
    (status, message)
}

/// What an answer that is not 200 means for a check.
fn refused(name: &str, status: u16, message: &str, fix: &str) -> Check {
    let why = match status {
        0 => format!("no answer: {message}"),
        401 => format!("HTTP 401 {message}: the token was refused"),
        _ => format!("HTTP {status} {message}"),
    };
    Check::error(name, why, fix)
}

/// The target: `repository` (`owner/name`) when given, else GITHUB_REPOSITORY or the origin
/// remote of `dir`.
fn target(dir: &Path, repository: Option<&str>) -> Result<GithubTarget, String> {
    let Some(r) = repository else {
        return GithubTarget::from_env(dir).map_err(|e| e.to_string());
    };
    let (owner, name) = r
        .split_once('/')
        .filter(|(o, n)| !o.is_empty() && !n.is_empty() && !n.contains('/'))
        .ok_or_else(|| format!("--repository {r}: expected owner/name"))?;
    // The API the environment names (GITHUB_REPOSITORY and `origin` need not be set).
    let api_url = std::env::var("GITHUB_API_URL")
        .ok()
        .filter(|v| !v.trim().is_empty())
        .unwrap_or_else(|| "https://api.github.com".into());
    let graphql_url = match GithubTarget::from_env(dir) {
        Ok(t) => t.graphql_url,
        Err(_) => crate::forge::github::graphql_url_for(&api_url),
    };
    Ok(GithubTarget {
        api_url,
        graphql_url,
        owner: owner.to_string(),
        repo: name.to_string(),
    })
}

/// Every GitHub check; `cfg` gives the labels (the defaults when it did not load).
pub fn checks(dir: &Path, repository: Option<&str>, cfg: Option<&Config>) -> Vec<Check> {
    let defaults = Config::default();
    let cfg = cfg.unwrap_or(&defaults);
    let Some(token) = token_from_env().filter(|t| !t.trim().is_empty()) else {
        return vec![Check::error(
            "github token",
            "neither GITHUB_TOKEN nor GH_TOKEN is set",
            "GH_TOKEN=$(gh auth token) spec-orchestrate doctor --github",
        )];
    };
    let t = match target(dir, repository) {
        Ok(t) => t,
        Err(e) => {
            return vec![Check::error(
                "github repository",
                e,
                "pass --repository owner/name",
            )];
        }
    };
    let full = t.full_name();
    let forge = match GithubForge::new(t, &token) {
        Ok(f) => f,
        Err(e) => {
            return vec![Check::error(
                "github repository",
                e.to_string(),
                "check GITHUB_API_URL and the TLS set-up",
            )];
        }
    };
    let access = match forge.repository() {
        Ok(a) => a,
        Err(e) => {
            let (status, message) = status_of(&e);
            return vec![refused(
                "github repository",
                status,
                &message,
                &format!(
                    "check the name {full} and that the token can read it (a 404 is also what a token without access gets)"
                ),
            )];
        }
    };
    let default_branch = access.repository.default_branch.clone();
    let mut out = vec![
        Check::ok(
            "github repository",
            format!("{full} (default branch {default_branch})"),
        ),
        token_check(&access),
        workflow_file_check(&forge, &default_branch),
    ];
    for label in [&cfg.github.trigger_label, &cfg.github.approve_label] {
        out.push(label_check(&forge, label));
    }
    out.extend(actions_settings_checks(&forge));
    out.push(image_check(&forge));
    out
}

/// What the token may do: write access to the repository (its user's `permissions`), and for a
/// classic token the `repo` (or, on a public repository, `public_repo`) scope.
fn token_check(access: &RepositoryAccess) -> Check {
    const NAME: &str = "token permissions";
    let push = access.repository.permissions.as_ref().map(|p| p.push);
    let private = access.repository.private;
    if push == Some(false) {
        return Check::error(
            NAME,
            "the token's user cannot push to the repository (permissions.push is false)",
            "use a token of someone with write access (or the workflow's GITHUB_TOKEN with contents, issues, pull-requests and actions: write)",
        );
    }
    let Some(scopes) = access.scopes.as_deref() else {
        return Check::ok(
            NAME,
            "write access; a fine-grained or installation token (GitHub lists no scopes for it): it needs contents, issues, pull requests and actions: read and write",
        );
    };
    let list: Vec<&str> = scopes
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect();
    let enough = list.contains(&"repo") || (!private && list.contains(&"public_repo"));
    if enough {
        Check::ok(
            NAME,
            format!("classic token with scopes: {}", list.join(", ")),
        )
    } else {
        Check::error(
            NAME,
            format!(
                "classic token with scopes [{}]: without `repo`{} it cannot push the work branch or open the pull request",
                list.join(", "),
                if private { "" } else { " or `public_repo`" }
            ),
            "create a token with the `repo` scope (and `workflow` if agents may change workflows)",
        )
    }
}

fn workflow_file_check(forge: &GithubForge, branch: &str) -> Check {
    let path = crate::commands::init::WORKFLOW_PATH;
    let name = "workflow file";
    match forge.file_exists(path, branch).map_err(|e| status_of(&e)) {
        Ok(true) => Check::ok(name, format!("{path} is on {branch}")),
        Ok(false) => Check::error(
            name,
            format!(
                "{path} is not on the default branch {branch}; label events run only workflows of the default branch"
            ),
            format!("`spec-orchestrate init`, then commit {path} and push it to {branch}"),
        ),
        Err((status, message)) => refused(
            name,
            status,
            &message,
            "check that the token can read the repository's contents",
        ),
    }
}

fn label_check(forge: &GithubForge, label: &str) -> Check {
    let name = format!("label {label}");
    match forge.label_exists(label).map_err(|e| status_of(&e)) {
        Ok(true) => Check::ok(name, "exists"),
        Ok(false) => Check::error(
            name,
            "the label does not exist, so no issue can be given it",
            format!(
                "create it: gh label create '{}'",
                label.replace('\'', "'\\''")
            ),
        ),
        Err((status, message)) => refused(
            &name,
            status,
            &message,
            "check that the token can read the repository's issues",
        ),
    }
}

/// Both checks of `GET /actions/permissions/workflow`.
fn actions_settings_checks(forge: &GithubForge) -> Vec<Check> {
    const PRS: &str = "actions may open pull requests";
    const DEFAULTS: &str = "default workflow permissions";
    let settings = match forge.workflow_permissions().map_err(|e| status_of(&e)) {
        Ok(s) => s,
        Err((status @ (403 | 404), message)) => {
            let detail = format!(
                "HTTP {status} {message}: reading the repository's Actions settings needs admin access"
            );
            let fix =
                format!("an admin can check {SETTINGS_PAGE}, or run doctor with an admin's token");
            return vec![
                Check::warning(PRS, detail.clone(), fix.clone()),
                Check::warning(DEFAULTS, detail, fix),
            ];
        }
        Err((status, message)) => {
            return vec![
                refused(PRS, status, &message, SETTINGS_PAGE),
                refused(DEFAULTS, status, &message, SETTINGS_PAGE),
            ];
        }
    };
    let prs = if settings.can_approve_pull_request_reviews {
        Check::ok(
            PRS,
            "\"Allow GitHub Actions to create and approve pull requests\" is on",
        )
    } else {
        Check::error(
            PRS,
            "\"Allow GitHub Actions to create and approve pull requests\" is off: the pr phase cannot open the pull request with the workflow's token",
            format!("turn it on in {SETTINGS_PAGE}"),
        )
    };
    let defaults = match settings.default_workflow_permissions.as_str() {
        "read" => Check::ok(
            DEFAULTS,
            "read (the workflow `init` writes asks for the write permissions it needs)",
        ),
        "write" => Check::ok(DEFAULTS, "write"),
        other => Check::warning(
            DEFAULTS,
            format!("GitHub answered default_workflow_permissions {other:?}"),
            format!("check {SETTINGS_PAGE}"),
        ),
    };
    vec![prs, defaults]
}

/// Whether the Action's image package is public: an organisation's package, else a user's.
fn image_check(forge: &GithubForge) -> Check {
    let name = "action image";
    let image = format!("ghcr.io/{IMAGE_OWNER}/{IMAGE_PACKAGE}");
    let mut last = (0, String::new());
    for org in [true, false] {
        match forge
            .package_visibility(org, IMAGE_OWNER, IMAGE_PACKAGE)
            .map_err(|e| status_of(&e))
        {
            Ok(Some(visibility)) => {
                return if visibility == "public" {
                    Check::ok(name, format!("{image} is public"))
                } else {
                    Check::error(
                        name,
                        format!(
                            "{image} is {visibility:?}: workflows of other repositories cannot pull it"
                        ),
                        "the package's owner makes it public (package settings → Change visibility), or pin the action to a branch so it builds its Dockerfile",
                    )
                };
            }
            Ok(None) => last = (404, "Not Found".to_string()),
            Err(e) => {
                last = e;
                break;
            }
        }
    }
    Check::warning(
        name,
        format!(
            "could not read the package {image} (HTTP {} {}): the packages API needs a classic token with read:packages",
            last.0, last.1
        ),
        format!("check that `docker pull {image}` works without logging in"),
    )
}
