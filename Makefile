# GPU Lab Portal. On a fresh Debian/Ubuntu machine, as root:
#   make demo   start the whole lab on this machine and print the URL and demo logins
#   make test   install what the tests need, start the real services, run every check and test
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python

.PHONY: demo stop-demo test venv workloads-venv lint unit

venv: $(VENV)/.installed

$(VENV)/.installed: requirements.txt requirements-test.txt cli/pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV) || { apt-get update -q && apt-get install -y -q python3-venv && $(PYTHON) -m venv $(VENV); }
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements-test.txt
	@test -f .env || printf '# Development settings for manage.py (git-ignored). Never used by make demo or production.\nDEBUG=1\n' > .env
	touch $@

# The workloads (trainer, inference server) have their own environment: PyTorch stays out of the portal's.
workloads-venv: workloads/.venv/.installed

workloads/.venv/.installed: workloads/requirements.txt workloads/requirements-test.txt
	@test -x workloads/.venv/bin/python || $(PYTHON) -m venv workloads/.venv
	workloads/.venv/bin/python -m pip install -q --upgrade pip
	workloads/.venv/bin/python -m pip install -q -r workloads/requirements-test.txt
	touch $@

demo:
	bash scripts/demo.sh

stop-demo:
	bash scripts/demo.sh stop

test:
	bash scripts/test.sh

lint: venv
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports
	$(VENV)/bin/mypy

# Unit tests only: no services needed (SQLite, in-memory broker).
unit: venv
	$(VENV)/bin/pytest -m "not integration and not browser"
