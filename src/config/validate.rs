//! The checks types alone cannot make: cross references, regexes, ranges, durations. Each
//! failure names the dotted key it is about; the line comes from where the parser saw that key.

use super::*;

/// The result of one group of checks in `Config::validate`: the first problem found, boxed
/// because a `ConfigError` is large and the happy path should stay small.
type Checked = Result<(), Box<ConfigError>>;

/// The most tasks `limits.parallel_tasks` may run at once: each is an agent process and a
/// worktree, and more than this is a typo more often than a machine.
const MAX_PARALLEL_TASKS: u32 = 16;

/// The problem and help when `value` (in units of `1/per_second` s: 1 for seconds, 1000 for
/// milliseconds) is over [`MAX_DURATION_S`].
fn too_long(value: u64, per_second: u64) -> Option<(String, String)> {
    let max = MAX_DURATION_S.saturating_mul(per_second);
    let unit = if per_second == 1 { "s" } else { "ms" };
    (value > max).then(|| {
        (
            format!("{value} {unit} is longer than 7 days"),
            format!("use at most {max} ({unit}); nothing in a run waits longer than 7 days"),
        )
    })
}

/// Refuses the configuration at a key, with the line the parser saw that key on.
struct Refuse<'a> {
    file: &'a Path,
    outline: &'a super::outline::Outline,
}

impl Refuse<'_> {
    fn at(&self, key: &str, problem: impl Into<String>, help: impl Into<String>) -> Checked {
        Err(Box::new(ConfigError {
            file: self.file.to_path_buf(),
            line: self.outline.line_of(key),
            key: key.to_string(),
            problem: problem.into(),
            help: help.into(),
        }))
    }

    /// [`Refuse::at`] when `bad`.
    fn when(
        &self,
        bad: bool,
        key: &str,
        problem: impl Into<String>,
        help: impl Into<String>,
    ) -> Checked {
        if bad {
            self.at(key, problem, help)
        } else {
            Ok(())
        }
    }
}

impl Config {
    /// Checks what types alone cannot: cross references, regexes, ranges. One group of checks
    /// per section, in the file's order; the first problem is reported, pointing at its line.
    pub(super) fn validate(&self, outline: &super::outline::Outline, file: &Path) -> Checked {
        let fail = &Refuse { file, outline };
        self.check_roles(fail)?;
        let defined: Vec<&str> = self.agents.keys().map(String::as_str).collect();
        for (name, agent) in &self.agents {
            self.check_agent(name, agent, &defined, fail)?;
        }
        self.check_app(fail)?;
        self.check_prices(fail)?;
        self.check_review_and_limits(fail)?;
        self.check_evaluate(fail)?;
        self.check_github_and_improve(fail)?;
        self.check_sandbox(fail)?;
        self.check_durations(fail)
    }

    /// `sandbox.agent_user` names a uid (and gid) that is not root's.
    fn check_sandbox(&self, fail: &Refuse) -> Checked {
        if self.sandbox.agent_user.ids().is_none() {
            let written = match &self.sandbox.agent_user {
                super::AgentUser::Uid(u) => u.to_string(),
                super::AgentUser::Text(t) => t.clone(),
            };
            return fail.at(
                "sandbox.agent_user",
                format!("`{written}` is not a uid or `uid:gid` other than root's (0)"),
                "write the unprivileged uid agents run as, e.g. `agent_user: 65532` (the image's `agent` user) or `agent_user: \"65532:65532\"`; to keep agents as the orchestrator's user, write `identity: off` instead",
            );
        }
        Ok(())
    }

    /// Every duration key is at most [`MAX_DURATION_S`]: a larger one is a typo, and it would
    /// overflow the time arithmetic of the call it bounds.
    fn check_durations(&self, fail: &Refuse) -> Checked {
        let mut keys: Vec<(String, u64, u64)> = Vec::new();
        for (name, agent) in &self.agents {
            if let Some(v) = agent.timeout_s {
                keys.push((format!("agents.{name}.timeout_s"), v, 1));
            }
            if let Some(v) = agent.retry_base_ms {
                keys.push((format!("agents.{name}.retry_base_ms"), v, 1000));
            }
        }
        if let Some(app) = &self.app {
            keys.push(("app.ready_timeout_s".into(), app.ready_timeout_s, 1));
        }
        keys.push((
            "limits.agent_timeout_s".into(),
            self.limits.agent_timeout_s,
            1,
        ));
        keys.push((
            "evaluate.step_timeout_s".into(),
            self.evaluate.step_timeout_s,
            1,
        ));
        for (key, value, per_second) in keys {
            if let Some((problem, help)) = too_long(value, per_second) {
                return fail.at(&key, problem, help);
            }
        }
        Ok(())
    }

