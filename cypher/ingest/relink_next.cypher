// Re-point NEXT links: each row's message loses its outgoing NEXT and, when `to` is given, gets
// one to that message (rows never share a `from`, so the order of rows does not matter).
// Parameters: $group_id (str); $rows (list of maps): from (str), to (str or null).
// Returns: linked (int, NEXT links created).
UNWIND $rows AS row
MATCH (a:Message {group_id: $group_id, id: row.from})
USING INDEX a:Message(group_id, id)
CALL (a) {
  OPTIONAL MATCH (a)-[r:NEXT]->()
  DELETE r
}
WITH a, row
OPTIONAL MATCH (b:Message {group_id: $group_id, id: row.to})
USING INDEX b:Message(group_id, id)
FOREACH (_ IN CASE WHEN b IS NULL THEN [] ELSE [1] END | CREATE (a)-[:NEXT]->(b))
RETURN count(b) AS linked
