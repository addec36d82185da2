// Fulltext (BM25, english analyzer) candidates from one group. The index is global, so the
// caller over-fetches ($fetch) and widens it while the group's share is too small.
// Parameters: $query (str, Lucene query with escaped terms), $group_id (str),
//   $fetch (int, index hits to read), $k (int, hits to return).
// Returns: fetched (int, index hits read), hits (list of {id: str, score: float}, best first).
CALL db.index.fulltext.queryNodes('message_text', $query, {limit: $fetch}) YIELD node, score
WITH count(*) AS fetched,
     collect(CASE WHEN node.group_id = $group_id THEN {id: node.id, score: score} END) AS hits
RETURN fetched, hits[0..$k] AS hits
