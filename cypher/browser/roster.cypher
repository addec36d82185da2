// Roster of one group: every person, what they said, and what is recorded about them.
// Neo4j Browser: first  :param group_id => 'trail-trip'  then paste this query.
// Parameters: $group_id (str, the group id).
// Returns, one row per person ordered by name then id: person (Person node), group (Group
//   node; Browser draws their MEMBER_OF link), id (str, Person.id), name (str, display name),
//   messages (int, messages the person sent), records_owned (int, current (head) derived
//   records about the person), records_sourced (int, head records the person is the source of).
MATCH (g:Group {id: $group_id})<-[:MEMBER_OF]-(p:Person {group_id: $group_id})
CALL (p) {
  OPTIONAL MATCH (m:Message)-[:SOURCE]->(p)
  RETURN count(m) AS messages
}
CALL (p) {
  OPTIONAL MATCH (d:Derived {state: 'head'})-[:OWNER]->(p)
  RETURN count(d) AS records_owned
}
CALL (p) {
  OPTIONAL MATCH (d:Derived {state: 'head'})-[:SOURCE]->(p)
  RETURN count(d) AS records_sourced
}
RETURN p AS person, g AS group, p.id AS id, p.name AS name, messages, records_owned,
       records_sourced
ORDER BY name, id
