// Exact cosine k-nearest messages of one group (used when the group is small enough that a
// scan is cheaper and exact). Parameters: $group_id (str), $vector (list[float], L2-normed),
//   $k (int). Returns: id (str), score (float in [0, 1], Neo4j's (1 + cosine) / 2), best first.
MATCH (m:Message {group_id: $group_id})
WHERE m.embedding IS NOT NULL
WITH m, vector.similarity.cosine(m.embedding, $vector) AS score
ORDER BY score DESC
LIMIT $k
RETURN m.id AS id, score
