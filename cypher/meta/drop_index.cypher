// Drop one index by name (schema migration when a definition changed; it is then recreated).
// Parameters: $name (str, an index name from list_indexes). Returns nothing.
DROP INDEX $name IF EXISTS
