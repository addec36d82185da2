#!/usr/bin/env bash
# What a plain `pip install graphmem` gives: build the wheel, install it WITHOUT extras into a
# fresh venv, and run the core commands on the sample chat against the running local Neo4j
# (`make neo4j`). A core module that imports a package only an extra declares fails here.
# Usage: tests/smoke_wheel.sh [python]   (run from the repository root; `make test` runs it)
set -euo pipefail
root=$(pwd)
py=${1:-python3}
tmp=$(mktemp -d)
group="smoke-wheel-$$"
trap 'rm -rf "$tmp"' EXIT

echo "smoke: building the wheel and installing it without extras into a fresh venv"
"$root/.venv/bin/pip" wheel -q --no-deps -w "$tmp/dist" "$root"
"$py" -m venv "$tmp/venv"
"$tmp/venv/bin/pip" install -q "$tmp"/dist/graphmem-*.whl

cd "$tmp"  # away from the source tree: only the installed wheel can be imported
export GRAPHMEM_HOME="$root/.graphmem" GRAPHMEM_LLM_BASE_URL="" GRAPHMEM_LLM_MODEL="" PYTHONPATH=""
"$tmp/venv/bin/python" - <<'PY'
import importlib.util
extra_only = ["torch", "sentence_transformers", "transformers", "nltk", "networkx", "scipy", "pandas",
              "matplotlib", "fastapi", "mcp", "neomodel"]
present = [m for m in extra_only if importlib.util.find_spec(m) is not None]
assert not present, f"the base install holds packages only extras declare: {present}"
import graphmem
assert graphmem.__file__.startswith(__import__("sys").prefix), graphmem.__file__
PY
gm="$tmp/venv/bin/graphmem"
"$gm" neo4j start >/dev/null
"$gm" ingest "$root/examples/sample_chat.jsonl" --format jsonl --group "$group" >/dev/null
"$gm" search --group "$group" "which trail did the family choose" -k 3 --json > search.json
"$gm" ask --group "$group" "Which trail did the family choose?" --json > ask.json
"$tmp/venv/bin/python" - "$group" <<'PY'
import json, sys
search, ask = json.load(open("search.json")), json.load(open("ask.json"))
assert search["group_id"] == sys.argv[1] and search["mode_used"] == "hybrid" and search["hits"], search
assert ask["group_id"] == sys.argv[1] and ask["excerpts"] and ask["message_ids"], ask
print(f"smoke: ok (search: {len(search['hits'])} hits, top {search['hits'][0]['id']})")
PY
"$tmp/venv/bin/python" - "$group" <<'PY'
import sys
from graphmem.core.config import get_settings
from graphmem.groups.service import forget_group
from graphmem.store.db import Store, open_driver
driver = open_driver(get_settings())
forget_group(Store(driver), sys.argv[1])
driver.close()
PY
