// Approximate cosine neighbours from a group's own vector index (only that group's messages
// carry its label, graphmem.scope); the group_id check keeps the answer inside the group.
// Parameters: $index (str, "message_embedding_<digits>"), $group_id (str), $vector
//   (list[float], L2-normed), $k (int). Returns: id (str), score (float in [0, 1]), best first.
CALL db.index.vector.queryNodes($index, $k, $vector) YIELD node, score
WHERE node.group_id = $group_id
RETURN node.id AS id, score
ORDER BY score DESC
