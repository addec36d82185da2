# graphmem — the two commands of the README are `make demo` and `make test`.
SHELL := /bin/bash
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1

.PHONY: setup neo4j demo test stop clean

$(BIN)/graphmem: pyproject.toml
	@echo "Creating $(VENV) and installing graphmem with the extras the tests use (quiet; several minutes on a first run)"
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	# torch (CUDA build, a few GB) only for the tests of the gpu and train extras: the torch
	# embedding backend against the onnx one, and training. Pinned first, so sentence-transformers
	# does not pick its own version. The base install (onnx backend) needs none of it.
	$(BIN)/pip install -q "torch==2.13.0"
	# the library (its wheel build puts the ONNX graph of all-MiniLM-L6-v2 into graphmem/_model,
	# hatch_build.py), plus every extra the demo and the tests use
	$(BIN)/pip install -q -e ".[test,api,plots,eval,gpu,train,mcp,ogm,client,otel]"
	touch $(BIN)/graphmem

setup: $(BIN)/graphmem

# The MCP Inspector CLI (Node), which tests/integration/test_mcp_schemas.py drives against
# `graphmem mcp`; pinned, into .graphmem/tools; without npm (or offline) that one test skips.
INSPECTOR := .graphmem/tools/node_modules/.bin/mcp-inspector
$(INSPECTOR):
	@command -v npm >/dev/null 2>&1 && npm install --silent --no-audit --no-fund --prefix .graphmem/tools \
		"@modelcontextprotocol/inspector@2.12.0" >/dev/null 2>&1 \
		|| echo "MCP Inspector CLI not installed (no npm or no registry): its test will skip"

neo4j: setup
	$(BIN)/graphmem neo4j start
	$(BIN)/graphmem schema apply

# Everything a new user needs: Neo4j, schema, the sample chat, its derived memory, search, ask.
# The derived memory is replayed from hand-written Writer actions (examples/
# sample_writer_actions.jsonl) through the real validation path, so no model is needed here;
# with a Writer endpoint set, `graphmem derive --group G` runs the model instead.
demo: neo4j
	$(BIN)/graphmem ingest examples/sample_chat.jsonl --format jsonl
	$(BIN)/graphmem derive --group trail-trip --replay examples/sample_writer_actions.jsonl
	$(BIN)/graphmem search --group trail-trip "which trail did the family choose" -k 5
	$(BIN)/graphmem ask --group trail-trip "Which trail did the family choose, and does Ben agree?"
	$(BIN)/graphmem stats --group trail-trip
	@echo
	@echo "Where to look:"
	@echo "  Neo4j Browser  http://127.0.0.1:$${GRAPHMEM_NEO4J_HTTP_PORT:-7474}/browser/  (user neo4j; password in .graphmem/neo4j-password, print it with: $(BIN)/graphmem neo4j password)"
	@echo "    MATCH (d:Derived {group_id:'trail-trip'})-[r:OWNER|SOURCE|FROM]->(x) RETURN d, r, x"
	@echo "    ready queries: docs/browser.md"
	@echo "  Graph page     $(BIN)/graphmem serve   then open http://127.0.0.1:$${GRAPHMEM_API_PORT:-8000}/groups/trail-trip/view"

# Type check of the library (config in pyproject.toml), the wheel without extras in a fresh
# venv (tests/smoke_wheel.sh: what a plain `pip install graphmem` runs), then every test
# (tests/unit need no database; tests/integration use the Neo4j started above).
test: neo4j $(INSPECTOR)
	$(BIN)/mypy
	bash tests/smoke_wheel.sh $(PY)
	$(BIN)/pytest -q tests

stop:
	$(BIN)/graphmem neo4j stop

clean: stop
	rm -rf $(VENV) .graphmem