    /// At least one agent, every role played by a defined agent, and implementers that can edit
    /// code.
    fn check_roles(&self, fail: &Refuse) -> Checked {
        let defined: Vec<&str> = self.agents.keys().map(String::as_str).collect();
        fail.when(
            defined.is_empty(),
            "agents",
            "no agent is defined",
            "define at least one agent, e.g. `claude: { kind: claude-cli }`",
        )?;
        for role in Role::ALL {
            let name = self.roles.get(role);
            fail.when(
                !self.agents.contains_key(name),
                &format!("roles.{role}"),
                format!("\"{name}\" names no agent defined under `agents`"),
                format!(
                    "use one of the defined agents ({}) or add `agents.{name}`",
                    defined.join(", ")
                ),
            )?;
        }
        for role in [Role::ImplUi, Role::ImplBackend, Role::ImplTest] {
            let name = self.roles.get(role);
            if let Some(agent) = self.agents.get(name)
                && agent.kind.is_http()
            {
                return fail.at(
                    &format!("roles.{role}"),
                    format!(
                        "\"{name}\" is an `{}` agent, which only answers in text and cannot edit code or run tests",
                        kind_name(agent.kind)
                    ),
                    "assign a claude-cli, codex-cli or command agent to the implementer roles; HTTP agents can play spec_author, spec_reviewer, e2e_runner and judge",
                );
            }
        }
        Ok(())
    }

    /// One agent's settings: its name, its command, the HTTP-only keys, timeouts, its opposite,
    /// its URL and its environment; `defined` lists every agent's name for the help lines.
    fn check_agent(
        &self,
        name: &str,
        agent: &AgentConfig,
        defined: &[&str],
        fail: &Refuse,
    ) -> Checked {
        let base = format!("agents.{name}");
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        {
            return fail.at(
                &base,
                format!("agent name \"{name}\" is not allowed"),
                "use letters, digits, `-` and `_` only",
            );
        }
        check_command(&base, agent, fail)?;
        if let Some(problem) = self.http_problem(name, agent) {
            let (key, problem, help) = problem;
            return fail.at(&format!("{base}.{key}"), problem, help);
        }
        fail.when(
            agent.proxy == Some(true) && agent.kind == AgentKind::Command,
                &format!("{base}.proxy"),
                "the model API proxy fronts the claude-cli, codex-cli, anthropic and openai kinds; a `command` agent's program talks to whatever it likes",
                "remove `proxy`; give a command agent no key it should not hold",
        )?;
        fail.when(
            agent.timeout_s == Some(0),
            &format!("{base}.timeout_s"),
            "0 is not a usable timeout",
            "use a positive number of seconds",
        )?;
        if let Some(opposite) = &agent.opposite {
            fail.when(
                opposite == name,
                &format!("{base}.opposite"),
                format!("\"{opposite}\" is the agent itself"),
                "name a different agent: the opposite reviews this agent's work",
            )?;
            fail.when(
                !self.agents.contains_key(opposite),
                &format!("{base}.opposite"),
                format!("\"{opposite}\" names no agent defined under `agents`"),
                format!("use one of: {}", defined.join(", ")),
            )?;
        }
        if let Some(url) = &agent.base_url
            && !(url.starts_with("http://") || url.starts_with("https://"))
        {
            return fail.at(
                &format!("{base}.base_url"),
                format!("\"{url}\" is not an http(s) URL"),
                "use e.g. `http://127.0.0.1:8080`",
            );
        }
        for key in agent.env.keys() {
            fail.when(
                key.is_empty() || key.contains('='),
                &format!("{base}.env"),
                format!("\"{key}\" is not a valid environment variable name"),
                "use names like `MY_SETTING`",
            )?;
        }
        Ok(())
    }

