// Cosines for the dense ranking over a context window: some messages of one group and their
// NEXT neighbours, each with its own cosine to the query and those of its own NEXT neighbours.
// Parameters: $group_id (str), $ids (list[str], the dense candidates), $vector (list[float],
//   L2-normed). Returns: id (str), own (float in [0, 1], Neo4j's (1 + cosine) / 2),
//   around (list[float], the same for each NEXT neighbour with a vector; empty when none).
UNWIND $ids AS mid
MATCH (c:Message {group_id: $group_id, id: mid})
OPTIONAL MATCH (c)-[:NEXT]-(nb:Message {group_id: $group_id})
WITH collect(DISTINCT c) + collect(DISTINCT nb) AS ms
UNWIND ms AS m
WITH DISTINCT m
WHERE m.embedding IS NOT NULL
OPTIONAL MATCH (m)-[:NEXT]-(x:Message {group_id: $group_id})
WHERE x.embedding IS NOT NULL
WITH m, collect(vector.similarity.cosine(x.embedding, $vector)) AS around
RETURN m.id AS id, vector.similarity.cosine(m.embedding, $vector) AS own, around
