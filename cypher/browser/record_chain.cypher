// One record's full update chain (SUPERSEDED_BY, oldest state first) with the verbatim
// messages behind each state. Give any state of the chain.
// Neo4j Browser: first  :params {group_id: 'trail-trip', record_id: 'e1.3'}  then paste this
//   query (record ids: see person_records or group_decisions_norms).
// Parameters: $group_id (str, the group id); $record_id (str, entry id of any state).
// Returns, one row per state ordered by position: position (int, 0 = the original ADD),
//   record (Derived node), messages (list of its FROM Message nodes), id (str), state ('head' |
//   'superseded'), layer (str), utype (str), content (str), ts (str, ISO-8601), owner_id (str,
//   Person.id or 'GROUP'), source_id (str), from_ids (list[str]), said (list[str], each FROM
//   message as "speaker (ts): text", conversation order). No rows for an unknown record.
MATCH (d:Derived {group_id: $group_id, id: $record_id})
MATCH (root:Derived)-[:SUPERSEDED_BY*0..]->(d)
  WHERE NOT (:Derived)-[:SUPERSEDED_BY]->(root)
MATCH path = (root)-[:SUPERSEDED_BY*0..]->(x:Derived)
WITH length(path) AS position, x
MATCH (x)-[:OWNER]->(o)
MATCH (x)-[:SOURCE]->(s)
CALL (x) {
  MATCH (x)-[:FROM]->(m:Message)
  WITH m ORDER BY m.turn_created
  RETURN collect(m) AS messages
}
RETURN position, x AS record, messages, x.id AS id, x.state AS state, x.layer AS layer,
       x.utype AS utype, x.content AS content, x.ts AS ts,
       CASE WHEN o:Group THEN 'GROUP' ELSE o.id END AS owner_id,
       CASE WHEN s:Group THEN 'GROUP' ELSE s.id END AS source_id,
       [m IN messages | m.id] AS from_ids,
       [m IN messages | m.speaker + ' (' + m.ts + '): ' + m.text] AS said
ORDER BY position
