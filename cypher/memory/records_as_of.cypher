// The state of a group's derived memory at one instant: for every chain, the record that was
// current then (written at or before the instant and not yet superseded by a record written at
// or before it). Records are dated by their ts (the newest supporting message).
// Parameters: $group_id (str); $instant (float, epoch seconds).
// Returns: the columns of memory/list_records, ordered by turn_created then id.
MATCH (d:Derived {group_id: $group_id})
WHERE d.instant <= $instant
OPTIONAL MATCH (d)-[:SUPERSEDED_BY]->(nx:Derived)
WITH d, nx
WHERE nx IS NULL OR nx.instant > $instant
MATCH (d)-[:OWNER]->(o)
MATCH (d)-[:SOURCE]->(s)
OPTIONAL MATCH (prev:Derived)-[:SUPERSEDED_BY]->(d)
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
       from_ids, prev.id AS supersedes, nx.id AS superseded_by
ORDER BY turn_created, id
