// Fulltext (BM25, english analyzer) candidates from one group only: the Lucene query requires
// the group's token in the `group_key` field (boost 0, so the score is the BM25 of the message
// document alone) and the terms in `search_text`; Lucene scores only the group's documents.
// Parameters: $group_id (str), $group_key (str, digits: graphmem.store.scope.group_key), $terms (str,
//   Lucene expression over the fields search_text / search_grams of escaped words and grams,
//   graphmem.recall.search.search_terms, not empty), $k (int, hits to return).
// Returns: id (str), score (float > 0, BM25), best first.
CALL db.index.fulltext.queryNodes(
  'message_text', '+group_key:' + $group_key + '^0 +(' + $terms + ')', {limit: $k})
YIELD node, score
WHERE node.group_id = $group_id AND score > 0
RETURN node.id AS id, score
ORDER BY score DESC
