// search/vector_messages_scoped for an as-of read: the $fetch nearest messages in a group's own
// vector index, only those at or before $max_instant kept (a message without an instant never
// is), the best $k of them. The index knows no time, so the caller oversamples and widens
// $fetch while fewer than $k survive (graphmem.recall.search.vector_ranking).
// Parameters: $index (str, "message_embedding_<digits>"), $group_id (str), $vector
//   (list[float], L2-normed), $max_instant (float epoch seconds), $fetch (int, index hits to
//   read), $k (int).
// Returns one row: fetched (int, index hits read), hits (list of maps, best first, at most $k:
//   id (str), score (float in [0, 1]), person_id (str, or null when the message has no sender
//   in the group) and the fields of search/get_messages (channel, speaker, session, turn, ts,
//   text, turn_created)).
CALL db.index.vector.queryNodes($index, $fetch, $vector) YIELD node, score
WITH node, score
ORDER BY score DESC
WITH count(*) AS fetched,
     collect(CASE WHEN node.group_id = $group_id AND node.instant <= $max_instant
                  THEN {node: node, score: score} END) AS kept
CALL (kept) {
  UNWIND kept[0..$k] AS x
  WITH x.node AS node, x.score AS score
  RETURN collect({id: node.id, score: score, person_id: [(node)-[:SOURCE]->(p:Person) | p.id][0],
                  channel: node.channel, speaker: node.speaker, session: node.session, turn: node.turn,
                  ts: node.ts, text: node.text, turn_created: node.turn_created}) AS hits
}
RETURN fetched, hits
