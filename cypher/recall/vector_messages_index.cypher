// Approximate cosine neighbours from the global vector index, filtered to one group (and, as
// of an instant, to its messages at or before it: one without an instant is then left out);
// the caller widens $fetch while the group's share is too small.
// Parameters: $vector (list[float]), $group_id (str), $fetch (int), $k (int), $max_instant
//   (float epoch seconds, or null for no limit).
// Returns: fetched (int), hits (list of {id: str, score: float in [0, 1]}, best first).
CALL db.index.vector.queryNodes('message_embedding', $fetch, $vector) YIELD node, score
WITH count(*) AS fetched,
     collect(CASE WHEN node.group_id = $group_id AND ($max_instant IS NULL OR node.instant <= $max_instant) THEN {id: node.id, score: score} END) AS hits
RETURN fetched, hits[0..$k] AS hits
