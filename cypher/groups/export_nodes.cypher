// Every node of one group for an export: the Group node, its persons, sessions, messages,
// derived records and Writer segments, each with all stored properties (the caller drops
// vectors). No row for an unknown group.
// Parameters: $group_id (str).
// Returns: labels (list<str>), id (str), props (map); Group first, then by label and id.
CALL () {
  MATCH (n:Group {id: $group_id}) RETURN n, 0 AS rank
  UNION ALL
  MATCH (n:Person {group_id: $group_id}) RETURN n, 1 AS rank
  UNION ALL
  MATCH (n:Session {group_id: $group_id}) RETURN n, 2 AS rank
  UNION ALL
  MATCH (n:Message {group_id: $group_id}) RETURN n, 3 AS rank
  UNION ALL
  MATCH (n:Derived {group_id: $group_id}) RETURN n, 4 AS rank
  UNION ALL
  MATCH (n:Segment {group_id: $group_id}) RETURN n, 5 AS rank
}
RETURN labels(n) AS labels, n.id AS id, properties(n) AS props
ORDER BY rank, id
