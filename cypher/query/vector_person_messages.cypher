// Exact cosine top-$k messages sent by each given person of one group (raw fallback of empty
// rows), optionally only those written at or before an instant.
// Parameters: $group_id (str), $person_ids (list[str]), $vector (list[float], L2-normed),
//   $k (int, per person), $max_instant (float epoch seconds, or null for no time limit).
// Returns: person_id (str), id (str, message id), score (float in [-1, 1], the cosine: Neo4j's
//   similarity (1 + cos) / 2 mapped back); best first per person.
UNWIND $person_ids AS pid
CALL (pid) {
  MATCH (m:Message {group_id: $group_id})-[:SOURCE]->(:Person {group_id: $group_id, id: pid})
  WHERE m.embedding IS NOT NULL AND ($max_instant IS NULL OR m.instant <= $max_instant)
  WITH m, 2 * vector.similarity.cosine(m.embedding, $vector) - 1 AS score
  ORDER BY score DESC, m.turn_created
  LIMIT $k
  RETURN m.id AS id, score
}
RETURN pid AS person_id, id, score
