// Approximate cosine top-$k messages sent by each given person of a group that has its own
// vector index (graphmem.scope): the $fetch nearest of the group's messages, kept when the
// sender is one of the persons (and, optionally, written at or before an instant). The exact
// per-person scan (vector_person_messages) would score every message of a large group.
// Parameters: $index (str, the group's vector index), $group_id (str), $person_ids (list[str]),
//   $vector (list[float], L2-normed), $fetch (int, index neighbours read), $k (int, per person),
//   $max_instant (float epoch seconds, or null for no time limit).
// Returns: person_id (str), id (str, message id), score (float in [-1, 1], the cosine); best
//   first per person.
CALL db.index.vector.queryNodes($index, $fetch, $vector) YIELD node, score
WHERE node.group_id = $group_id AND ($max_instant IS NULL OR node.instant <= $max_instant)
MATCH (node)-[:SOURCE]->(p:Person)
WHERE p.id IN $person_ids
WITH p.id AS person_id, node, 2 * score - 1 AS cosine
ORDER BY cosine DESC, node.turn_created
WITH person_id, collect({id: node.id, score: cosine})[0..$k] AS hits
UNWIND hits AS hit
RETURN person_id, hit.id AS id, hit.score AS score
