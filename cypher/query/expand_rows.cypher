// Expand projection rows into concrete roster rows of one group (SpeakerMem-R1 §3.3, "Separate").
// Parameters: $group_id (str); $all (bool, every member: the ALL row); $group (bool, the GROUP
//   row: the Group node itself); $person_ids (list[str], named persons).
// Returns: kind ("person" | "group"), id (str), name (str); persons first (by name), the group last.
MATCH (g:Group {id: $group_id})
CALL (g) {
  MATCH (p:Person {group_id: $group_id})-[:MEMBER_OF]->(g)
  WHERE $all OR p.id IN $person_ids
  RETURN 'person' AS kind, p.id AS id, p.name AS name, 0 AS ord
  UNION
  WITH g
  WHERE $group
  RETURN 'group' AS kind, g.id AS id, coalesce(g.name, g.id) AS name, 1 AS ord
}
RETURN kind, id, name
ORDER BY ord, name, id
