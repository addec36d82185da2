// Derived records of one group by entry id (missing ids give no row).
// Parameters: $group_id (str); $ids (list[str], entry ids).
// Returns: the columns of memory/list_records, in the order of $ids.
UNWIND range(0, size($ids) - 1) AS i
MATCH (d:Derived {group_id: $group_id, id: $ids[i]})
MATCH (d)-[:OWNER]->(o)
MATCH (d)-[:SOURCE]->(s)
OPTIONAL MATCH (prev:Derived)-[:SUPERSEDED_BY]->(d)
OPTIONAL MATCH (d)-[:SUPERSEDED_BY]->(next:Derived)
CALL (d) {
  MATCH (d)-[:FROM]->(m:Message)
  WITH m ORDER BY m.turn_created
  RETURN collect(m.id) AS from_ids
}
RETURN d.id AS id, d.group_id AS group_id, d.layer AS layer, d.utype AS utype,
       d.content AS content, d.ts AS ts, d.session AS session, d.turn_created AS turn_created,
       d.confidence AS confidence, d.state AS state, d.segment AS segment,
       CASE WHEN o:Group THEN 'GROUP' ELSE o.id END AS owner,
       CASE WHEN o:Group THEN 'group' ELSE 'person' END AS owner_kind, o.name AS owner_name,
       CASE WHEN s:Group THEN 'GROUP' ELSE s.id END AS source,
       CASE WHEN s:Group THEN 'group' ELSE 'person' END AS source_kind, s.name AS source_name,
       from_ids, prev.id AS supersedes, next.id AS superseded_by
ORDER BY i
