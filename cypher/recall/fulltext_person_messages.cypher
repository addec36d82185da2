// Fulltext (BM25) hits among the messages that the given persons of one group sent. Only the
// group's documents are scored (its token is a required clause, boost 0: graphmem.store.scope); the
// caller over-fetches ($fetch) and widens it while the persons' share of the group is small.
// Parameters: $query (str, Lucene expression over the fields search_text / search_grams:
//   graphmem.recall.search.search_terms), $group_id (str), $group_key
//   (str, digits: graphmem.store.scope.group_key), $person_ids (list[str]), $max_instant (float epoch
//   seconds, or null), $fetch (int), $k (int).
// Returns: fetched (int), hits (list of {id: str, person_id: str, score: float, and the fields of
//   search/get_messages: channel, speaker, session, turn, ts, text, turn_created}, best first).
CALL db.index.fulltext.queryNodes(
  'message_text', '+group_key:' + $group_key + '^0 +(' + $query + ')', {limit: $fetch})
YIELD node, score
OPTIONAL MATCH (node)-[:SOURCE]->(p:Person)
WITH node, score, p
ORDER BY score DESC
WITH count(*) AS fetched,
     collect(CASE WHEN node.group_id = $group_id AND p.id IN $person_ids AND score > 0
                       AND ($max_instant IS NULL OR node.instant <= $max_instant)
                  THEN {id: node.id, person_id: p.id, score: score, channel: node.channel,
                        speaker: node.speaker, session: node.session, turn: node.turn, ts: node.ts,
                        text: node.text, turn_created: node.turn_created} END) AS hits
RETURN fetched, hits[0..$k] AS hits