    /// The app to test: its ready pattern, URL, timeout and start command.
    fn check_app(&self, fail: &Refuse) -> Checked {
        if let Some(app) = &self.app {
            if let Some(pattern) = &app.ready_pattern
                && let Err(e) = regex::Regex::new(pattern)
            {
                let first = e.to_string().lines().last().unwrap_or_default().to_string();
                return fail.at(
                    "app.ready_pattern",
                    format!("\"{pattern}\" is not a valid regex ({})", first.trim()),
                    "escape special characters, e.g. `ready in \\d+ms`",
                );
            }
            if let Some(url) = &app.url
                && !(url.starts_with("http://") || url.starts_with("https://"))
            {
                return fail.at(
                    "app.url",
                    format!("\"{url}\" is not an http(s) URL"),
                    "use e.g. `http://localhost:3000`",
                );
            }
            fail.when(
                app.ready_timeout_s == 0,
                "app.ready_timeout_s",
                "0 is not a usable timeout",
                "use a positive number of seconds (default 120)",
            )?;
            fail.when(
                app.start.as_deref().is_some_and(|s| s.trim().is_empty()),
                "app.start",
                "the start command is empty",
                "give the shell command that starts the app, e.g. `npm run dev`",
            )?;
            Self::check_app_tree(app, fail)?;
        }
        Ok(())
    }

    /// What the round's tree takes from `app`: variable names, dependency paths inside the
    /// checkout.
    fn check_app_tree(app: &super::AppConfig, fail: &Refuse) -> Checked {
        for name in app.env.keys() {
            let valid = name
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            fail.when(
                !valid,
                &format!("app.env.{name}"),
                format!("\"{name}\" is not an environment variable name"),
                "use letters, digits and `_`, not starting with a digit, e.g. `DATA_DIR`",
            )?;
        }
        for dep in &app.dependencies {
            let path = std::path::Path::new(dep);
            let inside = !dep.trim().is_empty()
                && path.is_relative()
                && path
                    .components()
                    .all(|c| matches!(c, std::path::Component::Normal(_)));
            fail.when(
                !inside,
                "app.dependencies",
                format!("\"{dep}\" is not a directory inside the checkout"),
                "name a relative path without `..`, e.g. `node_modules` or `web/.venv`",
            )?;
        }
        fail.when(
            app.reset.as_deref().is_some_and(|s| s.trim().is_empty()),
            "app.reset",
            "the reset command is empty",
            "give a shell command that resets the app's data, or remove the key",
        )?;
        Ok(())
    }

    /// Model prices: finite, never negative.
    fn check_prices(&self, fail: &Refuse) -> Checked {
        for (model, price) in &self.prices {
            let numbers = [
                ("input", Some(price.input)),
                ("output", Some(price.output)),
                ("cache_read", price.cache_read),
                ("cache_write", price.cache_write),
            ];
            for (field, value) in numbers {
                if let Some(v) = value
                    && (!v.is_finite() || v < 0.0)
                {
                    return fail.at(
                        &format!("prices.{model}.{field}"),
                        format!("{v} is not a price"),
                        "give USD per million tokens as a number of 0 or more, e.g. `{ input: 3.0, output: 15.0 }`",
                    );
                }
            }
        }
        Ok(())
    }

    /// The review panel (non-empty, no persona twice) and the run limits.
    fn check_review_and_limits(&self, fail: &Refuse) -> Checked {
        if let PanelSelection::List(list) = &self.review.panel {
            fail.when(
                list.is_empty(),
                    "review.panel",
                    "the panel is empty",
                    "list personas (architect, paranoid, operator, simplifier, user_advocate, product_strategist) or use `auto`",
            )?;
            for (i, p) in list.iter().enumerate() {
                fail.when(
                    list[..i].contains(p),
                    "review.panel",
                    format!("`{p}` is listed twice"),
                    "list each persona once",
                )?;
            }
        }
        fail.when(
            self.limits.task_attempts == 0,
            "limits.task_attempts",
            "0 attempts would never run a task",
            "use 1 or more (default 3)",
        )?;
        fail.when(
            !(1..=MAX_PARALLEL_TASKS).contains(&self.limits.parallel_tasks),
            "limits.parallel_tasks",
            format!(
                "{} tasks at once is outside 1..={MAX_PARALLEL_TASKS}",
                self.limits.parallel_tasks
            ),
            "use 1 (one task after the other) up to 16 (default 4)",
        )?;
        fail.when(
            self.limits.agent_timeout_s == 0,
            "limits.agent_timeout_s",
            "0 is not a usable timeout",
            "use a positive number of seconds (default 3600)",
        )?;
        if let Some(b) = self.limits.budget_usd
            && (!b.is_finite() || b < 0.0)
        {
            return fail.at(
                "limits.budget_usd",
                format!("{b} is not a budget"),
                "use a positive amount in USD, or null for no budget",
            );
        }
        Ok(())
    }

