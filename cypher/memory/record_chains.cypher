// Full update chains: for each given entry id (any state of a chain), every state of its chain
// from the first ADD to the current head, walking SUPERSEDED_BY.
// Parameters: $group_id (str); $ids (list[str], entry ids; unknown ids give no rows).
// Returns: chain_of (str, the id asked for), position (int, 0 = oldest state), then the
//   columns of memory/list_records; ordered by chain_of (as given) and position.
UNWIND range(0, size($ids) - 1) AS i
MATCH (d:Derived {group_id: $group_id, id: $ids[i]})
MATCH (root:Derived)-[:SUPERSEDED_BY*0..]->(d)
  WHERE NOT (:Derived)-[:SUPERSEDED_BY]->(root)
MATCH path = (root)-[:SUPERSEDED_BY*0..]->(x:Derived)
WITH i, d.id AS chain_of, length(path) AS position, x
MATCH (x)-[:OWNER]->(o)
MATCH (x)-[:SOURCE]->(s)
OPTIONAL MATCH (prev:Derived)-[:SUPERSEDED_BY]->(x)
OPTIONAL MATCH (x)-[:SUPERSEDED_BY]->(next:Derived)
CALL (x) {
  MATCH (x)-[:FROM]->(m:Message)
  WITH m ORDER BY m.turn_created
  RETURN collect(m.id) AS from_ids
}
RETURN chain_of, position,
       x.id AS id, x.group_id AS group_id, x.layer AS layer, x.utype AS utype,
       x.content AS content, x.ts AS ts, x.session AS session, x.turn_created AS turn_created,
       x.confidence AS confidence, x.state AS state, x.segment AS segment,
       CASE WHEN o:Group THEN 'GROUP' ELSE o.id END AS owner,
       CASE WHEN o:Group THEN 'group' ELSE 'person' END AS owner_kind, o.name AS owner_name,
       CASE WHEN s:Group THEN 'GROUP' ELSE s.id END AS source,
       CASE WHEN s:Group THEN 'group' ELSE 'person' END AS source_kind, s.name AS source_name,
       from_ids, prev.id AS supersedes, next.id AS superseded_by
ORDER BY i, position
