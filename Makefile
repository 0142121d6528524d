# Two entry points, both self-installing and idempotent on a fresh Debian 12 machine (as root):
#   make demo   install the runtime only (Debian's base packages, Assay without extras), then
#               run sample programs (correct, failing, hostile) in the sandbox and print a table
#   make test   install everything (the dev stack, the other languages, the trainers), then
#               run lint, type checks and the test suite
# Every long step says what it is doing before it starts (apt, pip, npm), and pip and apt show
# their progress.
#   make docs   build the documentation site into site/ (offline; open site/index.html)
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
RUNTIME_STAMP := $(VENV)/.runtime-stamp
APT_STAMP := .venv-apt-stamp
APT_BASE_STAMP := .venv-apt-base-stamp
APT_PACKAGES := python3 python3-venv python3-numpy python3-pytest gcc g++ libseccomp2 procps git
# Toolchains of the other languages (issue 6). Best effort: a package that cannot be installed
# is reported, and that language's tests skip themselves with a message naming the toolchain.
APT_LANGUAGES := libboost-dev libssl-dev openjdk-17-jdk-headless nodejs golang-go \
	golang-github-stretchr-testify-dev rustc cargo librust-rand-dev librust-regex-dev librust-md5-dev
# Real servers of the observability tests (issue 19): Prometheus and promtool for the alert
# rules, Chromium for the dashboard page. Best effort: without them those tests skip, naming
# the package.
APT_OBSERVABILITY := prometheus chromium
# Task images and the hardened tier (issue 20): mmdebstrap builds images from Debian packages,
# runsc is gVisor. Best effort: without them the image-build and gVisor tests skip, naming
# the package.
APT_ENVIRONMENTS := mmdebstrap runsc
# The queue fleet's broker (issue 33): its tests and benchmark start a real redis-server on
# loopback. Best effort: without it those tests skip, naming the package.
APT_QUEUE := redis-server

# Ruff for the quality reward runs INSIDE the sandbox, which sees only the host's /usr (read-only):
# the binary must live under /usr. Debian's pip (not the venv's) installs it to /usr/local/bin.
RUFF_SANDBOX := /usr/local/bin/ruff

.PHONY: demo test docs lint typecheck unit install runtime apt clean bench ruff-sandbox toolchains security-image security-gvisor

# What the demo and the runtime need: Python, a C/C++ compiler, libseccomp.
$(APT_BASE_STAMP): Makefile
	@missing=""; for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "==> installing Debian packages (apt-get):$$missing"; \
	  apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q $$missing; \
	fi
	@touch $@

$(APT_STAMP): Makefile $(APT_BASE_STAMP)
	@missing=""; for p in $(APT_LANGUAGES) $(APT_OBSERVABILITY) $(APT_ENVIRONMENTS) $(APT_QUEUE); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "==> installing toolchains and test servers (apt-get, a few minutes):$$missing"; \
	  apt-get update -q; \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -q $$missing || \
	  for p in $$missing; do \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -q $$p || \
	      echo "WARNING: could not install $$p; the tests that need it will be skipped"; \
	  done; \
	fi
	@touch $@

apt: $(APT_STAMP)

ruff-sandbox: $(APT_STAMP)
	@if [ -x /usr/local/bin/ruff ] || [ -x /usr/bin/ruff ]; then :; else \
	  echo "==> installing ruff under /usr for the sandboxed quality reward (pip)"; \
	  /usr/bin/python3 -m pip --version >/dev/null 2>&1 || \
	    (apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q python3-pip); \
	  /usr/bin/python3 -m pip install --break-system-packages ruff; \
	  test -x $(RUFF_SANDBOX); \
	fi

# The runtime: Assay and its own dependencies only (what `make demo` needs, ~1 minute).
$(RUNTIME_STAMP): pyproject.toml $(APT_BASE_STAMP)
	@test -x $(PY) || { echo "==> creating $(VENV)"; python3 -m venv $(VENV); }
	@echo "==> installing Assay's runtime into $(VENV) (pip)"
	$(PY) -m pip install --progress-bar off --upgrade pip
	$(PY) -m pip install --progress-bar off -e .
	@touch $@

runtime: $(RUNTIME_STAMP)

