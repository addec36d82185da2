// Exact cosine k-nearest messages of one group (used when the group is small enough that a
// scan is cheaper and exact), optionally only those at or before an instant (as-of: a message
// without an instant is then left out). Parameters: $group_id (str), $vector (list[float],
//   L2-normed), $k (int), $max_instant (float epoch seconds, or null for no limit). Returns: id (str), score (float in [0, 1], Neo4j's (1 + cosine) / 2),
//   person_id (str, or null when the message has no sender in the group) and the fields of
//   search/get_messages (channel, speaker, session, turn, ts, text, turn_created); best first.
MATCH (m:Message {group_id: $group_id})
WHERE m.embedding IS NOT NULL AND ($max_instant IS NULL OR m.instant <= $max_instant)
WITH m, vector.similarity.cosine(m.embedding, $vector) AS score
ORDER BY score DESC
LIMIT $k
RETURN m.id AS id, score, [(m)-[:SOURCE]->(p:Person) | p.id][0] AS person_id,
       m.channel AS channel, m.speaker AS speaker, m.session AS session, m.turn AS turn, m.ts AS ts,
       m.text AS text, m.turn_created AS turn_created
