// search/fulltext_documents for an as-of read: Lucene's top $fetch of one group, only the
// messages at or before $max_instant kept (a message without an instant never is), the best $k
// of them with their stored documents. The fulltext index knows no time, so the caller widens
// $fetch while fewer than $k survive (graphmem.recall.search.widened_read).
// Parameters: $group_id (str), $group_key (str, digits: graphmem.store.scope.group_key), $terms (str,
//   Lucene expression over the fields search_text / search_grams of escaped words and grams,
//   graphmem.recall.search.search_terms, not empty), $max_instant (float epoch seconds), $fetch
//   (int, index hits to read), $k (int, hits to return).
// Returns one row: fetched (int, index hits read), hits (list of maps, best first, at most $k,
//   with the columns of search/fulltext_documents: id, score, doc, person_id, instant, prev_id,
//   next_id, channel, speaker, session, turn, ts, text, turn_created).
CALL db.index.fulltext.queryNodes(
  'message_text', '+group_key:' + $group_key + '^0 +(' + $terms + ')', {limit: $fetch})
YIELD node, score
WITH node, score
ORDER BY score DESC
WITH count(*) AS fetched,
     collect(CASE WHEN node.group_id = $group_id AND score > 0 AND node.instant <= $max_instant
                  THEN {node: node, score: score} END) AS kept
CALL (kept) {
  UNWIND kept[0..$k] AS x
  WITH x.node AS node, x.score AS score
  RETURN collect({id: node.id, score: score, doc: node.search_text,
                  person_id: [(node)-[:SOURCE]->(p:Person) | p.id][0], instant: node.instant,
                  prev_id: [(a:Message)-[:NEXT]->(node) | a.id][0], next_id: [(node)-[:NEXT]->(b:Message) | b.id][0],
                  channel: node.channel, speaker: node.speaker, session: node.session, turn: node.turn,
                  ts: node.ts, text: node.text, turn_created: node.turn_created}) AS hits
}
RETURN fetched, hits
