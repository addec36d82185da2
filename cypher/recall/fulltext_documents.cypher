// Fulltext (BM25, english analyzer) candidates of one group with their stored documents, in one
// round trip: search/fulltext_messages and query/message_documents in one statement (the
// candidates' fields are read from the nodes Lucene returns, with no second lookup by id).
// Only the group's documents are scored (the group's token is a required clause, boost 0:
// graphmem.store.scope); the group_id check keeps the answer inside the group.
// Parameters: $group_id (str), $group_key (str, digits: graphmem.store.scope.group_key), $terms (str,
//   Lucene expression over the fields search_text / search_grams of escaped words and grams,
//   graphmem.recall.search.search_terms, not empty), $k (int, hits to return).
// Returns, best first: id (str), score (float > 0, Lucene's BM25), doc (str, search_text),
//   person_id (str, or null when the message has no sender in the group), instant (float epoch
//   seconds or null), prev_id / next_id (str or null: the turns before and after it on NEXT),
//   and the message's fields as search/get_messages returns them (channel, speaker, session,
//   turn, ts, text, turn_created), so that hits among them need no second read.
CALL db.index.fulltext.queryNodes(
  'message_text', '+group_key:' + $group_key + '^0 +(' + $terms + ')', {limit: $k})
YIELD node, score
WHERE node.group_id = $group_id AND score > 0
RETURN node.id AS id, score, node.search_text AS doc,
       [(node)-[:SOURCE]->(p:Person) | p.id][0] AS person_id, node.instant AS instant,
       [(a:Message)-[:NEXT]->(node) | a.id][0] AS prev_id, [(node)-[:NEXT]->(b:Message) | b.id][0] AS next_id,
       node.channel AS channel, node.speaker AS speaker, node.session AS session, node.turn AS turn, node.ts AS ts,
       node.text AS text, node.turn_created AS turn_created
ORDER BY score DESC
