// Cosines for the dense ranking over a context window, each vector read once: the ring (the
// given messages of one group and their NEXT neighbours), the NEXT edges of every ring message,
// and the cosine to the query of every ring message and every neighbour of one.
// (graphmem.recall.pool.context_rows turns this into each ring message's own cosine and those
// of its neighbours; a message two steps from a candidate is read once, not once per edge.)
// As of an instant, neighbours after it (or without an instant) are left out: they are not in
// the ring and lend no context.
// Parameters: $group_id (str), $ids (list[str], the dense candidates), $vector (list[float],
//   L2-normed), $max_instant (float epoch seconds, or null for no limit).
// Returns one row: ring (list[str], ids of the candidates and their neighbours, each once),
//   edges (list of [ring id, neighbour id or null], one per NEXT relationship of a ring
//   message, either direction), cosines (list of [id, float in [0, 1]]: Neo4j's (1 + cosine) / 2
//   for each ring message and neighbour that has a vector), senders (list of [id, person id or
//   null] for the ring messages that are not among $ids, whose senders the dense read already
//   returned; graphmem.recall.learned), sessions (list of [id, session id] for the same).
UNWIND $ids AS mid
MATCH (c:Message {group_id: $group_id, id: mid})
OPTIONAL MATCH (c)-[:NEXT]-(nb:Message {group_id: $group_id})
WHERE $max_instant IS NULL OR nb.instant <= $max_instant
WITH collect(DISTINCT c) + collect(DISTINCT nb) AS ring
UNWIND ring AS m
WITH DISTINCT m
OPTIONAL MATCH (m)-[:NEXT]-(x:Message {group_id: $group_id})
WHERE $max_instant IS NULL OR x.instant <= $max_instant
WITH collect(DISTINCT m) AS ms, collect(DISTINCT x) AS xs, collect([m.id, x.id]) AS edges
CALL (ms, xs) {
  UNWIND ms + xs AS n
  WITH DISTINCT n
  WHERE n.embedding IS NOT NULL
  RETURN collect([n.id, vector.similarity.cosine(n.embedding, $vector)]) AS cosines
}
RETURN [m IN ms | m.id] AS ring, edges, cosines,
       [m IN ms WHERE NOT m.id IN $ids | [m.id, [(m)-[:SOURCE]->(p:Person) | p.id][0]]] AS senders,
       [m IN ms WHERE NOT m.id IN $ids | [m.id, m.session]] AS sessions
