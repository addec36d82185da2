// Approximate cosine neighbours from the global vector index, filtered to one group; the
// caller widens $fetch while the group's share is too small.
// Parameters: $vector (list[float]), $group_id (str), $fetch (int), $k (int).
// Returns: fetched (int), hits (list of {id: str, score: float in [0, 1]}, best first).
CALL db.index.vector.queryNodes('message_embedding', $fetch, $vector) YIELD node, score
WITH count(*) AS fetched,
     collect(CASE WHEN node.group_id = $group_id THEN {id: node.id, score: score} END) AS hits
RETURN fetched, hits[0..$k] AS hits