    /// The evaluate settings: the rubric, step timeout, browser, plateau.
    fn check_evaluate(&self, fail: &Refuse) -> Checked {
        if let Some(rubric) = &self.evaluate.rubric {
            self.check_rubric(rubric, fail)?;
        }
        fail.when(
            self.evaluate.step_timeout_s == 0,
            "evaluate.step_timeout_s",
            "0 is not a usable timeout",
            "use a positive number of seconds (default 10)",
        )?;
        if let Some(b) = &self.evaluate.browser
            && b.trim() != crate::types::BUNDLED_BROWSER
            && !std::path::Path::new(b.trim()).is_absolute()
        {
            return fail.at(
                "evaluate.browser",
                format!("\"{b}\" is neither an absolute path nor `bundled`"),
                "give the Chromium executable, e.g. `/usr/bin/chromium`, or `bundled` for Playwright's own browser",
            );
        }
        fail.when(
            self.evaluate.rubric_plateau_rounds == 0,
            "evaluate.rubric_plateau_rounds",
            "0 rounds",
            "use 1 or more (default 3)",
        )?;
        Ok(())
    }

    /// The branch prefix (part of a git branch name) and the improve budgets.
    fn check_github_and_improve(&self, fail: &Refuse) -> Checked {
        let prefix = &self.github.branch_prefix;
        if prefix
            .chars()
            .any(|c| c.is_whitespace() || "~^:?*[\\".contains(c))
            || prefix.contains("..")
        {
            return fail.at(
                "github.branch_prefix",
                format!("\"{prefix}\" cannot be part of a git branch name"),
                "use letters, digits, `-`, `_` and `/`, e.g. `spec-orchestrate/`",
            );
        }
        if let Some(days) = self.github.evidence_retention_days
            && !(1..=MAX_RETENTION_DAYS).contains(&days)
        {
            return fail.at(
                "github.evidence_retention_days",
                format!("{days} days is outside 1–{MAX_RETENTION_DAYS}"),
                "use 1 to 90 days (public repositories) or up to 400 (private); leave it out for the repository's default",
            );
        }
        fail.when(
            self.improve.line_budget == 0,
            "improve.line_budget",
            "0 lines",
            "use a positive number of lines (default 300)",
        )?;
        fail.when(
            self.improve.min_occurrences == 0,
            "improve.min_occurrences",
            "0 occurrences would turn every observation into a proposal",
            "use 1 or more (default 2)",
        )?;
        Ok(())
    }

