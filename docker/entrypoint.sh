#!/bin/sh
# Reads secrets from files (Docker/compose `secrets:`) into graphmem's settings, then runs the
# command (default: graphmem serve). For each NAME in the list, NAME_FILE names a file whose
# content becomes NAME; setting both is refused. The Neo4j secret may be in the image's
# NEO4J_AUTH_FILE form "neo4j/<password>": the "neo4j/" part is dropped.
set -eu
for name in GRAPHMEM_NEO4J_PASSWORD GRAPHMEM_API_KEY GRAPHMEM_LLM_API_KEY GRAPHMEM_WRITER_API_KEY; do
    file_var="${name}_FILE"
    eval "file=\${$file_var:-}"
    [ -n "$file" ] || continue
    eval "given=\${$name:-}"
    if [ -n "$given" ]; then
        echo "graphmem-entrypoint: set $name or $file_var, not both" >&2
        exit 64
    fi
    if [ ! -r "$file" ]; then
        echo "graphmem-entrypoint: $file_var names $file, which cannot be read" >&2
        exit 66
    fi
    value="$(cat "$file")"
    if [ "$name" = GRAPHMEM_NEO4J_PASSWORD ]; then
        value="${value#neo4j/}"
    fi
    export "$name=$value"
    unset "$file_var"
done
exec "$@"
