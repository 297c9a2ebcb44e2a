# The image behind action.yml: the spec-orchestrate binary on a runtime with Node (the browser
# driver and the agent CLIs), Playwright's Chromium at exactly the driver's playwright-core
# version, and the claude and codex CLIs. Each release publishes it once, and the release tag's
# action.yml names it by version and digest, so jobs on a release never build it; on a branch
# action.yml builds it from this file. CI builds it to keep it honest.
#
# Base images are pinned by digest (a tag is re-pushed whenever the image is rebuilt), with the
# exact version tag beside it for people; Docker pulls by the digest. No `# syntax=` line, so
# the builder's own Dockerfile frontend is used rather than one more image pulled by tag. The
# Rust build is `--locked` to Cargo.lock, the npm packages to exact versions (the driver to its
# package-lock.json). To move a base image: `docker buildx imagetools inspect <tag>` prints the
# digest of the tag's index; replace both.

# rust:1.95.0-slim-bookworm (multi-platform index)
ARG RUST_IMAGE=rust:1.95.0-slim-bookworm@sha256:d7482085ff5b415f84dba5647ae71606650bdef00db7aeb69f4b3d170c3e4082
# node:22.23.3-bookworm-slim (multi-platform index)
ARG NODE_IMAGE=node:22.23.3-bookworm-slim@sha256:43ac6c60b8f89723f746e8a92ce91abd5017e627ce1ddfe4238355d3a30b772c

# --- dependencies planned once, cached while only our sources change (cargo-chef) -----------
FROM ${RUST_IMAGE} AS chef
ARG CARGO_CHEF_VERSION=0.1.78
RUN cargo install cargo-chef --locked --version "${CARGO_CHEF_VERSION}"
WORKDIR /src

FROM chef AS planner
COPY . .
RUN cargo chef prepare --recipe-path recipe.json

FROM chef AS builder
COPY --from=planner /src/recipe.json recipe.json
RUN cargo chef cook --release --locked --recipe-path recipe.json
COPY . .
RUN cargo build --release --locked --bin spec-orchestrate

# --- runtime: only what a job needs ------------------------------------------------------------
FROM ${NODE_IMAGE} AS runtime
ARG CLAUDE_CODE_VERSION=2.1.332
ARG CODEX_VERSION=0.171.0
SHELL ["/bin/bash", "-o", "pipefail", "-c"]

# git for the work branch, python3 for `command` agents written in Python, certificates for TLS.
# Debian's package versions are pinned by the pinned base image's release, not one by one.
# hadolint ignore=DL3008
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates git python3 \
 && rm -rf /var/lib/apt/lists/*

# The browser driver with its locked playwright-core, then the Chromium build that exact
# playwright-core version expects (and its system libraries), so driver and browser always match.
ENV PLAYWRIGHT_BROWSERS_PATH=/ms-playwright \
    SPEC_ORCHESTRATE_DRIVER=/usr/local/share/spec-orchestrate/driver \
    SPEC_ORCHESTRATE_BROWSER=bundled
WORKDIR /usr/local/share/spec-orchestrate/driver
COPY driver/package.json driver/package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund \
 && npx --no-install playwright-core install --with-deps chromium \
 && rm -rf /var/lib/apt/lists/* /root/.npm
COPY driver/run.js ./

# The agent CLIs, exact versions.
RUN npm install -g --no-audit --no-fund \
      "@anthropic-ai/claude-code@${CLAUDE_CODE_VERSION}" \
      "@openai/codex@${CODEX_VERSION}" \
 && npm cache clean --force

# Actions mounts the workspace owned by another user than the container's root (the
# orchestrator's own git calls pass this on their command line and read no system config; this
# is for the agents' git).
RUN git config --system safe.directory '*'

# The agents' identity (docs/security.md, "The Docker action"): the orchestrator runs as root
# and starts every agent, acceptance command, app under test and browser driver as this user,
# without capabilities, with a HOME and TMPDIR of its own; it can read neither the
# orchestrator's memory nor the runner's file commands or the job's HOME.
RUN groupadd --system --gid 65532 agent \
 && useradd --system --uid 65532 --gid 65532 --home-dir /nonexistent --no-create-home \
      --shell /usr/sbin/nologin agent

# claude wants IS_SANDBOX=1 for unattended edits in a container; codex's own sandbox cannot
# start in a container, so it runs with danger-full-access (a reviewer's edits are still
# detected and undone by the orchestrator, and the agent uid bounds what it can reach).
ENV IS_SANDBOX=1 \
    DISABLE_TELEMETRY=1 \
    SPEC_ORCHESTRATE_CODEX_SANDBOX=danger-full-access \
    SPEC_ORCHESTRATE_AGENT_USER=65532:65532

COPY --from=builder /src/target/release/spec-orchestrate /usr/local/bin/spec-orchestrate
WORKDIR /github/workspace
ENTRYPOINT ["/usr/local/bin/spec-orchestrate"]
CMD ["action"]
