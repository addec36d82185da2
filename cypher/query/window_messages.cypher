// Messages of one group inside instant windows or sessions (time anchors), best cosine first.
// Parameters: $group_id (str), $windows (list of [start, end) epoch-second pairs),
//   $sessions (list[int], session indexes), $vector (list[float], L2-normed), $k (int),
//   $max_instant (float epoch seconds, or null for no limit).
// Returns: id (str), score (float in [0, 1], Neo4j's (1 + cosine) / 2), best first.
MATCH (m:Message {group_id: $group_id})
WHERE m.embedding IS NOT NULL AND ($max_instant IS NULL OR m.instant <= $max_instant)
  AND (any(w IN $windows WHERE m.instant >= w[0] AND m.instant < w[1])
       OR (size($sessions) > 0 AND EXISTS {
             MATCH (m)-[:IN_SESSION]->(s:Session) WHERE s.index IN $sessions }))
WITH m, vector.similarity.cosine(m.embedding, $vector) AS score
ORDER BY score DESC, m.turn_created
LIMIT $k
RETURN m.id AS id, score
