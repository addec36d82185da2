// Migration: set the `search_grams` of messages (graphmem.core.text.gram_field of search_text).
// Parameters: $rows (list of maps): group_id (str), id (str), grams (str).
// Returns: updated (int).
UNWIND $rows AS row
MATCH (m:Message {group_id: row.group_id, id: row.id})
USING INDEX m:Message(group_id, id)
SET m.search_grams = row.grams
RETURN count(m) AS updated
