// Migration: set the `content_grams` of derived records (graphmem.core.text.gram_field of content).
// Parameters: $rows (list of maps): group_id (str), id (str), grams (str).
// Returns: updated (int).
UNWIND $rows AS row
MATCH (d:Derived {group_id: row.group_id, id: row.id})
SET d.content_grams = row.grams
RETURN count(d) AS updated