    /// What is wrong with the HTTP-specific settings of agent `name`, as (key below the agent,
    /// problem, help).
    fn http_problem(&self, name: &str, agent: &AgentConfig) -> Option<(String, String, String)> {
        let kind = kind_name(agent.kind);
        if !agent.kind.is_http() {
            let http_only = [
                ("max_output_tokens", agent.max_output_tokens.is_some()),
                ("max_retries", agent.max_retries.is_some()),
                ("retry_base_ms", agent.retry_base_ms.is_some()),
                ("api_key_env", agent.api_key_env.is_some()),
                ("base_url", agent.base_url.is_some()),
            ];
            let (key, _) = http_only.into_iter().find(|(_, set)| *set)?;
            return Some((
                key.into(),
                format!("`{key}` is only for the HTTP kinds `anthropic` and `openai`, this agent is `{kind}`"),
                match agent.kind {
                    AgentKind::ClaudeCli => "remove it; point the CLI at another endpoint with `env: { ANTHROPIC_BASE_URL: … }`".into(),
                    AgentKind::CodexCli => "remove it; codex reads its providers from `$CODEX_HOME/config.toml` (pass `env: { CODEX_HOME: … }`)".into(),
                    _ => "remove it".into(),
                },
            ));
        }
        if agent.binary.is_some() {
            return Some((
                "binary".into(),
                format!("`binary` is only for CLI kinds, this agent is `{kind}` (an HTTP API)"),
                "remove it; use `base_url` to point the agent at another endpoint".into(),
            ));
        }
        if agent.max_output_tokens == Some(0) {
            return Some((
                "max_output_tokens".into(),
                "0 output tokens would never produce an answer".into(),
                "use a positive number, e.g. 16000 (default)".into(),
            ));
        }
        if agent.retry_base_ms == Some(0) {
            return Some((
                "retry_base_ms".into(),
                "0 ms would retry a rate-limited API in a tight loop".into(),
                "use a positive number of milliseconds (default 1000)".into(),
            ));
        }
        if let Some(env) = &agent.api_key_env
            && (env.is_empty() || !env.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
        {
            return Some((
                "api_key_env".into(),
                format!("\"{env}\" is not an environment variable name"),
                "name the variable that holds the key, e.g. `ANTHROPIC_API_KEY`; never put the key itself in this file".into(),
            ));
        }
        let model = agent.effective_model().unwrap_or_default();
        if crate::pricing::lookup(&self.prices, &model).is_none() {
            return Some((
                "model".into(),
                format!(
                    "agent `{name}` uses model \"{model}\", which has no price, so `limits.budget_usd` could not be enforced"
                ),
                format!(
                    "add its list price under `prices`, e.g. `prices: {{ {model}: {{ input: 3.0, output: 15.0 }} }}` (USD per million tokens), or use a model of the built-in table"
                ),
            ));
        }
        None
    }
}

impl Config {
    /// The rubric: criteria with positive weights, a definition each (theirs or a preset's),
    /// thresholds and the pass mark on the 0–10 scale, and a scorer (the e2e_runner) that can
    /// open the screenshots: an HTTP agent gets the prompt as text only, so it would score
    /// pictures it never saw.
    fn check_rubric(&self, rubric: &Rubric, fail: &Refuse) -> Checked {
        fail.when(
            rubric.criteria.is_empty(),
            "evaluate.rubric.criteria",
            "no criteria",
            "list criteria with positive weights, e.g. `{design: 3, craft: 2}`",
        )?;
        let presets: Vec<&str> = super::rubric::PRESETS.iter().map(|(n, _)| *n).collect();
        for (name, c) in &rubric.criteria {
            let key = format!("evaluate.rubric.criteria.{name}");
            fail.when(
                !c.weight.is_finite() || c.weight <= 0.0,
                &key,
                format!("weight {} is not positive", c.weight),
                "use a positive weight",
            )?;
            fail.when(
                rubric.definition(name).is_none_or(|d| d.trim().is_empty()),
                    &key,
                    format!("criterion `{name}` has no definition, and it is not a preset"),
                    format!(
                        "write `{name}: {{ weight: {}, definition: \"what it means and what a low score looks like\" }}`, or use a preset ({})",
                        c.weight,
                        presets.join(", ")
                    ),
            )?;
            if let Some(p) = c.pass
                && !(0.0..=10.0).contains(&p)
            {
                return fail.at(
                    &format!("{key}.pass"),
                    format!("{p} is outside 0–10"),
                    "a criterion's threshold is a score on the 0–10 scale; use e.g. 6",
                );
            }
        }
        fail.when(
            !(0.0..=10.0).contains(&rubric.pass),
            "evaluate.rubric.pass",
            format!("{} is outside 0–10", rubric.pass),
            "the weighted score is on a 0–10 scale; use e.g. 7.0",
        )?;
        let scorer = self.roles.get(Role::E2eRunner);
        if let Some(agent) = self.agents.get(scorer)
            && agent.kind.is_http()
        {
            return fail.at(
                "evaluate.rubric",
                format!(
                    "the rubric is scored by the e2e_runner, \"{scorer}\", an `{}` agent: it gets the prompt as text only and cannot see the screenshots",
                    kind_name(agent.kind)
                ),
                "give `roles.e2e_runner` a claude-cli, codex-cli or command agent (one that opens image files), or remove `evaluate.rubric`",
            );
        }
        Ok(())
    }
}

/// An agent's `command` against its kind: only a `command` agent has one, and it names a program.
fn check_command(base: &str, agent: &AgentConfig, fail: &Refuse) -> Checked {
    match (&agent.command, agent.kind) {
        (None, AgentKind::Command) => {
            return fail.at(
                &format!("{base}.command"),
                "kind `command` needs a `command` (program and arguments)",
                "add e.g. `command: [\"python3\", \"agents/reviewer.py\"]`",
            );
        }
        (Some(cmd), AgentKind::Command) if cmd.is_empty() || cmd[0].trim().is_empty() => {
            return fail.at(
                &format!("{base}.command"),
                "the command is empty",
                "give the program first, then its arguments",
            );
        }
        (Some(_), kind) if kind != AgentKind::Command => {
            return fail.at(
                &format!("{base}.command"),
                format!(
                    "`command` is only for kind `command`, this agent is `{}`",
                    kind_name(kind)
                ),
                "remove `command`, or use `binary` to point a CLI kind at another executable",
            );
        }
        _ => {}
    }
    Ok(())
}
