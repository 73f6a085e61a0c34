# kbflow: `make demo` and `make test` work on a fresh machine (Python 3.11, no network but PyPI).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export DAGSTER_HOME := $(CURDIR)
export KBFLOW_LAKE ?= $(CURDIR)/data/lake

.PHONY: ocr install demo lint browser test test-fast test-unit bench dagster clean

$(BIN)/kbflow: pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -c constraints.txt -e '.[dev]'
	touch $(BIN)/kbflow

install: $(BIN)/kbflow

demo: install
	$(BIN)/kbflow add data/samples/docs --type docs --id sample-docs --scope kbflow
	$(BIN)/kbflow add data/samples/repo --type repo --id sample-repo --scope kbflow
	$(BIN)/kbflow add data/samples/records.jsonl --type jsonl --id sample-records
	$(BIN)/kbflow add data/samples/pdf --type pdf --id sample-pdf --scope kbflow
	$(BIN)/kbflow add data/samples/web --type web --id sample-web --scope kbflow
	$(BIN)/kbflow add data/samples/tickets --type ticket --id sample-tickets --scope kbflow
	$(BIN)/kbflow ingest
	$(BIN)/kbflow status
	$(BIN)/python data/samples/questions.py

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# the web page's tests drive a real browser: Debian's Chromium (Playwright cannot download one here)
browser:
	@if ! command -v chromium >/dev/null 2>&1; then \
		echo "make: chromium is missing; installing it from Debian for the web page's browser tests (apt-get install chromium, about 500 MB)"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null \
			|| { echo "make: could not install chromium (run as root, or install it yourself)"; exit 1; }; \
	fi

# scanned PDF pages are read by Tesseract: Debian's tesseract-ocr with its English data
ocr:
	@if ! command -v tesseract >/dev/null 2>&1; then \
		echo "make: tesseract is missing; installing it from Debian for OCR of scanned PDF pages (apt-get install tesseract-ocr tesseract-ocr-eng, about 40 MB)"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq tesseract-ocr tesseract-ocr-eng >/dev/null \
			|| { echo "make: could not install tesseract (run as root, or install it yourself)"; exit 1; }; \
	fi

test: install lint browser ocr
	KBFLOW_BROWSER_TESTS=require KBFLOW_OCR_TESTS=require $(BIN)/python -m pytest -q --durations=25

test-fast: install lint
	$(BIN)/python -m pytest -q -m "not e2e"

# the inner loop, under two minutes: tests/unit/ (the tier is the folder: tests/conftest.py)
test-unit: install
	$(BIN)/python -m pytest -q -m unit -p no:cacheprovider

bench: install
	$(BIN)/python bench/ingest_throughput.py
	$(BIN)/python bench/query_latency.py
	$(BIN)/python bench/freshness.py

dagster: install
	$(BIN)/dagster dev

clean:
	rm -rf data/lake .pytest_cache
