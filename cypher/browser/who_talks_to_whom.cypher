// Who talks to whom in one group: REPLY_TO and NEXT links between messages, aggregated into
// person-to-person counts. A reply counts for its writer towards the person replied to; a NEXT
// hand-over counts for the person who spoke right after towards the one who spoke before.
// Links of a person to themselves are left out.
// Neo4j Browser: first  :param group_id => 'trail-trip'  then paste this query (table view).
// Parameters: $group_id (str, the group id).
// Returns, ordered by total descending then names: from_id (str, Person.id), from_name (str),
//   to_id (str), to_name (str), replies (int, REPLY_TO links from->to), next (int, times
//   `from` spoke right after `to`), total (int, replies + next).
MATCH (m:Message {group_id: $group_id})-[:SOURCE]->(a:Person)
CALL (m, a) {
  MATCH (m)-[:REPLY_TO]->(:Message)-[:SOURCE]->(b:Person)
  WHERE b <> a
  RETURN 'reply' AS kind, b
  UNION ALL
  MATCH (t:Message)-[:NEXT]->(m)
  MATCH (t)-[:SOURCE]->(b:Person)
  WHERE b <> a
  RETURN 'next' AS kind, b
}
WITH a, b, sum(CASE kind WHEN 'reply' THEN 1 ELSE 0 END) AS replies,
     sum(CASE kind WHEN 'next' THEN 1 ELSE 0 END) AS next
RETURN a.id AS from_id, a.name AS from_name, b.id AS to_id, b.name AS to_name,
       replies, next, replies + next AS total
ORDER BY total DESC, from_name, to_name
