// Fulltext (BM25, english analyzer) hits among given derived records of one group. The index is
// global, so the caller over-fetches ($fetch) and widens it while the candidates' share is small.
// Parameters: $query (str, Lucene query of escaped terms), $group_id (str), $ids (list[str],
//   candidate record ids), $fetch (int, index hits to read), $k (int, hits to return).
// Returns: fetched (int, index hits read), hits (list of {id: str, score: float}, best first).
CALL db.index.fulltext.queryNodes('derived_content', $query, {limit: $fetch}) YIELD node, score
WITH count(*) AS fetched,
     collect(CASE WHEN node.group_id = $group_id AND node.id IN $ids
                  THEN {id: node.id, score: score} END) AS hits
RETURN fetched, hits[0..$k] AS hits
