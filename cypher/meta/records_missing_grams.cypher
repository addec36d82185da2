// Migration: derived records whose content has a run of an unspaced script but no
// `content_grams` yet (written before the field existed).
// Parameters: $pattern (str, Java regex: graphmem.core.text.GRAM_JAVA_PATTERN), $batch (int).
// Returns: group_id (str), id (str), doc (str, content), at most $batch rows.
MATCH (d:Derived)
WHERE d.content_grams IS NULL AND d.content =~ $pattern
RETURN d.group_id AS group_id, d.id AS id, d.content AS doc
LIMIT $batch
