//! The local forge: issues from Markdown files, the work branch in the checkout, and the "pull
//! request" as the branch plus a rendered `pr-body.md`.

use std::path::Path;

use crate::error::{Error, Result};
use crate::git::Git;
use crate::state::{IssueRef, PrRef};
use crate::util;

/// Local forge over a git checkout.
#[derive(Debug, Clone)]
pub struct LocalForge {
    git: Git,
}

impl LocalForge {
    /// A forge for the checkout at `repo`.
    pub fn new(repo: &Path) -> LocalForge {
        LocalForge {
            git: Git::new(repo),
        }
    }

    /// The git wrapper.
    pub fn git(&self) -> &Git {
        &self.git
    }

    /// Creates (or reuses) the work branch and checks it out.
    pub fn ensure_branch(&self, name: &str) -> Result<()> {
        self.git.checkout_branch(name)
    }

    /// "Opens" the PR: the body file is the PR locally; the branch is already there.
    pub fn publish_pr(&self, body_path: &Path, draft: bool) -> Result<PrRef> {
        Ok(PrRef {
            number: None,
            url: body_path.display().to_string(),
            draft,
        })
    }
}

/// Reads an issue from a Markdown file: the first `#` heading is the title, the rest the body.
pub fn read_issue_file(path: &Path) -> Result<IssueRef> {
    let text = util::read_to_string(path)?;
    let mut title = None;
    let mut body = Vec::new();
    for line in text.lines() {
        if title.is_none()
            && let Some(t) = line.strip_prefix("# ")
        {
            title = Some(t.trim().to_string());
            continue;
        }
        if title.is_some() {
            body.push(line);
        }
    }
    let Some(title) = title.filter(|t| !t.is_empty()) else {
        return Err(Error::Input {
            path: path.to_path_buf(),
            problem: "has no title: the first line starting with `# ` is the issue title; add one, e.g. `# Add a dark mode toggle`".into(),
        });
    };
    Ok(IssueRef {
        number: None,
        title,
        url: Some(path.display().to_string()),
        body: body.join("\n").trim().to_string(),
        labels: Vec::new(),
    })
}
