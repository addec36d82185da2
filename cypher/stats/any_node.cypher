// Whether the database holds any node at all (reads at most one): what the offline importer
// checks before it replaces the database (graphmem.verbatim.bulk_import). Constraints and indexes are
// no nodes, so a database with only the schema applied counts as empty.
// Parameters: none. Returns: nodes (int, 0 or 1).
MATCH (n)
WITH n LIMIT 1
RETURN count(n) AS nodes