# The rest, for the tests. The dev extra pulls in the ray extra: the cluster tests
# (tests/executor/ray) start a Ray cluster of three nodes on this machine. The trainers
# extra is the real TRL GRPO loop and veRL's reward loop (tests/integrations); torch is
# installed first as its CPU build (torch==2.13.0 is on this machine's disk; a bare torch
# requirement would pull a CUDA build of several GB).
$(STAMP): pyproject.toml $(RUNTIME_STAMP) $(APT_STAMP) | ruff-sandbox
	@echo "==> installing the test stack into $(VENV) (pip, a few minutes): dev tools, Ray, S3, OpenTelemetry"
	$(PY) -m pip install --progress-bar off -e '.[dev]'
	@echo "==> installing the trainers (pip): torch (CPU build), transformers, TRL"
	$(PY) -m pip install --progress-bar off 'torch==2.13.0'
	$(PY) -m pip install --progress-bar off -e '.[dev,trainers]'
	@# veRL itself without its GPU stack: its tool interface (issue 16) and reward loop (issue 29)
	@echo "==> installing veRL (pip, --no-deps)"
	$(PY) -m pip install --progress-bar off --no-deps 'verl>=0.5' || echo "WARNING: could not install verl; its adapter tests will be skipped"
	@touch $@

# Prebuilt pieces of the Go and Rust test harnesses (testify archives, rand/regex/md5 rlibs),
# under /usr/local/lib/assay where the sandbox can read them. Idempotent; best effort: without
# them Go still works (slower) and Rust's tests skip themselves with a message.
toolchains: $(APT_STAMP)
	@if command -v node >/dev/null && { [ ! -x /usr/bin/esbuild ] || [ ! -d /usr/lib/node_modules/js-md5 ]; }; then \
	  command -v npm >/dev/null || { echo "==> installing npm (apt-get)"; DEBIAN_FRONTEND=noninteractive apt-get install -y -q npm; } || true; \
	  echo "==> installing esbuild (TypeScript) and js-md5 (HumanEval-X JavaScript) under /usr (npm)"; \
	  npm install -g --prefix /usr --no-fund --no-audit esbuild@0.28.2 js-md5@0.8.3 || \
	    echo "WARNING: npm packages not installed (TypeScript tests will be skipped)"; \
	fi
	@echo "==> preparing the Go and Rust test harnesses (first time: a few minutes)"
	@bash scripts/prepare_go.sh || echo "WARNING: Go harness packages not prepared (Go builds will be slower)"
	@bash scripts/prepare_rust.sh || echo "WARNING: Rust crates not prepared (Rust tests will be skipped)"

install: $(STAMP) ruff-sandbox toolchains

demo: runtime
	$(VENV)/bin/assay demo
	$(VENV)/bin/assay agent demo

lint: install
	$(VENV)/bin/ruff check src tests benchmarks examples
	$(VENV)/bin/ruff format --check src tests benchmarks examples

typecheck: install
	$(VENV)/bin/mypy

# Tests marked `alone` load the whole machine on purpose (CPU hogs that outweigh every other
# cgroup): beside the parallel suite they starved its timing edges (a sleeper read at the
# wall backstop), so they run after it, by themselves.
unit: install
	$(PY) -m pytest -q -n 2 -m "not alone"
	$(PY) -m pytest -q -m alone

# The wave-1 security suite again, every sandbox rooted at a task image (issue 20): Debian 11
# with Python 3.9 and the attacks' tools, built with mmdebstrap on first use (~2-3 min, then
# kept in /var/tmp/assay-test-images). Skipped without root or mmdebstrap.
security-image: install
	@if [ "$$(id -u)" = 0 ] && command -v mmdebstrap >/dev/null; then \
	  echo "==> security suite rooted at a task image (the image is built with mmdebstrap on first use: 2-3 minutes)"; \
	  ASSAY_TEST_IMAGE=tests/images/specs/security.toml $(PY) -m pytest -q -n 2 tests/security; \
	else echo "security-image: skipped (needs root and mmdebstrap)"; fi

# And under the hardened tier: every run in a warm gVisor sandbox (runsc, root only).
security-gvisor: install
	@if [ "$$(id -u)" = 0 ] && command -v runsc >/dev/null; then \
	  echo "==> security suite under gVisor"; \
	  ASSAY_ISOLATION=gvisor $(PY) -m pytest -q -n 2 tests/security; \
	else echo "security-gvisor: skipped (needs root and runsc)"; fi

test: lint typecheck unit security-image security-gvisor

# The documentation site (issue 32), from docs/ and the code (scripts/docs_hooks.py generates
# the CLI, HTTP and metrics reference): the docs extra, part of dev, brings MkDocs, Material
# and mkdocstrings. Strict: a broken link or anchor fails the build. `make test` builds it
# too (tests/docs/test_site.py), and checks that the built site fetches nothing from a CDN.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict

bench: install
	$(PY) benchmarks/sandbox_overhead.py

clean:
	rm -rf $(VENV) $(APT_STAMP) $(APT_BASE_STAMP) .pytest_cache .mypy_cache .ruff_cache site
