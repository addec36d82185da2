// Erase step 2: delete every derived record (all versions) that one person of a group owns or
// is the source of, with its embedding (vector and fulltext entries go with the node).
// Parameters: $group_id (str), $person_id (str).
// Returns: deleted (int, derived nodes deleted), ids (list[str], their entry ids).
MATCH (p:Person {group_id: $group_id, id: $person_id})
OPTIONAL MATCH (d:Derived {group_id: $group_id})-[:OWNER|SOURCE]->(p)
WITH collect(DISTINCT d) AS doomed
WITH doomed, [d IN doomed | d.id] AS ids
FOREACH (d IN doomed | DETACH DELETE d)
RETURN size(doomed) AS deleted, ids
