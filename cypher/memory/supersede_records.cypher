// Chain UPDATEs non-destructively: mark each old head superseded and link
// (old)-[:SUPERSEDED_BY]->(new). Nothing is deleted or overwritten except old.state.
// Rows are applied in order; old_id may name a record created earlier in the same transaction.
// Parameters: $group_id (str); $rows (list of maps): old_id (str, a head), new_id (str).
// Returns: chained (int, rows whose old record was a head and is now linked).
UNWIND $rows AS row
MATCH (old:Derived {group_id: $group_id, id: row.old_id})
  WHERE old.state = 'head' AND NOT (old)-[:SUPERSEDED_BY]->()
MATCH (new:Derived {group_id: $group_id, id: row.new_id})
SET old.state = 'superseded'
CREATE (old)-[:SUPERSEDED_BY]->(new)
RETURN count(*) AS chained
