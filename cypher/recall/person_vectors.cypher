// The vectors of one person's messages in a group (graphmem.recall.cache fills its matrix).
// Parameters: $group_id (str), $person_id (str).
// Returns: id (str), embedding (list[float], L2-normed), turn_created (int, write position),
//   instant (float epoch seconds or null); messages without a vector are left out.
MATCH (p:Person {group_id: $group_id, id: $person_id})<-[:SOURCE]-(m:Message)
WHERE m.group_id = $group_id AND m.embedding IS NOT NULL
RETURN m.id AS id, m.embedding AS embedding, m.turn_created AS turn_created, m.instant AS instant
