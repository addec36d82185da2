// Everything recorded about one person (every state, current and superseded), with who it
// came from and the verbatim messages behind it.
// Neo4j Browser: first  :params {group_id: 'trail-trip', person_id: 'ben'}  then paste this
//   query (person_id is the Person.id: the speaker_id when the chat gives one, else the name;
//   see roster).
// Parameters: $group_id (str, the group id); $person_id (str, Person.id of the owner).
// Returns, one row per record ordered by turn_created then id: record (Derived node), owner
//   (Person node), source (Person or Group node), messages (list of its FROM Message nodes),
//   id (str, entry id), layer (str, code name), utype (str), state ('head' | 'superseded'),
//   content (str), ts (str, ISO-8601), source_id (str, Person.id or 'GROUP'), source_name
//   (str), from_ids (list[str], supporting message ids in conversation order).
MATCH (p:Person {group_id: $group_id, id: $person_id})<-[:OWNER]-(d:Derived {group_id: $group_id})
MATCH (d)-[:SOURCE]->(s)
CALL (d) {
  MATCH (d)-[:FROM]->(m:Message)
  WITH m ORDER BY m.turn_created
  RETURN collect(m) AS messages
}
RETURN d AS record, p AS owner, s AS source, messages,
       d.id AS id, d.layer AS layer, d.utype AS utype, d.state AS state, d.content AS content,
       d.ts AS ts, CASE WHEN s:Group THEN 'GROUP' ELSE s.id END AS source_id,
       s.name AS source_name, [m IN messages | m.id] AS from_ids
ORDER BY d.turn_created, id
