// Erase step 4: a superseded record whose successor was erased becomes the head of its chain
// again, so every chain keeps exactly one head.
// Parameters: $group_id (str).
// Returns: repaired (int).
MATCH (d:Derived {group_id: $group_id, state: 'superseded'})
WHERE NOT (d)-[:SUPERSEDED_BY]->(:Derived)
SET d.state = 'head'
RETURN count(d) AS repaired
