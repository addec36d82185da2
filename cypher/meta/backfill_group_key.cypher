// Migration: give messages stored before `group_key` existed the fulltext token of their group
// (graphmem.store.scope.group_key), $batch at a time. Idempotent; call until it returns 0.
// Parameters: $rows (list of maps): group_id (str), key (str, digits); $batch (int).
// Returns: updated (int).
UNWIND $rows AS row
MATCH (m:Message {group_id: row.group_id})
WHERE m.group_key IS NULL
WITH m, row LIMIT $batch
SET m.group_key = row.key
RETURN count(m) AS updated
