// Migration: messages whose fulltext document has a run of an unspaced script (Chinese,
// Japanese, Korean, Thai, ...) but no `search_grams` yet (stored before grams existed, or by
// the first-load importer, whose CSV has no such column).
// Parameters: $pattern (str, Java regex: graphmem.core.text.GRAM_JAVA_PATTERN), $batch (int).
// Returns: group_id (str), id (str), doc (str, search_text), at most $batch rows.
MATCH (m:Message)
WHERE m.search_grams IS NULL AND m.search_text =~ $pattern
RETURN m.group_id AS group_id, m.id AS id, m.search_text AS doc
LIMIT $batch
