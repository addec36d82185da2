// Who said what about whom: derived records about a person whose source is someone else
// (source != owner), every state, with the verbatim messages behind each.
// Neo4j Browser: first  :param group_id => 'trail-trip'  then paste this query.
// Parameters: $group_id (str, the group id).
// Returns, one row per record ordered by turn_created then id: record (Derived node), source
//   (Person or Group node), owner (Person node), messages (list of FROM Message nodes),
//   id (str), source_id (str, Person.id or 'GROUP'), source_name (str), owner_id (str),
//   owner_name (str), layer (str), utype (str), state ('head' | 'superseded'), content (str),
//   ts (str, ISO-8601), from_ids (list[str], conversation order).
MATCH (d:Derived {group_id: $group_id})-[:OWNER]->(o:Person)
MATCH (d)-[:SOURCE]->(s)
WHERE s <> o
CALL (d) {
  MATCH (d)-[:FROM]->(m:Message)
  WITH m ORDER BY m.turn_created
  RETURN collect(m) AS messages
}
RETURN d AS record, s AS source, o AS owner, messages,
       d.id AS id, CASE WHEN s:Group THEN 'GROUP' ELSE s.id END AS source_id,
       s.name AS source_name, o.id AS owner_id, o.name AS owner_name, d.layer AS layer,
       d.utype AS utype, d.state AS state, d.content AS content, d.ts AS ts,
       [m IN messages | m.id] AS from_ids
ORDER BY d.turn_created, id
