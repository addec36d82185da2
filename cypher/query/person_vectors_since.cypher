// The vectors of one person's messages written after a write position (what a cached matrix
// lacks, graphmem.vector_cache): a range seek of the message_order index, not a scan.
// Parameters: $group_id (str), $person_id (str), $after (int, turn_created of the last message
//   the cache holds).
// Returns: id (str), embedding (list[float], L2-normed), turn_created (int), instant (float or
//   null); messages without a vector are left out.
MATCH (m:Message)
WHERE m.group_id = $group_id AND m.turn_created > $after
MATCH (m)-[:SOURCE]->(:Person {group_id: $group_id, id: $person_id})
WITH m WHERE m.embedding IS NOT NULL
RETURN m.id AS id, m.embedding AS embedding, m.turn_created AS turn_created, m.instant AS instant
