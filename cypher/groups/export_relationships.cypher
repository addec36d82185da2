// Every relationship that starts at a node of one group and ends at a node of the same group
// (or at its Group node), for an export.
// Parameters: $group_id (str).
// Returns: type (str), start_labels / end_labels (list<str>), start_id / end_id (str);
//   ordered by type, start id, end id.
CALL () {
  MATCH (n:Person {group_id: $group_id}) RETURN n
  UNION ALL
  MATCH (n:Session {group_id: $group_id}) RETURN n
  UNION ALL
  MATCH (n:Message {group_id: $group_id}) RETURN n
  UNION ALL
  MATCH (n:Derived {group_id: $group_id}) RETURN n
  UNION ALL
  MATCH (n:Segment {group_id: $group_id}) RETURN n
}
MATCH (n)-[r]->(m)
WHERE m.group_id = $group_id OR (m:Group AND m.id = $group_id)
RETURN type(r) AS type, labels(n) AS start_labels, n.id AS start_id,
       labels(m) AS end_labels, m.id AS end_id
ORDER BY type, start_id, end_id
