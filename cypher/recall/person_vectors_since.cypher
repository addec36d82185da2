// The vectors of some persons' messages written after a write position (what cached matrices
// lack, graphmem.recall.cache): one range seek of the message_order index for all of them,
// not a scan.
// Parameters: $group_id (str), $person_ids (list[str]), $after (int, turn_created of the last
//   message the oldest of their matrices holds).
// Returns: person_id (str, the sender), id (str), embedding (list[float], L2-normed),
//   turn_created (int), instant (float or null); messages without a vector are left out.
MATCH (m:Message)
WHERE m.group_id = $group_id AND m.turn_created > $after
MATCH (m)-[:SOURCE]->(p:Person {group_id: $group_id})
WHERE p.id IN $person_ids AND m.embedding IS NOT NULL
RETURN p.id AS person_id, m.id AS id, m.embedding AS embedding, m.turn_created AS turn_created,
       m.instant AS instant
