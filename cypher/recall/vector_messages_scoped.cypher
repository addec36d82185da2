// Approximate cosine neighbours from a group's own vector index (only that group's messages
// carry its label, graphmem.store.scope); the group_id check keeps the answer inside the group.
// Parameters: $index (str, "message_embedding_<digits>"), $group_id (str), $vector
//   (list[float], L2-normed), $k (int). Returns: id (str), score (float in [0, 1]),
//   person_id (str, or null when the message has no sender in the group) and the fields of
//   search/get_messages (channel, speaker, session, turn, ts, text, turn_created); best first.
CALL db.index.vector.queryNodes($index, $k, $vector) YIELD node, score
WHERE node.group_id = $group_id
RETURN node.id AS id, score, [(node)-[:SOURCE]->(p:Person) | p.id][0] AS person_id,
       node.channel AS channel, node.speaker AS speaker, node.session AS session, node.turn AS turn, node.ts AS ts,
       node.text AS text, node.turn_created AS turn_created
ORDER BY score DESC
