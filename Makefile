# Two commands on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3.11
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

# Debian packages the tests need (the browser tests drive Debian's Chromium with Selenium; the
# Spark tests need a Java runtime, installed only when no `java` is on PATH).
JAVA_PACKAGE := $(if $(shell command -v java),,openjdk-17-jre-headless)
SYSTEM_PACKAGES := chromium chromium-driver $(JAVA_PACKAGE)

.PHONY: install system-packages demo test test-fast lint docs bench figures clean

install: $(STAMP)

# torch goes first, pinned, so that no dependency pulls a CUDA build.
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e '.[dev]'
	touch $(STAMP)

demo: install
	$(PY) -m clinsearch demo

# Installs only what is missing: one `apt-get update`, then `apt-get install -y` (sudo if not root).
system-packages:
	@missing=""; for p in $(SYSTEM_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
		sudo=""; [ "$$(id -u)" = 0 ] || sudo=sudo; \
		echo "installing Debian packages:$$missing"; \
		$$sudo apt-get update && DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y $$missing; \
	fi

# Everything, as CI runs it. The suite also builds the docs site strictly (tests/test_docs.py):
# a broken link fails it.
test: install system-packages
	$(PY) -m pytest -q

# Unit tests only: the slow parts (Spark, browser, real models, crash and race, processes, many
# index builds, the shared data) are marked in tests/conftest.py and left out.
test-fast: install
	$(PY) -m pytest -q -m "not slow"

lint: install
	$(VENV)/bin/ruff check .

# The documentation site, into site/ (open site/index.html); strict: a broken link fails.
docs: install
	$(VENV)/bin/mkdocs build --strict

# The quick benchmarks (a few minutes on 2 cores, on ../shared/data when present): their figures
# are recorded in benchmarks/figures.yaml, then the table (benchmarks/README.md) and the pictures
# (docs/images/benchmarks/) are drawn from it anew.
bench: install
	$(PY) -m benchmarks.quick

# The table and the pictures drawn from benchmarks/figures.yaml, measuring nothing.
figures: install
	$(PY) -m benchmarks.render
	$(PY) -m benchmarks.plots

clean:
	rm -rf $(VENV) build *.egg-info src/*.egg-info demo-index site
